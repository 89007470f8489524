//! Serving on a Unix-domain socket, over real sockets: requests answered, the socket file's
//! mode, a stale file replaced, a live socket and a regular file left alone, the file removed on
//! graceful shutdown; the peer as the handler, the access log and the client IP see it; the
//! user service with `BIND=unix:…`. And the first request of a connection accepted just before
//! a graceful shutdown, over TCP.

#![cfg(unix)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use framework::client_ip::ClientIpExt;
use framework::client_ip::TrustedProxies;
use framework::listener::{Listener, UNIX_PEER_ADDR};
use framework::middleware::logger::{Logger, LoggerConfig};
use framework::{App, Context, Result, Service};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

async fn peer(ctx: &mut Context) -> Result<String> {
    let unix = ctx.connection().unix_peer();
    Ok(format!(
        "remote={} real={} pid={:?} uid={:?}",
        ctx.connection().remote_addr(),
        ctx.real_ip(),
        unix.and_then(|p| p.pid()),
        unix.map(|p| p.uid()),
    ))
}

fn service(trusted: TrustedProxies, log: Arc<Mutex<Vec<String>>>) -> Service {
    App::new()
        .trusted_proxies(trusted)
        .use_middleware(Logger::new(
            LoggerConfig::default()
                .format("{remote} {real-ip} {status}")
                .on_log(Some(Arc::new(move |line, _, _| {
                    log.lock().unwrap().push(line.to_owned());
                }))),
        ))
        .get("/peer", peer)
        .build()
        .expect("valid routes")
}

/// A server on `listener` until `stop` is sent.
fn serve(service: Service, listener: Listener) -> (oneshot::Sender<()>, JoinHandle<()>) {
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        service
            .serve_with_shutdown(listener, async {
                let _ = stopped.await;
            })
            .await
            .expect("served");
    });
    (stop, task)
}

/// `request` over a new connection to the socket at `path`, read to the end.
async fn unix_request(path: &Path, request: &str) -> String {
    let mut stream = UnixStream::connect(path).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_string(&mut answer))
        .await
        .expect("answer within 10 s")
        .expect("read");
    answer
}

fn get(target: &str, extra: &str) -> String {
    format!("GET {target} HTTP/1.1\r\nHost: app\r\n{extra}Connection: close\r\n\r\n")
}

fn socket_path(name: &str) -> PathBuf {
    common::temp_dir(name).join("http.sock")
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("socket file")
        .permissions()
        .mode()
        & 0o777
}

#[tokio::test]
async fn a_request_over_a_unix_socket_is_answered_and_the_file_removed_on_shutdown() {
    let path = socket_path("unix-serve");
    let log = Arc::new(Mutex::new(Vec::new()));
    let listener = Listener::bind(&format!("unix:{}", path.display()))
        .await
        .expect("bind");
    assert_eq!(listener.to_string(), format!("unix:{}", path.display()));
    assert_eq!(listener.tcp_addr(), None);
    assert_eq!(mode(&path), 0o660, "the default mode");
    let (stop, task) = serve(service(TrustedProxies::None, Arc::clone(&log)), listener);

    let answer = unix_request(&path, &get("/peer", "X-Forwarded-For: 203.0.113.9\r\n")).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // No proxy trusted: the forwarded address is not believed; the peer is this process.
    let me = std::process::id();
    // The socket file's owner is this process's user.
    let uid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&path).unwrap());
    assert!(
        answer.ends_with(&format!(
            "remote={UNIX_PEER_ADDR} real=127.0.0.1 pid=Some({me}) uid=Some({uid})"
        )),
        "{answer}"
    );
    // The access log names the peer process.
    assert!(common::eventually(|| !log.lock().unwrap().is_empty()).await);
    assert_eq!(
        log.lock().unwrap()[0],
        format!("unix:pid={me},uid={uid} 127.0.0.1 200")
    );

    stop.send(()).unwrap();
    task.await.unwrap();
    assert!(!path.exists(), "the socket file outlived the server");
}

#[tokio::test]
async fn behind_a_trusted_proxy_on_the_socket_the_real_ip_is_the_forwarded_one() {
    let log = Arc::new(Mutex::new(Vec::new()));
    // One hop: the Unix peer (nginx on this host) is the proxy.
    let path = socket_path("unix-hops");
    let listener = Listener::unix(&path).await.expect("bind");
    let (stop, task) = serve(service(TrustedProxies::Hops(1), Arc::clone(&log)), listener);
    let answer = unix_request(&path, &get("/peer", "X-Forwarded-For: 203.0.113.9\r\n")).await;
    assert!(answer.contains("real=203.0.113.9 "), "{answer}");
    stop.send(()).unwrap();
    task.await.unwrap();

    // Trusted networks: a Unix peer is not loopback, however loopback is trusted (that would
    // trust every local process); it is trusted when the list names it, `unix`.
    for (networks, real) in [
        ("127.0.0.0/8", "127.0.0.1"),
        ("10.0.0.0/8", "127.0.0.1"),
        ("unix", "203.0.113.9"),
        ("unix, 10.0.0.0/8", "203.0.113.9"),
    ] {
        let path = socket_path("unix-networks");
        let listener = Listener::unix(&path).await.expect("bind");
        let trusted: TrustedProxies = networks.parse().unwrap();
        let (stop, task) = serve(service(trusted, Arc::clone(&log)), listener);
        let answer = unix_request(&path, &get("/peer", "X-Forwarded-For: 203.0.113.9\r\n")).await;
        assert!(
            answer.contains(&format!("real={real} ")),
            "{networks}: {answer}"
        );
        stop.send(()).unwrap();
        task.await.unwrap();
    }
}

#[tokio::test]
async fn the_socket_file_gets_the_mode_asked_for() {
    let path = socket_path("unix-mode");
    let listener = Listener::unix_with_mode(&path, 0o600).await.expect("bind");
    assert_eq!(mode(&path), 0o600);
    let (stop, task) = serve(service(TrustedProxies::None, Arc::default()), listener);
    assert!(
        unix_request(&path, &get("/peer", ""))
            .await
            .starts_with("HTTP/1.1 200")
    );
    stop.send(()).unwrap();
    task.await.unwrap();
}

#[tokio::test]
async fn a_stale_socket_file_is_replaced() {
    let path = socket_path("unix-stale");
    // A process that bound the path and went away without removing it.
    drop(std::os::unix::net::UnixListener::bind(&path).expect("bind"));
    assert!(path.exists());
    let listener = Listener::unix(&path)
        .await
        .expect("a stale file is replaced");
    let (stop, task) = serve(service(TrustedProxies::None, Arc::default()), listener);
    assert!(
        unix_request(&path, &get("/peer", ""))
            .await
            .starts_with("HTTP/1.1 200")
    );
    stop.send(()).unwrap();
    task.await.unwrap();
}

#[tokio::test]
async fn a_live_socket_is_not_taken() {
    let path = socket_path("unix-live");
    let other = std::os::unix::net::UnixListener::bind(&path).expect("bind");
    let err = Listener::unix(&path)
        .await
        .expect_err("a live socket was taken");
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    assert!(err.to_string().contains(&*path.to_string_lossy()), "{err}");
    // The other process still has its socket: a new client reaches it.
    let _client = std::os::unix::net::UnixStream::connect(&path).expect("still listening");
    other.accept().expect("the other process accepts");
    // And `listen` says so with the address.
    let err = service(TrustedProxies::None, Arc::default())
        .listen(&format!("unix:{}", path.display()))
        .await
        .expect_err("bound");
    assert!(err.to_string().contains("cannot listen on unix:"), "{err}");
}

#[tokio::test]
async fn a_path_that_is_not_a_socket_is_left_alone() {
    let path = socket_path("unix-file");
    std::fs::write(&path, "data").unwrap();
    let err = Listener::unix(&path)
        .await
        .expect_err("a regular file was replaced");
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "data");
}

/// A `UnixListener` the caller bound: served, and its file left to the caller.
#[tokio::test]
async fn a_unix_listener_passed_in_is_served_and_its_file_kept() {
    let path = socket_path("unix-passed");
    let listener = tokio::net::UnixListener::bind(&path).expect("bind");
    let (stop, task) = serve(
        service(TrustedProxies::None, Arc::default()),
        listener.into(),
    );
    assert!(
        unix_request(&path, &get("/peer", ""))
            .await
            .starts_with("HTTP/1.1 200")
    );
    stop.send(()).unwrap();
    task.await.unwrap();
    assert!(path.exists(), "the caller's file was removed");
}

/// A client connects, the server accepts, and the shutdown begins before the request arrives:
/// the request is still answered (with `Connection: close`), not cut, since a client that
/// connected before the stop had every right to send it. A connection that sends nothing is
/// closed after the grace.
#[tokio::test]
async fn a_connection_accepted_before_shutdown_gets_its_first_request_answered() {
    let mut server = common::start(service(TrustedProxies::None, Arc::default())).await;
    let mut late = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut silent = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    // Both accepted (their connection tasks wait for the first bytes): the kernel hands
    // connections to `accept` in the order they were established, so once a third, opened
    // after them, has been answered, both are in the server's hands.
    let probe = common::raw_request(server.addr, &get("/peer", "")).await;
    assert_eq!(probe.status, 200);
    let task = server.signal_shutdown();
    // The shutdown has begun when the listener is gone: a new connection is refused. (The
    // test runs on one thread, so the server's turn that closed the listener also signalled
    // every connection before this loop sees the refusal.)
    loop {
        match tokio::net::TcpStream::connect(server.addr).await {
            Ok(accepted_before_the_close) => drop(accepted_before_the_close),
            // Refused, or reset while the closing listener still held it.
            Err(err)
                if matches!(
                    err.kind(),
                    std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::ConnectionReset
                ) =>
            {
                break;
            }
            Err(err) => panic!("connect: {err}"),
        }
        tokio::task::yield_now().await;
    }
    late.write_all(
        get("/peer", "")
            .replace("Connection: close\r\n", "")
            .as_bytes(),
    )
    .await
    .unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(5), late.read_to_string(&mut answer))
        .await
        .expect("answered and closed")
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
    let start = std::time::Instant::now();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), silent.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the silent connection was kept");
    assert!(rest.is_empty());
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    task.await.unwrap().unwrap();
}

/// The user service with `BIND=unix:<path>`: it answers on the socket, with its mode, and
/// removes the file when SIGTERM stops it.
#[tokio::test]
async fn the_user_service_serves_on_a_unix_socket_and_removes_it_on_sigterm() {
    let path = socket_path("unix-user-service");
    let mut child = std::process::Command::new(common::backends::service_binary())
        .env("BIND", format!("unix:{}", path.display()))
        .env("DATABASE_URL", "memory")
        .env("RUST_LOG", "error")
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start user-service");
    assert!(
        common::eventually(|| path.exists()).await,
        "no socket file at {}",
        path.display()
    );
    // Answered: the file has its mode (set before the service serves).
    let answer = unix_request(&path, &get("/livez", "")).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(mode(&path), 0o660);
    common::backends::signal(child.id(), "TERM");
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status}");
    assert!(!path.exists(), "the socket file outlived the service");
}

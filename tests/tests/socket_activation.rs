//! Socket activation with the user-service binary: the test holds the listening socket, as
//! systemd does, and passes it to each process it starts (`LISTEN_FDS=1`, `LISTEN_PID` the
//! process's pid, the socket at file descriptor 3, `BIND=fd:0`). A restart (SIGTERM, wait for
//! the exit, start the next process on the same socket) while clients loop loses no request:
//! the connections made while no process runs wait in the socket's backlog.
//!
//! The socket reaches descriptor 3 without `unsafe` (`pre_exec`): it is the child's standard
//! input, and `sh` moves it (`exec 3<&0 0</dev/null`), sets `LISTEN_PID=$$` and `exec`s the
//! binary, which keeps the shell's pid, as `systemfd` does in its own way.
//!
//! Run alone: `cargo build -p user-service && cargo test -p e2e-tests --test socket_activation
//! -- --nocapture` (it prints the figures).

#![cfg(unix)]

mod common;

use std::os::fd::OwnedFd;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::backends::{service_binary, signal};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The user service on the inherited socket `fd`, with `LISTEN_PID` set to `listen_pid` (`$$`:
/// its own pid).
fn activated(fd: OwnedFd, listen_pid: &str) -> Command {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!(
            r#"exec 3<&0 0</dev/null; LISTEN_FDS=1 LISTEN_PID={listen_pid} exec "$0""#
        ))
        .arg(service_binary())
        .stdin(Stdio::from(fd))
        .env("BIND", "fd:0")
        .env("DATABASE_URL", "memory")
        .env("RUST_LOG", "error")
        .stdout(Stdio::null());
    command
}

fn start(fd: OwnedFd) -> Child {
    activated(fd, "$$")
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start user-service")
}

/// Waits for `child` to exit (SIGKILL after 20 s) and says whether it exited with success.
async fn exited(child: &mut Child) -> bool {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status.success();
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `GET /livez` on a new connection: `Ok` with a 200, else what went wrong.
async fn livez(stream: impl AsyncReadExt + AsyncWriteExt + Unpin) -> Result<(), String> {
    let mut stream = stream;
    stream
        .write_all(b"GET /livez HTTP/1.1\r\nHost: app\r\nConnection: close\r\n\r\n")
        .await
        .map_err(|e| format!("write: {e}"))?;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer))
        .await
        .map_err(|_| "no answer in 20 s".to_owned())?
        .map_err(|e| format!("read: {e}"))?;
    if answer.starts_with(b"HTTP/1.1 200") {
        Ok(())
    } else {
        Err(format!("answer: {}", String::from_utf8_lossy(&answer)))
    }
}

async fn tcp_livez(addr: std::net::SocketAddr) -> Result<(), String> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    livez(stream).await
}

/// Waits until the process on the socket answers (its start-up: the backlog holds the first
/// request until it accepts).
async fn until_answering(addr: std::net::SocketAddr) {
    tcp_livez(addr).await.expect("the first process answers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_under_socket_activation_loses_no_request() {
    const RESTARTS: usize = 20;
    const CLIENTS: usize = 2;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().unwrap();
    let fd = || OwnedFd::from(listener.try_clone().expect("dup the socket"));
    let mut child = start(fd());
    until_answering(addr).await;

    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let answered = Arc::new(AtomicU64::new(0));
    let failures = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (stop, sent, answered, failures) = (
                Arc::clone(&stop),
                Arc::clone(&sent),
                Arc::clone(&answered),
                Arc::clone(&failures),
            );
            tokio::spawn(async move {
                // Bounded: the restarts end it well before; this is a backstop.
                let deadline = Instant::now() + Duration::from_secs(120);
                while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
                    sent.fetch_add(1, Ordering::SeqCst);
                    match tcp_livez(addr).await {
                        Ok(()) => {
                            answered.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(e) => failures.lock().unwrap().push(e),
                    }
                }
            })
        })
        .collect();

    let started = Instant::now();
    let mut gaps = Vec::new();
    for _ in 0..RESTARTS {
        // Requests flow to this process for a while first.
        let before = answered.load(Ordering::SeqCst);
        assert!(
            common::eventually(|| answered.load(Ordering::SeqCst) >= before + 300).await,
            "requests stopped being answered: {:?}",
            failures.lock().unwrap()
        );
        // The restart: graceful stop, then the next process on the same socket.
        let stopping = Instant::now();
        signal(child.id(), "TERM");
        assert!(exited(&mut child).await, "the old process failed to stop");
        child = start(fd());
        until_answering(addr).await;
        gaps.push(stopping.elapsed());
    }
    let before = answered.load(Ordering::SeqCst);
    assert!(common::eventually(|| answered.load(Ordering::SeqCst) >= before + 300).await);
    stop.store(true, Ordering::SeqCst);
    for client in clients {
        client.await.unwrap();
    }
    signal(child.id(), "TERM");
    assert!(exited(&mut child).await);

    let sent = sent.load(Ordering::SeqCst);
    let failures = failures.lock().unwrap();
    println!(
        "socket activation: {RESTARTS} restarts in {:.1?} with {CLIENTS} clients looping \
         (a new connection per request): {sent} requests sent, {} failed; each restart's stop \
         to first answer: {gaps:.0?}",
        started.elapsed(),
        failures.len(),
    );
    assert!(failures.is_empty(), "failed requests: {failures:?}");
    assert_eq!(answered.load(Ordering::SeqCst), sent);
}

/// An inherited Unix socket is served too, and its file stays: it is the supervisor's.
#[tokio::test]
async fn an_inherited_unix_socket_is_served_and_its_file_kept() {
    let path = common::temp_dir("activated-unix").join("http.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
    let mut child = start(OwnedFd::from(listener.try_clone().unwrap()));
    // The process answers once it is up; until then the connection waits in the backlog.
    let stream = tokio::net::UnixStream::connect(&path)
        .await
        .expect("connect");
    livez(stream)
        .await
        .expect("answered over the inherited Unix socket");
    signal(child.id(), "TERM");
    assert!(exited(&mut child).await);
    assert!(path.exists(), "the supervisor's socket file was removed");
}

/// `LISTEN_PID` naming another process: the sockets are not this process's to take, and it
/// says so instead of serving.
#[tokio::test]
async fn sockets_for_another_pid_are_not_taken() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let out = activated(OwnedFd::from(listener.try_clone().unwrap()), "1")
        .stderr(Stdio::piped())
        .output()
        .expect("run user-service");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot listen on fd:0") && stderr.contains("no inherited socket"),
        "{stderr}"
    );
}

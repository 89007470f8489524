//! Socket activation with the user-service binary: the test holds the listening socket, as
//! systemd does, and passes it to each process it starts (`LISTEN_FDS=1`, `LISTEN_PID` the
//! process's pid, the socket at file descriptor 3, `BIND=fd:0`). A restart (SIGTERM, wait for
//! the exit, start the next process on the same socket) while clients loop loses no request:
//! the connections made while no process runs wait in the socket's backlog. Clients that keep
//! connections alive need a drain delay (`DRAIN_DELAY`) for that; the control shows why.
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
/// its own pid) and `DRAIN_DELAY=drain`.
fn activated(fd: OwnedFd, listen_pid: &str, drain: &str) -> Command {
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
        .env("DRAIN_DELAY", drain)
        .stdout(Stdio::null());
    command
}

fn start(fd: OwnedFd, drain: &str) -> Child {
    activated(fd, "$$", drain)
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

/// How each looping client sends its requests.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Clients {
    /// A new connection per request (`Connection: close`).
    NewConnections,
    /// reqwest's pool: one keep-alive connection reused while the server keeps it.
    KeepAlive,
}

/// What a run of restarts measured.
struct Restarts {
    sent: u64,
    answered: u64,
    failures: Vec<String>,
}

/// The user service on a socket the test holds, restarted `RESTARTS` times (SIGTERM, wait for
/// the exit, start the next on the same socket) while two clients loop; the figures are
/// printed.
async fn restarts_under_load(clients: Clients, drain: &str) -> Restarts {
    const RESTARTS: usize = 20;
    const CLIENTS: usize = 2;
    // One at a time: the figures of two runs on the machine's two cores would mix.
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _alone = ONE_AT_A_TIME.lock().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().unwrap();
    let fd = || OwnedFd::from(listener.try_clone().expect("dup the socket"));
    let mut child = start(fd(), drain);
    until_answering(addr).await;

    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let answered = Arc::new(AtomicU64::new(0));
    let failures = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (stop, sent, answered, failures) = (
                Arc::clone(&stop),
                Arc::clone(&sent),
                Arc::clone(&answered),
                Arc::clone(&failures),
            );
            tokio::spawn(async move {
                let pool = reqwest::Client::new();
                let url = format!("http://{addr}/livez");
                // Bounded: the restarts end it well before; this is a backstop.
                let deadline = Instant::now() + Duration::from_secs(120);
                while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
                    sent.fetch_add(1, Ordering::SeqCst);
                    let outcome = match clients {
                        Clients::NewConnections => tcp_livez(addr).await,
                        Clients::KeepAlive => match pool.get(&url).send().await {
                            Ok(answer) if answer.status() == 200 => {
                                answer.bytes().await.map(drop).map_err(|e| format!("{e:?}"))
                            }
                            Ok(answer) => Err(format!("status {}", answer.status())),
                            Err(e) => Err(format!("{e:?}")),
                        },
                    };
                    match outcome {
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
        child = start(fd(), drain);
        until_answering(addr).await;
        gaps.push(stopping.elapsed());
    }
    let before = answered.load(Ordering::SeqCst);
    assert!(common::eventually(|| answered.load(Ordering::SeqCst) >= before + 300).await);
    stop.store(true, Ordering::SeqCst);
    for task in tasks {
        task.await.unwrap();
    }
    signal(child.id(), "TERM");
    assert!(exited(&mut child).await);

    let failures = std::mem::take(&mut *failures.lock().unwrap());
    let restarts = Restarts {
        sent: sent.load(Ordering::SeqCst),
        answered: answered.load(Ordering::SeqCst),
        failures,
    };
    println!(
        "socket activation, {clients:?}, DRAIN_DELAY={drain}: {RESTARTS} restarts in {:.1?} \
         with {CLIENTS} clients looping: {} requests sent, {} failed; each restart's SIGTERM \
         to the next process's first answer: {gaps:.0?}",
        started.elapsed(),
        restarts.sent,
        restarts.failures.len(),
    );
    restarts
}

/// The default `DRAIN_DELAY=0`, a new connection per request: nothing is refused, nothing cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_under_socket_activation_loses_no_request() {
    let run = restarts_under_load(Clients::NewConnections, "0").await;
    assert!(
        run.failures.is_empty(),
        "failed requests: {:?}",
        run.failures
    );
    assert_eq!(run.answered, run.sent);
}

/// Keep-alive clients with a drain delay: during it every HTTP/1 answer says
/// `Connection: close`, so no client is about to reuse a connection when the process stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_clients_lose_nothing_with_a_drain_delay() {
    let run = restarts_under_load(Clients::KeepAlive, "200ms").await;
    assert!(
        run.failures.is_empty(),
        "failed requests: {:?}",
        run.failures
    );
    assert_eq!(run.answered, run.sent);
}

/// The control: without a drain delay, an idle keep-alive connection is closed at the stop
/// while its client may be sending the next request on it (HTTP/1.1's race, which clients
/// settle by retrying; reqwest does not retry a request it has sent), and some fail. A
/// measurement of a race, not a check: it happens on most runs, not on all, so it is run by
/// hand (`cargo test -p e2e-tests --test socket_activation -- --ignored`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a race shown by hand, not a check: it does not happen on every run"]
async fn without_a_drain_delay_keep_alive_clients_can_lose_requests() {
    let run = restarts_under_load(Clients::KeepAlive, "0").await;
    assert!(
        !run.failures.is_empty(),
        "no keep-alive request failed without a drain delay"
    );
}

/// An inherited Unix socket is served too, and its file stays: it is the supervisor's.
#[tokio::test]
async fn an_inherited_unix_socket_is_served_and_its_file_kept() {
    let path = common::temp_dir("activated-unix").join("http.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
    let mut child = start(OwnedFd::from(listener.try_clone().unwrap()), "0");
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
    let out = activated(OwnedFd::from(listener.try_clone().unwrap()), "1", "0")
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

/// Taking the sockets changes the environment, which a process with several threads must not
/// do: `Listener::inherited` in a running multi-threaded runtime, with nothing taken before,
/// is an error naming the fix (the user service takes them first thing in `main`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inherited_sockets_must_be_taken_before_threads_start() {
    let err = framework::listener::Listener::inherited(0).unwrap_err();
    assert!(
        err.to_string().contains("take_inherited_sockets()"),
        "{err}"
    );
}

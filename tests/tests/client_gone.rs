//! A client that leaves while its request is in progress, as the connection's driver sees it
//! (hyper's own check is off: see `framework::server`'s connection module): the request is
//! dropped, and its guards run. Bytes the client sends meanwhile (a pipelined request, a
//! slow upload) are not taken for leaving.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use framework::body::BodyStream;
use framework::middleware::body_parser::BodyParser;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::{App, Context, Result, Service};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

/// Counts, when dropped, that a handler ended: finished or dropped mid-way.
struct Ended(Arc<AtomicUsize>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[derive(Clone)]
struct Probe {
    started: Arc<AtomicUsize>,
    ended: Arc<AtomicUsize>,
    finished: Arc<AtomicUsize>,
    gate: watch::Receiver<bool>,
}

async fn gated(ctx: &mut Context) -> Result<&'static str> {
    let probe = ctx.state().require::<Probe>()?.clone();
    probe.started.fetch_add(1, Ordering::SeqCst);
    let _ended = Ended(Arc::clone(&probe.ended));
    let mut gate = probe.gate.clone();
    let _ = gate.wait_for(|open| *open).await;
    probe.finished.fetch_add(1, Ordering::SeqCst);
    Ok("gated done")
}

/// A stream that sends a first part, then waits at the gate before the rest; [`Ended`] counts
/// when the stream is dropped.
async fn stream(ctx: &mut Context) -> Result {
    let probe = ctx.state().require::<Probe>()?.clone();
    probe.started.fetch_add(1, Ordering::SeqCst);
    let ended = Ended(Arc::clone(&probe.ended));
    let parts =
        futures_util::stream::unfold((0, probe, ended), |(sent, probe, ended)| async move {
            match sent {
                0 => Some((
                    Ok::<_, std::io::Error>(Bytes::from_static(b"first\n")),
                    (1, probe, ended),
                )),
                1 => {
                    let mut gate = probe.gate.clone();
                    let _ = gate.wait_for(|open| *open).await;
                    probe.finished.fetch_add(1, Ordering::SeqCst);
                    Some((Ok(Bytes::from_static(b"rest\n")), (2, probe, ended)))
                }
                _ => None,
            }
        });
    ctx.body_mut().set_stream(BodyStream::from_stream(parts));
    Ok(())
}

async fn hello(_ctx: &mut Context) -> Result<&'static str> {
    Ok("hello")
}

async fn len(ctx: &mut Context) -> Result<String> {
    Ok(ctx.request_body().len().to_string())
}

fn service(probe: &Probe) -> Service {
    App::new()
        .with_state(probe.clone())
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(BodyParser::default())
        .get("/gated", gated)
        .get("/hello", hello)
        .get("/stream", stream)
        .post("/len", len)
        .build()
        .unwrap()
}

fn probe() -> (Probe, watch::Sender<bool>) {
    let (open, gate) = watch::channel(false);
    let probe = Probe {
        started: Arc::default(),
        ended: Arc::default(),
        finished: Arc::default(),
        gate,
    };
    (probe, open)
}

const GATED: &[u8] = b"GET /gated HTTP/1.1\r\nHost: t\r\n\r\n";
const HELLO: &[u8] = b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n";

/// Reads until what came satisfies `done` (and returns it); fails on a close before that or
/// after 5 s without a byte.
async fn read_until(socket: &mut tokio::net::TcpStream, done: impl Fn(&str) -> bool) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&out);
        if done(&text) {
            return text.into_owned();
        }
        let n = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf))
            .await
            .expect("an answer in time")
            .unwrap();
        assert_ne!(n, 0, "closed after: {text}");
        out.extend_from_slice(&buf[..n]);
    }
}

/// Reads until `count` responses have come, the last ending with `last`.
async fn read_responses(socket: &mut tokio::net::TcpStream, count: usize, last: &str) -> String {
    read_until(socket, |text| {
        text.matches("HTTP/1.1 ").count() >= count && text.ends_with(last)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_while_its_handler_waits_ends_the_request() {
    let (probe, _open) = probe();
    let server = common::start(service(&probe)).await;
    let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    socket.write_all(GATED).await.unwrap();
    common::wait_for(|| probe.started.load(Ordering::SeqCst) == 1).await;
    // Still waiting: nothing ended it.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(probe.ended.load(Ordering::SeqCst), 0);
    drop(socket);
    common::wait_for(|| probe.ended.load(Ordering::SeqCst) == 1).await;
    assert_eq!(
        probe.finished.load(Ordering::SeqCst),
        0,
        "dropped, not finished"
    );
    // The server goes on.
    let res = common::raw_get(server.addr, "/hello").await;
    assert_eq!(res.text(), "hello");
    server.stop().await;
}

/// A client that leaves while its response is being sent, with nothing being written (the
/// stream waits): the stream is dropped then, not when it would next write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_while_its_response_waits_drops_the_stream() {
    let (probe, _open) = probe();
    let server = common::start(service(&probe)).await;
    let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    socket
        .write_all(b"GET /stream HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    read_until(&mut socket, |text| text.contains("first")).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(probe.ended.load(Ordering::SeqCst), 0, "the stream waits");
    drop(socket);
    common::wait_for(|| probe.ended.load(Ordering::SeqCst) == 1).await;
    assert_eq!(
        probe.finished.load(Ordering::SeqCst),
        0,
        "dropped at the gate"
    );
    server.stop().await;
}

/// As hyper's default takes it: a client that shuts its write side after a request has left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_half_closes_after_its_request_is_taken_as_gone() {
    let (probe, _open) = probe();
    let server = common::start(service(&probe)).await;
    let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    socket.write_all(GATED).await.unwrap();
    common::wait_for(|| probe.started.load(Ordering::SeqCst) == 1).await;
    socket.shutdown().await.unwrap();
    common::wait_for(|| probe.ended.load(Ordering::SeqCst) == 1).await;
    assert_eq!(probe.finished.load(Ordering::SeqCst), 0);
    // The connection is closed with no answer.
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), socket.read_to_end(&mut rest))
        .await
        .expect("closed")
        .ok();
    assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
    server.stop().await;
}

/// A pipelined request waits in the socket while the first is handled (hyper reads no more
/// until it has answered): it is neither taken for the client leaving nor lost, and both are
/// answered in order. Sent once the first is being handled, so it is in the socket, not
/// already in hyper's buffer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_pipelined_behind_a_waiting_one_is_answered_after_it() {
    let (probe, open) = probe();
    let server = common::start(service(&probe)).await;
    let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    socket.write_all(GATED).await.unwrap();
    common::wait_for(|| probe.started.load(Ordering::SeqCst) == 1).await;
    socket.write_all(HELLO).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        probe.ended.load(Ordering::SeqCst),
        0,
        "the request was dropped"
    );
    open.send_replace(true);
    let text = read_responses(&mut socket, 2, "hello").await;
    let gated = text.find("gated done").expect("first answer");
    let hello = text.find("hello").expect("second answer");
    assert!(gated < hello, "{text}");
    assert_eq!(probe.finished.load(Ordering::SeqCst), 1);
    // The connection is still usable.
    socket.write_all(HELLO).await.unwrap();
    read_responses(&mut socket, 1, "hello").await;
    server.stop().await;
}

/// An upload that trickles in, with pauses: the connection is watched between the parts (a
/// request is in progress and nothing is to be read), the pauses are not taken for the
/// client leaving, and the whole body arrives through the shared socket's reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_upload_is_read_whole() {
    let (probe, _open) = probe();
    let server = common::start(service(&probe)).await;
    let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    // A JSON string: the body parser reads JSON (and forms), and stores it as received.
    let body = format!("\"{}\"", "x".repeat(29_998));
    socket
        .write_all(
            format!(
                "POST /len HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    for part in body.as_bytes().chunks(10_000) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        socket.write_all(part).await.unwrap();
    }
    let answer = read_until(&mut socket, |text| text.ends_with("30000")).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    server.stop().await;
}

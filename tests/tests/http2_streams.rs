//! HTTP/2 streams run in their connection's task (`server::connection::streams`), over real
//! sockets with the `h2` crate's client and raw frames: a panic ends its stream alone; the
//! streams of a connection that closes are dropped with it (their guards run); the stream
//! limit is advertised and kept; many streams in flight on one connection are all answered;
//! and the protections hyper's HTTP/2 server gives (rapid reset, CONTINUATION floods) still
//! hold.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use framework::middleware::responder::Responder;
use framework::{App, Context, Result, Service};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Counts drops of the guards the slow handler holds.
#[derive(Default)]
struct Dropped(AtomicUsize);

struct Guard(Arc<Dropped>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// `/json` answers at once, `/boom` panics (no recover middleware here), `/slow` holds a
/// guard for a minute, `/wait` answers after 300 ms, `/hold` after 3 s; `handled` counts the
/// handlers reached.
fn service(dropped: &Arc<Dropped>, handled: &Arc<AtomicUsize>) -> Service {
    let dropped = Arc::clone(dropped);
    let (h1, h2, h3, h4, h5) = (
        Arc::clone(handled),
        Arc::clone(handled),
        Arc::clone(handled),
        Arc::clone(handled),
        Arc::clone(handled),
    );
    App::bare()
        .use_middleware(Responder::default())
        .get("/json", move |_ctx: &mut Context| {
            h1.fetch_add(1, Ordering::SeqCst);
            async { Ok(serde_json::json!({ "message": "Hello, World!" })) }
        })
        .get("/boom", move |_ctx: &mut Context| {
            h2.fetch_add(1, Ordering::SeqCst);
            async {
                if std::hint::black_box(true) {
                    panic!("a handler that panics");
                }
                Ok("unreachable")
            }
        })
        .get("/wait", move |_ctx: &mut Context| {
            h4.fetch_add(1, Ordering::SeqCst);
            async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                Ok("waited")
            }
        })
        .get("/hold", move |_ctx: &mut Context| {
            h5.fetch_add(1, Ordering::SeqCst);
            async {
                tokio::time::sleep(Duration::from_secs(3)).await;
                Ok("held")
            }
        })
        .get("/slow", move |_ctx: &mut Context| {
            h3.fetch_add(1, Ordering::SeqCst);
            let guard = Guard(Arc::clone(&dropped));
            async move {
                tokio::time::sleep(Duration::from_secs(60)).await;
                drop(guard);
                Result::Ok("late")
            }
        })
        .build()
        .expect("builds")
}

async fn h2_client(
    addr: std::net::SocketAddr,
) -> (
    h2::client::SendRequest<Bytes>,
    tokio::task::JoinHandle<std::result::Result<(), h2::Error>>,
) {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (send, connection) = h2::client::handshake(tcp).await.expect("handshake");
    (send, tokio::spawn(connection))
}

/// Sends `GET path` (no body) once the connection takes another stream: the sender back, and
/// the answer to come.
async fn send_get(
    send: h2::client::SendRequest<Bytes>,
    addr: std::net::SocketAddr,
    path: &str,
) -> (h2::client::SendRequest<Bytes>, h2::client::ResponseFuture) {
    let mut send = send.ready().await.expect("ready");
    let (answer, _) = send.send_request(get(addr, path), true).expect("send");
    (send, answer)
}

/// A new client's `GET /json` on a connection of its own is answered.
async fn another_client_is_served(addr: std::net::SocketAddr) {
    let (other, _connection) = h2_client(addr).await;
    let (_other, answer) = send_get(other, addr, "/json").await;
    assert_eq!(answer.await.expect("answered").status(), 200);
}

fn get(addr: std::net::SocketAddr, path: &str) -> http::Request<()> {
    http::Request::get(format!("http://{addr}{path}"))
        .body(())
        .expect("request")
}

async fn body_of(response: http::Response<h2::RecvStream>) -> Bytes {
    let mut body = response.into_body();
    let mut all = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.expect("data");
        let _ = body.flow_control().release_capacity(chunk.len());
        all.extend_from_slice(&chunk);
    }
    Bytes::from(all)
}

/// A panic in one stream resets that stream; the other streams of the connection, in flight
/// at the same time and after it, are answered.
#[tokio::test]
async fn a_panicking_stream_is_reset_and_its_connection_serves_the_others() {
    let (dropped, handled) = (Arc::default(), Arc::default());
    let server = common::start(service(&dropped, &handled)).await;
    let (send, _connection) = h2_client(server.addr).await;
    let (send, before) = send_get(send, server.addr, "/json").await;
    let (send, boom) = send_get(send, server.addr, "/boom").await;
    let (send, after) = send_get(send, server.addr, "/json").await;

    let boom = boom.await.expect_err("the panicking stream is reset");
    assert!(boom.is_reset(), "{boom:?}");
    for answer in [before, after] {
        let answer = answer.await.expect("answered");
        assert_eq!(answer.status(), 200);
        assert!(body_of(answer).await.starts_with(b"{\"message\""));
    }
    // And one more on the same connection.
    let (_send, again) = send_get(send, server.addr, "/json").await;
    assert_eq!(again.await.expect("answered").status(), 200);
    server.stop().await;
}

/// When the client closes the connection, the streams still being handled are dropped with
/// it, so what they hold is given back at once rather than when their handlers would have
/// ended.
#[tokio::test]
async fn a_closed_connection_drops_its_unfinished_streams() {
    let (dropped, handled) = (Arc::<Dropped>::default(), Arc::<AtomicUsize>::default());
    let server = common::start(service(&dropped, &handled)).await;
    let (mut send, connection) = h2_client(server.addr).await;
    let mut pending = Vec::new();
    for _ in 0..3 {
        let (next, answer) = send_get(send, server.addr, "/slow").await;
        pending.push(answer);
        send = next;
    }
    assert!(
        common::eventually(|| handled.load(Ordering::SeqCst) == 3).await,
        "the three handlers started"
    );
    assert_eq!(dropped.0.load(Ordering::SeqCst), 0);
    // Gone: the client's side of the connection is dropped (its socket closed).
    connection.abort();
    drop((send, pending));
    assert!(
        common::eventually(|| dropped.0.load(Ordering::SeqCst) == 3).await,
        "the three handlers were dropped with their connection ({} of 3)",
        dropped.0.load(Ordering::SeqCst)
    );
    server.stop().await;
}

/// A graceful shutdown lets the streams in flight finish: the connection ends only after
/// they have been answered.
#[tokio::test]
async fn a_graceful_shutdown_answers_the_streams_in_flight() {
    let (dropped, handled) = (Arc::default(), Arc::default());
    let mut server = common::start(service(&dropped, &handled)).await;
    let (mut send, connection) = h2_client(server.addr).await;
    let mut answers = Vec::new();
    for _ in 0..4 {
        let (next, answer) = send_get(send, server.addr, "/wait").await;
        answers.push(answer);
        send = next;
    }
    assert!(
        common::eventually(|| handled.load(Ordering::SeqCst) == 4).await,
        "the four handlers started"
    );
    let stopped = server.signal_shutdown();
    for answer in answers {
        let answer = answer.await.expect("answered during the shutdown");
        assert_eq!(answer.status(), 200);
        assert_eq!(body_of(answer).await, "waited");
    }
    drop(send);
    let _ = tokio::time::timeout(Duration::from_secs(5), connection)
        .await
        .expect("the connection ends after its streams");
    tokio::time::timeout(Duration::from_secs(5), stopped)
        .await
        .expect("the server stops")
        .expect("server task")
        .expect("server result");
}

/// The server advertises its stream limit (hyper's 200), and many streams in flight on one
/// connection, up to it, are all answered.
#[tokio::test]
async fn the_stream_limit_is_advertised_and_streams_up_to_it_are_answered() {
    let (dropped, handled) = (Arc::default(), Arc::default());
    let server = common::start(service(&dropped, &handled)).await;
    let (send, _connection) = h2_client(server.addr).await;
    // The server's SETTINGS came with the handshake's first round trip.
    let (mut send, first) = send_get(send, server.addr, "/json").await;
    assert_eq!(first.await.expect("answered").status(), 200);
    assert_eq!(send.current_max_send_streams(), 200);
    let mut answers = Vec::new();
    for _ in 0..200 {
        let (next, answer) = send_get(send, server.addr, "/json").await;
        answers.push(answer);
        send = next;
    }
    for answer in answers {
        let answer = answer.await.expect("answered");
        assert_eq!(answer.status(), 200);
        assert!(body_of(answer).await.starts_with(b"{\"message\""));
    }
    server.stop().await;
}

/// A stream over the advertised limit is refused by the server itself (`RST_STREAM`
/// `REFUSED_STREAM`, RFC 9113 section 5.1.2), and the connection lives on: 200 streams held
/// in flight together on raw frames (a client library would queue the 201st itself), then one
/// more; the 200 are answered after it.
#[tokio::test]
async fn a_stream_over_the_limit_is_refused_and_the_connection_lives() {
    let (dropped, handled) = (Arc::default(), Arc::<AtomicUsize>::default());
    let server = common::start(service(&dropped, &handled)).await;
    let mut tcp = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    // `GET /hold`: `:method GET` (indexed 2), `:scheme http` (6), `:path /hold` and
    // `:authority t` as literals without indexing (names 4 and 1).
    let block = [
        0x82, 0x86, 0x04, 5, b'/', b'h', b'o', b'l', b'd', 0x01, 1, b't',
    ];
    let mut opening = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    opening.extend(frame(0x4, 0, 0, &[])); // SETTINGS
    for i in 0..200u32 {
        // HEADERS with END_STREAM and END_HEADERS.
        opening.extend(frame(0x1, 0x5, 2 * i + 1, &block));
    }
    tcp.write_all(&opening).await.expect("write");
    assert!(
        common::eventually(|| handled.load(Ordering::SeqCst) == 200).await,
        "200 streams in flight ({} reached)",
        handled.load(Ordering::SeqCst)
    );
    let over = 401;
    tcp.write_all(&frame(0x1, 0x5, over, &block))
        .await
        .expect("write");
    // Frames until the refusal and the 200 answers (HEADERS on streams 1 to 399).
    let mut refused = None;
    let mut answered = std::collections::BTreeSet::new();
    let read = async {
        while refused.is_none() || answered.len() < 200 {
            let mut head = [0u8; 9];
            tcp.read_exact(&mut head).await.expect("a frame");
            let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
            let (kind, flags) = (head[3], head[4]);
            let stream = u32::from_be_bytes([head[5] & 0x7f, head[6], head[7], head[8]]);
            let mut payload = vec![0u8; len];
            tcp.read_exact(&mut payload).await.expect("its payload");
            match kind {
                // The server's SETTINGS: acknowledged.
                0x4 if flags & 1 == 0 => {
                    tcp.write_all(&frame(0x4, 1, 0, &[])).await.expect("ack");
                }
                0x3 if stream == over => {
                    refused = Some(u32::from_be_bytes(payload[..4].try_into().unwrap()));
                }
                0x1 if stream < over => {
                    answered.insert(stream);
                }
                0x7 => panic!("GOAWAY: the connection was closed"),
                _ => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(15), read)
        .await
        .expect("the refusal and the answers within 15 s");
    assert_eq!(refused, Some(0x7), "RST_STREAM REFUSED_STREAM");
    assert_eq!(answered.len(), 200, "the streams in flight were answered");
    assert_eq!(
        handled.load(Ordering::SeqCst),
        200,
        "the refused one ran no handler"
    );
    server.stop().await;
}

/// Rapid reset (CVE-2023-44487): a client that opens streams and cancels them at once, over
/// and over, is sent GOAWAY (ENHANCE_YOUR_CALM) and cut off, having reached few handlers;
/// another client is served after it.
#[tokio::test]
async fn a_rapid_reset_client_is_cut_off() {
    let (dropped, handled) = (Arc::default(), Arc::<AtomicUsize>::default());
    let server = common::start(service(&dropped, &handled)).await;
    let (send, connection) = h2_client(server.addr).await;
    let mut send = Some(send);
    let mut opened = 0;
    for _ in 0..10_000 {
        let Some(ready) = send.take() else { break };
        let Ok(mut ready) = tokio::time::timeout(Duration::from_secs(2), ready.ready())
            .await
            .unwrap_or_else(|_| panic!("the client stalled after {opened} streams"))
        else {
            break;
        };
        let Ok((answer, mut body)) = ready.send_request(get(server.addr, "/slow"), false) else {
            break;
        };
        // Cancelled at once: RST_STREAM(CANCEL) follows the HEADERS.
        body.send_reset(h2::Reason::CANCEL);
        drop(answer);
        opened += 1;
        send = Some(ready);
    }
    let ended = tokio::time::timeout(Duration::from_secs(5), connection)
        .await
        .expect("the connection ends")
        .expect("the connection task");
    let error = ended.expect_err("the server closed the connection");
    // GOAWAY(ENHANCE_YOUR_CALM) when the client read it before its next write, else the
    // write into the closed socket.
    assert!(
        error.reason() == Some(h2::Reason::ENHANCE_YOUR_CALM) || error.is_io(),
        "{error:?} after {opened} streams"
    );
    let reached = handled.load(Ordering::SeqCst);
    println!("rapid reset: {opened} streams sent, {reached} reached a handler, then {error}");
    assert!(
        reached < 1_000,
        "few streams reached a handler: {reached} of {opened}"
    );
    another_client_is_served(server.addr).await;
    server.stop().await;
}

/// One HTTP/2 frame: length, type, flags, stream id, payload.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).expect("fits");
    let mut out = len.to_be_bytes()[1..].to_vec();
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A CONTINUATION flood (CVE-2024-27316's kind): a header block that never ends, frame after
/// frame, is refused once it passes the header list limit and the connection is closed;
/// another client is served.
#[tokio::test]
async fn a_continuation_flood_is_refused() {
    let (dropped, handled) = (Arc::default(), Arc::default());
    let server = common::start(service(&dropped, &handled)).await;
    let mut tcp = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    let mut opening = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    opening.extend(frame(0x4, 0, 0, &[])); // SETTINGS
    // HEADERS without END_HEADERS: `:method GET` (indexed 2), `:path /` (4), `:scheme http` (6).
    opening.extend(frame(0x1, 0x1, 1, &[0x82, 0x84, 0x86]));
    tcp.write_all(&opening).await.expect("write");
    // CONTINUATION frames without END_HEADERS, each a 16 000-byte literal header
    // (`x-flood: aaa…`, literal without indexing, new name), up to 64 MB in all.
    let mut block = vec![0x00, 7];
    block.extend_from_slice(b"x-flood");
    // A 16 000-byte value: HPACK integer with a 7-bit prefix, 127 then 15 873 in base 128.
    let rest = 16_000 - 127;
    block.extend_from_slice(&[0x7f, (rest % 128) as u8 | 0x80, (rest / 128) as u8]);
    block.extend(std::iter::repeat_n(b'a', 16_000));
    let continuation = frame(0x9, 0, 1, &block);
    let mut sent = 0usize;
    let flood = async {
        for _ in 0..4_000 {
            if tcp.write_all(&continuation).await.is_err() {
                break;
            }
            sent += continuation.len();
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(10), flood).await;
    assert!(
        sent < 64 << 20,
        "the server stopped reading the flood ({sent} bytes taken)"
    );
    // What the server sent: its SETTINGS, then GOAWAY or a plain close.
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut answer)).await;
    let closed = match read {
        Ok(Ok(_)) => true,
        Ok(Err(e)) => matches!(
            e.kind(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
        ),
        Err(_) => false,
    };
    assert!(closed, "the connection is closed");
    assert_eq!(handled.load(Ordering::SeqCst), 0, "no handler ran");
    another_client_is_served(server.addr).await;
    server.stop().await;
}

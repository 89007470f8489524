//! Timeout over a real socket: a handler just under the deadline is answered, one over it
//! gets the 503 at the deadline; the keyed concurrent limiter's lock of an abandoned request is
//! free for the next one at once; a streamed body that idles is cut and its keep-alive
//! connection closed, while one that keeps producing outlives the deadline; the time a handler
//! waits for a steady upload is left out of the deadline.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use framework::body::BodyStream;
use framework::middleware::concurrent_limiter::{ConcurrentLimiter, ConcurrentLimiterConfig};
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::timeout::{Timeout, TimeoutConfig};
use framework::{App, Context, Result, share};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const DEADLINE: Duration = Duration::from_millis(400);
const IDLE: Duration = Duration::from_millis(300);

async fn sleepy(ctx: &mut Context) -> Result<String> {
    let ms: u64 = ctx.query("ms").and_then(|ms| ms.parse().ok()).unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(format!("slept {ms} ms"))
}

/// Chunks every `?every=` ms, `?n=` of them, then (with `?stall`) silence for an hour.
async fn ticking(ctx: &mut Context) -> Result {
    let every = Duration::from_millis(ctx.query("every").and_then(|v| v.parse().ok()).unwrap());
    let n: u32 = ctx.query("n").and_then(|v| v.parse().ok()).unwrap();
    let stall = ctx.query("stall").is_some();
    let chunks = framework::body::stream::unfold(0, move |i| async move {
        if i == n {
            if !stall {
                return None;
            }
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        if i > 0 {
            tokio::time::sleep(every).await;
        }
        Some((
            Ok::<_, std::io::Error>(Bytes::from(format!("tick {i}\n"))),
            i + 1,
        ))
    });
    ctx.body_mut().set_stream(BodyStream::from_stream(chunks));
    Ok(())
}

/// Reads the whole request body, then sleeps `?ms=`: the body's length.
async fn upload(ctx: &mut Context) -> Result<String> {
    let body = ctx.take_raw_body().read_limited(1 << 20).await;
    let body = body.map_err(|e| framework::HttpError::new(format!("{e:?}")))?;
    let ms: u64 = ctx.query("ms").and_then(|ms| ms.parse().ok()).unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(format!("{} bytes", body.len()))
}

/// `POST target` with a body of `pieces` × 100 bytes, one piece every 100 ms (1000 bytes/s,
/// above the server's minimum rate), and the answer's status line and body.
async fn trickle(server: &common::Running, target: &str, pieces: usize) -> (u16, String) {
    let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let head = format!(
        "POST {target} HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        pieces * 100
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    for _ in 0..pieces {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if socket.write_all(&[b'u'; 100]).await.is_err() {
            break;
        }
    }
    let mut answer = Vec::new();
    let _ = socket.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    (status, body)
}

async fn server() -> common::Running {
    let limiter =
        ConcurrentLimiter::new(ConcurrentLimiterConfig::default().keys(vec!["h:x-account".into()]))
            .unwrap();
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(
            Timeout::new(
                TimeoutConfig::default()
                    .deadline(DEADLINE)
                    .stream_idle(Some(IDLE)),
            )
            .unwrap(),
        )
        .get("/sleep", sleepy)
        .route_with(http::Method::GET, "/locked", vec![share(limiter)], sleepy)
        .get("/ticks", ticking)
        .post("/upload", upload)
        .group(
            framework::Group::new("/nested")
                .use_middleware(
                    Timeout::new(TimeoutConfig::default().deadline(Duration::from_secs(5)))
                        .unwrap(),
                )
                .post("/upload", upload),
        )
        .build()
        .unwrap();
    common::start(service).await
}

#[tokio::test]
async fn the_deadline_answers_503_at_the_deadline_and_not_before() {
    let server = server().await;
    let client = common::browser();
    let res = client
        .get(server.url("/sleep?ms=250"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.text().await.unwrap(), "slept 250 ms");

    let started = Instant::now();
    let res = client
        .get(server.url("/sleep?ms=5000"))
        .send()
        .await
        .unwrap();
    let took = started.elapsed();
    assert_eq!(res.status(), 503);
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body["category"], "framework-timeout");
    assert!(took >= DEADLINE, "{took:?}");
    assert!(
        took < Duration::from_secs(2),
        "answered at the deadline: {took:?}"
    );
    server.stop().await;
}

/// An upload that arrives steadily for three times the deadline is not a hang: the time the
/// handler waits for it is left out. What the handler does after it still counts.
#[tokio::test]
async fn the_deadline_leaves_out_the_wait_for_a_steady_upload() {
    let server = server().await;
    let started = Instant::now();
    let (status, body) = trickle(&server, "/upload", 12).await;
    assert_eq!((status, body.as_str()), (200, "1200 bytes"));
    assert!(started.elapsed() >= 3 * DEADLINE, "{:?}", started.elapsed());
    // The same upload, then 600 ms of the handler's own: over the deadline, 503.
    let (status, body) = trickle(&server, "/upload?ms=600", 12).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("framework-timeout"), "{body}");
    // Under a route's own longer timeout inside the app's: both leave the wait out.
    let (status, body) = trickle(&server, "/nested/upload", 12).await;
    assert_eq!((status, body.as_str()), (200, "1200 bytes"));
    server.stop().await;
}

#[tokio::test]
async fn a_timed_out_request_leaves_the_lock_to_the_next_one_at_once() {
    let server = server().await;
    let client = common::browser();
    let res = client
        .get(server.url("/locked?ms=60000"))
        .header("x-account", "ada")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    // Without the abandoned future's guard dropped, this would be 429 `submit too frequently`.
    let started = Instant::now();
    let res = client
        .get(server.url("/locked?ms=0"))
        .header("x-account", "ada")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(started.elapsed() < Duration::from_millis(200));
    server.stop().await;
}

#[tokio::test]
async fn a_stream_that_keeps_producing_outlives_the_deadline() {
    let server = server().await;
    // 6 chunks 150 ms apart: 750 ms in all, nearly twice the deadline, never idle 300 ms.
    let res = common::browser()
        .get(server.url("/ticks?every=150&n=6"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let text = res.text().await.unwrap();
    assert_eq!(text.lines().count(), 6, "{text}");
    server.stop().await;
}

#[tokio::test]
async fn an_idle_stream_is_cut_and_its_connection_closed() {
    let server = server().await;
    // Keep-alive: the socket reaches its end only if the server closes the connection.
    let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    socket
        .write_all(b"GET /ticks?every=50&n=2&stall HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let mut received = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), socket.read_to_end(&mut received))
        .await
        .expect("the server closes the connection when the stream idles")
        .expect("read");
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&received);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.contains("tick 0\n") && text.contains("tick 1\n"),
        "{text}"
    );
    assert!(
        !text.ends_with("0\r\n\r\n"),
        "no final chunk: the body failed rather than ended: {text}"
    );
    assert!(took >= IDLE, "{took:?}");
    assert!(took < Duration::from_secs(3), "{took:?}");

    // The same through a client: the body fails after the chunks that came.
    let mut res = common::browser()
        .get(server.url("/ticks?every=50&n=1&stall"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let mut got = Vec::new();
    let failure = loop {
        match res.chunk().await {
            Ok(Some(chunk)) => got.extend_from_slice(&chunk),
            Ok(None) => panic!("the body ended normally"),
            Err(err) => break err,
        }
    };
    assert_eq!(got, b"tick 0\n");
    assert!(failure.is_body() || failure.is_decode(), "{failure}");
    server.stop().await;
}

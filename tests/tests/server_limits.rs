//! Slow and idle clients over raw sockets: each kind is closed within its limit, requests being
//! handled are not cut, a normal client keeps being answered while hundreds of slow ones are
//! connected, and shutdown does not wait for half-received requests.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use framework::middleware::body_parser::BodyParser;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::{App, Context, MinDataRate, Result, ServerLimits, Service};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const HEAD: Duration = Duration::from_millis(400);
const IDLE: Duration = Duration::from_millis(1200);
const BODY: Duration = Duration::from_millis(400);
/// Timers never fire early; they may fire late on a loaded machine.
const SLACK: Duration = Duration::from_secs(3);

fn limits() -> ServerLimits {
    ServerLimits::default()
        .header_read_timeout(HEAD)
        .keep_alive_timeout(IDLE)
        .body_read_timeout(BODY)
        .shutdown_timeout(Duration::from_secs(30))
}

async fn echo(ctx: &mut Context) -> Result<String> {
    Ok(String::from_utf8_lossy(ctx.request_body()).into_owned())
}

/// The `mark`s of the `/slow` requests whose handler has started.
static SLOW_STARTED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

async fn slow(ctx: &mut Context) -> Result<&'static str> {
    if let Some(mark) = ctx.query("mark") {
        SLOW_STARTED.lock().unwrap().push(mark.to_string());
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    Ok("slow ok")
}

/// Two chunks with a pause longer than every timer between them.
async fn paused_stream(ctx: &mut Context) -> Result {
    let body = futures_util::stream::unfold(0, |i| async move {
        match i {
            0 => Some((Ok::<_, std::io::Error>(bytes::Bytes::from("first ")), 1)),
            1 => {
                tokio::time::sleep(IDLE + HEAD).await;
                Some((Ok(bytes::Bytes::from("second")), 2))
            }
            _ => None,
        }
    });
    ctx.body_mut()
        .set_stream(framework::body::BodyStream::from_stream(body));
    Ok(())
}

fn service(limits: ServerLimits) -> Service {
    App::new()
        .server_limits(limits)
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(BodyParser::default())
        .get("/", |_ctx: &mut Context| async { Ok("ok") })
        .post("/echo", echo)
        .get("/slow", slow)
        .get("/stream", paused_stream)
        .build()
        .expect("app builds")
}

/// Reads until the peer closes (or resets) the connection; how long that took.
async fn time_to_close(stream: &mut TcpStream, start: Instant) -> Duration {
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(Duration::from_secs(30), stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return start.elapsed(),
            Ok(Ok(_)) => {}
            Err(_) => panic!("connection still open after 30 s"),
        }
    }
}

fn assert_closed_at(elapsed: Duration, limit: Duration) {
    assert!(
        elapsed + Duration::from_millis(20) >= limit,
        "closed after {elapsed:?}, before its limit {limit:?}"
    );
    assert!(
        elapsed <= limit + SLACK,
        "closed after {elapsed:?}, limit {limit:?}"
    );
}

/// One whole response from a kept-alive connection (Content-Length framed).
async fn read_response(stream: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .expect("response within 10 s")
            .expect("read");
        assert!(n > 0, "closed before the response was complete");
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().expect("length"))
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                return text;
            }
        }
    }
}

#[tokio::test]
async fn silent_connection_closed_after_the_header_timeout() {
    let server = common::start(service(limits())).await;
    let start = Instant::now();
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    let elapsed = time_to_close(&mut stream, start).await;
    assert_closed_at(elapsed, HEAD);
    server.stop().await;
}

#[tokio::test]
async fn slowloris_closed_while_its_bytes_still_trickle_in() {
    let server = common::start(service(limits())).await;
    let start = Instant::now();
    let stream = TcpStream::connect(server.addr).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let (mut read, mut write) = stream.into_split();
    let writer = tokio::spawn(async move {
        if write
            .write_all(b"GET / HTTP/1.1\r\nHost: test\r\n")
            .await
            .is_err()
        {
            return;
        }
        // A header byte every 50 ms, forever: only the head deadline stops it.
        while write.write_all(b"x").await.is_ok() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let mut buf = [0u8; 256];
    let elapsed = loop {
        match tokio::time::timeout(Duration::from_secs(30), read.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => break start.elapsed(),
            Ok(Ok(_)) => {}
            Err(_) => panic!("slowloris still connected after 30 s"),
        }
    };
    assert_closed_at(elapsed, HEAD);
    writer.abort();
    server.stop().await;
}

#[tokio::test]
async fn idle_keep_alive_lasts_the_keep_alive_timeout_not_the_header_timeout() {
    let server = common::start(service(limits())).await;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    let request = b"GET / HTTP/1.1\r\nHost: test\r\n\r\n";
    stream.write_all(request).await.expect("write");
    assert!(read_response(&mut stream).await.starts_with("HTTP/1.1 200"));
    // Idle longer than the head timeout, shorter than the idle timeout: still open.
    tokio::time::sleep(HEAD * 2).await;
    stream.write_all(request).await.expect("write");
    let answer = read_response(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let start = Instant::now();
    let elapsed = time_to_close(&mut stream, start).await;
    assert_closed_at(elapsed, IDLE);
    server.stop().await;
}

#[tokio::test]
async fn stalled_body_gets_408_and_the_connection_closes() {
    let server = common::start(service(limits())).await;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    let start = Instant::now();
    stream
        .write_all(b"POST /echo HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{\"a\":")
        .await
        .expect("write");
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut buf))
        .await
        .expect("closed within 30 s")
        .expect("read");
    let elapsed = start.elapsed();
    let text = String::from_utf8_lossy(&buf);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("request body read timed out"), "{text}");
    assert_closed_at(elapsed, BODY);
    server.stop().await;
}

#[tokio::test]
async fn a_slow_body_within_the_chunk_timeout_is_read_whole() {
    let server = common::start(service(limits())).await;
    let stream = TcpStream::connect(server.addr).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let mut stream = stream;
    stream
        .write_all(b"POST /echo HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 7\r\nConnection: close\r\n\r\n")
        .await
        .expect("write");
    // Seven chunks, each well within the chunk timeout, together well over it.
    for byte in br#"{"a":1}"# {
        tokio::time::sleep(BODY / 4).await;
        stream.write_all(&[*byte]).await.expect("write");
    }
    let mut buf = Vec::new();
    stream.read_to_end(&mut buf).await.expect("read");
    let text = String::from_utf8_lossy(&buf);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.ends_with(r#"{"a":1}"#), "{text}");
    server.stop().await;
}

#[tokio::test]
async fn a_trickling_body_gets_408_once_it_falls_below_the_minimum_rate() {
    let grace = Duration::from_secs(1);
    let server = common::start(service(
        limits()
            // The gap between chunks alone would never fire.
            .body_read_timeout(Duration::from_secs(30))
            .body_min_rate(Some(MinDataRate {
                bytes_per_second: 100,
                grace,
            })),
    ))
    .await;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let start = Instant::now();
    stream
        .write_all(b"POST /echo HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
        .await
        .expect("write");
    // One byte every 300 ms: 3 bytes/s, far below 100.
    let trickle = async {
        for _ in 0..100 {
            if stream.write_all(b" ").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    };
    let _ = tokio::time::timeout(grace + Duration::from_millis(500), trickle).await;
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut buf))
        .await
        .expect("closed")
        .expect("read");
    let text = String::from_utf8_lossy(&buf);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert_closed_at(start.elapsed(), grace);
    server.stop().await;
}

#[tokio::test]
async fn a_body_above_the_minimum_rate_is_read_whole() {
    let server = common::start(service(limits().body_min_rate(Some(MinDataRate {
        bytes_per_second: 100,
        grace: Duration::from_millis(200),
    }))))
    .await;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let body = format!("{{\"a\":\"{}\"}}", "x".repeat(592));
    stream
        .write_all(format!("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len()).as_bytes())
        .await
        .expect("write");
    // 600 bytes in 6 chunks 100 ms apart: about 1 000 bytes/s, well above 100.
    for chunk in body.as_bytes().chunks(100) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        stream.write_all(chunk).await.expect("write");
    }
    let mut buf = Vec::new();
    stream.read_to_end(&mut buf).await.expect("read");
    let text = String::from_utf8_lossy(&buf);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.ends_with(&body), "{text}");
    server.stop().await;
}

#[tokio::test]
async fn a_request_being_handled_outlives_the_idle_and_head_timers() {
    let server = common::start(service(limits())).await;
    // The handler takes longer than both timers; its answer still arrives.
    let answer = common::raw_get(server.addr, "/slow").await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.text(), "slow ok");
    // A streamed answer that pauses longer than both timers is sent whole.
    let answer = common::raw_get(server.addr, "/stream").await;
    assert_eq!(answer.status, 200);
    assert!(answer.text().contains("first "), "{}", answer.text());
    assert!(answer.text().contains("second"), "{}", answer.text());
    server.stop().await;
}

#[tokio::test]
async fn a_normal_client_is_answered_while_500_slow_clients_are_connected() {
    let _ = rlimit::increase_nofile_limit(8192);
    let slow_limit = Duration::from_secs(5);
    let server = common::start(service(limits().header_read_timeout(slow_limit))).await;
    let mut slow = Vec::new();
    for _ in 0..500 {
        let mut stream = TcpStream::connect(server.addr).await.expect("connect");
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: te")
            .await
            .expect("write");
        slow.push(stream);
    }
    let start = Instant::now();
    for _ in 0..20 {
        let answer = common::raw_get(server.addr, "/").await;
        assert_eq!(answer.status, 200);
    }
    assert!(
        start.elapsed() < slow_limit,
        "normal requests waited for the slow clients ({:?})",
        start.elapsed()
    );
    // And every slow client is closed at its head deadline.
    let mut closed = 0;
    for stream in &mut slow {
        let elapsed = time_to_close(stream, start).await;
        assert!(elapsed <= slow_limit + SLACK, "closed after {elapsed:?}");
        closed += 1;
    }
    assert_eq!(closed, 500);
    server.stop().await;
}

#[tokio::test]
async fn above_max_connections_new_ones_wait_in_the_backlog() {
    let server = common::start(service(limits().max_connections(2))).await;
    let start = Instant::now();
    let _silent_a = TcpStream::connect(server.addr).await.expect("connect");
    let _silent_b = TcpStream::connect(server.addr).await.expect("connect");
    tokio::time::sleep(Duration::from_millis(50)).await;
    // The third connection is accepted only when a silent one is closed at its head deadline,
    // and then answered: it waits, it does not fail.
    let answer = common::raw_get(server.addr, "/").await;
    assert_eq!(answer.status, 200);
    assert!(
        start.elapsed() + Duration::from_millis(20) >= HEAD,
        "answered after {:?}, before a slot was free",
        start.elapsed()
    );
    server.stop().await;
}

#[tokio::test]
async fn shutdown_closes_half_received_requests_at_once_and_finishes_the_handled_ones() {
    let grace = Duration::from_secs(30);
    let mut server = common::start(service(
        limits()
            .header_read_timeout(Duration::from_secs(60))
            .keep_alive_timeout(Duration::from_secs(60))
            .shutdown_timeout(grace),
    ))
    .await;
    let mut half = Vec::new();
    for _ in 0..50 {
        let mut stream = TcpStream::connect(server.addr).await.expect("connect");
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: te")
            .await
            .expect("write");
        half.push(stream);
    }
    let addr = server.addr;
    let in_flight = tokio::spawn(async move { common::raw_get(addr, "/slow?mark=shutdown").await });
    let done = Arc::new(AtomicUsize::new(0));
    // The request is in its handler when the shutdown starts.
    common::wait_for(|| SLOW_STARTED.lock().unwrap().iter().any(|m| m == "shutdown")).await;
    let start = Instant::now();
    let task = server.signal_shutdown();
    for stream in &mut half {
        let elapsed = time_to_close(stream, start).await;
        assert!(
            elapsed < Duration::from_secs(2),
            "half-sent head kept {elapsed:?}"
        );
        done.fetch_add(1, Ordering::Relaxed);
    }
    assert_eq!(done.load(Ordering::Relaxed), 50);
    let answer = in_flight.await.expect("in-flight task");
    assert_eq!(answer.status, 200, "the request being handled was cut");
    assert_eq!(answer.text(), "slow ok");
    task.await.expect("server task").expect("server result");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "shutdown took {:?} of its {grace:?} grace",
        start.elapsed()
    );
}

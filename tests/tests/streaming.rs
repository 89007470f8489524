//! Streamed responses over real sockets: server-sent events arrive as they are sent (plain,
//! gzip, brotli, HTTP/2), lengths, and what the error handler, recover and compress do with a
//! stream.

mod common;

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use framework::body::BodyStream;
use framework::middleware::compress::Compress;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::recover::Recover;
use framework::middleware::responder::Responder;
use framework::{App, Context, HttpError, Result, Service};
use http::HeaderValue;
use http::header::CONTENT_TYPE;
use tokio::sync::{Mutex, mpsc};

/// The receiving end of the events the test sends, taken by the first request.
struct Feed(Mutex<Option<mpsc::Receiver<String>>>);

fn event_stream(ctx: &mut Context, stream: BodyStream) {
    ctx.set_response_header(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    ctx.body_mut().set_stream(stream);
}

/// Sends each event the test feeds, as it is fed.
async fn fed_events(ctx: &mut Context) -> Result {
    let rx = ctx.state().require::<Feed>()?.0.lock().await.take();
    let Some(rx) = rx else {
        return Err(HttpError::new("feed already taken").into());
    };
    let events = futures_util::stream::unfold(rx, |mut rx| async move {
        let event = rx.recv().await?;
        Some((
            Ok::<_, std::io::Error>(Bytes::from(format!("data: {event}\n\n"))),
            rx,
        ))
    });
    event_stream(ctx, BodyStream::from_stream(events));
    Ok(())
}

/// Five events, one every 100 ms.
async fn ticking_events(ctx: &mut Context) -> Result {
    let ticks = futures_util::stream::unfold(0u32, |i| async move {
        if i == 5 {
            return None;
        }
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Some((
            Ok::<_, std::io::Error>(Bytes::from(format!("data: {i}\n\n"))),
            i + 1,
        ))
    });
    event_stream(ctx, BodyStream::from_stream(ticks));
    Ok(())
}

/// An event every 50 ms for as long as the server runs: the stream ends when the server
/// begins to shut down (`take_until(ctx.shutdown())`).
async fn events_until_shutdown(ctx: &mut Context) -> Result {
    use futures_util::StreamExt;
    let ticks = futures_util::stream::unfold(0u64, |i| async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        Some((
            Ok::<_, std::io::Error>(Bytes::from(format!("data: {i}\n\n"))),
            i + 1,
        ))
    });
    let until = ticks.take_until(ctx.shutdown());
    event_stream(ctx, BodyStream::from_stream(until));
    Ok(())
}

fn chunks(n: usize, size: usize) -> BodyStream {
    let parts = (0..n)
        .map(move |i| Ok::<_, std::io::Error>(Bytes::from(vec![b'a' + (i % 26) as u8; size])));
    BodyStream::from_stream(futures_util::stream::iter(parts))
}

async fn unknown_length(ctx: &mut Context) -> Result {
    ctx.set_response_header(
        CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    ctx.body_mut().set_stream(chunks(3, 1000));
    Ok(())
}

async fn known_length(ctx: &mut Context) -> Result {
    let body = http_body_util::Full::new(Bytes::from(vec![b'k'; 3000]));
    ctx.set_response_header(
        CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    ctx.body_mut().set_stream(BodyStream::new(body));
    Ok(())
}

/// A stream that records whether it was dropped.
struct Tracked(Arc<AtomicBool>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

struct Dropped(Arc<AtomicBool>);

fn tracked_stream(ctx: &Context) -> BodyStream {
    let flag = ctx
        .state()
        .get::<Dropped>()
        .map(|d| Arc::clone(&d.0))
        .unwrap_or_default();
    let guard = Tracked(flag);
    let stream = futures_util::stream::unfold(guard, |guard| async move {
        Some((
            Ok::<_, std::io::Error>(Bytes::from_static(b"never sent")),
            guard,
        ))
    });
    BodyStream::from_stream(stream)
}

async fn stream_then_error(ctx: &mut Context) -> Result {
    let stream = tracked_stream(ctx);
    ctx.body_mut().set_stream(stream);
    Err(HttpError::new("failed before streaming")
        .with_category("test")
        .into())
}

async fn stream_then_panic(ctx: &mut Context) -> Result {
    let stream = tracked_stream(ctx);
    ctx.body_mut().set_stream(stream);
    panic!("panicked before streaming");
}

/// 206 with a compressible body: compress must leave it alone, buffered or streamed.
async fn partial_buffered(ctx: &mut Context) -> Result {
    ctx.set_status(http::StatusCode::PARTIAL_CONTENT);
    ctx.set_response_header(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    ctx.set_response_header(
        http::header::CONTENT_RANGE,
        HeaderValue::from_static("bytes 0-4999/10000"),
    );
    ctx.body_mut().set_bytes(Bytes::from(vec![b'p'; 5000]));
    Ok(())
}

async fn range_streamed(ctx: &mut Context) -> Result {
    ctx.set_response_header(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    ctx.set_response_header(
        http::header::CONTENT_RANGE,
        HeaderValue::from_static("bytes 0-4999/10000"),
    );
    ctx.set_status(http::StatusCode::PARTIAL_CONTENT);
    ctx.body_mut()
        .set_stream(BodyStream::new(http_body_util::Full::new(Bytes::from(
            vec![b'q'; 5000],
        ))));
    Ok(())
}

async fn big_text_stream(ctx: &mut Context) -> Result {
    ctx.set_response_header(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    ctx.body_mut().set_stream(chunks(20, 4096));
    Ok(())
}

async fn small_text_stream(ctx: &mut Context) -> Result {
    ctx.set_response_header(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    ctx.body_mut()
        .set_stream(BodyStream::new(http_body_util::Full::new(
            Bytes::from_static(b"tiny"),
        )));
    Ok(())
}

fn service(feed: Option<mpsc::Receiver<String>>, dropped: Arc<AtomicBool>) -> Service {
    App::new()
        .with_state(Feed(Mutex::new(feed)))
        .with_state(Dropped(dropped))
        .use_middleware(Recover::default())
        .use_middleware(Compress::default())
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/fed", fed_events)
        .get("/ticks", ticking_events)
        .get("/unknown", unknown_length)
        .get("/known", known_length)
        .get("/error", stream_then_error)
        .get("/panic", stream_then_panic)
        .get("/partial", partial_buffered)
        .get("/range-stream", range_streamed)
        .get("/big", big_text_stream)
        .get("/small", small_text_stream)
        .get("/until-shutdown", events_until_shutdown)
        .server_limits(framework::ServerLimits::default().shutdown_timeout(Duration::from_secs(60)))
        .build()
        .unwrap()
}

/// A stream that ends at `ctx.shutdown()` lets the server stop at once: its client gets a
/// complete body (the stream's end, not a cut connection), and the server does not wait out
/// its 60 s shutdown timeout.
#[tokio::test]
async fn a_stream_ending_at_shutdown_lets_the_server_stop() {
    let mut server = common::start(service(None, Arc::default())).await;
    let mut res = reqwest::get(server.url("/until-shutdown")).await.unwrap();
    let first = res.chunk().await.unwrap().expect("a first event");
    assert!(first.starts_with(b"data: 0"), "{first:?}");
    let stopping = server.signal_shutdown();
    let rest = tokio::time::timeout(Duration::from_secs(10), async {
        let mut rest = first.to_vec();
        while let Some(chunk) = res.chunk().await.expect("a complete body, not a cut one") {
            rest.extend_from_slice(&chunk);
        }
        rest
    })
    .await
    .expect("the stream ended when the server began to shut down");
    assert!(
        rest.ends_with(b"\n\n"),
        "{:?}",
        String::from_utf8_lossy(&rest)
    );
    tokio::time::timeout(Duration::from_secs(10), stopping)
        .await
        .expect("the server stopped without waiting out its shutdown timeout")
        .unwrap()
        .unwrap();
}

/// Decodes a body as it arrives, so a test can see each event the moment its bytes are in.
enum Decoder {
    Identity(Vec<u8>),
    Gzip(Box<flate2::write::GzDecoder<Vec<u8>>>),
    Brotli(Box<brotli::DecompressorWriter<Vec<u8>>>),
}

impl Decoder {
    fn new(encoding: Option<&str>) -> Self {
        match encoding {
            None => Decoder::Identity(Vec::new()),
            Some("gzip") => Decoder::Gzip(Box::new(flate2::write::GzDecoder::new(Vec::new()))),
            Some("br") => {
                Decoder::Brotli(Box::new(brotli::DecompressorWriter::new(Vec::new(), 4096)))
            }
            Some(other) => panic!("unexpected encoding {other}"),
        }
    }

    fn push(&mut self, chunk: &[u8]) -> String {
        let out = match self {
            Decoder::Identity(v) => {
                v.extend_from_slice(chunk);
                &*v
            }
            Decoder::Gzip(d) => {
                d.write_all(chunk).unwrap();
                d.flush().unwrap();
                d.get_ref()
            }
            Decoder::Brotli(d) => {
                d.write_all(chunk).unwrap();
                d.flush().unwrap();
                d.get_ref()
            }
        };
        String::from_utf8_lossy(out).into_owned()
    }
}

/// The client must see each event before the test sends the next one: a body held back by
/// buffering (here or in compression) would never show event `i` and the wait would time out.
async fn events_arrive_live(
    client: reqwest::Client,
    accept: &str,
    expected_encoding: Option<&str>,
) {
    let (tx, rx) = mpsc::channel(4);
    let server = common::start(service(Some(rx), Arc::default())).await;
    let mut res = client
        .get(server.url("/fed"))
        .header("accept-encoding", accept)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()
            .get("content-encoding")
            .map(|v| v.to_str().unwrap()),
        expected_encoding
    );
    assert!(res.headers().get("content-length").is_none());
    let mut decoder = Decoder::new(expected_encoding);
    let mut seen = String::new();
    for i in 0..5 {
        tx.send(format!("event {i}")).await.unwrap();
        let want = format!("data: event {i}\n\n");
        tokio::time::timeout(Duration::from_secs(5), async {
            while !seen.ends_with(&want) {
                let chunk = res.chunk().await.unwrap().expect("stream still open");
                seen = decoder.push(&chunk);
            }
        })
        .await
        .unwrap_or_else(|_| panic!("event {i} did not arrive live ({accept}); got {seen:?}"));
    }
    drop(tx);
    while let Some(chunk) = res.chunk().await.unwrap() {
        seen = decoder.push(&chunk);
    }
    assert_eq!(seen.matches("data: ").count(), 5);
    server.stop().await;
}

fn raw_client() -> reqwest::Client {
    reqwest::Client::builder().no_gzip().build().unwrap()
}

#[tokio::test]
async fn server_sent_events_arrive_as_sent() {
    events_arrive_live(raw_client(), "identity", None).await;
}

#[tokio::test]
async fn gzip_stream_flushes_each_event() {
    events_arrive_live(raw_client(), "gzip", Some("gzip")).await;
}

#[tokio::test]
async fn brotli_stream_flushes_each_event() {
    events_arrive_live(raw_client(), "br", Some("br")).await;
}

#[tokio::test]
async fn events_arrive_as_sent_over_http2() {
    let client = reqwest::Client::builder()
        .no_gzip()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    events_arrive_live(client, "gzip", Some("gzip")).await;
}

#[tokio::test]
async fn ticking_events_arrive_one_by_one() {
    let server = common::start(service(None, Arc::default())).await;
    let mut res = raw_client().get(server.url("/ticks")).send().await.unwrap();
    let start = Instant::now();
    let mut arrivals = Vec::new();
    let mut text = String::new();
    while let Some(chunk) = res.chunk().await.unwrap() {
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        arrivals.push(start.elapsed());
    }
    assert_eq!(
        text,
        "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n"
    );
    // One chunk per event, spread over the 400 ms the handler takes: nothing was held back
    // until the end. (A lower bound only: a slow machine spreads them further.)
    assert_eq!(arrivals.len(), 5, "{arrivals:?}");
    assert!(
        arrivals[4] - arrivals[0] >= Duration::from_millis(300),
        "{arrivals:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn lengths_known_and_unknown() {
    let server = common::start(service(None, Arc::default())).await;
    let known = common::raw_get(server.addr, "/known").await;
    assert_eq!(known.header("content-length"), Some("3000"));
    assert!(known.header("transfer-encoding").is_none());
    assert_eq!(known.body.len(), 3000);
    let unknown = common::raw_get(server.addr, "/unknown").await;
    assert_eq!(unknown.header("transfer-encoding"), Some("chunked"));
    assert!(unknown.header("content-length").is_none());
    // Chunked framing: each 1000-byte chunk is announced as 3e8.
    let framing = unknown.text().to_ascii_lowercase();
    assert_eq!(framing.matches("3e8\r\n").count(), 3, "{framing}");
    // HEAD: the known length, no body.
    let head = common::raw_request(
        server.addr,
        "HEAD /known HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(head.header("content-length"), Some("3000"));
    assert!(head.body.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn error_and_panic_before_the_stream_are_answered() {
    let dropped = Arc::new(AtomicBool::new(false));
    let server = common::start(service(None, Arc::clone(&dropped))).await;
    let client = common::browser();
    let res = client.get(server.url("/error")).send().await.unwrap();
    assert_eq!(res.status(), 400);
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body["message"], "failed before streaming");
    assert!(
        dropped.swap(false, Ordering::SeqCst),
        "the unsent stream was dropped"
    );

    let res = client.get(server.url("/panic")).send().await.unwrap();
    assert_eq!(res.status(), 500);
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body["category"], "framework-recover");
    assert!(dropped.load(Ordering::SeqCst));
    server.stop().await;
}

#[tokio::test]
async fn compress_streams_but_never_ranges() {
    let server = common::start(service(None, Arc::default())).await;
    let client = raw_client();
    let get = |path: &'static str| {
        let req = client
            .get(server.url(path))
            .header("accept-encoding", "gzip");
        async move { req.send().await.unwrap() }
    };
    for path in ["/partial", "/range-stream"] {
        let res = get(path).await;
        assert_eq!(res.status(), 206, "{path}");
        assert!(res.headers().get("content-encoding").is_none(), "{path}");
        assert_eq!(res.headers()["content-range"], "bytes 0-4999/10000");
        assert_eq!(res.bytes().await.unwrap().len(), 5000);
    }
    let res = get("/big").await;
    assert_eq!(res.headers()["content-encoding"], "gzip");
    assert_eq!(res.headers()["vary"], "Accept-Encoding");
    let compressed = res.bytes().await.unwrap();
    let mut decoded = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(&compressed[..]),
        &mut decoded,
    )
    .unwrap();
    assert_eq!(decoded.len(), 20 * 4096);
    assert!(compressed.len() < decoded.len() / 10);
    // A stream whose known length is under the threshold is sent as it is.
    let res = get("/small").await;
    assert!(res.headers().get("content-encoding").is_none());
    assert_eq!(res.text().await.unwrap(), "tiny");
    server.stop().await;
}

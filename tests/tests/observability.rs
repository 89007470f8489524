//! Logger and stats over real sockets: every logger tag against a golden line (fixed clock),
//! lines written when the request really ends (after a stream, 499 when the client left), and
//! the stats figures with the in-flight count under concurrency and panics.

mod common;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use chrono::{DateTime, FixedOffset, TimeZone};
use framework::body::BodyStream;
use framework::middleware::body_parser::BodyParser;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::logger::LogFieldsExt;
use framework::middleware::logger::{LOGGER_TINY, Logger, LoggerConfig};
use framework::middleware::recover::Recover;
use framework::middleware::responder::Responder;
use framework::middleware::stats::{Stats, StatsConfig};
use framework::{App, Context, Result};
use http::HeaderValue;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

const EVERY_TAG: &str = "{host}|{method}|{path}|{proto}|{query}|{remote}|{real-ip}|{client-ip}|\
{scheme}|{uri}|{url}|{referer}|{userAgent}|{when}|{when-iso}|{when-utc-iso}|{when-unix}|\
{when-iso-ms}|{when-utc-iso-ms}|{size}|{size-human}|{status}|{latency}|{latency-ms}|\
{~sid}|{payload-size}|{payload-size-human}|{>x-trace}|{<etag}|{:user}|{$CARGO_PKG_NAME}|\
{$SURELY_UNSET_VARIABLE_42}|{request-id}|{nope}|{~missing}";

/// 2026-11-22 10:00:00.250 +01:00, advancing 1.5 ms per reading.
fn fixed_clock() -> framework::middleware::logger::Clock {
    let tick = Arc::new(Mutex::new(0i64));
    Arc::new(move || {
        let mut n = tick.lock().unwrap();
        let zone = FixedOffset::east_opt(3600).unwrap();
        let start: DateTime<FixedOffset> = zone.with_ymd_and_hms(2026, 11, 22, 10, 0, 0).unwrap()
            + chrono::Duration::milliseconds(250);
        let t = start + chrono::Duration::microseconds(1500 * *n);
        *n += 1;
        t
    })
}

struct Lines(Arc<Mutex<Vec<(String, u16)>>>);

fn logger(format: &str, lines: &Lines) -> Logger {
    let sink = Arc::clone(&lines.0);
    Logger::new(
        LoggerConfig::default()
            .format(format.to_owned())
            .on_log(Some(Arc::new(move |line, record, _request| {
                sink.lock()
                    .unwrap()
                    .push((line.to_owned(), record.status().as_u16()));
            })))
            .clock(Some(fixed_clock())),
    )
}

async fn tagged(ctx: &mut Context) -> Result<String> {
    ctx.log_field("user", "alice");
    ctx.set_response_header(http::header::ETAG, HeaderValue::from_static("\"v1\""));
    Ok(format!("got {} bytes", ctx.request_body().len()))
}

struct Gate(watch::Receiver<bool>);

async fn gated(ctx: &mut Context) -> Result<&'static str> {
    let mut rx = ctx.state().require::<Gate>()?.0.clone();
    let _ = rx.wait_for(|open| *open).await;
    Ok("done")
}

async fn gated_stream(ctx: &mut Context) -> Result {
    let rx = ctx.state().require::<Gate>()?.0.clone();
    let body = futures_util::stream::unfold((0, rx), |(i, mut rx)| async move {
        match i {
            0 => Some((Ok::<_, std::io::Error>(Bytes::from("first\n")), (1, rx))),
            1 => {
                let _ = rx.wait_for(|open| *open).await;
                Some((Ok(Bytes::from("second\n")), (2, rx)))
            }
            _ => None,
        }
    });
    ctx.body_mut().set_stream(BodyStream::from_stream(body));
    Ok(())
}

async fn boom(_ctx: &mut Context) -> Result {
    panic!("boom");
}

fn service(first: impl framework::Middleware, gate: watch::Receiver<bool>) -> framework::Service {
    App::new()
        .with_state(Gate(gate))
        .use_middleware(Recover::default())
        .use_middleware(first)
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(BodyParser::default())
        .post("/tagged", tagged)
        .get("/gated", gated)
        .get("/stream", gated_stream)
        .get("/boom", boom)
        .build()
        .unwrap()
}

#[tokio::test]
async fn every_tag_against_a_golden_line() {
    let lines = Lines(Arc::default());
    let (_open, gate) = watch::channel(false);
    let server = common::start(service(logger(EVERY_TAG, &lines), gate)).await;
    let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let local = socket.local_addr().unwrap();
    let body = r#"{"a":1}"#;
    let request = format!(
        "POST /tagged?x=1&y=2 HTTP/1.1\r\nHost: example.test\r\nReferer: https://ref.test/\r\n\
         User-Agent: golden/1.0\r\nCookie: a=1; sid=s3cr3t\r\nX-Trace: t-42\r\n\
         X-Request-Id: req-golden-1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    socket.read_to_end(&mut answer).await.unwrap();
    common::wait_for(|| !lines.0.lock().unwrap().is_empty()).await;
    let (line, status) = lines.0.lock().unwrap()[0].clone();
    assert_eq!(status, 200);
    let expected = format!(
        "example.test|POST|/tagged|HTTP/1.1|x=1&y=2|{local}|127.0.0.1|-|HTTP|/tagged?x=1&y=2|\
         /tagged?x=1&y=2|https://ref.test/|golden/1.0|Sun, 22 Nov 2026 10:00:00 +0100|\
         2026-11-22T10:00:00+01:00|2026-11-22T09:00:00Z|1795338000|2026-11-22T10:00:00.251+01:00|\
         2026-11-22T09:00:00.251Z|11|11B|200|1.5ms|1|s3cr3t|7|7B|t-42|\"v1\"|alice|e2e-tests|-|\
         req-golden-1|-|-"
    );
    assert_eq!(line, expected);
    server.stop().await;
}

#[tokio::test]
async fn lines_are_written_when_the_request_really_ends() {
    let lines = Lines(Arc::default());
    let (open, gate) = watch::channel(false);
    let server = common::start(service(logger(LOGGER_TINY, &lines), gate)).await;

    // A client that leaves while its request waits: 499.
    let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    socket
        .write_all(b"GET /gated HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(lines.0.lock().unwrap().is_empty());
    drop(socket);
    common::wait_for(|| lines.0.lock().unwrap().len() == 1).await;
    assert_eq!(lines.0.lock().unwrap()[0].1, 499);

    // A stream: logged once the body has been sent, with its full latency.
    let client = reqwest::Client::new();
    let mut res = client.get(server.url("/stream")).send().await.unwrap();
    assert_eq!(res.chunk().await.unwrap().unwrap(), "first\n");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        lines.0.lock().unwrap().len(),
        1,
        "not logged while streaming"
    );
    open.send_replace(true);
    while res.chunk().await.unwrap().is_some() {}
    common::wait_for(|| lines.0.lock().unwrap().len() == 2).await;
    let (line, status) = lines.0.lock().unwrap()[1].clone();
    assert_eq!(status, 200);
    assert!(line.starts_with("GET /stream 200 - - "), "{line}");

    // A panic (recover is outside the logger): 500.
    let res = client.get(server.url("/boom")).send().await.unwrap();
    assert_eq!(res.status(), 500);
    common::wait_for(|| lines.0.lock().unwrap().len() == 3).await;
    let (line, status) = lines.0.lock().unwrap()[2].clone();
    assert_eq!(status, 500);
    assert!(line.starts_with("GET /boom 500 "), "{line}");
    server.stop().await;
}

#[tokio::test]
async fn stats_figures_and_in_flight_count() {
    type Seen = (u16, u16, String, Option<u64>, usize, u32);
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let stats = Stats::new(
        StatsConfig::default().on_stats(Some(Arc::new(move |info, _ctx| {
            sink.lock().unwrap().push((
                info.status.as_u16(),
                info.status_class,
                info.route.to_owned(),
                info.response_size,
                info.request_size,
                info.in_flight,
            ));
        }))),
    );
    let in_flight = stats.in_flight();
    let (open, gate) = watch::channel(false);
    let server = common::start(service(stats, gate)).await;
    let client = reqwest::Client::new();
    let res = client
        .post(server.url("/tagged"))
        .header("content-type", "application/json")
        .body(r#"{"a":1}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(
        seen.lock().unwrap()[0],
        (200, 2, "/tagged".to_owned(), Some(11), 7, 1)
    );
    // Three at once.
    let requests: Vec<_> = (0..3)
        .map(|_| tokio::spawn(client.get(server.url("/gated")).send()))
        .collect();
    common::wait_for(|| in_flight.load(Ordering::SeqCst) == 3).await;
    open.send_replace(true);
    for r in requests {
        assert_eq!(r.await.unwrap().unwrap().status(), 200);
    }
    assert_eq!(in_flight.load(Ordering::SeqCst), 0);
    // A 404 and a panic.
    assert_eq!(
        client
            .get(server.url("/nope"))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    let last = seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!((last.0, last.1, last.2.as_str()), (404, 4, ""));
    assert_eq!(
        client
            .get(server.url("/boom"))
            .send()
            .await
            .unwrap()
            .status(),
        500
    );
    assert_eq!(in_flight.load(Ordering::SeqCst), 0, "freed after a panic");
    server.stop().await;
}

/// Without a hook (and with `tracing` not wanting the debug event) stats only counts: the
/// request's slot stays with the context, which gives it back when the request ends in any
/// way, and with a streamed body only once the body has been sent.
#[tokio::test]
async fn stats_without_a_listener_still_counts_in_flight() {
    let stats = Stats::new(StatsConfig::default());
    let in_flight = stats.in_flight();
    let (open, gate) = watch::channel(false);
    let server = common::start(service(stats, gate)).await;
    let client = reqwest::Client::new();
    let res = client.post(server.url("/tagged")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(in_flight.load(Ordering::SeqCst), 0);

    // Two at once, then a client that leaves while its request waits.
    let requests: Vec<_> = (0..2)
        .map(|_| tokio::spawn(client.get(server.url("/gated")).send()))
        .collect();
    common::wait_for(|| in_flight.load(Ordering::SeqCst) == 2).await;
    let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    socket
        .write_all(b"GET /gated HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    common::wait_for(|| in_flight.load(Ordering::SeqCst) == 3).await;
    drop(socket);
    common::wait_for(|| in_flight.load(Ordering::SeqCst) == 2).await;
    open.send_replace(true);
    for r in requests {
        assert_eq!(r.await.unwrap().unwrap().status(), 200);
    }
    assert_eq!(in_flight.load(Ordering::SeqCst), 0);

    // A stream holds its slot until the body has been sent.
    open.send_replace(false);
    let mut res = client.get(server.url("/stream")).send().await.unwrap();
    assert_eq!(res.chunk().await.unwrap().unwrap(), "first\n");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(in_flight.load(Ordering::SeqCst), 1, "held while streaming");
    open.send_replace(true);
    while res.chunk().await.unwrap().is_some() {}
    common::wait_for(|| in_flight.load(Ordering::SeqCst) == 0).await;

    // A 404 and a panic.
    let res = client.get(server.url("/nope")).send().await.unwrap();
    assert_eq!(res.status(), 404);
    let res = client.get(server.url("/boom")).send().await.unwrap();
    assert_eq!(res.status(), 500);
    assert_eq!(in_flight.load(Ordering::SeqCst), 0, "freed after a panic");
    server.stop().await;
}

async fn submit(ctx: &mut Context) -> Result<&'static str> {
    if ctx.param("id").as_deref() == Some("bad") {
        return Err(framework::HttpError::new("refused")
            .with_category("test")
            .into());
    }
    Ok("ok")
}

#[tokio::test]
async fn tracker_masks_at_every_depth() {
    use framework::middleware::tracker::{TrackResult, Tracker, TrackerConfig, TrackerInfo};
    let seen: Arc<Mutex<Vec<TrackerInfo>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let tracker = Tracker::new(TrackerConfig::default().on_track(Some(Arc::new(
        move |info, _request| {
            sink.lock().unwrap().push(info.clone());
        },
    ))));
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(BodyParser::default())
        .group(
            framework::Group::new("")
                .use_middleware(tracker)
                .post("/submit/:id/:token", submit),
        )
        .build()
        .unwrap();
    let server = common::start(service).await;
    let client = reqwest::Client::new();
    let body = serde_json::json!({"user": {"password": "x", "list": [{"token": "y"}, {"name": "n"}]}, "note": "z".repeat(100)});
    let res = client
        .post(server.url("/submit/7/t0k3n?secret=s&page=2"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let res = client
        .post(server.url("/submit/bad/x"))
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let seen = seen.lock().unwrap().clone();
    let ok = &seen[0];
    assert_eq!(ok.result, TrackResult::Success);
    assert_eq!(
        ok.body.as_ref().unwrap()["user"],
        serde_json::json!({"password": "***", "list": [{"token": "***"}, {"name": "n"}]})
    );
    let note = ok.body.as_ref().unwrap()["note"].as_str().unwrap();
    assert_eq!(
        note.chars().count(),
        65,
        "cut to 64 characters and an ellipsis"
    );
    assert_eq!(ok.query["secret"], "***");
    assert_eq!(ok.query["page"], "2");
    assert_eq!(ok.params["id"], "7");
    assert_eq!(ok.params["token"], "***");
    assert_eq!(ok.route, "/submit/:id/:token");
    let failed = &seen[1];
    assert_eq!(failed.result, TrackResult::Fail);
    assert_eq!(failed.error.as_deref(), Some("test: refused"));
    server.stop().await;
}

/// With no `on_log` hook, the line is a `tracing` event: when the subscriber does not want
/// `framework::access` at info, the logger must not even read the clock; when it does, it
/// reads it and the line is written.
#[tokio::test(flavor = "current_thread")]
async fn the_default_logger_does_nothing_when_access_lines_are_filtered_out() {
    use framework::testing::TestClient;
    use std::sync::atomic::AtomicUsize;

    let readings = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&readings);
    let inner = fixed_clock();
    let logger = Logger::new(LoggerConfig::default().clock(Some(Arc::new(move || {
        counted.fetch_add(1, Ordering::Relaxed);
        inner()
    }))));
    let service = App::new()
        .use_middleware(logger)
        .use_middleware(Responder::default())
        .get("/", |_ctx: &mut Context| async { Ok("hello") })
        .build()
        .unwrap();
    let client = TestClient::new(service);

    let written = Arc::new(Mutex::new(Vec::<u8>::new()));
    let make_writer = {
        let written = Arc::clone(&written);
        move || common::SharedWriter(Arc::clone(&written))
    };
    let warn_only = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_writer(make_writer.clone())
        .finish();
    {
        let _guard = tracing::subscriber::set_default(warn_only);
        assert_eq!(client.get("/").send().await.status, 200);
    }
    assert_eq!(readings.load(Ordering::Relaxed), 0, "no clock reading");
    assert!(written.lock().unwrap().is_empty());

    let info = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .with_writer(make_writer)
        .finish();
    {
        let _guard = tracing::subscriber::set_default(info);
        assert_eq!(client.get("/").send().await.status, 200);
    }
    assert!(readings.load(Ordering::Relaxed) > 0, "the clock was read");
    let text = String::from_utf8(written.lock().unwrap().clone()).unwrap();
    assert!(text.contains("framework::access"), "{text}");
    assert!(text.contains("\"GET / HTTP/1.1\" 200"), "{text}");
}

/// Every hook gets the same read-only view of the request as its last argument: the logger's
/// and the tracker's (which run when the request is over, without a context), stats', and
/// recover's for a request that panicked.
#[tokio::test]
async fn every_hook_sees_the_same_request_view() {
    use framework::RequestView;
    use framework::middleware::recover::RecoverConfig;
    use framework::middleware::tracker::{Tracker, TrackerConfig};

    type Seen = Arc<Mutex<Vec<(&'static str, String, Option<String>, String)>>>;
    let seen: Seen = Arc::default();
    let record = |hook: &'static str, seen: &Seen, request: &RequestView| {
        seen.lock().unwrap().push((
            hook,
            request.request_id().to_owned(),
            request.route_key().map(str::to_owned),
            format!("{} {}", request.method(), request.path()),
        ));
    };
    let (s1, s2, s3, s4) = (
        Arc::clone(&seen),
        Arc::clone(&seen),
        Arc::clone(&seen),
        Arc::clone(&seen),
    );
    let service = App::new()
        .use_middleware(Recover::new(RecoverConfig::default().on_panic(Some(
            Arc::new(move |_text, request| {
                record("panic", &s1, request);
            }),
        ))))
        .use_middleware(Logger::new(LoggerConfig::default().on_log(Some(Arc::new(
            move |_line, _record, request| {
                record("log", &s2, request);
            },
        )))))
        .use_middleware(Stats::new(StatsConfig::default().on_stats(Some(Arc::new(
            move |_info, request| {
                record("stats", &s3, request);
            },
        )))))
        .use_middleware(Tracker::new(TrackerConfig::default().on_track(Some(
            Arc::new(move |_info, request| {
                record("track", &s4, request);
            }),
        ))))
        .use_middleware(Responder::default())
        .get("/hooks/:id", |ctx: &mut Context| {
            let panics = ctx.query("panic").is_some();
            async move {
                assert!(!panics, "asked to panic");
                Ok("fine")
            }
        })
        .build()
        .unwrap();
    let server = common::start(service).await;
    let client = reqwest::Client::new();
    for (id, path) in [("rid-ok", "/hooks/1"), ("rid-panic", "/hooks/2?panic=1")] {
        let res = client
            .get(server.url(path))
            .header("x-request-id", id)
            .send()
            .await
            .unwrap();
        let _ = res.bytes().await;
    }
    server.stop().await;
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    let expect = |hook: &'static str, id: &str, path: &str| {
        (
            hook,
            id.to_owned(),
            Some("GET /hooks/:id".to_owned()),
            format!("GET {path}"),
        )
    };
    let mut wanted = vec![
        expect("log", "rid-ok", "/hooks/1"),
        expect("stats", "rid-ok", "/hooks/1"),
        expect("track", "rid-ok", "/hooks/1"),
        expect("log", "rid-panic", "/hooks/2"),
        expect("panic", "rid-panic", "/hooks/2"),
        expect("track", "rid-panic", "/hooks/2"),
    ];
    wanted.sort();
    assert_eq!(seen, wanted);
}

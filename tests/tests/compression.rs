//! What compression costs over real sockets: a static asset (the docs page's 1.4 MB Swagger UI
//! bundle, a static file with a strong ETag) is compressed once per encoding whatever the number
//! of requests; HTTP/2 clients that read nothing hold no compressed copies in the server; a
//! large dynamic body goes out compressed as a stream.

mod common;

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use framework::body::BodyStream;
use framework::middleware::compress::{Brotli, Compress, CompressConfig, Compressor, Gzip};
use framework::middleware::json_picker::{JsonPicker, JsonPickerConfig};
use framework::middleware::static_serve::{DirectorySource, StaticServe, StaticServeConfig};
use framework::{App, Context, Result};

/// A built-in compressor that counts the compressions of static bodies it does.
struct Counted<C> {
    inner: C,
    statics: Arc<AtomicUsize>,
}

impl<C: Compressor> Compressor for Counted<C> {
    fn encoding(&self) -> &'static str {
        self.inner.encoding()
    }
    fn compress(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        self.inner.compress(data)
    }
    fn compress_static(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        self.statics.fetch_add(1, Ordering::SeqCst);
        self.inner.compress_static(data)
    }
    fn supports_stream(&self) -> bool {
        self.inner.supports_stream()
    }
    fn compress_stream(&self, body: BodyStream) -> BodyStream {
        self.inner.compress_stream(body)
    }
}

fn client() -> reqwest::Client {
    // Encodings are asked for by hand, and bodies read as sent.
    reqwest::Client::builder()
        .no_gzip()
        .no_brotli()
        .build()
        .unwrap()
}

fn unbrotli(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    brotli::Decompressor::new(data, 4096)
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn gunzip(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(data)
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// The files under `root`, with strong ETags: static serve knows their digests.
fn strongly_tagged(root: &std::path::Path) -> StaticServe {
    StaticServe::new(
        DirectorySource::new(root).unwrap(),
        StaticServeConfig::default().enable_strong_etag(true),
    )
}

/// A JSON answer of about `len` bytes, different for every request.
async fn report(ctx: &mut Context) -> Result {
    let len: usize = ctx
        .query("len")
        .and_then(|l| l.parse().ok())
        .unwrap_or(1 << 20);
    let mut body = String::with_capacity(len + 64);
    body.push_str(r#"{"rows":["#);
    let mut i = 0u64;
    while body.len() < len {
        body.push_str(&format!(
            r#"{{"id":{i},"name":"row {i}","tags":["a","b"]}},"#
        ));
        i += 1;
    }
    body.push_str(r#"{"id":-1}]}"#);
    ctx.set_response_header(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    ctx.body_mut().set_bytes(body);
    Ok(())
}

/// A JSON answer of exactly `len` bytes (at least 8).
async fn exact(ctx: &mut Context) -> Result {
    let len: usize = ctx
        .query("len")
        .and_then(|l| l.parse().ok())
        .unwrap_or(1024);
    ctx.set_response_header(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    ctx.body_mut()
        .set_bytes(format!(r#"{{"a":"{}"}}"#, "x".repeat(len - 8)));
    Ok(())
}

/// The docs page's bundle with `br`, a hundred times and more: brotli compresses it once; with
/// `gzip`: gzip once. Every answer is the bundle, encoded, with `Vary`, a weak `ETag` (the
/// bytes are not the identity's) and `Cache-Control`; the tag gets a 304. A static file with a
/// strong ETag is compressed once too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_asset_is_compressed_once_per_encoding() {
    let statics = Arc::new(AtomicUsize::new(0));
    let compressors: Vec<Arc<dyn Compressor>> = vec![
        Arc::new(Counted {
            inner: Brotli::default().level(4).static_level(9),
            statics: Arc::clone(&statics),
        }),
        Arc::new(Counted {
            inner: Gzip::default().level(6).static_level(9),
            statics: Arc::clone(&statics),
        }),
    ];
    let root = common::temp_dir("compress-once");
    let page: String = (0..2000)
        .map(|i| format!("<p>paragraph {i}</p>\n"))
        .collect();
    std::fs::write(root.join("page.html"), &page).unwrap();
    let service = App::new()
        .use_middleware(Compress::with_compressors(
            CompressConfig::default(),
            compressors,
        ))
        .endpoint(http::Method::GET, "/static/*", strongly_tagged(&root))
        .get("/report", report)
        .openapi("/openapi.json")
        .openapi_docs("/docs")
        .build()
        .unwrap();
    let server = common::start(service).await;
    let client = client();
    let identity = client
        .get(server.url("/docs/swagger-ui-bundle.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(identity.status(), 200);
    let strong = identity.headers()["etag"].to_str().unwrap().to_owned();
    assert!(strong.starts_with('"'), "{strong}");
    let bundle = identity.bytes().await.unwrap();
    assert!(bundle.len() > 1_000_000, "{}", bundle.len());

    let get = |encoding: &'static str| {
        client
            .get(server.url("/docs/swagger-ui-bundle.js"))
            .header("accept-encoding", encoding)
            .send()
    };
    let mut first_br = None;
    for _ in 0..101 {
        let res = get("br").await.unwrap();
        assert_eq!(res.status(), 200);
        let h = res.headers();
        assert_eq!(h["content-encoding"], "br");
        assert_eq!(h["vary"], "Accept-Encoding");
        assert_eq!(h["cache-control"], "public, max-age=86400");
        assert_eq!(h["etag"].to_str().unwrap(), format!("W/{strong}"));
        let body = res.bytes().await.unwrap();
        assert!(unbrotli(&body) == bundle, "not the bundle");
        first_br.get_or_insert(body.len());
    }
    assert_eq!(statics.load(Ordering::SeqCst), 1, "brotli ran once");
    // The static level: smaller than brotli 4's per-answer compression.
    let per_answer = Brotli::default()
        .level(4)
        .static_level(4)
        .compress(&bundle)
        .unwrap()
        .len();
    assert!(
        first_br.unwrap() < per_answer,
        "{first_br:?} vs {per_answer}"
    );
    for _ in 0..20 {
        let res = get("gzip").await.unwrap();
        assert_eq!(res.headers()["content-encoding"], "gzip");
        assert!(
            gunzip(&res.bytes().await.unwrap()) == bundle,
            "not the bundle"
        );
    }
    assert_eq!(statics.load(Ordering::SeqCst), 2, "gzip ran once");
    let revalidated = client
        .get(server.url("/docs/swagger-ui-bundle.js"))
        .header("accept-encoding", "br")
        .header("if-none-match", format!("W/{strong}"))
        .send()
        .await
        .unwrap();
    assert_eq!(revalidated.status(), 304);

    // A static file whose digest static serve knows (strong ETag).
    for _ in 0..10 {
        let res = client
            .get(server.url("/static/page.html"))
            .header("accept-encoding", "gzip")
            .send()
            .await
            .unwrap();
        assert_eq!(res.headers()["content-encoding"], "gzip");
        assert!(
            gunzip(&res.bytes().await.unwrap()) == page.as_bytes(),
            "not the page"
        );
    }
    assert_eq!(
        statics.load(Ordering::SeqCst),
        3,
        "the file was compressed once"
    );
    // A dynamic answer is never kept: it is not static.
    let res = client
        .get(server.url("/report?len=4000"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["content-encoding"], "gzip");
    assert_eq!(statics.load(Ordering::SeqCst), 3);
    server.stop().await;
}

/// A static file whose body a middleware changes on the way out (the JSON picker's
/// `?fields=`) is compressed as the changed bytes, and never kept as the file's: the next
/// client gets the whole file.
#[tokio::test]
async fn a_changed_static_body_is_not_kept_as_the_file() {
    let root = common::temp_dir("compress-picked");
    let rows: Vec<serde_json::Value> = (0..200)
        .map(|i| serde_json::json!({"id": i, "name": format!("row {i}"), "secret": "s"}))
        .collect();
    let file = serde_json::to_vec(&rows).unwrap();
    std::fs::write(root.join("rows.json"), &file).unwrap();
    let service = App::new()
        .use_middleware(Compress::default())
        .use_middleware(JsonPicker::new(JsonPickerConfig::default()))
        .endpoint(http::Method::GET, "/static/*", strongly_tagged(&root))
        .build()
        .unwrap();
    let server = common::start(service).await;
    let client = client();
    let get = |path: &'static str| {
        client
            .get(server.url(path))
            .header("accept-encoding", "gzip")
            .send()
    };
    let picked = get("/static/rows.json?fields=id").await.unwrap();
    assert_eq!(picked.headers()["content-encoding"], "gzip");
    let picked: serde_json::Value =
        serde_json::from_slice(&gunzip(&picked.bytes().await.unwrap())).unwrap();
    assert_eq!(picked[0], serde_json::json!({"id": 0}));
    for _ in 0..3 {
        let whole = get("/static/rows.json").await.unwrap();
        assert_eq!(whole.headers()["content-encoding"], "gzip");
        let whole = gunzip(&whole.bytes().await.unwrap());
        assert!(
            whole == file,
            "{} bytes, not the file's {}",
            whole.len(),
            file.len()
        );
    }
    server.stop().await;
}

/// A dynamic body of a megabyte goes out compressed as a stream (no `Content-Length`: the
/// compressed length is not known before the end), in whole, for brotli and gzip; one below
/// the stream threshold (64 KiB) is compressed whole, with its length.
#[tokio::test]
async fn a_large_dynamic_body_is_compressed_as_a_stream() {
    let service = App::new()
        .use_middleware(Compress::default())
        .get("/report", report)
        .get("/exact", exact)
        .build()
        .unwrap();
    let server = common::start(service).await;
    let client = client();
    let plain = client
        .get(server.url("/report"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert!(plain.len() >= 1 << 20);
    serde_json::from_slice::<serde_json::Value>(&plain).unwrap();
    for (encoding, decode) in [("br", unbrotli as fn(&[u8]) -> Vec<u8>), ("gzip", gunzip)] {
        let res = client
            .get(server.url("/report"))
            .header("accept-encoding", encoding)
            .send()
            .await
            .unwrap();
        assert_eq!(res.headers()["content-encoding"], encoding);
        assert!(res.headers().get("content-length").is_none(), "{encoding}");
        let body = res.bytes().await.unwrap();
        assert!(body.len() < plain.len() / 4, "{encoding}: {}", body.len());
        assert!(decode(&body) == plain, "{encoding}: not the body");
    }
    // The threshold, 64 KiB: one byte less is compressed whole, its length known; at it, a
    // stream.
    for (len, streamed) in [(65_535, false), (65_536, true)] {
        let res = client
            .get(server.url(&format!("/exact?len={len}")))
            .header("accept-encoding", "gzip")
            .send()
            .await
            .unwrap();
        assert_eq!(res.headers()["content-encoding"], "gzip");
        assert_eq!(
            res.headers().get("content-length").is_none(),
            streamed,
            "{len}"
        );
        assert_eq!(gunzip(&res.bytes().await.unwrap()).len(), len);
    }
    server.stop().await;
}

fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
        .expect("VmRSS")
        * 1024
}

/// An HTTP/2 client that sets its streams' window to zero and opens 40 streams for the
/// bundle with `br`, on each of two connections: the server cannot send a byte of any body,
/// and holds no compressed copy for any stream (the kept variant is shared), so it grows by
/// less than 5 MB. When each stream had its own compression, each held ~400 kB.
#[tokio::test]
async fn http2_clients_that_read_nothing_hold_no_compressed_copies() {
    let server = common::backends::Instance::start(&[("DATABASE_URL", "memory".to_owned())]);
    let addr = format!("127.0.0.1:{}", server.port);
    // The variant is made once, before the count.
    let warm = client()
        .get(server.url("/docs/swagger-ui-bundle.js"))
        .header("accept-encoding", "br")
        .send()
        .await
        .unwrap();
    assert_eq!(warm.headers()["content-encoding"], "br");
    warm.bytes().await.unwrap();
    let before = rss_bytes(server.pid());

    let (mut senders, mut responses) = (Vec::new(), Vec::new());
    for _ in 0..2 {
        let tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let (send, connection) = h2::client::Builder::new()
            .initial_window_size(0)
            .handshake::<_, bytes::Bytes>(tcp)
            .await
            .unwrap();
        tokio::spawn(connection);
        let mut send = send.ready().await.unwrap();
        for _ in 0..40 {
            let request = http::Request::get(format!("http://{addr}/docs/swagger-ui-bundle.js"))
                .header("accept-encoding", "br")
                .body(())
                .unwrap();
            let (response, _) = send.send_request(request, true).unwrap();
            responses.push(response);
            send = send.ready().await.unwrap();
        }
        senders.push(send);
    }
    let mut streams = Vec::new();
    for response in responses {
        let response = tokio::time::timeout(Duration::from_secs(10), response)
            .await
            .expect("headers within 10 s")
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-encoding"], "br");
        // Kept, never read: the window stays shut.
        streams.push(response.into_body());
    }
    assert_eq!(streams.len(), 80);
    // Let the server do whatever it would do for them.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_bytes(server.pid());
    let grown = after.saturating_sub(before);
    println!(
        "80 zero-window HTTP/2 streams for the bundle: resident {} -> {} KiB (+{} KiB)",
        before / 1024,
        after / 1024,
        grown / 1024
    );
    assert!(grown < 5 * 1024 * 1024, "grew by {grown} bytes");
    drop((streams, senders));
}

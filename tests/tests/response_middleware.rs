//! The response middleware over real sockets: etag and fresh (304s by tag, list, `*`, date,
//! their precedence, `no-cache`, POST), the json picker, the response size limiter (buffers,
//! streams of known and unknown length) and the renderer.

mod common;

use std::time::Duration;

use bytes::Bytes;
use framework::body::BodyStream;
use framework::middleware::compress::Compress;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::etag::{ETag, strong_etag};
use framework::middleware::fresh::Fresh;
use framework::middleware::json_picker::{JsonPicker, JsonPickerConfig};
use framework::middleware::renderer::{RenderData, Renderer, RendererConfig};
use framework::middleware::responder::Responder;
use framework::middleware::response_size_limiter::{
    ResponseSizeLimiter, ResponseSizeLimiterConfig,
};
use framework::{App, Context, HttpError, Result, Service};
use serde_json::{Value, json};

const LAST_MODIFIED: &str = "Wed, 21 Oct 2026 07:28:00 GMT";

async fn doc(_ctx: &mut Context) -> Result<Value> {
    Ok(json!({"a": 1, "b": "two", "c": [3]}))
}

async fn list(_ctx: &mut Context) -> Result<Value> {
    Ok(json!([{"id": 1, "name": "x", "secret": "s"}, {"id": 2, "name": "y"}]))
}

async fn big(_ctx: &mut Context) -> Result<Value> {
    Ok(json!({"text": "lorem ipsum ".repeat(200)}))
}

async fn dated(ctx: &mut Context) -> Result<&'static str> {
    ctx.set_response_header(
        http::header::LAST_MODIFIED,
        http::HeaderValue::from_static(LAST_MODIFIED),
    );
    Ok("dated")
}

async fn with_cookie(ctx: &mut Context) -> Result<&'static str> {
    ctx.set_response_header(
        http::header::SET_COOKIE,
        http::HeaderValue::from_static("sid=1; Path=/"),
    );
    Ok("cookie")
}

async fn private(ctx: &mut Context) -> Result<&'static str> {
    ctx.set_response_header(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("private, No-Store"),
    );
    Ok("per-session")
}

async fn missing(_ctx: &mut Context) -> Result<&'static str> {
    Err(HttpError::with(http::StatusCode::NOT_FOUND, "test", "nothing here").into())
}

fn conditional_app() -> Service {
    App::new()
        .use_middleware(Compress::default())
        .use_middleware(Fresh)
        .use_middleware(ETag)
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/doc", doc)
        .post("/doc", doc)
        .get("/big", big)
        .get("/dated", dated)
        .get("/cookie", with_cookie)
        .get("/private", private)
        .get("/missing", missing)
        .build()
        .expect("app")
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_gzip()
        .build()
        .expect("client")
}

async fn send(request: reqwest::RequestBuilder) -> (u16, reqwest::header::HeaderMap, Bytes) {
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.bytes().await.expect("body"))
}

fn etag_of(headers: &reqwest::header::HeaderMap) -> String {
    headers
        .get("etag")
        .expect("an ETag")
        .to_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn etag_then_304_for_exact_weak_list_and_star() {
    let server = common::start(conditional_app()).await;
    let client = client();
    let url = server.url("/doc");
    let (status, headers, body) = send(client.get(&url)).await;
    assert_eq!(status, 200);
    let tag = etag_of(&headers);
    assert_eq!(
        tag,
        strong_etag(&body).to_str().unwrap(),
        "the tag is the body's"
    );
    assert!(tag.starts_with('"'), "strong: {tag}");

    let weak = format!("W/{tag}");
    let list = format!("\"other\", {tag}");
    for condition in [tag.as_str(), weak.as_str(), list.as_str(), "*"] {
        let (status, headers, body) =
            send(client.get(&url).header("if-none-match", condition)).await;
        assert_eq!(status, 304, "If-None-Match: {condition}");
        assert!(body.is_empty());
        assert_eq!(etag_of(&headers), tag, "the 304 keeps the ETag");
        assert!(
            headers.get("content-type").is_none(),
            "no representation headers"
        );
    }
    let (status, _, body) = send(client.get(&url).header("if-none-match", "\"stale\"")).await;
    assert_eq!(status, 200);
    assert!(!body.is_empty());
    // A HEAD revalidates the same way.
    let (status, _, _) = send(client.head(&url).header("if-none-match", &tag)).await;
    assert_eq!(status, 304);
    server.stop().await;
}

#[tokio::test]
async fn precedence_no_cache_post_and_request_etag_header() {
    let server = common::start(conditional_app()).await;
    let client = client();
    let dated = server.url("/dated");
    let (status, headers, _) = send(client.get(&dated)).await;
    assert_eq!(status, 200);
    let tag = etag_of(&headers);
    assert_eq!(headers["last-modified"], LAST_MODIFIED);
    // If-Modified-Since alone: the same date or later is fresh, earlier is not.
    let (status, _, _) = send(
        client
            .get(&dated)
            .header("if-modified-since", LAST_MODIFIED),
    )
    .await;
    assert_eq!(status, 304);
    let later = "Thu, 22 Oct 2026 07:28:00 GMT";
    assert_eq!(
        send(client.get(&dated).header("if-modified-since", later))
            .await
            .0,
        304
    );
    let earlier = "Tue, 20 Oct 2026 07:28:00 GMT";
    assert_eq!(
        send(client.get(&dated).header("if-modified-since", earlier))
            .await
            .0,
        200
    );
    assert_eq!(
        send(client.get(&dated).header("if-modified-since", "not a date"))
            .await
            .0,
        200
    );
    // If-None-Match wins over If-Modified-Since, both ways.
    let stale_tag = client
        .get(&dated)
        .header("if-none-match", "\"stale\"")
        .header("if-modified-since", LAST_MODIFIED);
    assert_eq!(
        send(stale_tag).await.0,
        200,
        "a mismatching tag is not rescued by the date"
    );
    let fresh_tag = client
        .get(&dated)
        .header("if-none-match", &tag)
        .header("if-modified-since", earlier);
    assert_eq!(
        send(fresh_tag).await.0,
        304,
        "a matching tag ignores the date"
    );
    // A request Cache-Control: no-cache is never fresh.
    let no_cache = client
        .get(&dated)
        .header("if-none-match", &tag)
        .header("cache-control", "no-cache");
    assert_eq!(send(no_cache).await.0, 200);
    // A POST is never 304, even with a matching tag.
    let doc = server.url("/doc");
    let doc_tag = etag_of(&send(client.get(&doc)).await.1);
    let (status, _, body) = send(client.post(&doc).header("if-none-match", &doc_tag)).await;
    assert_eq!(status, 200);
    assert!(!body.is_empty());
    // An ETag *request* header means nothing.
    assert_eq!(send(client.get(&doc).header("etag", &doc_tag)).await.0, 200);
    // Errors get no tag.
    let (status, headers, _) = send(client.get(server.url("/missing"))).await;
    assert_eq!(status, 404);
    assert!(headers.get("etag").is_none());
    // A 304 keeps Set-Cookie (dropping it would lose a session update).
    let cookie = server.url("/cookie");
    let cookie_tag = etag_of(&send(client.get(&cookie)).await.1);
    let (status, headers, _) = send(client.get(&cookie).header("if-none-match", &cookie_tag)).await;
    assert_eq!(status, 304);
    assert_eq!(headers["set-cookie"], "sid=1; Path=/");
    server.stop().await;
}

#[tokio::test]
async fn a_no_store_answer_gets_no_tag_and_no_304() {
    let server = common::start(conditional_app()).await;
    let client = client();
    let url = server.url("/private");
    let (status, headers, body) = send(client.get(&url)).await;
    assert_eq!(status, 200);
    assert_eq!(&body[..], b"per-session");
    assert_eq!(headers["cache-control"], "private, No-Store");
    assert!(
        headers.get("etag").is_none(),
        "no-store: nobody revalidates"
    );
    // The tag it would have had does not make it fresh either.
    let would_be = strong_etag(b"per-session");
    let (status, _, body) = send(client.get(&url).header("if-none-match", would_be)).await;
    assert_eq!(status, 200);
    assert_eq!(&body[..], b"per-session");
    // The same body without no-store is tagged (the directive is what leaves it alone).
    assert!(
        send(client.get(server.url("/dated")))
            .await
            .1
            .get("etag")
            .is_some()
    );
    server.stop().await;
}

#[tokio::test]
async fn a_compressed_answer_revalidates_with_its_weak_tag() {
    let server = common::start(conditional_app()).await;
    let client = client();
    let url = server.url("/big");
    let (status, headers, _) = send(client.get(&url).header("accept-encoding", "gzip")).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-encoding"], "gzip");
    let tag = etag_of(&headers);
    assert!(tag.starts_with("W/\""), "compress weakened it: {tag}");
    let again = client
        .get(&url)
        .header("accept-encoding", "gzip")
        .header("if-none-match", &tag);
    let (status, headers, body) = send(again).await;
    assert_eq!(status, 304);
    assert!(body.is_empty());
    assert!(headers.get("content-encoding").is_none());
    server.stop().await;
}

fn picker_app(picker: JsonPicker) -> Service {
    App::new()
        .use_middleware(ETag)
        .use_middleware(ErrorHandler::default())
        .use_middleware(picker)
        .use_middleware(Responder::default())
        .get("/doc", doc)
        .get("/list", list)
        .get("/text", |_ctx: &mut Context| async { Ok("a,b") })
        .get("/missing", missing)
        .build()
        .expect("app")
}

#[tokio::test]
async fn json_picker_keeps_drops_and_ignores_empty_items() {
    let server = common::start(picker_app(JsonPicker::default())).await;
    let client = client();
    let get = |path: &str| {
        let client = client.clone();
        let url = server.url(path);
        async move {
            let (status, headers, body) = send(client.get(url)).await;
            let length: usize = headers["content-length"].to_str().unwrap().parse().unwrap();
            assert_eq!(length, body.len(), "Content-Length counts the picked bytes");
            (status, headers, body)
        }
    };
    let cases: [(&str, Value); 9] = [
        ("/doc?fields=a", json!({"a": 1})),
        ("/doc?fields=a,c", json!({"a": 1, "c": [3]})),
        ("/doc?fields=-a", json!({"b": "two", "c": [3]})),
        ("/doc?fields=-a,b", json!({"c": [3]})),
        ("/doc?fields=a,nope", json!({"a": 1})),
        ("/doc?fields=,a", json!({"a": 1})),
        ("/doc?fields=-", json!({"a": 1, "b": "two", "c": [3]})),
        (
            "/list?fields=id,name",
            json!([{"id": 1, "name": "x"}, {"id": 2, "name": "y"}]),
        ),
        (
            "/list?fields=-secret",
            json!([{"id": 1, "name": "x"}, {"id": 2, "name": "y"}]),
        ),
    ];
    for (path, expected) in cases {
        let (status, headers, body) = get(path).await;
        assert_eq!(status, 200, "{path}");
        let value: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value, expected, "{path}");
        assert_eq!(
            etag_of(&headers),
            strong_etag(&body).to_str().unwrap(),
            "{path}: the tag is of the picked bytes"
        );
    }
    let whole = get("/doc").await.2;
    assert_eq!(
        serde_json::from_slice::<Value>(&whole).unwrap(),
        json!({"a": 1, "b": "two", "c": [3]})
    );
    // Not JSON, or not 2xx: untouched.
    assert_eq!(&get("/text?fields=a").await.2[..], b"a,b");
    let (status, _, body) = get("/missing?fields=category").await;
    assert_eq!(status, 404);
    assert!(String::from_utf8_lossy(&body).contains("nothing here"));
    server.stop().await;

    // The parameter name is configurable.
    let custom = common::start(picker_app(JsonPicker::new(
        JsonPickerConfig::default().field("only"),
    )))
    .await;
    let body = send(client.get(custom.url("/doc?only=b&fields=a"))).await.2;
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap(),
        json!({"b": "two"})
    );
    custom.stop().await;
}

fn chunks(sizes: &'static [usize]) -> BodyStream {
    BodyStream::from_stream(futures_util::stream::iter(
        sizes
            .iter()
            .map(|n| Ok::<_, std::io::Error>(Bytes::from(vec![b'x'; *n]))),
    ))
}

/// Everything a raw `GET` receives until the server closes or resets the connection.
async fn raw_until_closed(addr: std::net::SocketAddr, path: &str) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .expect("write");
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return received,
            Ok(Ok(n)) => received.extend_from_slice(&buf[..n]),
            Err(_) => panic!("the connection stayed open"),
        }
    }
}

fn limited_app(max_size: usize) -> Service {
    App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(ResponseSizeLimiter::new(
            ResponseSizeLimiterConfig::default().max_size(max_size),
        ))
        .use_middleware(Responder::default())
        .get("/bytes/:n", |ctx: &mut Context| {
            let n: usize = ctx.param("n").and_then(|n| n.parse().ok()).unwrap_or(0);
            async move { Ok("x".repeat(n)) }
        })
        .get("/known/:n", |ctx: &mut Context| {
            let n: u64 = ctx.param("n").and_then(|n| n.parse().ok()).unwrap_or(0);
            let reader = std::io::Cursor::new(vec![b'x'; usize::try_from(n).unwrap()]);
            ctx.body_mut()
                .set_stream(BodyStream::from_reader(reader, n));
            async { Ok(()) }
        })
        .get("/unknown/under", |ctx: &mut Context| {
            ctx.body_mut().set_stream(chunks(&[40, 40, 20]));
            async { Ok(()) }
        })
        .get("/unknown/over", |ctx: &mut Context| {
            ctx.body_mut().set_stream(chunks(&[40, 40, 40, 40]));
            async { Ok(()) }
        })
        .build()
        .expect("app")
}

#[tokio::test]
async fn response_size_limit_at_the_boundary_for_buffers_and_streams() {
    let server = common::start(limited_app(100)).await;
    let client = common::browser();
    for path in ["/bytes/100", "/known/100", "/unknown/under"] {
        let (status, _, body) = send(client.get(server.url(path))).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(body.len(), 100, "{path}");
    }
    for path in ["/bytes/101", "/known/101"] {
        let (status, headers, body) = send(client.get(server.url(path))).await;
        assert_eq!(status, 500, "{path}");
        assert!(
            headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json")
        );
        let error: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            error["category"], "framework-response-size-limiter",
            "{path}"
        );
        assert_eq!(error["message"], "response body is too large", "{path}");
    }
    // Unknown length: the connection is cut before byte 101 (whether or not the head made it
    // out first), never a clean end of the chunked body.
    let raw = raw_until_closed(server.addr, "/unknown/over").await;
    let sent = raw.iter().filter(|b| **b == b'x').count();
    assert!(sent <= 100, "{sent} body bytes sent");
    assert!(
        !raw.ends_with(b"0\r\n\r\n"),
        "no clean end of the chunked body"
    );
    let failed = match client.get(server.url("/unknown/over")).send().await {
        Ok(response) => response.bytes().await.is_err(),
        Err(_) => true,
    };
    assert!(failed, "a client sees a failed transfer");
    server.stop().await;
}

fn renderer_app(dir: &std::path::Path, reload: bool) -> Service {
    let renderer = Renderer::new(
        RendererConfig::default()
            .dir(dir.to_path_buf())
            .reload(reload),
    )
    .expect("templates load");
    // Set as the body; `/hello` returns its page instead.
    let page = |file: &'static str| {
        move |ctx: &mut Context| {
            ctx.body_mut().set_value(RenderData::new(
                file,
                json!({"name": "<script>alert(1)</script>", "n": 5}),
            ));
            async { Ok(()) }
        }
    };
    App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(renderer)
        .get("/hello", |_ctx: &mut Context| async {
            Ok(RenderData::new(
                "hello.html",
                json!({"name": "<script>alert(1)</script>", "n": 5}),
            ))
        })
        .get("/nested", page("sub/page.tmpl"))
        .get("/text", page("plain.txt"))
        .get("/missing", page("nope.html"))
        .get("/escape", page("../secret.html"))
        .get("/fails", page("fails.html"))
        .build()
        .expect("app")
}

#[tokio::test]
async fn renderer_escapes_html_and_refuses_bad_templates() {
    let root = common::temp_dir("renderer");
    let dir = root.join("templates");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("hello.html"), "<p>Hello {{ name }}</p>").unwrap();
    std::fs::write(dir.join("sub/page.tmpl"), "<b>{{ name }}</b>").unwrap();
    std::fs::write(dir.join("plain.txt"), "{{ name }}").unwrap();
    std::fs::write(
        dir.join("fails.html"),
        "{% for i in n %}{{ i }}{% endfor %}",
    )
    .unwrap();
    std::fs::write(root.join("secret.html"), "secret {{ name }}").unwrap();
    let server = common::start(renderer_app(&dir, false)).await;
    let client = common::browser();
    let (status, headers, body) = send(client.get(server.url("/hello"))).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    assert_eq!(
        &body[..],
        b"<p>Hello &lt;script&gt;alert(1)&lt;&#x2f;script&gt;</p>"
    );
    let nested = send(client.get(server.url("/nested"))).await.2;
    assert!(String::from_utf8_lossy(&nested).starts_with("<b>&lt;script&gt;"));
    let text = send(client.get(server.url("/text"))).await.2;
    assert_eq!(
        &text[..],
        b"<script>alert(1)</script>",
        "not an HTML template: as is"
    );
    for (path, message) in [
        ("/missing", "template `nope.html` not found"),
        (
            "/escape",
            "template `../secret.html` is outside the template directory",
        ),
        ("/fails", "rendering template `fails.html` failed"),
    ] {
        let (status, _, body) = send(client.get(server.url(path))).await;
        assert_eq!(status, 500, "{path}");
        let error: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(error["category"], "framework-renderer", "{path}");
        assert_eq!(error["message"], message, "{path}");
        assert!(
            !String::from_utf8_lossy(&body).contains("script"),
            "{path}: no data in errors"
        );
    }
    server.stop().await;

    // Loaded once: an edit shows only with `reload`.
    let cached = common::start(renderer_app(&dir, false)).await;
    let reloading = common::start(renderer_app(&dir, true)).await;
    std::fs::write(dir.join("hello.html"), "<p>Bye {{ name }}</p>").unwrap();
    let old = send(client.get(cached.url("/hello"))).await.2;
    assert!(old.starts_with(b"<p>Hello"), "cached");
    let new = send(client.get(reloading.url("/hello"))).await.2;
    assert!(new.starts_with(b"<p>Bye"), "reloaded");
    cached.stop().await;
    reloading.stop().await;

    // A syntax error stops the start-up, naming the template.
    std::fs::write(dir.join("broken.html"), "{% if %}").unwrap();
    let err = Renderer::new(RendererConfig::default().dir(dir.clone()))
        .err()
        .expect("refused");
    assert_eq!(err.component(), "renderer");
    assert!(err.message().contains("broken.html"), "{err}");
    // A typed error: `?` carries it into any `Box<dyn Error>`.
    let boxed: Box<dyn std::error::Error> = Box::new(err.clone());
    assert!(boxed.to_string().starts_with("renderer: "), "{boxed}");
    let missing_dir = Renderer::new(RendererConfig::default().dir(root.join("nowhere")));
    assert!(missing_dir.is_err());
    let _ = std::fs::remove_dir_all(root);
    tokio::time::sleep(Duration::from_millis(1)).await;
}

#[tokio::test]
async fn use_when_leaves_answers_alone() {
    let root = common::temp_dir("renderer-skip");
    std::fs::write(root.join("page.html"), "<p>{{ name }}</p>").unwrap();
    // Non-capturing, so `Copy`: one predicate for the three middleware.
    let unless_skip = |ctx: &Context| ctx.query("skip").is_none();
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_when(unless_skip, JsonPicker::new(JsonPickerConfig::default()))
        .use_when(
            unless_skip,
            ResponseSizeLimiter::new(ResponseSizeLimiterConfig::default().max_size(10)),
        )
        .use_middleware(Responder::default())
        .use_when(
            unless_skip,
            Renderer::new(RendererConfig::default().dir(root.clone())).unwrap(),
        )
        .get("/doc", doc)
        .get("/page", |_ctx: &mut Context| async {
            // Short: the page must stay under the size limiter's 10 bytes.
            Ok(RenderData::new("page.html", json!({"name": "q9"})))
        })
        .build()
        .unwrap();
    let server = common::start(service).await;
    let client = client();
    // Not skipped: picked, then refused as too large (over 10 bytes).
    assert_eq!(send(client.get(server.url("/doc?fields=a,b"))).await.0, 500);
    // Skipped: neither the picker nor the limiter touch it.
    let (status, _, body) = send(client.get(server.url("/doc?fields=a&skip=1"))).await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap(),
        json!({"a": 1, "b": "two", "c": [3]})
    );
    // The renderer skipped: the page is not marshalled as JSON in its place (500), and its
    // data is not sent.
    let (status, _, body) = send(client.get(server.url("/page?skip=1"))).await;
    assert_eq!(status, 500);
    assert!(!String::from_utf8_lossy(&body).contains("q9"));
    let (status, _, body) = send(client.get(server.url("/page"))).await;
    assert_eq!((status, &body[..]), (200, &b"<p>q9</p>"[..]));
    server.stop().await;
    let _ = std::fs::remove_dir_all(root);
}

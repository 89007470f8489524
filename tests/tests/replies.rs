//! Redirects and file replies over real sockets, and how every reply type of
//! `framework::reply` appears in the OpenAPI document: each redirect status with its
//! `Location`, the same-site helper's refusals (a table of attacks), a target that would
//! inject a header; files whole, in ranges, 304 by `ETag` and by date, 412, 416, `If-Range`,
//! `Content-Disposition` of a non-ASCII name, 404, a directory, and the file handle let go
//! when the client leaves mid-download. Its own test binary, so its controller stays out of
//! the other tests.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use framework::reply::{Attachment, Event, JsonLines, LastEventId, NamedFile, Redirect, Sse};
use framework::{App, Context, FromState, Result, Service, controller};
use serde_json::{Value, json};

/// The files the handlers serve, in a directory of this test run.
struct Files(PathBuf);

fn data_bytes() -> Vec<u8> {
    (0..1000u32).map(|i| (i % 251) as u8).collect()
}

fn fixture() -> PathBuf {
    let dir = common::temp_dir("replies");
    std::fs::create_dir_all(dir.join("folder")).unwrap();
    std::fs::write(dir.join("data.bin"), data_bytes()).unwrap();
    std::fs::write(dir.join("notes.txt"), "some notes").unwrap();
    dir
}

fn files(ctx: &Context) -> Result<PathBuf> {
    Ok(ctx.state().require::<Files>()?.0.clone())
}

async fn see_other(_ctx: &mut Context) -> Result<Redirect> {
    Ok(Redirect::see_other("/done?x=1")?)
}

async fn temporary(_ctx: &mut Context) -> Result<Redirect> {
    Ok(Redirect::temporary("https://example.com/elsewhere")?)
}

async fn permanent(_ctx: &mut Context) -> Result<Redirect> {
    Ok(Redirect::permanent("/new home/café")?)
}

/// A target the app got wrong: it would start a second header.
async fn broken(ctx: &mut Context) -> Result<Redirect> {
    let to = ctx.query("to").unwrap_or_default().into_owned();
    Ok(Redirect::see_other(format!("/x{to}"))?)
}

/// After a login: back to `?next=`, on this site only.
async fn next(ctx: &mut Context) -> Result<Redirect> {
    let next = ctx.query("next").unwrap_or_default().into_owned();
    Ok(Redirect::local(next)?)
}

/// `/file/<name>?as=…&inline`: the file, optionally renamed or shown inline.
async fn file(ctx: &mut Context) -> Result<NamedFile> {
    let name = ctx.param("name").unwrap_or_default().into_owned();
    let mut file = NamedFile::open(files(ctx)?.join(name)).await?;
    if let Some(shown) = ctx.query("as") {
        file = file.file_name(shown.into_owned());
    }
    if ctx.query("inline").is_some() {
        file = file.inline();
    }
    if ctx.query("attachment").is_some() {
        file = file.attachment();
    }
    if ctx.query("cache").is_some() {
        ctx.set_response_header(
            http::header::CACHE_CONTROL,
            http::HeaderValue::from_static("public, max-age=60"),
        );
    }
    Ok(file)
}

async fn attachment(_ctx: &mut Context) -> Result<Attachment> {
    Ok(Attachment::new(data_bytes(), "données.bin"))
}

fn service(dir: &Path) -> Service {
    App::new()
        .with_state(Files(dir.to_owned()))
        .get("/see-other", see_other)
        .post("/temporary", temporary)
        .get("/permanent", permanent)
        .get("/broken", broken)
        .get("/next", next)
        .get("/file/:name", file)
        .get("/attachment", attachment)
        .openapi("/openapi.json")
        .build()
        .unwrap()
}

fn no_redirects() -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("accept", "application/json".parse().unwrap());
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .default_headers(headers)
        .build()
        .unwrap()
}

#[tokio::test]
async fn each_redirect_status_with_its_location() {
    let server = common::start(service(&fixture())).await;
    let client = no_redirects();
    for (method, path, status, location) in [
        ("GET", "/see-other", 303, "/done?x=1"),
        ("POST", "/temporary", 307, "https://example.com/elsewhere"),
        ("GET", "/permanent", 308, "/new%20home/caf%C3%A9"),
        (
            "GET",
            "/next?next=%2Faccount%3Ftab%3D2",
            303,
            "/account?tab=2",
        ),
    ] {
        let res = client
            .request(method.parse().unwrap(), server.url(path))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), status, "{path}");
        assert_eq!(res.headers()["location"], location, "{path}");
        assert_eq!(res.headers()["content-length"], "0", "{path}");
    }
}

#[tokio::test]
async fn a_target_that_would_inject_a_header_is_an_error_not_a_header() {
    let server = common::start(service(&fixture())).await;
    for to in [
        "%0D%0ASet-Cookie:%20a=b",
        "%0ASet-Cookie:%20a=b",
        "%0D",
        "%00",
        "%7F",
    ] {
        let res = no_redirects()
            .get(server.url(&format!("/broken?to={to}")))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 500, "{to}");
        assert!(res.headers().get("set-cookie").is_none(), "{to}");
        assert!(res.headers().get("location").is_none(), "{to}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["category"], "framework-redirect", "{to}");
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("control character"),
            "{body}"
        );
    }
}

/// Every way `?next=` could lead off the site is refused with 400.
#[tokio::test]
async fn the_local_redirect_refuses_every_way_off_the_site() {
    let server = common::start(service(&fixture())).await;
    let client = no_redirects();
    for attack in [
        "//evil.example",
        "///evil.example",
        "/\\evil.example",
        "\\\\evil.example",
        "\\/evil.example",
        "http://evil.example",
        "https:evil.example",
        "HTTP://evil.example/",
        "javascript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "evil.example",
        " /evil",
        "/\t/evil.example",
        "/\n/evil.example",
        "/\r\n/evil.example",
        "\t//evil.example",
        "../account",
        "?x=1",
        "#top",
        "",
    ] {
        let next: String = url_encode(attack);
        let res = client
            .get(server.url(&format!("/next?next={next}")))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 400, "{attack:?}");
        assert!(res.headers().get("location").is_none(), "{attack:?}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["category"], "framework-redirect", "{attack:?}");
    }
    // Encoded slashes stay in the path on this site.
    let res = client
        .get(server.url("/next?next=%2F%252F%252Fevil.example"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303);
    assert_eq!(res.headers()["location"], "/%2F%2Fevil.example");
}

/// Percent-encodes every byte but letters and digits, for a query value.
fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[tokio::test]
async fn a_file_whole_and_in_ranges() {
    let dir = fixture();
    let server = common::start(service(&dir)).await;
    let client = no_redirects();
    let data = data_bytes();

    let res = client
        .get(server.url("/file/data.bin"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let h = res.headers().clone();
    assert_eq!(h["content-type"], "application/octet-stream");
    assert_eq!(h["content-length"], "1000");
    assert_eq!(h["accept-ranges"], "bytes");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["cache-control"], "no-cache");
    assert!(h.get("content-disposition").is_none());
    let etag = h["etag"].to_str().unwrap().to_owned();
    assert!(etag.starts_with("W/\"3e8-"), "{etag}");
    let modified = std::fs::metadata(dir.join("data.bin"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(
        h["last-modified"],
        httpdate::fmt_http_date(modified).as_str()
    );
    assert_eq!(res.bytes().await.unwrap(), data);

    let text = client
        .get(server.url("/file/notes.txt"))
        .send()
        .await
        .unwrap();
    assert_eq!(text.headers()["content-type"], "text/plain; charset=utf-8");
    assert_eq!(text.text().await.unwrap(), "some notes");

    for (range, first, last) in [
        ("bytes=10-19", 10, 19),
        ("bytes=990-", 990, 999),
        ("bytes=-100", 900, 999),
        ("bytes=-5000", 0, 999),
        ("bytes=995-2000", 995, 999),
    ] {
        let res = client
            .get(server.url("/file/data.bin"))
            .header("range", range)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 206, "{range}");
        assert_eq!(
            res.headers()["content-range"],
            format!("bytes {first}-{last}/1000").as_str(),
            "{range}"
        );
        assert_eq!(res.bytes().await.unwrap(), data[first..=last], "{range}");
    }
    for range in ["bytes=1000-", "bytes=5000-6000", "bytes=-0"] {
        let res = client
            .get(server.url("/file/data.bin?as=x.bin"))
            .header("range", range)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 416, "{range}");
        assert_eq!(res.headers()["content-range"], "bytes */1000", "{range}");
        assert!(
            res.headers().get("content-disposition").is_none(),
            "the error is not the file"
        );
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["category"], "framework-file");
    }
    // Several ranges, or one that does not parse: the whole file.
    for range in ["bytes=0-1,5-6", "bytes=x"] {
        let res = client
            .get(server.url("/file/data.bin"))
            .header("range", range)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{range}");
        assert_eq!(res.bytes().await.unwrap().len(), 1000);
    }
}

#[tokio::test]
async fn conditional_requests_on_a_file() {
    let dir = fixture();
    let server = common::start(service(&dir)).await;
    let client = no_redirects();
    let first = client
        .get(server.url("/file/data.bin"))
        .send()
        .await
        .unwrap();
    let etag = first.headers()["etag"].to_str().unwrap().to_owned();
    let modified = first.headers()["last-modified"]
        .to_str()
        .unwrap()
        .to_owned();
    let get = |name: &'static str, value: String| {
        client
            .get(server.url("/file/data.bin?attachment"))
            .header(name, value)
            .send()
    };

    let res = get("if-none-match", etag.clone()).await.unwrap();
    assert_eq!(res.status(), 304);
    assert_eq!(res.headers()["etag"], etag.as_str());
    assert!(res.bytes().await.unwrap().is_empty());
    let res = get("if-none-match", format!("\"other\", {etag}"))
        .await
        .unwrap();
    assert_eq!(res.status(), 304);
    let res = get("if-modified-since", modified.clone()).await.unwrap();
    assert_eq!(res.status(), 304, "by date");
    let earlier = httpdate::fmt_http_date(
        httpdate::parse_http_date(&modified).unwrap() - Duration::from_secs(60),
    );
    let res = get("if-modified-since", earlier.clone()).await.unwrap();
    assert_eq!(res.status(), 200, "changed since");
    assert_eq!(
        res.headers()["content-disposition"],
        "attachment; filename=\"data.bin\""
    );
    let res = get("if-none-match", "\"other\"".into()).await.unwrap();
    assert_eq!(res.status(), 200);
    // If-Match compares strongly: the weak tag never matches, and an unknown one fails too.
    let res = get("if-match", etag.clone()).await.unwrap();
    assert_eq!(res.status(), 412);
    let res = get("if-unmodified-since", earlier).await.unwrap();
    assert_eq!(res.status(), 412);

    // If-Range: a part only while the client's copy is current.
    let ranged = |if_range: String| {
        client
            .get(server.url("/file/data.bin"))
            .header("range", "bytes=0-9")
            .header("if-range", if_range)
            .send()
    };
    let res = ranged(modified.clone()).await.unwrap();
    assert_eq!(res.status(), 206, "the date matches");
    assert_eq!(res.bytes().await.unwrap().len(), 10);
    for stale in [
        "\"other\"".to_owned(),
        etag.clone(), // weak: never a match for If-Range
        "Thu, 01 Jan 2015 00:00:00 GMT".to_owned(),
    ] {
        let res = ranged(stale.clone()).await.unwrap();
        assert_eq!(res.status(), 200, "{stale}");
        assert_eq!(res.bytes().await.unwrap().len(), 1000, "{stale}");
    }
    // A Cache-Control the handler set is kept.
    let res = client
        .get(server.url("/file/data.bin?cache"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["cache-control"], "public, max-age=60");
}

#[tokio::test]
async fn disposition_names_a_file_in_ascii_and_in_utf8() {
    let server = common::start(service(&fixture())).await;
    let client = no_redirects();
    for (query, expected) in [
        ("attachment", "attachment; filename=\"notes.txt\""),
        ("inline", "inline; filename=\"notes.txt\""),
        (
            "as=Na%C3%AFve%20r%C3%A9sum%C3%A9%20%E2%80%93%20%22final%22.pdf",
            "attachment; filename=\"Na_ve r_sum_ _ _final_.pdf\"; \
             filename*=UTF-8''Na%C3%AFve%20r%C3%A9sum%C3%A9%20%E2%80%93%20%22final%22.pdf",
        ),
        (
            "as=%E6%8A%A5%E5%91%8A.txt&inline",
            "inline; filename=\"__.txt\"; filename*=UTF-8''%E6%8A%A5%E5%91%8A.txt",
        ),
        (
            "as=..%2F..%2Fetc%2Fpasswd",
            "attachment; filename=\"passwd\"",
        ),
        (
            "as=a%0D%0AX-Evil:%201",
            "attachment; filename=\"a__X-Evil: 1\"",
        ),
        // A right-to-left override (U+202E) and a zero-width space (U+200B): replaced in both
        // forms, so no client shows `invoice.exe` as `invoiceexe.png`.
        (
            "as=invoice%E2%80%AEgnp%E2%80%8B.exe",
            "attachment; filename=\"invoice_gnp_.exe\"",
        ),
    ] {
        let res = client
            .get(server.url(&format!("/file/notes.txt?{query}")))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{query}");
        assert_eq!(res.headers()["content-disposition"], expected, "{query}");
        assert!(res.headers().get("x-evil").is_none());
        // The type is the file's, not the name's.
        assert_eq!(res.headers()["content-type"], "text/plain; charset=utf-8");
    }
}

#[tokio::test]
async fn bytes_under_a_name() {
    let server = common::start(service(&fixture())).await;
    let client = no_redirects();
    let res = client.get(server.url("/attachment")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let h = res.headers().clone();
    assert_eq!(
        h["content-disposition"],
        "attachment; filename=\"donn_es.bin\"; filename*=UTF-8''donn%C3%A9es.bin"
    );
    assert_eq!(h["content-type"], "application/octet-stream");
    let etag = h["etag"].to_str().unwrap().to_owned();
    assert!(etag.starts_with("\"3e8-"), "a strong tag: {etag}");
    assert!(h.get("last-modified").is_none());
    assert_eq!(res.bytes().await.unwrap(), data_bytes());
    let res = client
        .get(server.url("/attachment"))
        .header("range", "bytes=-10")
        .header("if-range", etag.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 206, "a strong tag satisfies If-Range");
    assert_eq!(res.bytes().await.unwrap(), data_bytes()[990..]);
    let res = client
        .get(server.url("/attachment"))
        .header("if-none-match", etag)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 304);
}

#[tokio::test]
async fn a_missing_file_and_a_directory_are_404() {
    let server = common::start(service(&fixture())).await;
    for (name, message) in [
        ("missing.bin", "file not found"),
        ("folder", "not a regular file"),
        ("data.bin%2Fchild", "file not found"),
    ] {
        let res = no_redirects()
            .get(server.url(&format!("/file/{name}")))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 404, "{name}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(
            (&body["category"], &body["message"]),
            (&json!("framework-file"), &json!(message)),
            "{name}"
        );
    }
}

/// How many descriptors of this process are open on `file`.
fn open_copies(file: &Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|fds| {
            fds.filter_map(std::result::Result::ok)
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .filter(|target| target == file)
                .count()
        })
        .unwrap_or(0)
}

/// This process's resident memory, in bytes (`/proc/self/status`).
fn resident() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// A 20 MiB file streams (the client reads a part and leaves; the server's memory does not
/// hold the file: resident memory grows by less than half the file while the stream waits),
/// and its handle is let go when the client goes away, when a download ends, after a 304 and
/// after a 416.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_file_streams_and_its_handle_is_let_go() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = fixture();
    let chunk: Vec<u8> = (0..1024 * 1024).map(|i| (i % 253) as u8).collect();
    let mut file = std::fs::File::create(dir.join("big.bin")).unwrap();
    for _ in 0..20 {
        std::io::Write::write_all(&mut file, &chunk).unwrap();
    }
    drop(file);
    let big = std::fs::canonicalize(dir.join("big.bin")).unwrap();
    let server = common::start(service(&dir)).await;
    assert_eq!(open_copies(&big), 0);
    let before = resident();
    let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    socket
        .write_all(b"GET /file/big.bin HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut head = vec![0u8; 64 * 1024];
    let n = socket.read(&mut head).await.unwrap();
    let head = String::from_utf8_lossy(&head[..n]).to_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("content-length: 20971520"), "{head}");
    assert_eq!(open_copies(&big), 1, "open while it streams");
    // The client reads no more: the server has filled what the connection takes, and waits.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let held = resident().saturating_sub(before);
    assert!(
        held < 10 * 1024 * 1024,
        "resident memory grew by {held} bytes while 20 MiB waited to be sent"
    );
    drop(socket);
    assert!(
        common::eventually(|| open_copies(&big) == 0).await,
        "released when the client went away"
    );
    // A whole download, then the handle is gone too.
    let body = reqwest::get(server.url("/file/big.bin"))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(body.len(), 20 * 1024 * 1024);
    assert!(common::eventually(|| open_copies(&big) == 0).await);
    // A 304 and a 416 let it go too.
    let client = no_redirects();
    let first = client
        .get(server.url("/file/big.bin"))
        .send()
        .await
        .unwrap();
    let etag = first.headers()["etag"].to_str().unwrap().to_owned();
    drop(first);
    assert!(
        common::eventually(|| open_copies(&big) == 0).await,
        "dropped answer"
    );
    for (name, value, status) in [
        ("if-none-match", etag, 304),
        ("range", "bytes=999999999-".to_owned(), 416),
    ] {
        let res = client
            .get(server.url("/file/big.bin"))
            .header(name, value)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), status, "{name}");
        let _ = res.bytes().await;
        assert!(
            common::eventually(|| open_copies(&big) == 0).await,
            "released after a {status}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Every reply type as a controller method's return, and what the document says of it.

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Row {
    id: u32,
}

/// A value without a schema.
#[derive(serde::Serialize)]
struct Opaque;

#[derive(FromState)]
struct Replies;

#[controller(prefix = "/replies")]
impl Replies {
    /// Server-sent events from the client's last id on.
    #[get("/events")]
    async fn events(&self, last: LastEventId) -> framework::Result<Sse> {
        let next = last.parse::<u32>().map_or(0, |n| n + 1);
        let event = Event::new().id(next.to_string())?.data("hello");
        Ok(Sse::new(framework::body::stream::iter([event])))
    }

    /// Rows as NDJSON.
    #[get("/rows")]
    async fn rows(&self) -> JsonLines<Row> {
        JsonLines::new(framework::body::stream::iter([Row { id: 1 }]))
    }

    /// Values without a schema as NDJSON.
    #[get("/opaque")]
    async fn opaque(&self) -> JsonLines<Opaque> {
        JsonLines::new(framework::body::stream::iter([Opaque]))
    }

    /// Somewhere else.
    #[post("/moved")]
    async fn moved(&self) -> framework::Result<Redirect> {
        Ok(Redirect::see_other("/replies/events")?)
    }

    /// A file.
    #[get("/file")]
    async fn file(&self, ctx: &mut Context) -> framework::Result<NamedFile> {
        NamedFile::open(files(ctx)?.join("notes.txt")).await
    }

    /// Named bytes, when there are some.
    #[get("/export")]
    async fn export(&self) -> Option<Attachment> {
        Some(Attachment::new("a,b\n", "export.csv"))
    }
}

#[tokio::test]
async fn controller_methods_return_every_reply() {
    let server = common::start(service(&fixture())).await;
    let client = no_redirects();
    let res = client
        .get(server.url("/replies/events"))
        .header("last-event-id", "9")
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    assert_eq!(res.text().await.unwrap(), "id: 10\ndata: hello\n\n");
    let res = client
        .get(server.url("/replies/rows"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.text().await.unwrap(), "{\"id\":1}\n");
    let res = client
        .post(server.url("/replies/moved"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303);
    assert_eq!(res.headers()["location"], "/replies/events");
    let res = client
        .get(server.url("/replies/file"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.text().await.unwrap(), "some notes");
    let res = client
        .get(server.url("/replies/export"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["content-type"], "text/csv; charset=utf-8");
    assert_eq!(res.text().await.unwrap(), "a,b\n");
}

/// The document lists each reply with its own media type, statuses and headers, and stays
/// a valid OpenAPI 3.1 document (`openapi-spec-validator`, when it is installed, as CI has
/// it).
#[tokio::test]
async fn the_document_describes_each_reply() {
    let server = common::start(service(&fixture())).await;
    let doc: Value = reqwest::get(server.url("/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let op = |path: &str, method: &str| doc["paths"][path][method]["responses"].clone();

    let events = op("/replies/events", "get");
    assert_eq!(
        events["200"]["content"],
        json!({"text/event-stream": {"schema": {"type": "string"}}})
    );
    let rows = op("/replies/rows", "get");
    assert_eq!(
        rows["200"]["content"]["application/x-ndjson"]["schema"],
        json!({"type": "array", "items": {"$ref": "#/components/schemas/Row"}})
    );
    assert_eq!(
        doc["components"]["schemas"]["Row"]["required"],
        json!(["id"])
    );
    let opaque = op("/replies/opaque", "get");
    assert_eq!(
        opaque["200"]["content"]["application/x-ndjson"]["schema"],
        json!({"type": "array", "items": {}})
    );
    let moved = op("/replies/moved", "post");
    for status in ["303", "307", "308"] {
        assert_eq!(
            moved[status]["headers"]["Location"],
            json!({"required": true, "schema": {"type": "string", "format": "uri-reference"}}),
            "{status}"
        );
        assert!(moved[status].get("content").is_none(), "{status}");
    }
    assert!(moved.get("200").is_none(), "no JSON success: {moved}");
    for path in ["/replies/file", "/replies/export"] {
        let file = op(path, "get");
        for status in ["200", "206"] {
            assert_eq!(
                file[status]["content"]["application/octet-stream"]["schema"],
                json!({"type": "string", "format": "binary"}),
                "{path} {status}"
            );
        }
        assert!(file["304"].is_object() && file["412"].is_object() && file["416"].is_object());
    }
    assert!(
        op("/replies/export", "get")["404"].is_object(),
        "Option: 404"
    );

    common::validate_openapi(&doc, "replies-openapi");
}

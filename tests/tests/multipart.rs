//! `multipart/form-data` uploads over real sockets: parts arrive with their names, media types
//! and sanitised file names; each limit passes at its value and answers 413 one byte (or one
//! part) past it; malformed, truncated and stalled bodies are 400, 415 or 408; files saved to
//! temporary files are gone after the request, also when the client stops or goes away
//! mid-part; controller arguments take their limits from their type or the app's state; the
//! OpenAPI document describes the routes as `multipart/form-data` with binary parts.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use framework::multipart::{Multipart, MultipartLimits, MultipartParts, PartSpec};
use framework::{App, Context, HttpError, Result, ServerLimits, Service, controller};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BOUNDARY: &str = "----e2e-boundary-7MA4YWxkTrZu0gW";

/// A `multipart/form-data` body written by hand, so every byte is known.
#[derive(Default)]
struct Form(Vec<u8>);

impl Form {
    fn part(mut self, headers: &str, data: &[u8]) -> Self {
        self.0
            .extend_from_slice(format!("--{BOUNDARY}\r\n{headers}\r\n\r\n").as_bytes());
        self.0.extend_from_slice(data);
        self.0.extend_from_slice(b"\r\n");
        self
    }

    fn field(self, name: &str, value: &[u8]) -> Self {
        self.part(
            &format!("Content-Disposition: form-data; name=\"{name}\""),
            value,
        )
    }

    fn file(self, name: &str, file_name: &str, content_type: &str, data: &[u8]) -> Self {
        self.part(
            &format!(
                "Content-Disposition: form-data; name=\"{name}\"; filename=\"{file_name}\"\r\n\
                 Content-Type: {content_type}"
            ),
            data,
        )
    }

    fn finish(mut self) -> Vec<u8> {
        self.0
            .extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
        self.0
    }
}

fn content_type() -> String {
    format!("multipart/form-data; boundary={BOUNDARY}")
}

/// Limits from the query (`parts`, `field`, `file`, `total`, `header`), else the defaults.
fn limits_from(ctx: &Context) -> MultipartLimits {
    let number = |name: &str| ctx.query(name).and_then(|v| v.parse::<u64>().ok());
    let d = MultipartLimits::DEFAULT;
    MultipartLimits::default()
        .parts(number("parts").map_or(d.parts, |n| n as usize))
        .field_size(number("field").unwrap_or(d.field_size))
        .file_size(number("file").unwrap_or(d.file_size))
        .total_size(number("total").unwrap_or(d.total_size))
        .header_size(number("header").unwrap_or(d.header_size))
}

/// Reads every part (fields as text, files as bytes) and answers what it saw.
async fn parts(ctx: &mut Context) -> Result<Value> {
    let limits = limits_from(ctx);
    let mut form: Multipart = Multipart::from_context(ctx, limits)?;
    let mut seen = Vec::new();
    while let Some(part) = form.next_part().await? {
        let mut entry = json!({
            "name": part.name(),
            "fileName": part.file_name(),
            "contentType": part.content_type(),
            "file": part.is_file(),
        });
        if part.is_file() {
            let bytes = part.bytes().await?;
            entry["len"] = bytes.len().into();
            entry["sha256"] = hex::encode(Sha256::digest(&bytes)).into();
        } else {
            entry["text"] = part.text().await?.into();
        }
        seen.push(entry);
    }
    Ok(Value::Array(seen))
}

/// Reads the parts' names only: what is left of each part is skipped by the next one.
async fn names(ctx: &mut Context) -> Result<Value> {
    let limits = limits_from(ctx);
    let mut form: Multipart = Multipart::from_context(ctx, limits)?;
    let mut names = Vec::new();
    while let Some(part) = form.next_part().await? {
        names.push(part.name().to_owned());
    }
    Ok(json!(names))
}

/// Handlers of `/save` running now, per directory.
static SAVING: Mutex<Option<HashMap<PathBuf, usize>>> = Mutex::new(None);

fn saving(dir: &Path) -> usize {
    SAVING
        .lock()
        .unwrap()
        .as_ref()
        .and_then(|m| m.get(dir).copied())
        .unwrap_or(0)
}

/// Counts a `/save` handler in [`SAVING`] until dropped (the request finished or was dropped).
struct Saving(PathBuf);

impl Saving {
    fn new(dir: PathBuf) -> Self {
        *SAVING
            .lock()
            .unwrap()
            .get_or_insert_with(HashMap::new)
            .entry(dir.clone())
            .or_default() += 1;
        Self(dir)
    }
}

impl Drop for Saving {
    fn drop(&mut self) {
        if let Some(map) = SAVING.lock().unwrap().as_mut() {
            *map.entry(self.0.clone()).or_default() -= 1;
        }
    }
}

/// Saves every file part to a temporary file in `?dir=` and answers each file's path, length
/// and digest (read back from the file), while the files still exist.
async fn save(ctx: &mut Context) -> Result<Value> {
    let dir = PathBuf::from(ctx.query("dir").unwrap_or_default().into_owned());
    let _saving = Saving::new(dir.clone());
    let mut form: Multipart = Multipart::from_context(ctx, MultipartLimits::DEFAULT)?;
    let mut files = Vec::new();
    let mut saved = Vec::new();
    while let Some(part) = form.next_part().await? {
        if !part.is_file() {
            continue;
        }
        let file = part.save_to_temp_in(&dir).await?;
        let mut bytes = Vec::new();
        file.open().await?.read_to_end(&mut bytes).await?;
        files.push(json!({
            "len": file.len(),
            "fileName": file.file_name(),
            "contentType": file.content_type(),
            "inDir": file.path().parent() == Some(dir.as_path()),
            "exists": file.path().exists(),
            "sha256": hex::encode(Sha256::digest(&bytes)),
        }));
        saved.push(file);
    }
    Ok(Value::Array(files))
}

/// A part's bytes written to a sink (a `Vec`), with its count.
async fn sink(ctx: &mut Context) -> Result<Value> {
    let mut form: Multipart = Multipart::from_context(ctx, MultipartLimits::DEFAULT)?;
    let mut out = Vec::new();
    let Some(part) = form.next_part().await? else {
        return Err(HttpError::new("no part").into());
    };
    let written = part.write_to(&mut out).await?;
    Ok(json!({"written": written, "sha256": hex::encode(Sha256::digest(&out))}))
}

/// A picture and an optional caption, with limits of its own.
struct PictureForm;

impl MultipartParts for PictureForm {
    const PARTS: &'static [PartSpec] = &[
        PartSpec::file("picture")
            .content_type("image/png, image/jpeg")
            .description("the picture"),
        PartSpec::text("caption").optional(),
    ];
    const LIMITS: Option<MultipartLimits> = Some(MultipartLimits::DEFAULT.parts(2).file_size(64));
}

#[derive(framework::FromState)]
struct Uploads;

#[controller(prefix = "/controller")]
impl Uploads {
    /// Upload a picture.
    ///
    /// Its bytes are counted, nothing is kept.
    #[post("/picture")]
    async fn picture(&self, mut form: Multipart<PictureForm>) -> Result<String> {
        let mut total = 0;
        while let Some(part) = form.next_part().await? {
            total += part.bytes().await?.len();
        }
        Ok(format!("{total} bytes"))
    }

    /// Any parts, within the app's limits.
    #[put("/any")]
    async fn any(&self, mut form: Multipart) -> Result<String> {
        let mut count = 0;
        while form.next_part().await?.is_some() {
            count += 1;
        }
        Ok(format!("{count} parts"))
    }
}

fn app() -> App {
    App::new()
        // What a plain `Multipart` argument (the controller's `any`) gets.
        .with_state(MultipartLimits::DEFAULT.parts(2))
        .post("/parts", parts)
        .post("/names", names)
        .post("/save", save)
        .post("/sink", sink)
        .openapi("/openapi.json")
}

fn service() -> Service {
    app().build().expect("app builds")
}

/// A quick body read deadline, for the clients that stop sending.
fn stalling_service() -> Service {
    app()
        .server_limits(ServerLimits::default().body_read_timeout(Duration::from_millis(400)))
        .build()
        .expect("app builds")
}

/// Posts `body` as multipart with a `Content-Length`; the status and the JSON answer.
async fn post(server: &common::Running, path: &str, body: Vec<u8>) -> (u16, Value) {
    let res = common::browser()
        .post(server.url(path))
        .header("content-type", content_type())
        .body(body)
        .send()
        .await
        .expect("request");
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// Posts `body` chunked (no `Content-Length`), in chunks of `chunk` bytes.
async fn post_chunked(
    server: &common::Running,
    path: &str,
    body: Vec<u8>,
    chunk: usize,
) -> (u16, Value) {
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        body.chunks(chunk).map(|c| Ok(c.to_vec())).collect();
    let res = common::browser()
        .post(server.url(path))
        .header("content-type", content_type())
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            chunks,
        )))
        .send()
        .await
        .expect("request");
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

fn assert_413(status: u16, body: &Value, message: &str) {
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["category"], "framework-multipart", "{body}");
    assert_eq!(body["message"], message, "{body}");
}

#[tokio::test]
async fn parts_arrive_with_their_names_types_and_safe_file_names() {
    let server = common::start(service()).await;
    let png = [0x89, b'P', b'N', b'G', 0, 1, 2, 3];
    let body = Form::default()
        .field("title", "héllo wörld".as_bytes())
        .file("doc", "../../etc/passwd", "text/plain", b"root:x:0:0")
        .file("pic", "C:\\Users\\me\\cat.png", "image/png", &png)
        .file("hidden", "..", "application/octet-stream", b"")
        .part(
            "Content-Disposition: form-data; name=\"bare\"; filename=\".bashrc\"",
            b"x",
        )
        .file(
            "bidi",
            "invoice\u{202e}gnp\u{200b}.exe\u{feff}",
            "application/octet-stream",
            b"MZ",
        )
        .finish();
    let (status, seen) = post(&server, "/parts", body).await;
    assert_eq!(status, 200, "{seen}");
    assert_eq!(
        seen,
        json!([
            {"name": "title", "fileName": null, "contentType": null, "file": false,
             "text": "héllo wörld"},
            {"name": "doc", "fileName": "passwd", "contentType": "text/plain", "file": true,
             "len": 10, "sha256": hex::encode(Sha256::digest(b"root:x:0:0"))},
            {"name": "pic", "fileName": "cat.png", "contentType": "image/png", "file": true,
             "len": 8, "sha256": hex::encode(Sha256::digest(png))},
            {"name": "hidden", "fileName": null, "contentType": "application/octet-stream",
             "file": true, "len": 0, "sha256": hex::encode(Sha256::digest(b""))},
            {"name": "bare", "fileName": "bashrc", "contentType": null, "file": true,
             "len": 1, "sha256": hex::encode(Sha256::digest(b"x"))},
            {"name": "bidi", "fileName": "invoicegnp.exe",
             "contentType": "application/octet-stream", "file": true,
             "len": 2, "sha256": hex::encode(Sha256::digest(b"MZ"))},
        ])
    );
    // No parts at all is a valid form.
    let (status, seen) = post(&server, "/parts", Form::default().finish()).await;
    assert_eq!((status, seen), (200, json!([])));
    server.stop().await;
}

#[tokio::test]
async fn each_limit_passes_at_its_value_and_answers_413_one_past_it() {
    let server = common::start(service()).await;

    // Part count: 3 parts pass a limit of 3; a fourth is refused.
    let three = || {
        Form::default()
            .field("a", b"1")
            .field("b", b"2")
            .field("c", b"3")
    };
    let (status, body) = post(&server, "/parts?parts=3", three().finish()).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = post(&server, "/parts?parts=3", three().field("d", b"4").finish()).await;
    assert_413(
        status,
        &body,
        "multipart body exceeds the part count limit of 3 parts",
    );

    // Field size: 10 bytes pass a limit of 10, 11 do not; files are not fields.
    let field = |n: usize| Form::default().field("note", &vec![b'n'; n]).finish();
    let (status, body) = post(&server, "/parts?field=10", field(10)).await;
    assert_eq!((status, &body[0]["text"]), (200, &json!("nnnnnnnnnn")));
    let (status, body) = post(&server, "/parts?field=10", field(11)).await;
    assert_413(
        status,
        &body,
        "multipart field \"note\" exceeds the field size limit of 10 bytes",
    );
    let (status, body) = post(&server, "/parts?field=10", file(100)).await;
    assert_eq!(status, 200, "{body}");

    // File size: the same at the file limit; fields are not files.
    fn file(n: usize) -> Vec<u8> {
        Form::default()
            .file("upload", "a.bin", "application/octet-stream", &vec![7; n])
            .finish()
    }
    let (status, body) = post(&server, "/parts?file=100", file(100)).await;
    assert_eq!((status, &body[0]["len"]), (200, &json!(100)));
    let (status, body) = post(&server, "/parts?file=100", file(101)).await;
    assert_413(
        status,
        &body,
        "multipart file part \"upload\" exceeds the file size limit of 100 bytes",
    );
    let (status, body) = post(&server, "/parts?file=10", field(100)).await;
    assert_eq!(status, 200, "{body}");

    // Total size: a body of exactly the limit passes, with or without Content-Length; one
    // byte more is refused before it is read (Content-Length) or when it arrives (chunked).
    let whole = Form::default()
        .field("a", b"alpha")
        .file("f", "f.txt", "text/plain", &[b'x'; 300])
        .finish();
    let exact = format!("/parts?total={}", whole.len());
    let short = format!("/parts?total={}", whole.len() - 1);
    let (status, body) = post(&server, &exact, whole.clone()).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = post_chunked(&server, &exact, whole.clone(), 7).await;
    assert_eq!(status, 200, "{body}");
    let message = format!(
        "multipart body exceeds the total size limit of {} bytes",
        whole.len() - 1
    );
    let (status, body) = post(&server, &short, whole.clone()).await;
    assert_413(status, &body, &message);
    let (status, body) = post_chunked(&server, &short, whole.clone(), 7).await;
    assert_413(status, &body, &message);

    // Part headers: a header block past the limit is refused while it is still arriving.
    let padded = |n: usize| {
        Form::default()
            .part(
                &format!(
                    "Content-Disposition: form-data; name=\"a\"\r\nX-Pad: {}",
                    "p".repeat(n)
                ),
                b"1",
            )
            .finish()
    };
    let (status, body) = post_chunked(&server, "/parts?header=1024", padded(500), 64).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = post_chunked(&server, "/parts?header=1024", padded(4000), 64).await;
    assert_413(
        status,
        &body,
        "multipart part headers exceed the header size limit of 1024 bytes",
    );
    server.stop().await;
}

/// Posts `body` with its head in one write (`Content-Length`), reading the answer while the
/// write goes on (a 413 may come before the server reads the rest).
async fn post_in_one_write(server: &common::Running, path: &str, body: Vec<u8>) -> (u16, Value) {
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: {}\r\nContent-Length: {}\r\n\
         Accept: application/json\r\nConnection: close\r\n\r\n",
        content_type(),
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(&body);
    let stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let writer = tokio::spawn(async move {
        let _ = write.write_all(&request).await;
        write
    });
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), read.read_to_end(&mut answer))
        .await
        .expect("an answer within 10 s")
        .ok();
    drop(writer);
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    let json = text
        .find('{')
        .zip(text.rfind('}'))
        .and_then(|(from, to)| serde_json::from_str(&text[from..=to]).ok())
        .unwrap_or(Value::Null);
    (status, json)
}

#[tokio::test]
async fn the_part_header_limit_holds_whatever_the_read_boundaries() {
    let server = common::start(service()).await;
    let limit = MultipartLimits::DEFAULT.header_size as usize;
    assert_eq!(limit, 8192);
    // A part whose header block (boundary line, headers, empty line) is `size` bytes.
    let headers = |size: usize| {
        let fixed = format!(
            "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"b\"\r\nX-Pad: \r\n\r\n"
        )
        .len();
        format!(
            "Content-Disposition: form-data; name=\"b\"\r\nX-Pad: {}",
            "p".repeat(size - fixed)
        )
    };
    let alone = |size: usize| Form::default().part(&headers(size), b"1").finish();
    let after_a_large_part = |size: usize| {
        Form::default()
            .file(
                "big",
                "big.bin",
                "application/octet-stream",
                &vec![b'z'; 600_000],
            )
            .part(&headers(size), b"1")
            .finish()
    };
    let message = format!("multipart part headers exceed the header size limit of {limit} bytes");
    for (case, form) in [
        ("first part", &alone as &dyn Fn(usize) -> Vec<u8>),
        ("after a 600 KB part", &after_a_large_part),
    ] {
        // At the limit: accepted in one write and trickled.
        let (status, body) = post_in_one_write(&server, "/parts", form(limit)).await;
        assert_eq!(status, 200, "{case}, one write: {body}");
        let (status, body) = post_chunked(&server, "/parts", form(limit), 64).await;
        assert_eq!(status, 200, "{case}, trickled: {body}");
        // One byte past it, and far past it: refused in one write, trickled, or in one piece.
        for size in [limit + 1, 16_089, 60_000, 200_000] {
            let (status, body) = post_in_one_write(&server, "/parts", form(size)).await;
            assert_413(status, &body, &message);
            let (status, body) = post_chunked(&server, "/parts", form(size), 64).await;
            assert_413(status, &body, &message);
        }
        let (status, body) = post(&server, "/parts", form(limit + 1)).await;
        assert_413(status, &body, &message);
    }
    // A part without a header line: the parser reads on after its boundary line as headers,
    // looking for the empty line, and that is held to the limit too.
    let mut headless = format!("--{BOUNDARY}\r\n\r\n").into_bytes();
    headless.extend(std::iter::repeat_n(b'h', 16_000));
    headless.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    let (status, body) = post_in_one_write(&server, "/parts", headless).await;
    assert_413(status, &body, &message);
    server.stop().await;
}

#[tokio::test]
async fn unread_parts_are_skipped_and_still_counted() {
    let server = common::start(service()).await;
    let body = |n: usize| {
        Form::default()
            .field("first", &vec![b'a'; n])
            .file(
                "second",
                "s.bin",
                "application/octet-stream",
                &vec![b'b'; 3 * n],
            )
            .field("third", b"c")
            .finish()
    };
    let (status, names) = post(&server, "/names?field=1000", body(1000)).await;
    assert_eq!((status, names), (200, json!(["first", "second", "third"])));
    let (status, answer) = post(&server, "/names?field=1000", body(1001)).await;
    assert_413(
        status,
        &answer,
        "multipart field \"first\" exceeds the field size limit of 1000 bytes",
    );
    server.stop().await;
}

#[tokio::test]
async fn malformed_bodies_are_400_or_415() {
    let server = common::start(service()).await;
    let client = common::browser();
    let send = |content_type: Option<&str>, body: &'static [u8]| {
        let mut req = client.post(server.url("/parts")).body(body);
        if let Some(content_type) = content_type {
            req = req.header("content-type", content_type);
        }
        async move {
            let res = req.send().await.expect("request");
            let status = res.status().as_u16();
            let accept_post = res
                .headers()
                .get("accept-post")
                .map(|v| v.to_str().unwrap().to_owned());
            let body: Value = res.json().await.unwrap_or(Value::Null);
            (status, body, accept_post)
        }
    };

    // Not multipart: 415, saying what the route takes (not what the body parser reads).
    let (status, body, accept) = send(None, b"x").await;
    assert_eq!(status, 415, "{body}");
    assert_eq!(
        body["message"],
        "unsupported media type: expected multipart/form-data"
    );
    assert_eq!(accept.as_deref(), Some("multipart/form-data"));
    let (status, body, accept) = send(Some("text/plain"), b"x").await;
    assert_eq!(status, 415);
    assert_eq!(
        body["message"],
        "unsupported media type text/plain: expected multipart/form-data"
    );
    assert_eq!(accept.as_deref(), Some("multipart/form-data"));
    let (status, body, _) = send(Some("application/json"), b"{}").await;
    assert_eq!(status, 415, "{body}");

    // Multipart without a usable boundary: 400.
    for content_type in [
        "multipart/form-data".to_owned(),
        "multipart/form-data; boundary=".to_owned(),
        format!("multipart/form-data; boundary={}", "b".repeat(71)),
    ] {
        let res = client
            .post(server.url("/parts"))
            .header("content-type", &content_type)
            .body("x")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 400, "{content_type}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(
            body["message"],
            "multipart/form-data needs a boundary of 1 to 70 characters in its Content-Type"
        );
        assert_eq!(body["category"], "framework-multipart");
    }

    // A body that does not hold its boundary, one cut before its closing boundary, a part
    // without a name, one with broken headers, a field that is not UTF-8: 400.
    let complete = Form::default().field("a", b"1").finish();
    let truncated = complete[..complete.len() - 20].to_vec();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "no boundary in the body",
            b"just some bytes".to_vec(),
            "multipart body ends before its closing boundary",
        ),
        (
            "truncated",
            truncated,
            "multipart body ends before its closing boundary",
        ),
        (
            "no name",
            Form::default()
                .part("Content-Disposition: form-data; filename=\"a.txt\"", b"1")
                .finish(),
            "multipart part 1 has no name (Content-Disposition: form-data; name=\"...\")",
        ),
        (
            "empty name",
            Form::default()
                .field("a", b"1")
                .part("Content-Disposition: form-data; name=\"\"", b"1")
                .finish(),
            "multipart part 2 has no name (Content-Disposition: form-data; name=\"...\")",
        ),
        (
            "broken headers",
            Form::default()
                .part("Content-Disposition form-data", b"1")
                .finish(),
            "malformed multipart part headers",
        ),
        (
            "not UTF-8",
            Form::default().field("a", &[0xff, 0xfe]).finish(),
            "multipart part \"a\" is not valid UTF-8",
        ),
    ];
    for (case, body, message) in cases {
        let (status, answer) = post(&server, "/parts", body).await;
        assert_eq!(status, 400, "{case}: {answer}");
        assert_eq!(answer["message"], message, "{case}");
        assert_eq!(answer["category"], "framework-multipart", "{case}");
    }

    // A content coding nobody here removes: 415.
    let res = client
        .post(server.url("/parts"))
        .header("content-type", content_type())
        .header("content-encoding", "gzip")
        .body(Form::default().field("a", b"1").finish())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 415);
    server.stop().await;
}

#[tokio::test]
async fn parts_stream_into_temporary_files_and_sinks() {
    let server = common::start(service()).await;
    let dir = common::temp_dir("multipart-save");
    let big: Vec<u8> = (0..3 * 1024 * 1024 + 17).map(|i| (i % 251) as u8).collect();
    let body = Form::default()
        .field("skip", b"not a file")
        .file("big", "../big.bin", "application/octet-stream", &big)
        .file("small", "small.txt", "text/plain", b"tiny")
        .finish();
    let path = format!("/save?dir={}", dir.display());
    let (status, files) = post_chunked(&server, &path, body, 64 * 1024).await;
    assert_eq!(status, 200, "{files}");
    assert_eq!(
        files,
        json!([
            {"len": big.len(), "fileName": "big.bin", "contentType": "application/octet-stream",
             "inDir": true, "exists": true, "sha256": hex::encode(Sha256::digest(&big))},
            {"len": 4, "fileName": "small.txt", "contentType": "text/plain",
             "inDir": true, "exists": true, "sha256": hex::encode(Sha256::digest(b"tiny"))},
        ])
    );
    // The handler dropped its uploads: nothing is left.
    // `remove_dir` fails on a directory that still holds a file.
    std::fs::remove_dir(&dir).expect("no file left behind");

    let (status, answer) = post(
        &server,
        "/sink",
        Form::default()
            .file("f", "f", "text/plain", b"to the sink")
            .finish(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        answer,
        json!({"written": 11, "sha256": hex::encode(Sha256::digest(b"to the sink"))})
    );
    server.stop().await;
}

/// Sends the head and the first half of a file part to `/save`, announcing more than it sends;
/// the connection stays open.
async fn half_an_upload(server: &common::Running, dir: &Path) -> tokio::net::TcpStream {
    let body = Form::default()
        .file("f", "f.bin", "application/octet-stream", &[9u8; 200_000])
        .finish();
    let head = format!(
        "POST /save?dir={} HTTP/1.1\r\nHost: test\r\nAccept: application/json\r\n\
         Content-Type: {}\r\nContent-Length: {}\r\n\r\n",
        dir.display(),
        content_type(),
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&body[..100_000]).await.unwrap();
    stream.flush().await.unwrap();
    // The handler is saving the part.
    common::wait_for(|| std::fs::read_dir(dir).unwrap().count() == 1).await;
    stream
}

#[tokio::test]
async fn a_client_that_stops_mid_part_gets_408_and_leaves_no_file() {
    let server = common::start(stalling_service()).await;
    let dir = common::temp_dir("multipart-stall");
    let mut stream = half_an_upload(&server, &dir).await;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .expect("answered within 10 s")
        .expect("read");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("request body read timed out"), "{answer}");
    common::wait_for(|| saving(&dir) == 0).await;
    // `remove_dir` fails on a directory that still holds a file.
    std::fs::remove_dir(&dir).expect("no file left behind");
    server.stop().await;
}

#[tokio::test]
async fn a_client_that_goes_away_mid_part_leaves_no_file_and_no_handler() {
    let server = common::start(stalling_service()).await;
    let dir = common::temp_dir("multipart-gone");
    let stream = half_an_upload(&server, &dir).await;
    assert_eq!(saving(&dir), 1);
    drop(stream);
    common::wait_for(|| saving(&dir) == 0).await;
    // `remove_dir` fails on a directory that still holds a file.
    std::fs::remove_dir(&dir).expect("no file left behind");
    server.stop().await;
}

#[tokio::test]
async fn controller_arguments_take_their_types_limits_or_the_apps() {
    let server = common::start(service()).await;
    // `Multipart<PictureForm>`: files of 64 bytes, 2 parts.
    let picture = |n: usize| {
        Form::default()
            .file("picture", "p.png", "image/png", &vec![1; n])
            .field("caption", b"hi")
    };
    let (status, _) = post(&server, "/controller/picture", picture(64).finish()).await;
    assert_eq!(status, 200);
    let (status, body) = post(&server, "/controller/picture", picture(65).finish()).await;
    assert_413(
        status,
        &body,
        "multipart file part \"picture\" exceeds the file size limit of 64 bytes",
    );
    let (status, body) = post(
        &server,
        "/controller/picture",
        picture(1).field("extra", b"x").finish(),
    )
    .await;
    assert_413(
        status,
        &body,
        "multipart body exceeds the part count limit of 2 parts",
    );
    // `Multipart`: the app state's limits (2 parts).
    let res = common::browser()
        .put(server.url("/controller/any"))
        .header("content-type", content_type())
        .body(Form::default().field("a", b"1").field("b", b"2").finish())
        .send()
        .await
        .unwrap();
    assert_eq!(res.text().await.unwrap(), "2 parts");
    let res = common::browser()
        .put(server.url("/controller/any"))
        .header("content-type", content_type())
        .body(
            Form::default()
                .field("a", b"1")
                .field("b", b"2")
                .field("c", b"3")
                .finish(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 413);
    server.stop().await;
}

#[tokio::test]
async fn a_multipart_route_needs_no_body_parser() {
    // A bare app with a responder and the controllers: `Json` routes would need a body
    // parser, the multipart ones stream their body themselves.
    let built = App::bare()
        .use_middleware(framework::middleware::error_handler::ErrorHandler::default())
        .use_middleware(framework::middleware::responder::Responder::default())
        .mount_controllers()
        .build();
    let service = built.expect("builds without a body parser");
    let server = common::start(service).await;
    let (status, _) = post(
        &server,
        "/controller/picture",
        Form::default()
            .file("picture", "p.png", "image/png", b"png")
            .finish(),
    )
    .await;
    assert_eq!(status, 200);
    server.stop().await;
}

#[tokio::test]
async fn the_document_describes_multipart_routes() {
    let doc: Value = serde_json::from_slice(&app().openapi_document()).unwrap();
    let picture = &doc["paths"]["/controller/picture"]["post"];
    assert_eq!(picture["summary"], "Upload a picture.");
    let body = &picture["requestBody"];
    assert_eq!(body["required"], true);
    assert_eq!(
        body["content"]["multipart/form-data"],
        json!({
            "schema": {
                "type": "object",
                "properties": {
                    "picture": {"type": "string", "format": "binary",
                                "description": "the picture"},
                    "caption": {"type": "string"},
                },
                "required": ["picture"],
            },
            "encoding": {"picture": {"contentType": "image/png, image/jpeg"}},
        })
    );
    let description = body["description"].as_str().unwrap();
    assert!(
        description.contains("at most 2 part(s), a file of 64 bytes"),
        "{description}"
    );
    for status in ["400", "413", "415"] {
        assert!(picture["responses"][status].is_object(), "{status}");
    }
    let any = &doc["paths"]["/controller/any"]["put"]["requestBody"];
    assert_eq!(
        any["content"]["multipart/form-data"]["schema"],
        json!({"type": "object",
               "additionalProperties": {"type": "string", "format": "binary"}})
    );
    assert!(any.get("description").is_none());

    // A third-party validator's verdict, when it is installed.
    common::validate_openapi(&doc, "openapi-multipart");
}

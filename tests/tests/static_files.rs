//! Static serve over real sockets: headers, conditional requests, ranges, precompressed
//! siblings, hostile paths, symlinks, the embedded source.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::middleware::static_serve::{
    DirectorySource, EmbeddedSource, FileInfo, FileReader, FileSource, SourceError, StaticServe,
    StaticServeConfig,
};
use framework::{App, Context, Group, Result, Service};
use http::Method;

#[derive(rust_embed::RustEmbed)]
#[folder = "assets/embedded/"]
struct Assets;

fn data_bytes() -> Vec<u8> {
    (0..1000u32).map(|i| (i % 251) as u8).collect()
}

/// root/ with plain files, an index, a directory without index, dot files, precompressed
/// siblings and symlinks; outside/ beside it with a secret.
fn fixture() -> std::path::PathBuf {
    let base = common::temp_dir("static");
    let root = base.join("root");
    let outside = base.join("outside");
    for dir in ["root/docs", "root/empty", "outside"] {
        std::fs::create_dir_all(base.join(dir)).unwrap();
    }
    let write = |p: &str, data: &[u8]| std::fs::write(base.join(p), data).unwrap();
    write("root/hello.txt", b"hello world");
    write("root/data.bin", &data_bytes());
    write("root/index.html", b"<h1>root index</h1>");
    write("root/docs/index.html", b"<h1>docs</h1>");
    write("root/.secret", b"dot file");
    write("root/evil.svg", b"<svg onload=alert(1)></svg>");
    write("root/app.js", b"console.log('plain')");
    write("root/app.js.br", b"BROTLI-BYTES");
    write("root/app.js.gz", b"GZIP-BYTES");
    write("root/only-gz.css", b"body{}");
    write("root/only-gz.css.gz", b"GZ-CSS");
    write("outside/secret.txt", b"outside secret");
    std::os::unix::fs::symlink(outside.join("secret.txt"), root.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("linkdir")).unwrap();
    std::os::unix::fs::symlink(root.join("hello.txt"), root.join("alias.txt")).unwrap();
    root
}

async fn fallback(_ctx: &mut Context) -> Result<&'static str> {
    Ok("from the handler")
}

fn service(root: &Path) -> Service {
    let source = || DirectorySource::new(root).unwrap();
    let serve = |config: StaticServeConfig| StaticServe::new(source(), config);
    App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .endpoint(
            Method::GET,
            "/static/*",
            serve(StaticServeConfig::default().max_age(Some(Duration::from_secs(60)))),
        )
        .endpoint(
            Method::GET,
            "/strong/*",
            serve(
                StaticServeConfig::default()
                    .enable_strong_etag(true)
                    .max_age(Some(Duration::from_secs(60)))
                    .s_max_age(Some(Duration::from_secs(600))),
            ),
        )
        .endpoint(
            Method::GET,
            "/strict/*",
            serve(
                StaticServeConfig::default()
                    .deny_query_string(true)
                    .disable_last_modified(true)
                    .index(None)
                    .allow_dot_files(true),
            ),
        )
        .endpoint(
            Method::GET,
            "/pre/*",
            serve(
                StaticServeConfig::default()
                    .precompressed_br(true)
                    .precompressed_gzip(true),
            ),
        )
        .endpoint(
            Method::GET,
            "/embed/*",
            StaticServe::new(
                EmbeddedSource::<Assets>::new(),
                StaticServeConfig::default(),
            ),
        )
        .group(Group::new("").route_with(
            Method::GET,
            "/maybe/*",
            vec![framework::share(serve(
                StaticServeConfig::default().not_found_next(true),
            ))],
            fallback,
        ))
        .build()
        .unwrap()
}

#[tokio::test]
async fn file_headers_and_body() {
    let root = fixture();
    let server = common::start(service(&root)).await;
    let res = reqwest::get(server.url("/static/hello.txt")).await.unwrap();
    assert_eq!(res.status(), 200);
    let h = res.headers().clone();
    assert_eq!(h["content-type"], "text/plain; charset=utf-8");
    assert_eq!(h["content-length"], "11");
    assert_eq!(h["accept-ranges"], "bytes");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["cache-control"], "public, max-age=60");
    let mtime = std::fs::metadata(root.join("hello.txt"))
        .unwrap()
        .modified()
        .unwrap();
    let secs = mtime
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert_eq!(h["etag"], format!("W/\"b-{secs:x}\"").as_str());
    assert_eq!(h["last-modified"], httpdate::fmt_http_date(mtime).as_str());
    assert_eq!(res.text().await.unwrap(), "hello world");

    let svg = reqwest::get(server.url("/static/evil.svg")).await.unwrap();
    assert_eq!(svg.headers()["content-type"], "image/svg+xml");
    assert_eq!(svg.headers()["x-content-type-options"], "nosniff");

    // A symlink that stays inside the root is served.
    let alias = reqwest::get(server.url("/static/alias.txt")).await.unwrap();
    assert_eq!(alias.text().await.unwrap(), "hello world");

    // Strong tag from the content, s-maxage.
    let strong = reqwest::get(server.url("/strong/hello.txt")).await.unwrap();
    let tag = strong.headers()["etag"].to_str().unwrap().to_owned();
    assert!(tag.starts_with("\"b-") && tag.len() > 20, "{tag}");
    assert_eq!(
        strong.headers()["cache-control"],
        "public, max-age=60, s-maxage=600"
    );
    let again = reqwest::get(server.url("/strong/hello.txt")).await.unwrap();
    assert_eq!(again.headers()["etag"].to_str().unwrap(), tag);
    server.stop().await;
}

#[tokio::test]
async fn head_gives_length_and_no_body() {
    let root = fixture();
    let server = common::start(service(&root)).await;
    let res = common::raw_request(
        server.addr,
        "HEAD /static/data.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(res.status, 200);
    assert_eq!(res.header("content-length"), Some("1000"));
    assert!(res.body.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn directories_index_and_no_listing() {
    let root = fixture();
    let server = common::start(service(&root)).await;
    let addr = server.addr;
    let res = common::raw_get(addr, "/static/").await;
    assert_eq!(
        (res.status, res.text().as_str()),
        (200, "<h1>root index</h1>")
    );
    let res = common::raw_get(addr, "/static/docs/").await;
    assert_eq!((res.status, res.text().as_str()), (200, "<h1>docs</h1>"));
    // Without the slash: redirected to it, query kept.
    let res = common::raw_get(addr, "/static/docs?x=1").await;
    assert_eq!(res.status, 307);
    assert_eq!(res.header("location"), Some("/static/docs/?x=1"));
    // Served at the root, `//docs` (a path the static files refuse) is never redirected to
    // `//docs/` (the host `docs` to a browser).
    let at_root = App::new()
        .endpoint(
            Method::GET,
            "/*",
            StaticServe::new(
                DirectorySource::new(&root).unwrap(),
                StaticServeConfig::default(),
            ),
        )
        .build()
        .unwrap();
    let root_server = common::start(at_root).await;
    for path in ["//docs", "///docs", "/\\docs"] {
        let res = common::raw_get(root_server.addr, path).await;
        assert_eq!(res.status, 400, "{path}: {}", res.head);
        assert_eq!(res.header("location"), None, "{path}");
    }
    let res = common::raw_get(root_server.addr, "/docs").await;
    assert_eq!(res.status, 307);
    assert_eq!(res.header("location"), Some("/docs/"));
    root_server.stop().await;
    // A directory without index: 404, never a listing.
    let res = common::raw_get(addr, "/static/empty/").await;
    assert_eq!(res.status, 404);
    assert!(!res.text().contains("index"), "{}", res.text());
    // Index disabled: directories are 404.
    assert_eq!(common::raw_get(addr, "/strict/docs/").await.status, 404);
    // A file named like a directory.
    assert_eq!(
        common::raw_get(addr, "/static/hello.txt/").await.status,
        404
    );
    assert_eq!(
        common::raw_get(addr, "/static/missing.txt").await.status,
        404
    );
    server.stop().await;
}

#[tokio::test]
async fn dot_files_query_string_and_pass_through() {
    let root = fixture();
    let server = common::start(service(&root)).await;
    let addr = server.addr;
    assert_eq!(common::raw_get(addr, "/static/.secret").await.status, 404);
    let allowed = common::raw_get(addr, "/strict/.secret").await;
    assert_eq!((allowed.status, allowed.text().as_str()), (200, "dot file"));
    assert!(allowed.header("last-modified").is_none());
    let denied = common::raw_get(addr, "/strict/hello.txt?v=2").await;
    assert_eq!(denied.status, 400);
    assert!(
        denied.text().contains("query string is not allowed"),
        "{}",
        denied.text()
    );
    let found = common::raw_get(addr, "/maybe/hello.txt").await;
    assert_eq!(found.text(), "hello world");
    let passed = common::raw_get(addr, "/maybe/nothing-here.txt").await;
    assert_eq!(
        (passed.status, passed.text().as_str()),
        (200, "from the handler")
    );
    server.stop().await;
}

#[tokio::test]
async fn conditional_requests() {
    let root = fixture();
    let server = common::start(service(&root)).await;
    let client = reqwest::Client::new();
    let url = server.url("/static/hello.txt");
    let first = client.get(&url).send().await.unwrap();
    let etag = first.headers()["etag"].to_str().unwrap().to_owned();
    let modified = first.headers()["last-modified"]
        .to_str()
        .unwrap()
        .to_owned();
    let status = |headers: Vec<(&'static str, String)>| {
        let client = client.clone();
        let url = url.clone();
        async move {
            let mut req = client.get(&url);
            for (k, v) in headers {
                req = req.header(k, v);
            }
            let res = req.send().await.unwrap();
            let status = res.status().as_u16();
            let body = res.bytes().await.unwrap();
            (status, body.len())
        }
    };
    assert_eq!(
        status(vec![("if-none-match", etag.clone())]).await,
        (304, 0)
    );
    assert_eq!(
        status(vec![("if-none-match", format!("\"x\", {etag}"))])
            .await
            .0,
        304
    );
    assert_eq!(status(vec![("if-none-match", "*".into())]).await.0, 304);
    assert_eq!(
        status(vec![("if-modified-since", modified.clone())])
            .await
            .0,
        304
    );
    // If-None-Match wins over If-Modified-Since.
    assert_eq!(
        status(vec![
            ("if-none-match", "\"other\"".into()),
            ("if-modified-since", modified.clone())
        ])
        .await,
        (200, 11)
    );
    assert_eq!(
        status(vec![(
            "if-modified-since",
            "Thu, 01 Jan 1970 00:00:00 GMT".into()
        )])
        .await
        .0,
        200
    );
    // 412: If-Match with another tag, or a weak tag (strong comparison), If-Unmodified-Since
    // in the past.
    assert_eq!(status(vec![("if-match", "\"nope\"".into())]).await.0, 412);
    assert_eq!(status(vec![("if-match", etag.clone())]).await.0, 412);
    assert_eq!(status(vec![("if-match", "*".into())]).await.0, 200);
    assert_eq!(
        status(vec![(
            "if-unmodified-since",
            "Thu, 01 Jan 1970 00:00:00 GMT".into()
        )])
        .await
        .0,
        412
    );
    // Preconditions come before Range: 304 wins over 206, 412 over 206 and 416.
    assert_eq!(
        status(vec![
            ("if-none-match", etag.clone()),
            ("range", "bytes=0-1".into())
        ])
        .await
        .0,
        304
    );
    assert_eq!(
        status(vec![
            ("if-match", "\"nope\"".into()),
            ("range", "bytes=5000-".into())
        ])
        .await
        .0,
        412
    );
    // The strong tag works for If-Match.
    let strong_url = server.url("/strong/hello.txt");
    let strong = client.get(&strong_url).send().await.unwrap();
    let strong_tag = strong.headers()["etag"].to_str().unwrap().to_owned();
    let res = client
        .get(&strong_url)
        .header("if-match", &strong_tag)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let res = client
        .get(&strong_url)
        .header("if-none-match", &strong_tag)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 304);
    assert_eq!(res.headers()["etag"].to_str().unwrap(), strong_tag);
    server.stop().await;
}

#[tokio::test]
async fn ranges() {
    let root = fixture();
    let server = common::start(service(&root)).await;
    let data = data_bytes();
    let client = reqwest::Client::new();
    let url = server.url("/static/data.bin");
    let get = |range: &'static str| {
        let req = client.get(&url).header("range", range);
        async move {
            let res = req.send().await.unwrap();
            let status = res.status().as_u16();
            let content_range = res
                .headers()
                .get("content-range")
                .map(|v| v.to_str().unwrap().to_owned());
            let len = res
                .headers()
                .get("content-length")
                .map(|v| v.to_str().unwrap().to_owned());
            (status, content_range, len, res.bytes().await.unwrap())
        }
    };
    let (status, range, len, body) = get("bytes=10-19").await;
    assert_eq!((status, range.as_deref()), (206, Some("bytes 10-19/1000")));
    assert_eq!(len.as_deref(), Some("10"));
    assert_eq!(&body[..], &data[10..20]);
    let (status, range, _, body) = get("bytes=-500").await;
    assert_eq!(
        (status, range.as_deref()),
        (206, Some("bytes 500-999/1000"))
    );
    assert_eq!(&body[..], &data[500..]);
    let (status, range, _, body) = get("bytes=900-").await;
    assert_eq!(
        (status, range.as_deref()),
        (206, Some("bytes 900-999/1000"))
    );
    assert_eq!(&body[..], &data[900..]);
    let (status, range, _, body) = get("bytes=0-18446744073709551615").await;
    assert_eq!((status, range.as_deref()), (206, Some("bytes 0-999/1000")));
    assert_eq!(body.len(), 1000);
    for unsatisfiable in ["bytes=1000-", "bytes=5000-6000", "bytes=-0"] {
        let (status, range, _, _) = get(unsatisfiable).await;
        assert_eq!(
            (status, range.as_deref()),
            (416, Some("bytes */1000")),
            "{unsatisfiable}"
        );
    }
    // Several ranges, a malformed header, an empty one: the whole file.
    let many: &'static str = Box::leak(
        format!(
            "bytes={}",
            (0..300)
                .map(|i| format!("{}-{}", i * 3, i * 3 + 1))
                .collect::<Vec<_>>()
                .join(",")
        )
        .into_boxed_str(),
    );
    for whole in ["bytes=0-1,5-6", "bytes=abc", "bytes=5-2", many] {
        let (status, range, _, body) = get(whole).await;
        assert_eq!((status, range), (200, None), "{whole}");
        assert_eq!(&body[..], &data[..]);
    }
    // An empty Range header, sent raw (clients drop empty headers).
    let res = common::raw_request(
        server.addr,
        "GET /static/data.bin HTTP/1.1\r\nHost: t\r\nRange:\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(res.status, 200);
    assert_eq!(res.body, data);
    // If-Range: a matching strong tag gives the part; a weak or stale validator the whole file.
    let strong_url = server.url("/strong/data.bin");
    let tag = client.get(&strong_url).send().await.unwrap().headers()["etag"]
        .to_str()
        .unwrap()
        .to_owned();
    let res = client
        .get(&strong_url)
        .header("range", "bytes=0-9")
        .header("if-range", &tag)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 206);
    assert_eq!(res.bytes().await.unwrap().len(), 10);
    let weak = client.get(&url).send().await.unwrap().headers()["etag"]
        .to_str()
        .unwrap()
        .to_owned();
    let res = client
        .get(&url)
        .header("range", "bytes=0-9")
        .header("if-range", &weak)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let res = client
        .get(&strong_url)
        .header("range", "bytes=0-9")
        .header("if-range", "\"stale\"")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.bytes().await.unwrap().len(), 1000);
    server.stop().await;
}

#[tokio::test]
async fn precompressed_siblings() {
    let root = fixture();
    let server = common::start(service(&root)).await;
    // reqwest would decode gzip itself: this client leaves bodies as sent.
    let client = reqwest::Client::builder().no_gzip().build().unwrap();
    let get = |path: &'static str, accept: &'static str| {
        let req = client
            .get(server.url(path))
            .header("accept-encoding", accept);
        async move {
            let res = req.send().await.unwrap();
            let h = res.headers().clone();
            let text = res.text().await.unwrap();
            (h, text)
        }
    };
    let (h, body) = get("/pre/app.js", "gzip, br").await;
    assert_eq!(body, "BROTLI-BYTES");
    assert_eq!(h["content-encoding"], "br");
    assert_eq!(h["content-type"], "text/javascript; charset=utf-8");
    assert_eq!(h["vary"], "Accept-Encoding");
    let (h, body) = get("/pre/app.js", "gzip;q=1, br;q=0.5").await;
    assert_eq!(body, "GZIP-BYTES");
    assert_eq!(h["content-encoding"], "gzip");
    let (h, body) = get("/pre/app.js", "identity").await;
    assert_eq!(body, "console.log('plain')");
    assert!(h.get("content-encoding").is_none());
    assert_eq!(h["vary"], "Accept-Encoding");
    let (h, body) = get("/pre/only-gz.css", "br, gzip").await;
    assert_eq!(body, "GZ-CSS");
    assert_eq!(h["content-encoding"], "gzip");
    // Variants have their own validators.
    let (plain, _) = get("/pre/app.js", "identity").await;
    let (br, _) = get("/pre/app.js", "br").await;
    assert_ne!(plain["etag"], br["etag"]);
    server.stop().await;
}

#[tokio::test]
async fn embedded_source() {
    let root = fixture();
    let server = common::start(service(&root)).await;
    let addr = server.addr;
    let res = common::raw_get(addr, "/embed/hello.txt").await;
    assert_eq!(res.status, 200);
    assert_eq!(res.text(), "embedded hello\n");
    assert_eq!(
        res.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    // No mtime from the build of an embedded file is guaranteed; the tag is then strong, from
    // rust-embed's hash.
    assert!(res.header("etag").is_some());
    let res = common::raw_get(addr, "/embed/").await;
    assert_eq!(res.status, 200);
    assert!(res.text().contains("embedded"), "{}", res.text());
    assert_eq!(
        common::raw_get(addr, "/embed/sub/page.html").await.status,
        200
    );
    assert_eq!(common::raw_get(addr, "/embed/sub/").await.status, 404);
    assert_eq!(common::raw_get(addr, "/embed/sub").await.status, 307);
    assert_eq!(common::raw_get(addr, "/embed/nope.txt").await.status, 404);
    let res = common::raw_request(
        addr,
        "GET /embed/hello.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=9-\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!((res.status, res.text().as_str()), (206, "hello\n"));
    assert_eq!(
        common::raw_get(addr, "/embed/..%2f..%2fCargo.toml")
            .await
            .status,
        400
    );
    server.stop().await;
}

/// Every path here tries to leave the root or to name something a platform reinterprets; each
/// must be refused, never served. `out of path` marks the ones that reach static serve; the
/// others hyper refuses as a malformed request line first.
#[tokio::test]
async fn hostile_paths_are_refused() {
    let root = fixture();
    let server = common::start(service(&root)).await;
    let cases: &[(&str, u16)] = &[
        ("/static/../outside/secret.txt", 400),
        ("/static/..", 400),
        ("/static/docs/../../outside/secret.txt", 400),
        ("/static/%2e%2e/outside/secret.txt", 400),
        ("/static/%2E%2E/outside/secret.txt", 400),
        ("/static/.%2e/outside/secret.txt", 400),
        ("/static/%252e%252e/outside/secret.txt", 404),
        ("/static/..%2foutside%2fsecret.txt", 400),
        ("/static/docs%2f..%2f..%2foutside%2fsecret.txt", 400),
        ("/static/docs%2Findex.html", 400),
        ("/static/..%5coutside%5csecret.txt", 400),
        ("/static/docs%5cindex.html", 400),
        ("/static//etc/passwd", 400),
        ("/static/%2fetc%2fpasswd", 400),
        ("/static/hello.txt%00.png", 400),
        ("/static/%00", 400),
        ("/static/%c0%ae%c0%ae/outside/secret.txt", 400),
        ("/static/%e0%80%ae%e0%80%ae/x", 400),
        ("/static/%ff%fe", 400),
        ("/static/link.txt", 400),
        ("/static/linkdir/secret.txt", 400),
        ("/static/C:/Windows/win.ini", 400),
        ("/static/c%3a%5cwindows%5cwin.ini", 400),
        ("/static/hello.txt.", 400),
        ("/static/hello.txt%20", 400),
        ("/static/hello.txt::$DATA", 400),
        ("/static/CON", 400),
        ("/static/nul", 400),
        ("/static/aux.txt", 400),
        ("/static/docs/COM1.log", 400),
        ("/static/./hello.txt", 400),
        ("/static/docs/./index.html", 400),
        ("/static/docs/%2e/index.html", 400),
    ];
    for (target, expected) in cases {
        let res = common::raw_get(server.addr, target).await;
        assert_eq!(res.status, *expected, "{target}: {}", res.text());
        assert!(!res.text().contains("outside secret"), "{target} leaked");
        if *expected == 400 {
            assert!(
                res.text().contains("out of path"),
                "{target}: {}",
                res.text()
            );
        }
    }
    // Raw backslashes never reach a handler: the request line is refused.
    let res = common::raw_get(server.addr, "/static/..\\outside\\secret.txt").await;
    assert_eq!(res.status, 400);
    assert!(!res.text().contains("outside secret"));
    server.stop().await;
}

#[tokio::test]
async fn names_too_long_for_the_file_system_are_404_without_os_words() {
    let root = fixture();
    let server = common::start(service(&root)).await;
    for target in [
        format!("/static/{}", "a".repeat(256)),
        format!("/static/{}.txt", "b".repeat(300)),
        format!("/static/docs/{}/index.html", "c".repeat(255 + 1)),
        format!("/strong/{}", "d".repeat(1000)),
    ] {
        let res = common::raw_get(server.addr, &target).await;
        assert_eq!(res.status, 404, "{}: {}", target.len(), res.text());
        let text = res.text();
        assert!(!text.contains("os error"), "{text}");
        assert!(!text.to_lowercase().contains("too long"), "{text}");
    }
    server.stop().await;
}

/// A file larger than what the directory source reads along with opening it (64 KiB): the
/// first chunk and the rest from the file join up, whole and by ranges on either side of the
/// seam and across it; and a file of exactly that size.
#[tokio::test]
async fn files_past_the_first_chunk() {
    let root = fixture();
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
    std::fs::write(root.join("big.bin"), &big).unwrap();
    std::fs::write(root.join("exact.bin"), &big[..65_536]).unwrap();
    let server = common::start(service(&root)).await;
    let client = reqwest::Client::new();
    let get = |path: &str, range: Option<&str>| {
        let mut req = client.get(server.url(path));
        if let Some(range) = range {
            req = req.header("range", range);
        }
        async move {
            let res = req.send().await.unwrap();
            (res.status().as_u16(), res.bytes().await.unwrap())
        }
    };
    let (status, body) = get("/static/big.bin", None).await;
    assert_eq!(status, 200);
    assert!(body[..] == big[..], "whole file");
    let (status, body) = get("/static/exact.bin", None).await;
    assert_eq!(status, 200);
    assert!(
        body[..] == big[..65_536],
        "a file of exactly the first chunk"
    );
    for (range, from, to) in [
        ("bytes=60000-140000", 60_000, 140_001),
        ("bytes=65536-", 65_536, 200_000),
        ("bytes=100000-100009", 100_000, 100_010),
        ("bytes=-10", 199_990, 200_000),
    ] {
        let (status, body) = get("/static/big.bin", Some(range)).await;
        assert_eq!(status, 206, "{range}");
        assert!(body[..] == big[from..to], "{range}");
    }
    server.stop().await;
}

/// A directory source that counts how the static middleware asks it for files.
struct Counting {
    inner: DirectorySource,
    calls: std::sync::Arc<Calls>,
}

#[derive(Default)]
struct Calls {
    stat: AtomicUsize,
    stat_with_bytes: AtomicUsize,
    bytes_given: AtomicUsize,
    reader: AtomicUsize,
}

#[async_trait::async_trait]
impl FileSource for Counting {
    async fn exists(&self, file: &str) -> bool {
        self.inner.exists(file).await
    }
    async fn get(&self, file: &str) -> std::result::Result<bytes::Bytes, SourceError> {
        self.inner.get(file).await
    }
    async fn stat(&self, file: &str) -> std::result::Result<Option<FileInfo>, SourceError> {
        self.calls.stat.fetch_add(1, Ordering::SeqCst);
        self.inner.stat(file).await
    }
    async fn stat_with_bytes(
        &self,
        file: &str,
        up_to: u64,
    ) -> std::result::Result<Option<(FileInfo, Option<bytes::Bytes>)>, SourceError> {
        self.calls.stat_with_bytes.fetch_add(1, Ordering::SeqCst);
        let found = self.inner.stat_with_bytes(file, up_to).await?;
        if matches!(found, Some((_, Some(_)))) {
            self.calls.bytes_given.fetch_add(1, Ordering::SeqCst);
        }
        Ok(found)
    }
    async fn reader(
        &self,
        file: &str,
        offset: u64,
    ) -> std::result::Result<FileReader, SourceError> {
        self.calls.reader.fetch_add(1, Ordering::SeqCst);
        self.inner.reader(file, offset).await
    }
}

/// A plain `GET` of a file of at most 64 KiB is answered from one request to the source (its
/// metadata and bytes together: one trip to the blocking pool); a larger file, a range, a
/// `HEAD` and a request with validators ask for the metadata with no bytes (`up_to` 0) and
/// read the bytes (if any) through a reader. Every answer has the file's bytes.
#[tokio::test]
async fn small_files_come_with_their_metadata() {
    let root = fixture();
    let data: Vec<u8> = (0..65_537u32).map(|i| (i % 241) as u8).collect();
    std::fs::write(root.join("at-limit.bin"), &data[..65_536]).unwrap();
    std::fs::write(root.join("past-limit.bin"), &data).unwrap();
    let calls = std::sync::Arc::new(Calls::default());
    let source = Counting {
        inner: DirectorySource::new(&root).unwrap(),
        calls: calls.clone(),
    };
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .endpoint(
            Method::GET,
            "/counted/*",
            StaticServe::new(source, StaticServeConfig::default()),
        )
        .build()
        .unwrap();
    let server = common::start(service).await;
    let client = reqwest::Client::new();
    let seen = || {
        [
            calls.stat.swap(0, Ordering::SeqCst),
            calls.stat_with_bytes.swap(0, Ordering::SeqCst),
            calls.bytes_given.swap(0, Ordering::SeqCst),
            calls.reader.swap(0, Ordering::SeqCst),
        ]
    };
    let send = |req: reqwest::RequestBuilder| async move {
        let res = req.send().await.unwrap();
        let etag = res.headers().get("etag").cloned();
        let length = res.headers().get("content-length").cloned();
        (
            res.status().as_u16(),
            etag,
            length,
            res.bytes().await.unwrap(),
        )
    };

    // [stat, stat_with_bytes, bytes given, reader]
    let (status, etag, _, body) = send(client.get(server.url("/counted/hello.txt"))).await;
    assert_eq!((status, &body[..]), (200, &b"hello world"[..]));
    assert_eq!(seen(), [0, 1, 1, 0], "small file: one call");
    let (status, _, _, body) = send(client.get(server.url("/counted/at-limit.bin"))).await;
    assert!(status == 200 && body[..] == data[..65_536]);
    assert_eq!(seen(), [0, 1, 1, 0], "64 KiB exactly: one call");
    let (status, _, _, body) = send(client.get(server.url("/counted/past-limit.bin"))).await;
    assert!(status == 200 && body[..] == data[..]);
    assert_eq!(seen(), [0, 1, 0, 1], "one byte more: streamed");

    let ranged = client
        .get(server.url("/counted/hello.txt"))
        .header("range", "bytes=6-");
    let (status, _, _, body) = send(ranged).await;
    assert_eq!((status, &body[..]), (206, &b"world"[..]));
    assert_eq!(
        seen(),
        [0, 1, 0, 1],
        "range: metadata (no bytes), then a reader"
    );
    let (status, _, length, body) = send(client.head(server.url("/counted/hello.txt"))).await;
    assert_eq!(
        (status, length.unwrap(), body.len()),
        (200, "11".parse().unwrap(), 0)
    );
    assert_eq!(seen(), [0, 1, 0, 1], "HEAD: nothing read ahead");
    let revalidate = client
        .get(server.url("/counted/hello.txt"))
        .header("if-none-match", etag.unwrap());
    let (status, _, _, body) = send(revalidate).await;
    assert_eq!((status, body.len()), (304, 0));
    assert_eq!(seen(), [0, 1, 0, 0], "a likely 304: metadata alone");
    server.stop().await;
}

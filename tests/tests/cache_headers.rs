//! Every header a cache keys on (`Vary`, the validators, `Cache-Control`) is on the 200, the
//! 206 and the 304 of one resource alike (RFC 9110 sections 15.3.7 and 15.4.5): the user
//! service's login page (static, compressed by the compress middleware) and a JSON answer
//! tagged by the etag middleware and made a 304 by fresh.

mod common;

use framework::middleware::compress::Compress;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::etag::ETag;
use framework::middleware::fresh::Fresh;
use framework::middleware::responder::Responder;
use framework::{App, Context, Result};
use serde_json::{Value, json};

/// Status and the headers a cache keys on.
async fn keyed(request: reqwest::RequestBuilder) -> (u16, [Option<String>; 4]) {
    let res = request.send().await.unwrap();
    let header = |name: &str| {
        let values: Vec<&str> = res
            .headers()
            .get_all(name)
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        (!values.is_empty()).then(|| values.join(", "))
    };
    let keyed = [
        header("vary"),
        header("etag"),
        header("cache-control"),
        header("last-modified"),
    ];
    (res.status().as_u16(), keyed)
}

fn client() -> reqwest::Client {
    // No automatic decompression: Accept-Encoding is set by hand per request.
    reqwest::Client::builder().no_gzip().build().unwrap()
}

#[tokio::test]
async fn the_login_page_keeps_its_cache_headers_on_304_and_206() {
    let service = user_service::build(
        &user_service::Config::default(),
        user_service::Stores::in_memory(),
    )
    .unwrap();
    let server = common::start(service).await;
    let client = client();
    for encoding in [None, Some("gzip"), Some("br, gzip")] {
        let get = || {
            let request = client.get(server.url("/"));
            match encoding {
                Some(e) => request.header("accept-encoding", e),
                None => request,
            }
        };
        let (status, full) = keyed(get()).await;
        assert_eq!(status, 200);
        assert_eq!(full[0].as_deref(), Some("Accept-Encoding"), "{encoding:?}");
        let etag = full[1].clone().expect("an ETag");
        let (status, not_modified) = keyed(get().header("if-none-match", &etag)).await;
        assert_eq!(status, 304, "{encoding:?}");
        assert_eq!(not_modified, full, "304 for {encoding:?}");
        let (status, partial) = keyed(get().header("range", "bytes=0-99")).await;
        assert_eq!(status, 206, "{encoding:?}");
        // A range is of the identity bytes: its tag is the identity 200's.
        assert_eq!(partial[0], full[0], "Vary of the 206 for {encoding:?}");
        assert_eq!(partial[2..], full[2..], "206 for {encoding:?}");
        assert_eq!(
            partial[1].as_deref().map(|t| t.trim_start_matches("W/")),
            Some(etag.trim_start_matches("W/")),
            "{encoding:?}"
        );
    }
    server.stop().await;
}

async fn report(ctx: &mut Context) -> Result<Value> {
    ctx.set_response_header(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("public, max-age=60"),
    );
    Ok(json!({"text": "a compressible report ".repeat(100)}))
}

async fn tiny(_ctx: &mut Context) -> Result<Value> {
    Ok(json!({"ok": true}))
}

#[tokio::test]
async fn a_tagged_json_answer_keeps_its_cache_headers_on_304() {
    let service = App::bare()
        .use_middleware(Compress::default())
        .use_middleware(Fresh)
        .use_middleware(ETag)
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/report", report)
        .get("/tiny", tiny)
        .build()
        .unwrap();
    let server = common::start(service).await;
    let client = client();
    for (path, varies) in [("/report", true), ("/tiny", false)] {
        for encoding in [None, Some("gzip")] {
            let get = || {
                let request = client.get(server.url(path));
                match encoding {
                    Some(e) => request.header("accept-encoding", e),
                    None => request,
                }
            };
            let (status, full) = keyed(get()).await;
            assert_eq!(status, 200);
            assert_eq!(full[0].is_some(), varies, "{path} {encoding:?}");
            let etag = full[1].clone().expect("an ETag");
            let (status, not_modified) = keyed(get().header("if-none-match", &etag)).await;
            assert_eq!(status, 304, "{path} {encoding:?}");
            assert_eq!(not_modified, full, "{path} {encoding:?}");
        }
    }
    server.stop().await;
}

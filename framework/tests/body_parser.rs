//! The body parser: JSON, gzip, forms, limits at the boundary, a gzip bomb.

use std::io::Write;

use framework::middleware::body_parser::{
    BodyParser, BodyParserConfig, FormDecoder, GzipDecoder, JsonDecoder, json_and_form_content_type,
};
use framework::middleware::error_handler::ErrorHandler;
use framework::testing::TestClient;
use framework::{App, Context, Result};

async fn echo(ctx: &mut Context) -> Result {
    let body = ctx.request_body().clone();
    ctx.body_mut().set_bytes(body);
    ctx.set_status(http::StatusCode::OK);
    Ok(())
}

fn client(parser: BodyParser) -> TestClient {
    TestClient::new(
        App::new()
            .use_middleware(ErrorHandler::default())
            .use_middleware(parser)
            .post("/echo", echo)
            .route(http::Method::PUT, "/echo", echo)
            .get("/echo", echo)
            .build()
            .unwrap(),
    )
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

/// A JSON document of exactly `len` bytes: `{"a":"xxx…"}`.
fn json_of_len(len: usize) -> Vec<u8> {
    let filler = len - r#"{"a":""}"#.len();
    format!(r#"{{"a":"{}"}}"#, "x".repeat(filler)).into_bytes()
}

fn json_error(res: &framework::testing::TestResponse) -> (u16, String, String) {
    let body = res.json();
    (
        res.status.as_u16(),
        body["category"].as_str().unwrap_or_default().to_owned(),
        body["message"].as_str().unwrap_or_default().to_owned(),
    )
}

#[tokio::test]
async fn json_body_is_stored() {
    let res = client(BodyParser::default())
        .post("/echo")
        .json(&serde_json::json!({"a": 1}))
        .send()
        .await;
    assert_eq!(res.status, 200);
    assert_eq!(res.text(), r#"{"a":1}"#);
}

#[tokio::test]
async fn gzip_json_body_is_decompressed() {
    let res = client(BodyParser::default())
        .put("/echo")
        .header("content-type", "application/json")
        .header("content-encoding", "gzip")
        .body(gzip(br#"{"zipped":true}"#))
        .send()
        .await;
    assert_eq!(res.status, 200);
    assert_eq!(res.text(), r#"{"zipped":true}"#);
}

#[tokio::test]
async fn malformed_json_is_400() {
    for bad in [&b"{"[..], b"{\"a\":1} trailing", b"not json"] {
        let res = client(BodyParser::default())
            .post("/echo")
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(bad.to_vec())
            .send()
            .await;
        assert_eq!(
            json_error(&res),
            (400, "framework-body-parser".into(), "invalid json".into())
        );
    }
}

#[tokio::test]
async fn bad_gzip_is_400() {
    let res = client(BodyParser::default())
        .post("/echo")
        .header("content-type", "application/json")
        .header("content-encoding", "gzip")
        .header("accept", "application/json")
        .body(&b"definitely not gzip"[..])
        .send()
        .await;
    assert_eq!(
        json_error(&res),
        (
            400,
            "framework-body-parser".into(),
            "invalid gzip body".into()
        )
    );
}

#[tokio::test]
async fn unknown_encoding_is_415() {
    // `compress` (LZW) has no decoder; gzip, deflate, br and zstd do.
    let res = client(BodyParser::default())
        .post("/echo")
        .header("content-type", "application/json")
        .header("content-encoding", "compress")
        .body(&b"{}"[..])
        .send()
        .await;
    assert_eq!(res.status, 415);
}

#[tokio::test]
async fn limit_boundary() {
    let c = client(BodyParser::default());
    let exact = json_of_len(51_200);
    assert_eq!(exact.len(), 51_200);
    let res = c
        .post("/echo")
        .header("content-type", "application/json")
        .body(exact.clone())
        .send()
        .await;
    assert_eq!(res.status, 200);
    assert_eq!(res.body.len(), 51_200);

    let over = json_of_len(51_201);
    let res = c
        .post("/echo")
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(over)
        .send()
        .await;
    assert_eq!(
        json_error(&res),
        (
            413,
            "framework-body-parser".into(),
            "request body is too large".into()
        )
    );
}

#[tokio::test]
async fn declared_length_over_limit_is_refused_before_reading() {
    let res = client(BodyParser::default())
        .post("/echo")
        .header("content-type", "application/json")
        .header("content-length", "51201")
        .body(&b"{}"[..])
        .send()
        .await;
    assert_eq!(res.status, 413);
}

#[tokio::test]
async fn decoded_limit_boundary_and_gzip_bomb() {
    let c = client(BodyParser::default());
    // Exactly at the limit once decoded: accepted.
    let res = c
        .post("/echo")
        .header("content-type", "application/json")
        .header("content-encoding", "gzip")
        .body(gzip(&json_of_len(51_200)))
        .send()
        .await;
    assert_eq!(res.status, 200);
    assert_eq!(res.body.len(), 51_200);
    // One byte over once decoded, though tiny on the wire: refused.
    let res = c
        .post("/echo")
        .header("content-type", "application/json")
        .header("content-encoding", "gzip")
        .body(gzip(&json_of_len(51_201)))
        .send()
        .await;
    assert_eq!(res.status, 413);
    // A bomb: 32 MiB of zeros in ~32 KiB on the wire (deflate tops out near 1032:1), so it
    // passes the wire limit; decoding must stop at the limit, not inflate 32 MiB.
    let bomb = gzip(&vec![b'0'; 32 * 1024 * 1024]);
    assert!(bomb.len() < 51_200, "bomb is {} bytes", bomb.len());
    let res = c
        .post("/echo")
        .header("content-type", "application/json")
        .header("content-encoding", "gzip")
        .body(bomb)
        .send()
        .await;
    assert_eq!(res.status, 413);
}

#[tokio::test]
async fn form_needs_the_form_content_type_check() {
    let parser = || {
        BodyParser::new(
            BodyParserConfig::default().content_type_validate(json_and_form_content_type),
        )
        .add_decoder(GzipDecoder)
        .add_decoder(JsonDecoder)
        .add_decoder(FormDecoder)
    };
    let res = client(parser())
        .post("/echo")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("a=1&a=2&b=3&c=x%20y")
        .send()
        .await;
    assert_eq!(res.status, 200);
    assert_eq!(
        res.json(),
        serde_json::json!({"a": ["1", "2"], "b": "3", "c": "x y"})
    );
    // The default parser leaves forms unread.
    let res = client(BodyParser::default())
        .post("/echo")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("a=1")
        .send()
        .await;
    assert_eq!(res.status, 200);
    assert!(res.body.is_empty());
}

#[tokio::test]
async fn other_methods_and_types_pass_through() {
    let c = client(BodyParser::default());
    let res = c
        .get("/echo")
        .header("content-type", "application/json")
        .send()
        .await;
    assert_eq!(res.status, 200);
    assert!(res.body.is_empty());
    let res = c
        .post("/echo")
        .header("content-type", "text/plain")
        .body("{not json")
        .send()
        .await;
    assert_eq!(res.status, 200);
    assert!(res.body.is_empty());
}

#[tokio::test]
async fn configurable_limit() {
    let parser = BodyParser::new(BodyParserConfig::default().limit(10)).add_decoder(JsonDecoder);
    let c = client(parser);
    let ok = c
        .post("/echo")
        .header("content-type", "application/json")
        .body(json_of_len(10))
        .send()
        .await;
    assert_eq!(ok.status, 200);
    let over = c
        .post("/echo")
        .header("content-type", "application/json")
        .body(json_of_len(11))
        .send()
        .await;
    assert_eq!(over.status, 413);
}

/// A content decoder of its own coding, `x-upper` (the body sent in capitals), that counts
/// how often the parser asks it whether it applies.
struct Upper(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl framework::middleware::body_parser::Decoder for Upper {
    fn accepts(&self, ctx: &Context) -> bool {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ctx.request_header(http::header::CONTENT_ENCODING) == Some("x-upper")
    }

    fn decode(
        &self,
        ctx: &mut Context,
        body: bytes::Bytes,
        _limit: usize,
    ) -> std::result::Result<bytes::Bytes, framework::HttpError> {
        ctx.request_headers_mut()
            .remove(http::header::CONTENT_ENCODING);
        Ok(body.to_ascii_lowercase().into())
    }

    fn content_coding(&self) -> Option<&'static str> {
        Some("x-upper")
    }
}

/// `POST /echo` of `body` as JSON, sent in `coding` when given: the status and the body.
async fn post_json(
    client: &TestClient,
    coding: Option<&str>,
    body: &'static [u8],
) -> (u16, String) {
    let mut request = client
        .post("/echo")
        .header("content-type", "application/json");
    if let Some(coding) = coding {
        request = request.header("content-encoding", coding);
    }
    let res = request.body(body).send().await;
    (res.status.as_u16(), res.text())
}

/// A content decoder (one that names its coding) is asked only about requests sent with a
/// `Content-Encoding`; a coding it leaves in place is still refused with 415.
#[tokio::test]
async fn content_decoders_are_asked_only_about_coded_requests() {
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let client = client(
        BodyParser::new(BodyParserConfig::default())
            .add_decoder(Upper(std::sync::Arc::clone(&asked)))
            .add_decoder(JsonDecoder),
    );
    let times = || asked.load(std::sync::atomic::Ordering::Relaxed);

    assert_eq!(
        post_json(&client, None, br#"{"A":"B"}"#).await,
        (200, r#"{"A":"B"}"#.into())
    );
    assert_eq!(
        times(),
        0,
        "a request without a coding asked the content decoder"
    );

    assert_eq!(
        post_json(&client, Some("x-upper"), br#"{"A":"B"}"#).await,
        (200, r#"{"a":"b"}"#.into())
    );
    assert_eq!(times(), 1);

    // A coding no decoder removes is refused before any decoder is asked.
    let (status, _) = post_json(&client, Some("gzip"), b"{}").await;
    assert_eq!(status, 415);
    assert_eq!(times(), 1);
}

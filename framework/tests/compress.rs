//! The compress middleware: choice by q-value, size boundary, types, Vary, ETag, plug-ins.

use std::io::Read;

use framework::middleware::compress::{Compress, CompressConfig, Compressor};
use framework::middleware::responder::Responder;
use framework::testing::{TestClient, TestResponse};
use framework::{App, Context, Result};
use http::HeaderValue;
use http::header::{CONTENT_TYPE, ETAG};

fn json_of_len(len: usize) -> String {
    format!(r#"{{"a":"{}"}}"#, "x".repeat(len - 8))
}

async fn big(ctx: &mut Context) -> Result {
    let len = ctx
        .query("len")
        .and_then(|l| l.parse().ok())
        .unwrap_or(4096);
    ctx.set_response_header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if ctx.query("etag").is_some() {
        ctx.set_response_header(ETAG, HeaderValue::from_static("\"abc\""));
    }
    ctx.body_mut().set_bytes(json_of_len(len));
    Ok(())
}

async fn png(ctx: &mut Context) -> Result {
    ctx.set_response_header(CONTENT_TYPE, HeaderValue::from_static("image/png"));
    ctx.body_mut().set_bytes(vec![0u8; 4096]);
    Ok(())
}

async fn encoded(ctx: &mut Context) -> Result {
    ctx.set_response_header(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    ctx.set_response_header(
        http::header::CONTENT_ENCODING,
        HeaderValue::from_static("gzip"),
    );
    ctx.body_mut().set_bytes(vec![b'z'; 4096]);
    Ok(())
}

fn client(compress: Compress) -> TestClient {
    TestClient::new(
        App::new()
            .use_middleware(compress)
            .use_middleware(Responder::default())
            .get("/big", big)
            .get("/png", png)
            .get("/encoded", encoded)
            .build()
            .unwrap(),
    )
}

fn gunzip(res: &TestResponse) -> String {
    let mut out = String::new();
    flate2::read::GzDecoder::new(&res.body[..])
        .read_to_string(&mut out)
        .unwrap();
    out
}

fn unbrotli(res: &TestResponse) -> String {
    let mut out = String::new();
    brotli_decompress(&res.body, &mut out);
    out
}

fn brotli_decompress(data: &[u8], out: &mut String) {
    let mut reader = brotli::Decompressor::new(data, 4096);
    reader.read_to_string(out).unwrap();
}

#[tokio::test]
async fn gzip_when_only_gzip_is_accepted() {
    let res = client(Compress::default())
        .get("/big")
        .header("accept-encoding", "gzip")
        .send()
        .await;
    assert_eq!(res.header("content-encoding"), Some("gzip"));
    assert_eq!(res.header("vary"), Some("Accept-Encoding"));
    assert!(res.body.len() < 4096);
    assert_eq!(gunzip(&res), json_of_len(4096));
}

#[tokio::test]
async fn br_preferred_on_a_tie_and_q_values_decide() {
    let c = client(Compress::default());
    let res = c
        .get("/big")
        .header("accept-encoding", "gzip, br")
        .send()
        .await;
    assert_eq!(res.header("content-encoding"), Some("br"));
    assert_eq!(unbrotli(&res), json_of_len(4096));
    let res = c
        .get("/big")
        .header("accept-encoding", "br;q=0.5, gzip")
        .send()
        .await;
    assert_eq!(res.header("content-encoding"), Some("gzip"));
    let res = c
        .get("/big")
        .header("accept-encoding", "br;q=0")
        .send()
        .await;
    assert_eq!(res.header("content-encoding"), None);
    assert_eq!(res.header("vary"), Some("Accept-Encoding"));
    let res = c.get("/big").send().await;
    assert_eq!(res.header("content-encoding"), None);
    assert_eq!(res.text(), json_of_len(4096));
}

#[tokio::test]
async fn size_boundary() {
    let c = client(Compress::default());
    let res = c
        .get("/big?len=1023")
        .header("accept-encoding", "gzip")
        .send()
        .await;
    assert_eq!(res.header("content-encoding"), None);
    assert_eq!(res.header("vary"), None);
    assert_eq!(res.body.len(), 1023);
    let res = c
        .get("/big?len=1024")
        .header("accept-encoding", "gzip")
        .send()
        .await;
    assert_eq!(res.header("content-encoding"), Some("gzip"));
    assert_eq!(gunzip(&res).len(), 1024);
}

#[tokio::test]
async fn incompressible_or_already_encoded_bodies_are_left_alone() {
    let c = client(Compress::default());
    let res = c.get("/png").header("accept-encoding", "gzip").send().await;
    assert_eq!(res.header("content-encoding"), None);
    assert_eq!(res.body.len(), 4096);
    let res = c
        .get("/encoded")
        .header("accept-encoding", "br")
        .send()
        .await;
    assert_eq!(res.header("content-encoding"), Some("gzip"));
    assert_eq!(&res.body[..], &[b'z'; 4096][..]);
}

#[tokio::test]
async fn strong_etag_is_weakened() {
    let res = client(Compress::default())
        .get("/big?etag=1")
        .header("accept-encoding", "gzip")
        .send()
        .await;
    assert_eq!(res.header("etag"), Some("W/\"abc\""));
}

#[tokio::test]
async fn levels_are_configurable() {
    let sizes = {
        let mut sizes = Vec::new();
        for level in [1, 9] {
            let c = client(Compress::new(CompressConfig::default().gzip_level(level)));
            // A body with some entropy, so the levels differ.
            let res = c
                .get("/big?len=20000")
                .header("accept-encoding", "gzip")
                .send()
                .await;
            assert_eq!(gunzip(&res), json_of_len(20000));
            sizes.push(res.body.len());
        }
        sizes
    };
    assert!(sizes[1] <= sizes[0], "{sizes:?}");
}

/// A toy coding: reverses the bytes. Proves the plug-in point, nothing more.
struct Reverse;

impl Compressor for Reverse {
    fn encoding(&self) -> &'static str {
        "x-reverse"
    }
    fn compress(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        Ok(data.iter().rev().copied().collect())
    }
}

struct Broken;

impl Compressor for Broken {
    fn encoding(&self) -> &'static str {
        "gzip"
    }
    fn compress(&self, _data: &[u8]) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::other("out of buffers"))
    }
}

#[tokio::test]
async fn custom_compressor_and_failure_fallback() {
    let c = client(Compress::default().add_compressor(Reverse));
    let res = c
        .get("/big?len=2000")
        .header("accept-encoding", "x-reverse")
        .send()
        .await;
    assert_eq!(res.header("content-encoding"), Some("x-reverse"));
    let mut body = res.body.to_vec();
    body.reverse();
    assert_eq!(body, json_of_len(2000).into_bytes());

    let c = client(Compress::with_compressors(
        CompressConfig::default(),
        vec![std::sync::Arc::new(Broken)],
    ));
    let res = c.get("/big").header("accept-encoding", "gzip").send().await;
    assert_eq!(res.status, 200);
    assert_eq!(res.header("content-encoding"), None);
    assert_eq!(res.text(), json_of_len(4096));
}

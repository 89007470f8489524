//! The four content codings both ways, over real requests: the compress middleware answers in
//! zstd and deflate as it does in brotli and gzip (whole bodies and streams, ties going to
//! brotli, then zstd, gzip, deflate), and the body parser decodes a request body sent in any of
//! them, counting the decoded bytes against its limit, so a bomb stops one byte past it.

mod common;

use std::io::{Read, Write};

use framework::extract::Json;
use framework::middleware::body_parser::BodyParser;
use framework::middleware::compress::Compress;
use framework::{App, Context, FromState, Result, controller};

fn client() -> reqwest::Client {
    // Encodings are asked for by hand, and bodies read as sent.
    reqwest::Client::builder().no_gzip().build().unwrap()
}

fn encode(coding: &str, data: &[u8]) -> Vec<u8> {
    match coding {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "deflate" => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "br" => {
            let mut out = Vec::new();
            {
                let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
                w.write_all(data).unwrap();
            }
            out
        }
        "zstd" => zstd::bulk::compress(data, 3).unwrap(),
        other => panic!("no coding {other}"),
    }
}

fn decode(coding: &str, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match coding {
        "gzip" => flate2::read::GzDecoder::new(data).read_to_end(&mut out),
        "deflate" => flate2::read::ZlibDecoder::new(data).read_to_end(&mut out),
        "br" => brotli::Decompressor::new(data, 4096).read_to_end(&mut out),
        "zstd" => zstd::stream::read::Decoder::new(data)
            .unwrap()
            .read_to_end(&mut out),
        other => panic!("no coding {other}"),
    }
    .unwrap_or_else(|e| panic!("{coding}: {e}"));
    out
}

/// A JSON body of `len` bytes (`?len=`), compressible.
async fn report(ctx: &mut Context) -> Result {
    let len: usize = ctx
        .query("len")
        .and_then(|l| l.parse().ok())
        .unwrap_or(4096);
    let mut body = String::with_capacity(len);
    body.push('"');
    while body.len() < len - 1 {
        body.push_str(["alpha ", "beta ", "gamma "][body.len() % 3]);
    }
    body.truncate(len - 1);
    body.push('"');
    ctx.set_response_header(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    ctx.body_mut().set_bytes(body);
    Ok(())
}

#[tokio::test]
async fn responses_come_in_zstd_and_deflate_whole_and_streamed() {
    let service = App::new()
        .use_middleware(Compress::default())
        .get("/report", report)
        .build()
        .unwrap();
    let server = common::start(service).await;
    let client = client();
    // Whole (4 KiB) and as a stream (256 KiB, over the 64 KiB threshold).
    for len in [4096, 256 * 1024] {
        let url = server.url(&format!("/report?len={len}"));
        let plain = client
            .get(&url)
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert_eq!(plain.len(), len);
        for coding in ["zstd", "deflate", "gzip", "br"] {
            let res = client
                .get(&url)
                .header("accept-encoding", coding)
                .send()
                .await
                .unwrap();
            assert_eq!(res.headers()["content-encoding"], coding, "{len}");
            // Whole bodies go out with their length; the large one as a stream, chunked.
            let streamed = len > 64 * 1024;
            assert_eq!(
                res.headers().get("content-length").is_none(),
                streamed,
                "{coding} {len}: {:?}",
                res.headers()
            );
            assert!(
                res.headers()["vary"]
                    .to_str()
                    .unwrap()
                    .eq_ignore_ascii_case("accept-encoding")
            );
            let body = res.bytes().await.unwrap();
            assert!(body.len() < len / 2, "{coding} {len}: {}", body.len());
            assert!(
                decode(coding, &body) == plain,
                "{coding} {len}: not the body"
            );
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn ties_go_to_brotli_then_zstd_gzip_deflate() {
    let service = App::new()
        .use_middleware(Compress::default())
        .get("/report", report)
        .build()
        .unwrap();
    let server = common::start(service).await;
    let client = client();
    for (accept, chosen) in [
        ("gzip, deflate, br, zstd", "br"),
        ("gzip, deflate, zstd", "zstd"),
        ("deflate, gzip", "gzip"),
        ("deflate", "deflate"),
        ("zstd;q=0.5, deflate", "deflate"),
        ("br;q=0, zstd;q=0, gzip;q=0, deflate;q=0.1", "deflate"),
    ] {
        let res = client
            .get(server.url("/report"))
            .header("accept-encoding", accept)
            .send()
            .await
            .unwrap();
        assert_eq!(res.headers()["content-encoding"], chosen, "{accept}");
    }
    server.stop().await;
}

/// Echoes the JSON body the parser stored, with its length.
async fn echo(ctx: &mut Context) -> Result<String> {
    Ok(format!("{} bytes", ctx.request_body().len()))
}

/// A JSON string of exactly `len` bytes.
fn json_of_len(len: usize) -> Vec<u8> {
    let mut body = vec![b'"'; len];
    body[1..len - 1].fill(b'a');
    body
}

async fn post(server: &common::Running, coding: &str, body: Vec<u8>) -> (u16, serde_json::Value) {
    post_to(server, "/echo", coding, body).await
}

async fn post_to(
    server: &common::Running,
    path: &str,
    coding: &str,
    body: Vec<u8>,
) -> (u16, serde_json::Value) {
    let res = client()
        .post(server.url(path))
        .header("content-type", "application/json")
        .header("content-encoding", coding)
        .header("accept", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    let value = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
    (status, value)
}

#[tokio::test]
async fn request_bodies_are_decoded_in_every_coding_within_the_limit() {
    // The default body parser: 50 KiB, every coding compiled in.
    let service = App::new()
        .use_middleware(BodyParser::default())
        .post("/echo", echo)
        .build()
        .unwrap();
    let server = common::start(service).await;
    for coding in ["gzip", "deflate", "br", "zstd"] {
        // Exactly at the limit once decoded: accepted.
        let (status, body) = post(&server, coding, encode(coding, &json_of_len(51_200))).await;
        assert_eq!(
            (status, body.as_str()),
            (200, Some("51200 bytes")),
            "{coding}"
        );
        // One byte over once decoded, though far under it on the wire: 413.
        let (status, body) = post(&server, coding, encode(coding, &json_of_len(51_201))).await;
        assert_eq!(status, 413, "{coding}: {body}");
        assert_eq!(body["category"], "framework-body-parser", "{coding}");
        // A bomb: 32 MiB of one byte, under the limit on the wire (gzip and deflate reach about
        // 1000:1, brotli and zstd far more); decoding stops at the limit (that it reads no
        // further than one byte past it: `body_parser`'s unit test with an endless input).
        let bomb = encode(coding, &vec![b'0'; 32 * 1024 * 1024]);
        assert!(bomb.len() < 51_200, "{coding}: {}", bomb.len());
        let (status, body) = post(&server, coding, bomb).await;
        assert_eq!(status, 413, "{coding}");
        assert_eq!(body["category"], "framework-body-parser", "{coding}");
        // Bytes that are not what the coding says: 400 naming it.
        let (status, body) = post(&server, coding, b"definitely not compressed".to_vec()).await;
        assert_eq!(status, 400, "{coding}");
        assert_eq!(
            body["message"],
            format!("invalid {coding} body"),
            "{coding}"
        );
    }
    // Two codings stacked: no decoder removes them, 415.
    let (status, body) = post(&server, "gzip, br", b"{}".to_vec()).await;
    assert_eq!(status, 415, "{body}");
    server.stop().await;
}

/// A list of numbers, as the default parser's route takes it.
#[derive(serde::Deserialize, framework::Validate, schemars::JsonSchema)]
struct Items {
    items: Vec<u32>,
}

/// A controller route taking `Json<T>`: `App::new()` gives it the default body parser.
#[derive(FromState)]
struct Defaults;

#[controller(prefix = "/default")]
impl Defaults {
    #[post("/echo")]
    async fn echo(&self, body: Json<Items>) -> String {
        format!("{} items", body.0.items.len())
    }
}

#[tokio::test]
async fn the_default_parser_decodes_each_coding_and_refuses_stacked_ones_before_decoding() {
    // No parser mounted: the one `App::new()` puts on the controller route.
    let server = common::start(App::new().build().unwrap()).await;
    let array = br#"{"items":[1,2,3]}"#;
    for coding in ["gzip", "deflate", "br", "zstd"] {
        let (status, body) = post_to(&server, "/default/echo", coding, encode(coding, array)).await;
        assert_eq!((status, body.as_str()), (200, Some("3 items")), "{coding}");
    }
    // Doubled, stacked and unknown codings: 415 before any decoding (a body gzipped twice is
    // valid JSON once both are removed, so no later check can tell the answer).
    let twice = encode("gzip", &encode("gzip", array));
    for (coding, body) in [
        ("gzip, gzip", twice.clone()),
        ("gzip,gzip", twice),
        ("gzip, br", encode("br", &encode("gzip", array))),
        ("compress", array.to_vec()),
        ("x-unknown", array.to_vec()),
    ] {
        let (status, answer) = post_to(&server, "/default/echo", coding, body).await;
        assert_eq!(status, 415, "{coding}: {answer}");
        assert_eq!(
            answer["message"], "unsupported content encoding",
            "{coding}"
        );
        assert_eq!(answer["category"], "framework-body-parser", "{coding}");
    }
    server.stop().await;
}

#[tokio::test]
async fn a_zstd_frame_asking_for_a_window_over_8_mib_is_refused() {
    let service = App::new()
        .use_middleware(BodyParser::default())
        .post("/echo", echo)
        .build()
        .unwrap();
    let server = common::start(service).await;
    // A frame compressed with a 16 MiB window (long-distance matching forces it), without a
    // content size in its header, so the decoder must reserve the window it declares.
    let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    encoder.long_distance_matching(true).unwrap();
    encoder.window_log(24).unwrap();
    encoder.include_contentsize(false).unwrap();
    encoder.write_all(b"\"small\"").unwrap();
    let frame = encoder.finish().unwrap();
    let (status, body) = post(&server, "zstd", frame).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["message"], "invalid zstd body");
    // The same body with an ordinary window decodes.
    let (status, _) = post(&server, "zstd", encode("zstd", b"\"small\"")).await;
    assert_eq!(status, 200);
    server.stop().await;
}

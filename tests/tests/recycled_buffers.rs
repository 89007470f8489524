//! What the framework reuses from one request to the next on a thread (a request's emptied
//! header map as the next response's, the responder's JSON block) carries nothing over: each
//! answer has its own headers and exactly its own body, on one keep-alive connection and on
//! several at once.

mod common;

use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::{App, Context, Result, Service};
use serde_json::{Value, json};

/// Sets a response header of its own and echoes the request's `x-secret` in another.
async fn marked(ctx: &mut Context) -> Result<&'static str> {
    let secret = ctx.request_header("x-secret").unwrap_or("").to_owned();
    ctx.set_response_header(
        http::HeaderName::from_static("x-mark"),
        http::HeaderValue::from_static("1"),
    );
    if let Ok(v) = http::HeaderValue::try_from(secret) {
        ctx.set_response_header(http::HeaderName::from_static("x-echo"), v);
    }
    Ok("marked")
}

async fn plain(_ctx: &mut Context) -> Result<&'static str> {
    Ok("plain")
}

/// A JSON answer of exactly `:len` bytes: `{"a":"xxx…"}`.
async fn json_of_len(ctx: &mut Context) -> Result<Value> {
    let len: usize = ctx.param("len").and_then(|l| l.parse().ok()).unwrap_or(8);
    Ok(json!({ "a": "x".repeat(len.saturating_sub(8)) }))
}

fn service() -> Service {
    App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/marked", marked)
        .get("/plain", plain)
        .get("/json/:len", json_of_len)
        .build()
        .unwrap()
}

/// The response header names, sorted.
fn names(response: &reqwest::Response) -> Vec<String> {
    let mut names: Vec<String> = response.headers().keys().map(|k| k.to_string()).collect();
    names.sort();
    names
}

#[tokio::test]
async fn no_header_crosses_from_one_request_to_the_next() {
    let server = common::start(service()).await;
    // One connection, kept alive: hyper parses each request into the map of the response
    // before it, and the framework answers in the map of the request before.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .unwrap();
    let expected_plain = ["content-length", "content-type", "date", "x-request-id"];
    for round in 0..20 {
        let mut request = client
            .get(server.url("/marked"))
            .header("x-secret", format!("s{round}"));
        // Some rounds send many headers: a map of room 96 goes round, or one of 192 that is
        // not kept (hyper takes up to 100 headers).
        let fillers = [0, 80, 95][round % 3];
        {
            for i in 0..fillers {
                request = request.header(format!("x-filler-{i}"), "f");
            }
        }
        let marked = request.send().await.unwrap();
        assert_eq!(marked.status(), 200);
        assert_eq!(marked.headers()["x-mark"], "1");
        assert_eq!(marked.headers()["x-echo"], format!("s{round}").as_str());
        assert_eq!(marked.headers().get_all("x-mark").iter().count(), 1);
        assert_eq!(marked.text().await.unwrap(), "marked");

        let plain = client.get(server.url("/plain")).send().await.unwrap();
        assert_eq!(names(&plain), expected_plain, "round {round}");
        assert_eq!(plain.text().await.unwrap(), "plain");
    }
    server.stop().await;
}

#[tokio::test]
async fn no_header_crosses_between_concurrent_connections() {
    let server = common::start(service()).await;
    let mut tasks = Vec::new();
    for c in 0..8 {
        let (marked, plain) = (server.url("/marked"), server.url("/plain"));
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::new();
            for round in 0..25 {
                if (round + c) % 2 == 0 {
                    let secret = format!("c{c}r{round}");
                    let res = client
                        .get(&marked)
                        .header("x-secret", &secret)
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(res.headers()["x-echo"], secret.as_str());
                    assert_eq!(res.headers().get_all("x-echo").iter().count(), 1);
                } else {
                    let res = client.get(&plain).send().await.unwrap();
                    assert!(res.headers().get("x-mark").is_none());
                    assert!(res.headers().get("x-echo").is_none());
                    assert_eq!(res.text().await.unwrap(), "plain");
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    server.stop().await;
}

/// JSON bodies on both sides of the size the responder copies out of its buffer (4 096
/// bytes), a large one between small ones, and an empty-ish one: each is exactly its own.
#[tokio::test]
async fn json_bodies_are_exactly_their_own_around_the_copy_limit() {
    let server = common::start(service()).await;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .unwrap();
    for len in [
        8, 100, 4095, 4096, 4097, 8192, 9000, 20_000, 10, 4096, 8193, 9,
    ] {
        let res = client
            .get(server.url(&format!("/json/{len}")))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(res.content_length(), Some(len as u64), "{len}");
        let body = res.bytes().await.unwrap();
        let expected = format!(r#"{{"a":"{}"}}"#, "x".repeat(len - 8));
        assert_eq!(body.len(), len);
        assert!(body == expected.as_bytes(), "{len}");
    }
    server.stop().await;
}

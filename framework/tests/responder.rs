//! The responder: body values to bytes, and no data without it.

use std::sync::Arc;

use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::{Responder, ResponderConfig};
use framework::testing::TestClient;
use framework::{App, Context, Result};
use http::HeaderValue;
use serde::Serialize;

#[derive(Serialize)]
struct Me {
    name: &'static str,
}

async fn json(_ctx: &mut Context) -> Result<Me> {
    Ok(Me { name: "bob" })
}
async fn text(_ctx: &mut Context) -> Result<String> {
    Ok("hello".to_owned())
}
async fn bytes(_ctx: &mut Context) -> Result<Vec<u8>> {
    Ok(vec![0, 1, 2])
}
async fn created(ctx: &mut Context) -> Result {
    ctx.set_status(framework::http::StatusCode::CREATED);
    ctx.body_mut().set_value(Me { name: "new" });
    Ok(())
}
async fn no_content(ctx: &mut Context) -> Result {
    ctx.set_status(framework::http::StatusCode::NO_CONTENT);
    Ok(())
}
async fn nothing(_ctx: &mut Context) -> Result {
    Ok(())
}
async fn own_type(ctx: &mut Context) -> Result<Me> {
    ctx.set_response_header(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/vnd.me+json"),
    );
    Ok(Me { name: "typed" })
}
async fn buffer(ctx: &mut Context) -> Result {
    ctx.body_mut().set_bytes("raw");
    Ok(())
}
async fn cached(ctx: &mut Context) -> Result<&'static str> {
    ctx.set_response_header(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=60"),
    );
    Ok("c")
}

/// A bare app: the responder each test mounts (or leaves out) is the only one.
fn app() -> App {
    App::bare()
        .get("/json", json)
        .get("/text", text)
        .get("/bytes", bytes)
        .post("/created", created)
        .get("/no-content", no_content)
        .get("/nothing", nothing)
        .get("/own-type", own_type)
        .get("/buffer", buffer)
        .get("/cached", cached)
}

fn client() -> TestClient {
    TestClient::new(
        app()
            .use_middleware(ErrorHandler::default())
            .use_middleware(Responder::default())
            .build()
            .unwrap(),
    )
}

#[tokio::test]
async fn kinds_of_body() {
    let c = client();
    let res = c.get("/json").send().await;
    assert_eq!(res.status, 200);
    assert_eq!(
        res.header("content-type"),
        Some("application/json; charset=utf-8")
    );
    assert_eq!(res.text(), r#"{"name":"bob"}"#);
    let res = c.get("/text").send().await;
    assert_eq!(
        res.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(res.text(), "hello");
    let res = c.get("/bytes").send().await;
    assert_eq!(res.header("content-type"), Some("application/octet-stream"));
    assert_eq!(&res.body[..], &[0, 1, 2]);
}

#[tokio::test]
async fn created_and_no_content() {
    let c = client();
    let res = c.post("/created").send().await;
    assert_eq!(res.status, 201);
    assert_eq!(res.json()["name"], "new");
    let res = c.get("/no-content").send().await;
    assert_eq!(res.status, 204);
    assert!(res.body.is_empty());
}

#[tokio::test]
async fn no_status_no_body_is_invalid_response() {
    let res = client()
        .get("/nothing")
        .header("accept", "application/json")
        .send()
        .await;
    assert_eq!(res.status, 500);
    assert_eq!(res.json()["category"], "framework-responder");
    assert_eq!(res.json()["message"], "invalid response");
}

#[tokio::test]
async fn keeps_content_type_and_buffer() {
    let c = client();
    let res = c.get("/own-type").send().await;
    assert_eq!(res.header("content-type"), Some("application/vnd.me+json"));
    assert_eq!(res.json()["name"], "typed");
    assert_eq!(c.get("/buffer").send().await.text(), "raw");
}

#[tokio::test]
async fn cache_max_age_header() {
    let res = client().get("/cached").send().await;
    assert_eq!(res.header("cache-control"), Some("public, max-age=60"));
}

#[tokio::test]
async fn custom_marshal_and_content_type() {
    let config = ResponderConfig::default()
        .marshal(Some(Arc::new(|value| {
            let json = serde_json::to_value(value)?;
            Ok(format!("<name>{}</name>", json["name"].as_str().unwrap_or("")).into_bytes())
        })))
        .content_type(HeaderValue::from_static("application/xml"));
    let service = App::new()
        .use_middleware(Responder::new(config))
        .get("/json", json)
        .build()
        .unwrap();
    let res = TestClient::new(service).get("/json").send().await;
    assert_eq!(res.header("content-type"), Some("application/xml"));
    assert_eq!(res.text(), "<name>bob</name>");
}

/// A handler that returns a value in an app without a responder would answer an empty 200:
/// the build refuses it, naming the route and the middleware to add. `App::new()` has one.
#[tokio::test]
async fn without_responder_a_value_is_refused_at_build() {
    let err = app().build().err().expect("values and no responder");
    let err = err.to_string();
    assert!(err.starts_with("GET /bytes ("), "{err}");
    assert!(
        err.contains("add framework::middleware::responder::Responder"),
        "{err}"
    );
    let res = TestClient::new(App::new().get("/json", json).build().unwrap())
        .get("/json")
        .send()
        .await;
    assert_eq!(res.status, 200);
    assert_eq!(res.text(), r#"{"name":"bob"}"#);
}

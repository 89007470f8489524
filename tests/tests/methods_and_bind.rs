//! Route methods beside `get`/`post` on `App` and `Group`, and `ctx.bind()` on a route without
//! the body parser: a 500 naming the missing middleware, not a 400 blaming the client.

mod common;

use framework::middleware::body_parser::BodyParser;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::{App, Context, Group, Result, Validate};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Deserialize, Validate)]
struct Note {
    text: String,
}

async fn echo(ctx: &mut Context) -> Result<String> {
    let note: Note = ctx.bind()?;
    Ok(note.text)
}

fn method_name(ctx: &mut Context) -> std::future::Ready<Result<String>> {
    std::future::ready(Ok(ctx.method().to_string()))
}

#[tokio::test]
async fn every_method_has_a_shorthand_on_app_and_group() {
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .put("/r", method_name)
        .patch("/r", method_name)
        .delete("/r", method_name)
        .options("/r", method_name)
        .head("/h", |ctx: &mut Context| {
            ctx.set_response_header(
                http::HeaderName::from_static("x-head"),
                http::HeaderValue::from_static("yes"),
            );
            ctx.set_status(http::StatusCode::OK);
            async { Ok(()) }
        })
        .get("/both", |_ctx: &mut Context| async { Ok("get") })
        .head("/both", |ctx: &mut Context| {
            ctx.set_response_header(
                http::HeaderName::from_static("x-head"),
                http::HeaderValue::from_static("explicit"),
            );
            ctx.set_status(http::StatusCode::OK);
            async { Ok(()) }
        })
        .group(
            Group::new("/g")
                .put("/r", method_name)
                .patch("/r", method_name)
                .delete("/r", method_name)
                .options("/r", method_name)
                .head("/h", |ctx: &mut Context| {
                    ctx.set_status(http::StatusCode::OK);
                    async { Ok(()) }
                }),
        )
        .build()
        .expect("app");
    let server = common::start(service).await;
    let client = reqwest::Client::new();
    for prefix in ["", "/g"] {
        for method in ["PUT", "PATCH", "DELETE", "OPTIONS"] {
            let response = client
                .request(method.parse().unwrap(), server.url(&format!("{prefix}/r")))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200, "{prefix} {method}");
            assert_eq!(response.text().await.unwrap(), method);
        }
        let head = client
            .head(server.url(&format!("{prefix}/h")))
            .send()
            .await
            .unwrap();
        assert_eq!(head.status(), 200, "{prefix} HEAD");
        let get = client
            .get(server.url(&format!("{prefix}/h")))
            .send()
            .await
            .unwrap();
        assert_eq!(get.status(), 405, "{prefix}: a HEAD route answers no GET");
    }
    let head = client.head(server.url("/h")).send().await.unwrap();
    assert_eq!(head.headers()["x-head"], "yes");
    // Beside a GET route, the explicit HEAD route answers HEAD.
    let head = client.head(server.url("/both")).send().await.unwrap();
    assert_eq!(head.headers()["x-head"], "explicit");
    let get = client.get(server.url("/both")).send().await.unwrap();
    assert_eq!(get.text().await.unwrap(), "get");
    server.stop().await;
}

#[tokio::test]
async fn bind_without_the_body_parser_is_a_500_naming_it() {
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .post("/bare", echo)
        .group(
            Group::new("/parsed")
                .use_middleware(BodyParser::default())
                .post("/", echo)
                .delete("/", echo),
        )
        .build()
        .expect("app");
    let server = common::start(service).await;
    let client = common::browser();
    let body = json!({"text": "hello"});
    let bare = client
        .post(server.url("/bare"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(bare.status(), 500);
    let error: Value = bare.json().await.unwrap();
    assert_eq!(error["category"], "framework-bind");
    assert!(
        error["message"].as_str().unwrap().contains("BodyParser"),
        "{error}"
    );
    // With the parser, the same request works.
    let parsed = client
        .post(server.url("/parsed"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(parsed.status(), 200);
    assert_eq!(parsed.text().await.unwrap(), "hello");
    // A body the parser does not read (not JSON) stays the client's mistake: 415.
    let text = client
        .post(server.url("/parsed"))
        .header("content-type", "text/plain")
        .body("hello")
        .send()
        .await
        .unwrap();
    assert_eq!(text.status(), 415);
    // A body sent with a method the parser does not read (DELETE) is the client's mistake
    // too: the parser saw it and left it, so binding it is a 400, not the 500 above.
    let delete = client
        .delete(server.url("/parsed"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(delete.status(), 400);
    let error: Value = delete.json().await.unwrap();
    assert_eq!(error["category"], "validate", "{error}");
    // No body at all without a parser: the client's mistake too (400), nothing was left unread.
    let empty = client.post(server.url("/bare")).send().await.unwrap();
    assert_eq!(empty.status(), 400);
    server.stop().await;
}

#[tokio::test]
async fn a_body_the_parser_does_not_read_is_415_naming_what_it_accepts() {
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(BodyParser::default())
        .post("/note", echo)
        .patch("/note", echo)
        .build()
        .unwrap();
    let server = common::start(service).await;
    let client = common::browser();
    let send = |method: reqwest::Method, content_type: Option<&'static str>, body: &'static str| {
        let mut request = client.request(method, server.url("/note")).body(body);
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        async move {
            let res = request.send().await.unwrap();
            let status = res.status().as_u16();
            let accept_post = res
                .headers()
                .get("accept-post")
                .map(|v| v.to_str().unwrap().to_owned());
            let accept_patch = res
                .headers()
                .get("accept-patch")
                .map(|v| v.to_str().unwrap().to_owned());
            let body: Value = res.json().await.unwrap_or(Value::Null);
            (status, accept_post, accept_patch, body)
        }
    };
    for (content_type, body, named) in [
        (
            Some("text/plain"),
            "hello",
            "unsupported media type text/plain: expected application/json",
        ),
        (
            Some("application/x-www-form-urlencoded"),
            "text=hello",
            "unsupported media type application/x-www-form-urlencoded: expected application/json",
        ),
        (
            None,
            "{\"text\":\"hello\"}",
            "unsupported media type: expected application/json",
        ),
    ] {
        let (status, accept_post, _, body) = send(reqwest::Method::POST, content_type, body).await;
        assert_eq!(status, 415, "{content_type:?}: {body}");
        assert_eq!(accept_post.as_deref(), Some("application/json"));
        assert_eq!(body["category"], "framework-body-parser");
        assert_eq!(body["message"], named);
    }
    let (status, accept_post, accept_patch, _) =
        send(reqwest::Method::PATCH, Some("text/plain"), "hello").await;
    assert_eq!(
        (status, accept_post, accept_patch.as_deref()),
        (415, None, Some("application/json"))
    );
    // JSON still binds; an empty JSON body is still malformed JSON (400).
    let (status, _, _, _) = send(
        reqwest::Method::POST,
        Some("application/json"),
        "{\"text\":\"hi\"}",
    )
    .await;
    assert_eq!(status, 200);
    let (status, accept_post, _, body) =
        send(reqwest::Method::POST, Some("application/json"), "").await;
    assert_eq!((status, accept_post), (400, None));
    assert_eq!(body["message"], "invalid json");
    server.stop().await;
}

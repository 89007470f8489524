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
        .use_middleware(ErrorHandler::default().into_shared())
        .use_middleware(Responder::default().into_shared())
        .put("/r", method_name)
        .patch("/r", method_name)
        .delete("/r", method_name)
        .options("/r", method_name)
        .head("/h", |ctx: &mut Context| {
            ctx.set_header(
                http::HeaderName::from_static("x-head"),
                http::HeaderValue::from_static("yes"),
            );
            ctx.set_status(http::StatusCode::OK);
            async { Ok(()) }
        })
        .get("/both", |_ctx: &mut Context| async { Ok("get") })
        .head("/both", |ctx: &mut Context| {
            ctx.set_header(
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
        .use_middleware(ErrorHandler::default().into_shared())
        .use_middleware(Responder::default().into_shared())
        .post("/bare", echo)
        .group(
            Group::new("/parsed")
                .use_middleware(BodyParser::default().into_shared())
                .post("/", echo),
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
    // A body the parser does not read (not JSON) stays the client's mistake: 400.
    let text = client
        .post(server.url("/parsed"))
        .header("content-type", "text/plain")
        .body("hello")
        .send()
        .await
        .unwrap();
    assert_eq!(text.status(), 400);
    // No body at all without a parser: the client's mistake too (400), nothing was left unread.
    let empty = client.post(server.url("/bare")).send().await.unwrap();
    assert_eq!(empty.status(), 400);
    server.stop().await;
}

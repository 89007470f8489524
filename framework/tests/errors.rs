//! The error handler, and what happens without it.

use framework::middleware::error_handler::{ErrorHandler, ErrorHandlerConfig};
use framework::testing::TestClient;
use framework::{App, Context, Error, HttpError, Result};
use http::StatusCode;

async fn custom(_ctx: &mut Context) -> Result {
    Err(HttpError::with(StatusCode::CONFLICT, "user", "taken")
        .with_code("dup")
        .with_title("Conflict")
        .into())
}

async fn default_status(_ctx: &mut Context) -> Result {
    Err(HttpError::new("bad input").into())
}

async fn plain(_ctx: &mut Context) -> Result {
    Err(Error::msg("only administrators may access it"))
}

async fn io(_ctx: &mut Context) -> Result {
    Err(std::io::Error::other("disk gone"))?;
    Ok(())
}

fn client(with_handler: bool) -> TestClient {
    // Bare: without the error handler means without the default one too.
    let mut app = App::bare();
    if with_handler {
        app = app.use_middleware(ErrorHandler::default());
    }
    TestClient::new(
        app.get("/custom", custom)
            .get("/default", default_status)
            .get("/plain", plain)
            .get("/io", io)
            .build()
            .unwrap(),
    )
}

#[tokio::test]
async fn custom_error_as_json() {
    let res = client(true)
        .get("/custom")
        .header("accept", "application/json")
        .send()
        .await;
    assert_eq!(res.status, 409);
    assert_eq!(
        res.header("content-type"),
        Some("application/json; charset=utf-8")
    );
    assert_eq!(
        res.json(),
        serde_json::json!({"statusCode": 409, "code": "dup", "category": "user", "title": "Conflict", "message": "taken"})
    );
}

#[tokio::test]
async fn custom_error_as_text_without_accept_json() {
    let res = client(true)
        .get("/custom")
        .header("accept", "text/html")
        .send()
        .await;
    assert_eq!(res.status, 409);
    assert_eq!(
        res.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(res.text(), "statusCode=409, category=user, message=taken");
}

#[tokio::test]
async fn status_defaults_to_400() {
    let res = client(true).get("/default").send().await;
    assert_eq!(res.status, 400);
    assert_eq!(res.text(), "statusCode=400, message=bad input");
}

#[tokio::test]
async fn plain_error_is_500_exception() {
    for path in ["/plain", "/io"] {
        let res = client(true)
            .get(path)
            .header("accept", "application/json")
            .send()
            .await;
        assert_eq!(res.status, 500);
        let body = res.json();
        assert_eq!(body["category"], "framework-error");
        assert_eq!(body["exception"], true);
        assert_eq!(body["statusCode"], 500);
    }
    let res = client(true)
        .get("/plain")
        .header("accept", "application/json")
        .send()
        .await;
    assert_eq!(res.json()["message"], "only administrators may access it");
}

#[tokio::test]
async fn forced_json() {
    let service = App::new()
        .use_middleware(ErrorHandler::new(ErrorHandlerConfig {
            json: true,
            ..ErrorHandlerConfig::default()
        }))
        .get("/custom", custom)
        .build()
        .unwrap();
    let res = TestClient::new(service).get("/custom").send().await;
    assert_eq!(res.json()["message"], "taken");
}

#[tokio::test]
async fn without_error_handler_the_text_only() {
    let res = client(false)
        .get("/plain")
        .header("accept", "application/json")
        .send()
        .await;
    assert_eq!(res.status, 500);
    assert_eq!(res.text(), "only administrators may access it");
    let res = client(false).get("/custom").send().await;
    assert_eq!(res.status, 409);
    assert_eq!(res.text(), "taken");
}

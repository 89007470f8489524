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
        .use_middleware(ErrorHandler::new(ErrorHandlerConfig::default().json(true)))
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

/// `App::build`'s refusals are values: the variant says what is wrong, its fields what to fix,
/// and a path the router refused keeps its `PatternError` as the source.
#[test]
fn build_errors_are_typed_and_keep_their_source() {
    use framework::error::Component;
    use framework::router::PatternError;
    use framework::{BuildError, Context};
    use std::error::Error as _;

    let hello = |_ctx: &mut Context| async { Ok("hi") };
    let err = framework::App::new()
        .get("/a/{b", hello)
        .build()
        .err()
        .expect("refused");
    let BuildError::Pattern { route, source } = &err else {
        panic!("{err:?}");
    };
    assert!(route.contains("closure"), "{route}");
    assert!(matches!(source, PatternError::BadSegment { segment, .. } if segment == "{b"));
    let from_source = err.source().expect("a source").to_string();
    assert_eq!(from_source, "route path `/a/{b`: bad segment `{b`");
    assert_eq!(err.to_string(), format!("{route}: {from_source}"));

    let err = framework::App::bare()
        .get("/v", hello)
        .build()
        .err()
        .expect("refused");
    assert!(
        matches!(&err, BuildError::MissingComponent { route, component: Component::Responder }
            if route.contains("GET /v")),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("add framework::middleware::responder::Responder")
    );
    assert!(err.source().is_none());

    let err = framework::App::new()
        .get("/d", hello)
        .get("/d", hello)
        .build()
        .err()
        .expect("refused");
    assert!(
        matches!(&err, BuildError::DuplicateRoute { method, path, .. }
            if method == http::Method::GET && path == "/d"),
        "{err:?}"
    );
}

/// A middleware's refusal says its kind, and keeps the error underneath as its source.
#[test]
fn config_errors_have_a_kind_and_a_source() {
    use framework::middleware::ConfigErrorKind;
    use framework::middleware::cors::{Cors, CorsConfig};
    use framework::middleware::tracker::Mask;
    use std::error::Error as _;

    let err = Mask::new("(unclosed").expect_err("refused");
    assert_eq!(
        (err.component(), err.kind()),
        ("tracker", ConfigErrorKind::Invalid)
    );
    let source = err.source().expect("the regex error");
    assert!(err.to_string().ends_with(&source.to_string()), "{err}");

    let err = Cors::new(CorsConfig::new(framework::origin::AllowOrigin::any()).credentials(true))
        .err()
        .expect("refused");
    assert_eq!(
        (err.component(), err.kind()),
        ("cors", ConfigErrorKind::Unsafe)
    );
    assert!(err.source().is_none());
}

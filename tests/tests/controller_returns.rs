//! Controller handlers returning a plain value, `Result<T>` or `()`, and controllers built by
//! `#[derive(FromState)]` (by field type; a unit struct needs nothing; a missing type fails
//! `build()` naming the controller, the field and the type). Its own test binary, so these
//! controllers stay out of the other tests.

mod common;

use std::sync::Arc;

use framework::body::BodyStream;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::{App, Context, FromState, HttpError, Result, controller};
use serde::Serialize;
use serde_json::{Value, json};

struct Greeting(&'static str);

#[derive(Clone)]
struct Counter(Arc<std::sync::atomic::AtomicUsize>);

#[derive(Serialize)]
struct Note {
    text: String,
}

#[derive(FromState)]
struct Notes {
    greeting: Arc<Greeting>,
    counter: Counter,
}

#[controller(prefix = "/notes")]
impl Notes {
    /// A plain value: the body.
    #[get("/plain")]
    async fn plain(&self, _ctx: &mut Context) -> Note {
        self.counter
            .0
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Note {
            text: self.greeting.0.to_owned(),
        }
    }

    /// `Result<T>`: a value or an error for the error handler.
    #[get("/result/{ok}")]
    async fn result(&self, ctx: &mut Context) -> Result<Note> {
        if ctx.param("ok").as_deref() == Some("yes") {
            Ok(Note {
                text: "fine".into(),
            })
        } else {
            Err(HttpError::new("not this one")
                .with_status(http::StatusCode::CONFLICT)
                .into())
        }
    }

    /// `()`: the handler answered through the context.
    #[delete("/")]
    async fn clear(&self, ctx: &mut Context) {
        ctx.set_status(http::StatusCode::NO_CONTENT);
    }

    /// `()` without answering: the responder's 500, as for any handler that forgot to.
    #[post("/forgot")]
    async fn forgot(&self, _ctx: &mut Context) {}
}

/// Plain data (no drop glue): the responder recycles its box for the next one.
#[derive(Serialize)]
struct Point {
    x: u32,
    y: u32,
}

#[derive(FromState)]
struct Points;

fn number<T: std::str::FromStr>(ctx: &Context) -> Result<T> {
    ctx.param("x")
        .and_then(|x| x.parse().ok())
        .ok_or_else(|| HttpError::new("x is not a number").into())
}

#[controller(prefix = "/points")]
impl Points {
    #[get("/{x}")]
    async fn point(&self, ctx: &mut Context) -> Result<Point> {
        let x: u32 = number(ctx)?;
        Ok(Point { x, y: x * 2 })
    }

    /// Another plain type, so the recycled box changes type between requests.
    #[get("/pair/{x}")]
    async fn pair(&self, ctx: &mut Context) -> Result<(u8, u64)> {
        let x: u8 = number(ctx)?;
        Ok((x, u64::from(x) + 1))
    }
}

/// Every documented kind of return value (`framework::IntoReply`), through a real request.
#[derive(FromState)]
struct Kinds;

#[controller(prefix = "/kinds")]
impl Kinds {
    #[get("/bytes")]
    async fn bytes(&self, _ctx: &mut Context) -> bytes::Bytes {
        bytes::Bytes::from_static(b"\x00\x01raw")
    }

    #[get("/vec")]
    async fn vec(&self, _ctx: &mut Context) -> Result<Vec<u8>> {
        Ok(vec![1, 2, 3])
    }

    #[get("/string")]
    async fn string(&self, _ctx: &mut Context) -> String {
        "text".to_owned()
    }

    #[get("/json")]
    async fn json(&self, _ctx: &mut Context) -> Result<Value> {
        Ok(json!({"a": [1, 2]}))
    }

    #[get("/stream")]
    async fn stream(&self, _ctx: &mut Context) -> Result<BodyStream> {
        let parts = ["one ", "two ", "three"]
            .map(|p| Ok::<_, std::io::Error>(bytes::Bytes::from_static(p.as_bytes())));
        Ok(BodyStream::from_stream(futures_util::stream::iter(parts)))
    }
}

/// Found or not, and nothing to say.
#[derive(FromState)]
struct Lookups;

#[controller(prefix = "/lookups")]
impl Lookups {
    /// `Option<T>`: the value, or 404 on `None` (not a `null` body).
    #[get("/plain/{id}")]
    async fn plain(&self, ctx: &mut Context) -> Option<Note> {
        (ctx.param("id").as_deref() == Some("1")).then(|| Note { text: "one".into() })
    }

    /// `Result<Option<T>>`: the same, and errors as usual.
    #[get("/result/{id}")]
    async fn result(&self, ctx: &mut Context) -> Result<Option<Note>> {
        match ctx.param("id").as_deref() {
            Some("1") => Ok(Some(Note { text: "one".into() })),
            Some("bad") => Err(HttpError::new("bad id").into()),
            _ => Ok(None),
        }
    }

    /// `NoContent`: 204, no body.
    #[delete("/{id}")]
    async fn forget(&self, _ctx: &mut Context) -> Result<framework::reply::NoContent> {
        Ok(framework::reply::NoContent)
    }
}

/// An app's own error type: each case an answer with its status and category.
#[derive(Debug)]
enum ShelfError {
    Missing(u32),
    Locked,
}

impl From<ShelfError> for framework::Error {
    fn from(err: ShelfError) -> Self {
        match err {
            ShelfError::Missing(id) => HttpError::with(
                http::StatusCode::NOT_FOUND,
                "shelf",
                format!("no book {id}"),
            ),
            ShelfError::Locked => {
                HttpError::with(http::StatusCode::LOCKED, "shelf", "the shelf is locked")
            }
        }
        .into()
    }
}

#[derive(FromState)]
struct Shelf;

#[controller(prefix = "/shelf")]
impl Shelf {
    /// `Result<T, E>` with the app's error type.
    #[get("/{id}")]
    async fn book(&self, id: u32) -> Result<Note, ShelfError> {
        match id {
            1 => Ok(Note { text: "one".into() }),
            13 => Err(ShelfError::Locked),
            _ => Err(ShelfError::Missing(id)),
        }
    }

    /// `Result<Option<T>, E>`: `None` is still the 404, errors the app's.
    #[get("/maybe/{id}")]
    async fn maybe(&self, id: u32) -> Result<Option<Note>, ShelfError> {
        match id {
            1 => Ok(Some(Note { text: "one".into() })),
            13 => Err(ShelfError::Locked),
            _ => Ok(None),
        }
    }
}

#[derive(FromState)]
struct Health;

#[controller]
impl Health {
    #[get("/health")]
    async fn health(&self, _ctx: &mut Context) -> &'static str {
        "ok"
    }
}

fn app() -> App {
    App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .mount_controllers()
        .openapi("/openapi.json")
}

/// [`app`] with every state type its controllers take.
fn app_with_state() -> App {
    app()
        .with_state(Arc::new(Greeting("hello")))
        .with_state(Counter(Arc::default()))
}

/// `Option<T>` answers 404 on `None` and the document says so; `NoContent` is a 204 without
/// a body, documented as 204.
#[tokio::test]
async fn none_is_a_404_and_no_content_a_204() {
    let service = app_with_state().build().unwrap();
    let server = common::start(service).await;
    let client = reqwest::Client::new();
    for kind in ["plain", "result"] {
        let found = client
            .get(server.url(&format!("/lookups/{kind}/1")))
            .send()
            .await
            .unwrap();
        assert_eq!(found.status(), 200, "{kind}");
        assert_eq!(found.json::<Value>().await.unwrap(), json!({"text": "one"}));
        let missing = client
            .get(server.url(&format!("/lookups/{kind}/2")))
            .header("accept", "application/json")
            .send()
            .await
            .unwrap();
        assert_eq!(missing.status(), 404, "{kind}");
        let body: Value = missing.json().await.unwrap();
        assert_eq!(
            (&body["category"], &body["message"]),
            (&json!("framework-router"), &json!("not found")),
            "{kind}"
        );
    }
    let bad = client
        .get(server.url("/lookups/result/bad"))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let forgot = client
        .delete(server.url("/lookups/7"))
        .send()
        .await
        .unwrap();
    assert_eq!(forgot.status(), 204);
    assert!(forgot.bytes().await.unwrap().is_empty());

    let doc: Value = client
        .get(server.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for kind in ["plain", "result"] {
        let responses = &doc["paths"][format!("/lookups/{kind}/{{id}}")]["get"]["responses"];
        assert!(
            responses["200"]["content"]["application/json"].is_object(),
            "{responses}"
        );
        assert!(responses["404"].is_object(), "{kind}: {responses}");
    }
    let responses = &doc["paths"]["/lookups/{id}"]["delete"]["responses"];
    assert!(responses["204"].is_object(), "{responses}");
    assert!(responses["204"].get("content").is_none(), "{responses}");
    assert!(responses.get("200").is_none(), "{responses}");
    server.stop().await;
}

#[tokio::test]
async fn plain_values_results_and_unit_are_answers() {
    let counter = Counter(Arc::default());
    let service = app()
        .with_state(Arc::new(Greeting("hello")))
        .with_state(counter.clone())
        .build()
        .expect("every state type is registered");
    let server = common::start(service).await;
    let client = reqwest::Client::new();

    let res = client.get(server.url("/notes/plain")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.json::<Value>().await.unwrap(), json!({"text": "hello"}));
    assert_eq!(counter.0.load(std::sync::atomic::Ordering::Relaxed), 1);

    let res = client
        .get(server.url("/notes/result/yes"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.json::<Value>().await.unwrap(), json!({"text": "fine"}));

    let res = client
        .get(server.url("/notes/result/no"))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 409);
    assert_eq!(
        res.json::<Value>().await.unwrap()["message"],
        "not this one"
    );

    let res = client.delete(server.url("/notes")).send().await.unwrap();
    assert_eq!(res.status(), 204);
    assert!(res.bytes().await.unwrap().is_empty());

    let res = client
        .post(server.url("/notes/forgot"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 500);
    assert!(res.text().await.unwrap().contains("invalid response"));

    let res = client.get(server.url("/health")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.text().await.unwrap(), "ok");
    server.stop().await;
}

/// Plain values reuse one box per thread (`Body::from_value`): each answer still carries its
/// own request's value, also when the type changes between requests on one connection.
#[tokio::test]
async fn consecutive_plain_values_each_answer_their_own_request() {
    let service = app_with_state().build().unwrap();
    let server = common::start(service).await;
    let client = reqwest::Client::new();
    for x in 1..=20u32 {
        let res = client
            .get(server.url(&format!("/points/{x}")))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(
            res.json::<Value>().await.unwrap(),
            json!({"x": x, "y": x * 2})
        );
        if x % 3 == 0 {
            let res = client
                .get(server.url(&format!("/points/pair/{x}")))
                .send()
                .await
                .unwrap();
            assert_eq!(res.json::<Value>().await.unwrap(), json!([x, x + 1]));
        }
    }
    server.stop().await;
}

#[test]
fn a_missing_state_type_fails_the_build_naming_controller_field_and_type() {
    let err = app()
        .with_state(Arc::new(Greeting("hello")))
        .build()
        .err()
        .expect("Counter is not registered")
        .to_string();
    assert!(err.contains("controller Notes"), "{err}");
    assert!(err.contains("field `counter`"), "{err}");
    assert!(err.contains("controller_returns::Counter"), "{err}");
    assert!(err.contains("App::with_state"), "{err}");
    // Who reads it is a developer: no error-answer members, `std::` paths.
    let err = app()
        .with_state(Counter(Arc::default()))
        .build()
        .err()
        .expect("Arc<Greeting> is not registered")
        .to_string();
    assert_eq!(
        err.split_once(" could not be built: ").map(|(_, why)| why),
        Some(
            "field `greeting` needs state of type `std::sync::Arc<controller_returns::Greeting>`: \
             register it with `App::with_state`"
        ),
        "{err}"
    );
}

#[tokio::test]
async fn every_kind_of_return_value_is_an_answer() {
    let service = app_with_state()
        // A handler outside a controller returning `Result<Bytes>`.
        .get("/app/bytes", |_ctx: &mut Context| async {
            Ok(bytes::Bytes::from_static(b"app"))
        })
        .build()
        .unwrap();
    let server = common::start(service).await;
    let client = reqwest::Client::new();
    let get = |path: &str| client.get(server.url(path)).send();
    let cases: [(&str, &str, &[u8]); 6] = [
        ("/kinds/bytes", "application/octet-stream", b"\x00\x01raw"),
        ("/kinds/vec", "application/octet-stream", &[1, 2, 3]),
        ("/kinds/string", "text/plain; charset=utf-8", b"text"),
        (
            "/kinds/json",
            "application/json; charset=utf-8",
            br#"{"a":[1,2]}"#,
        ),
        ("/kinds/stream", "", b"one two three"),
        ("/app/bytes", "application/octet-stream", b"app"),
    ];
    for (path, content_type, body) in cases {
        let res = get(path).await.unwrap();
        assert_eq!(res.status(), 200, "{path}");
        let received = res
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        assert_eq!(received, content_type, "{path}");
        assert_eq!(&res.bytes().await.unwrap()[..], body, "{path}");
    }
    server.stop().await;
}

/// A controller method may return `Result<T, E>` with the app's own error type, any `E` that
/// converts into `framework::Error`: each error answers with the status and category its
/// conversion gives.
#[tokio::test]
async fn an_app_error_type_answers_with_its_own_status() {
    let service = app_with_state().build().unwrap();
    let server = common::start(service).await;
    let client = reqwest::Client::new();
    let get = |path: &str| {
        client
            .get(server.url(path))
            .header("accept", "application/json")
            .send()
    };
    for path in ["/shelf/1", "/shelf/maybe/1"] {
        let res = get(path).await.unwrap();
        assert_eq!(res.status(), 200, "{path}");
        assert_eq!(res.json::<Value>().await.unwrap(), json!({"text": "one"}));
    }
    let res = get("/shelf/7").await.unwrap();
    assert_eq!(res.status(), 404);
    let body: Value = res.json().await.unwrap();
    assert_eq!(
        (body["category"].as_str(), body["message"].as_str()),
        (Some("shelf"), Some("no book 7"))
    );
    for path in ["/shelf/13", "/shelf/maybe/13"] {
        let res = get(path).await.unwrap();
        assert_eq!(res.status(), 423, "{path}");
        assert_eq!(res.json::<Value>().await.unwrap()["category"], "shelf");
    }
    let res = get("/shelf/maybe/7").await.unwrap();
    assert_eq!(res.status(), 404);
    assert_eq!(
        res.json::<Value>().await.unwrap()["category"],
        "framework-router"
    );
    server.stop().await;
}

//! `App::new()` with no middleware mounted is a working JSON API (error handler, responder,
//! body parser for JSON and forms, the linked controllers), through real requests; a component
//! mounted by hand replaces its default; endpoints keep their raw request body; a bare app's
//! `build()` names the route and the middleware it lacks. Its own test binary, so its
//! controllers stay out of the other tests.

mod common;

use framework::extract::{Form, Json};
use framework::middleware::body_parser::{BodyParser, BodyParserConfig, JsonDecoder};
use framework::middleware::responder::{Responder, ResponderConfig};
use framework::{App, Context, FromState, HttpError, Result, Validate, controller, handler_fn};
use http::{Method, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Clone, Deserialize, Serialize, Validate, schemars::JsonSchema)]
struct Bookmark {
    url: String,
    title: String,
}

#[derive(FromState)]
struct Bookmarks;

#[controller(prefix = "/bookmarks")]
impl Bookmarks {
    /// A JSON body in, JSON out.
    #[post("/")]
    async fn add(&self, bookmark: Json<Bookmark>) -> Result<Json<Bookmark>> {
        Ok(bookmark)
    }

    /// A form in, text out.
    #[post("/form")]
    async fn add_form(&self, bookmark: Form<Bookmark>) -> String {
        bookmark.0.title
    }

    /// Found (1) or not: 404.
    #[get("/{id}")]
    async fn find(&self, id: u32) -> Result<Option<Bookmark>> {
        Ok((id == 1).then(|| Bookmark {
            url: "https://example.com/".into(),
            title: "example".into(),
        }))
    }
}

#[derive(Serialize)]
struct Health {
    ok: bool,
}

async fn health(_ctx: &mut Context) -> Result<Health> {
    Ok(Health { ok: true })
}

async fn taken(_ctx: &mut Context) -> Result<Health> {
    Err(HttpError::with(StatusCode::CONFLICT, "bookmark", "taken").into())
}

/// The raw request body's length: an endpoint reads its own body.
async fn raw_length(ctx: &mut Context) -> Result<()> {
    let body = ctx.take_raw_body().read_limited(1 << 20).await;
    let body = body.map_err(|_| HttpError::new("unreadable body"))?;
    ctx.body_mut().set_bytes(body.len().to_string());
    Ok(())
}

/// Answers through the context: nothing for a responder.
async fn answers_itself(ctx: &mut Context) -> Result<()> {
    ctx.body_mut().set_bytes("raw");
    Ok(())
}

/// Panics, as a handler that slices client text at the wrong place does.
async fn panics(ctx: &mut Context) -> Result<Health> {
    let id = ctx.query("id").unwrap_or_default().into_owned();
    let _ = &id[0..2];
    Ok(Health { ok: true })
}

fn client() -> reqwest::Client {
    reqwest::Client::new()
}

#[tokio::test]
async fn a_new_app_without_middleware_is_a_json_api() {
    let service = App::new()
        .get("/health", health)
        .get("/taken", taken)
        .endpoint(Method::POST, "/raw", handler_fn(raw_length))
        .post("/raw-handler", raw_length)
        .build()
        .expect("the defaults build");
    let server = common::start(service).await;
    let http = client();

    // A handler's value: JSON (the responder).
    let res = http.get(server.url("/health")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()["content-type"],
        "application/json; charset=utf-8"
    );
    assert_eq!(res.json::<Value>().await.unwrap(), json!({"ok": true}));

    // Errors: JSON for a client that accepts it, text for the others (the error handler).
    let res = http
        .get(server.url("/taken"))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 409);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["category"], "bookmark");
    assert_eq!(body["message"], "taken");
    let res = http.get(server.url("/taken")).send().await.unwrap();
    assert_eq!(res.status(), 409);
    assert_eq!(
        res.text().await.unwrap(),
        "statusCode=409, category=bookmark, message=taken"
    );
    // 404s go through the error handler too.
    let res = http
        .get(server.url("/nowhere"))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    assert_eq!(
        res.json::<Value>().await.unwrap()["category"],
        "framework-router"
    );

    // The linked controller is mounted; its JSON body is parsed (the body parser).
    let bookmark = json!({"url": "https://example.com/", "title": "example"});
    let res = http
        .post(server.url("/bookmarks"))
        .json(&bookmark)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.json::<Value>().await.unwrap(), bookmark);
    // A form too.
    let res = http
        .post(server.url("/bookmarks/form"))
        .form(&[("url", "https://example.com/"), ("title", "from a form")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.text().await.unwrap(), "from a form");
    // Malformed JSON: the parser's 400; over its 50 KiB: 413.
    let res = http
        .post(server.url("/bookmarks"))
        .header("content-type", "application/json")
        .body("{\"url\":")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let limit = framework::middleware::body_parser::DEFAULT_LIMIT;
    let at_limit = format!(
        "{{\"url\":\"u\",\"title\":\"{}\"}}",
        "t".repeat(limit - "{\"url\":\"u\",\"title\":\"\"}".len())
    );
    assert_eq!(at_limit.len(), limit);
    let res = http
        .post(server.url("/bookmarks"))
        .header("content-type", "application/json")
        .body(at_limit.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "a body of exactly the limit is read");
    let over = at_limit.replacen("\"t", "\"tt", 1);
    let res = http
        .post(server.url("/bookmarks"))
        .header("content-type", "application/json")
        .body(over)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 413);
    // `Option<T>`: None is a 404.
    assert_eq!(
        http.get(server.url("/bookmarks/1"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        http.get(server.url("/bookmarks/2"))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );

    // An endpoint reads its own body: a JSON body four times the parser's limit arrives whole.
    // So does a plain handler: only controller routes taking `Json<T>` or `Form<T>` are parsed.
    let big = format!("[{}1]", "1,".repeat(2 * limit));
    for path in ["/raw", "/raw-handler"] {
        let res = http
            .post(server.url(path))
            .header("content-type", "application/json")
            .body(big.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{path}");
        assert_eq!(res.text().await.unwrap(), big.len().to_string(), "{path}");
    }
    server.stop().await;
}

/// A responder and a body parser mounted by hand replace the defaults: the pretty marshaller
/// writes the JSON, and the 1 KiB limit (not the default 50 KiB) refuses a 2 KiB body.
#[tokio::test]
async fn a_component_mounted_by_hand_replaces_its_default() {
    let pretty = Responder::new(ResponderConfig::default().marshal(Some(std::sync::Arc::new(
        |value| Ok(serde_json::to_vec_pretty(value)?),
    ))));
    let small = BodyParser::new(BodyParserConfig::default().limit(1024)).add_decoder(JsonDecoder);
    let service = App::new()
        .use_middleware(pretty)
        .use_middleware(small)
        .get("/health", health)
        .build()
        .unwrap();
    let server = common::start(service).await;
    let http = client();
    let res = http.get(server.url("/health")).send().await.unwrap();
    assert_eq!(res.text().await.unwrap(), "{\n  \"ok\": true\n}");
    let title = "t".repeat(2048);
    let res = http
        .post(server.url("/bookmarks"))
        .json(&json!({"url": "u", "title": title}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 413);
    server.stop().await;
}

/// A JSON picker mounted on the app goes outside the default responder (it works on the
/// bytes the responder makes) and inside the default error handler, as in the reference order.
#[tokio::test]
async fn a_component_between_two_defaults_goes_between_them() {
    use framework::middleware::json_picker::JsonPicker;
    let service = App::new()
        .use_middleware(JsonPicker::default())
        .get("/health", health)
        .build()
        .unwrap();
    let server = common::start(service).await;
    let res = client()
        .get(server.url("/bookmarks/1?fields=title"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.json::<Value>().await.unwrap(),
        json!({"title": "example"})
    );
    server.stop().await;
}

/// A bare app mounts nothing and adds nothing, and its build names what a route lacks.
#[test]
fn a_bare_app_names_the_middleware_a_route_lacks() {
    let err = App::bare()
        .get("/health", health)
        .build()
        .err()
        .expect("a value and no responder");
    assert_eq!(
        err.to_string(),
        format!(
            "GET /health ({}) returns a value, and no responder turns it into the body: add \
             framework::middleware::responder::Responder to the app (App::new() has one)",
            std::any::type_name_of_val(&health)
        )
    );
    let err = App::bare()
        .use_middleware(Responder::default())
        .mount_controllers()
        .build()
        .err()
        .expect("a Json argument and no body parser");
    assert!(
        err.to_string()
            .starts_with("POST /bookmarks (Bookmarks::add) takes a request body"),
        "{err}"
    );
    assert!(err.to_string().contains("BodyParser"), "{err}");
    // With both, it builds; a handler that answers through the context needs neither.
    App::bare()
        .use_middleware(Responder::default())
        .use_middleware(BodyParser::default())
        .mount_controllers()
        .build()
        .expect("everything the routes need");
    App::bare()
        .get("/raw", answers_itself)
        .build()
        .expect("no value, no responder needed");
    // The bare app does not mount the controllers by itself, and says so.
    let (service, warned) = logged(|| App::bare().build().unwrap());
    assert!(service.routes().is_empty());
    assert!(
        warned.contains("controllers are linked into the program but not mounted"),
        "{warned}"
    );
    let (_, warned) = logged(|| App::new().build().unwrap());
    assert!(!warned.contains("not mounted"), "{warned}");
}

#[tokio::test]
async fn a_panic_in_a_handler_is_a_500_and_a_log_line_not_a_dropped_connection() {
    let (lines, subscriber) = capture(tracing::Level::ERROR);
    // The test's runtime runs the server on this thread, so the subscriber sees its events.
    let _log = tracing::subscriber::set_default(subscriber);
    let service = App::new()
        .get("/panic", panics)
        .get("/health", health)
        .build()
        .unwrap();
    let server = common::start(service).await;
    let answer = common::raw_request(
        server.addr,
        "GET /panic?id=%E2%82%AC HTTP/1.1\r\nHost: t\r\nAccept: application/json\r\n\
         Connection: close\r\n\r\n",
    )
    .await;
    assert_eq!(answer.status, 500, "{}", answer.head);
    let body: Value = serde_json::from_slice(&answer.body).expect("a JSON error");
    assert_eq!(body["category"], "framework-recover", "{body}");
    assert_eq!(body["message"], "internal server error", "{body}");
    assert_eq!(body["exception"], true, "{body}");
    assert!(!answer.text().contains("char boundary"), "no panic text");
    let logged = String::from_utf8_lossy(&lines.0.lock().unwrap()).into_owned();
    let id = answer.header("x-request-id").expect("a request id");
    assert!(logged.contains(id), "the request id {id}: {logged}");
    assert!(logged.contains("char boundary"), "the panic text: {logged}");
    // The server goes on serving.
    let answer = common::raw_get(server.addr, "/health").await;
    assert_eq!(answer.status, 200);
    server.stop().await;
}

/// A subscriber that writes events at `level` and above into the writer returned with it.
fn capture(
    level: tracing::Level,
) -> (common::SharedWriter, impl tracing::Subscriber + Send + Sync) {
    let lines = common::SharedWriter::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(move || writer.clone())
        .finish();
    (lines, subscriber)
}

/// What `f` logs at warn and above, as text.
fn logged<T>(f: impl FnOnce() -> T) -> (T, String) {
    let (lines, subscriber) = capture(tracing::Level::WARN);
    let value = tracing::subscriber::with_default(subscriber, f);
    let text = String::from_utf8_lossy(&lines.0.lock().unwrap()).into_owned();
    (value, text)
}

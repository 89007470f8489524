//! Typed handler arguments through real requests: path parameters by name, `Query`, `Json`,
//! `Form`, `Path`, headers, cookies, app state, a `FromRequest` of the app's own and
//! `&mut Context` side by side; a missing or malformed argument is a 400 `validate` naming it.

mod common;

use std::sync::Arc;

use framework::extract::{Form, FromRequest, Json, Path, Query};
use framework::middleware::basic_auth::{BasicAuth, BasicAuthConfig, BasicUser};
use framework::middleware::body_parser::{
    BodyParser, BodyParserConfig, FormDecoder, JsonDecoder, json_and_form_content_type,
};
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::jwt::{Jwt, JwtConfig, JwtIssuer, Verified};
use framework::middleware::rate_limiter::{
    MemoryRateStore, RateLimiter, RateLimiterConfig, RateQuota,
};
use framework::middleware::responder::Responder;
use framework::middleware::session::{MemoryStore, Session, SessionConfig, SessionMiddleware};
use framework::{App, Context, FromState, HttpError, Result, Validate, controller};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Deserialize, Validate, schemars::JsonSchema)]
struct Page {
    #[validate(range(min = 1, max = 50))]
    size: u32,
    #[serde(default)]
    after: Option<String>,
}

#[derive(Deserialize, Serialize, Validate, schemars::JsonSchema)]
struct Note {
    #[validate(length(min = 1, max = 20))]
    text: String,
}

#[derive(Deserialize)]
struct Ids {
    user: u32,
    note: u64,
}

/// The app's own argument: the `X-Tenant` header, `public` without one.
struct Tenant(String);

impl FromRequest for Tenant {
    type Rejection = HttpError;

    fn from_request(ctx: &mut Context) -> std::result::Result<Self, HttpError> {
        Ok(Tenant(
            ctx.request_header("x-tenant")
                .unwrap_or("public")
                .to_owned(),
        ))
    }
}

#[derive(Clone)]
struct Motto(Arc<str>);

#[derive(Clone, Deserialize, Serialize)]
struct Claims {
    sub: String,
}

/// What middleware leaves for the request: the session, a verified token, a basic-auth user.
#[derive(FromState)]
struct Guarded;

#[controller(prefix = "/guarded")]
impl Guarded {
    /// Counts this session's visits; the session is the one borrowed argument.
    #[get("/visits", middleware(session, per_ip))]
    async fn visits(&self, #[header("x-step")] step: u32, session: &mut Session) -> Result<String> {
        let seen: u32 = session.get("visits").unwrap_or(0);
        session.set("visits", seen + step)?;
        Ok(format!("{}", seen + step))
    }

    #[get("/token", middleware(jwt))]
    async fn token(&self, token: Verified<Claims>) -> String {
        token.claims.sub
    }

    #[get("/maybe-token", middleware(open_jwt))]
    async fn maybe_token(&self, token: Option<Verified<Claims>>) -> String {
        token.map_or_else(|| "anonymous".to_owned(), |t| t.claims.sub)
    }

    #[get("/basic", middleware(basic))]
    async fn basic(&self, user: BasicUser) -> String {
        user.account
    }

    /// A token argument on a route without the jwt middleware: 401, not a panic.
    #[get("/no-jwt")]
    async fn no_jwt(&self, token: Verified<Claims>) -> String {
        token.claims.sub
    }
}

#[derive(FromState)]
struct Typed;

#[controller(prefix = "/users/{user}")]
impl Typed {
    /// Two path parameters by name, one from the controller's prefix.
    #[get("/notes/{note}")]
    async fn one(&self, user: u32, note: u64) -> Value {
        json!({"user": user, "note": note})
    }

    /// All path parameters as one struct.
    #[get("/ids/{note}")]
    async fn ids(&self, ids: Path<Ids>) -> Value {
        json!({"user": ids.user, "note": ids.note})
    }

    /// The query string, validated.
    #[get("/notes")]
    async fn list(&self, user: u32, page: Query<Page>) -> Value {
        json!({"user": user, "size": page.size, "after": page.after})
    }

    /// A JSON body and the context: the note comes back as JSON, with 201.
    #[post("/notes", errors(409))]
    async fn add(&self, note: Json<Note>, ctx: &mut Context) -> Result<Json<Note>> {
        ctx.set_status(http::StatusCode::CREATED);
        Ok(note)
    }

    /// A form body.
    #[post("/forms")]
    async fn form(&self, note: Form<Note>) -> String {
        note.0.text
    }

    /// Headers (one required, one optional), a cookie, app state and an argument of the app's
    /// own.
    #[get("/whoami")]
    async fn whoami(
        &self,
        #[header("x-api-key")] key: String,
        #[header("x-count")] count: Option<u8>,
        #[cookie("theme")] theme: Option<String>,
        #[state] motto: Motto,
        tenant: Tenant,
    ) -> Value {
        json!({
            "key": key,
            "count": count,
            "theme": theme,
            "motto": &*motto.0,
            "tenant": tenant.0,
        })
    }
}

fn app() -> App {
    without_state().with_state(Motto(Arc::from("typed")))
}

/// The app without its `Motto` state.
fn without_state() -> App {
    App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(
            BodyParser::new(
                BodyParserConfig::default()
                    .content_type_validate(json_and_form_content_type)
                    .accept("application/json, application/x-www-form-urlencoded"),
            )
            .add_decoder(JsonDecoder)
            .add_decoder(FormDecoder),
        )
        .register_middleware(
            "session",
            SessionMiddleware::new(Arc::new(MemoryStore::new()), SessionConfig::default()),
        )
        .register_middleware("jwt", Jwt::<Claims>::new(JwtConfig::hs256(SECRET)))
        .register_middleware(
            "per_ip",
            RateLimiter::new(RateLimiterConfig::new(
                [":ip"],
                MemoryRateStore::new(RateQuota::per_second(1000).expect("quota")),
            ))
            .expect("keys"),
        )
        .register_middleware(
            "open_jwt",
            Jwt::<Claims>::new(JwtConfig::hs256(SECRET).passthrough(true)),
        )
        .register_middleware(
            "basic",
            BasicAuth::new(BasicAuthConfig::from_fn(|account, password, _ctx| {
                Ok(account == "ada" && password == "pw")
            })),
        )
        .mount_controllers()
}

const SECRET: &[u8] = b"typed arguments test secret, 32+ bytes long";

async fn json_of(res: reqwest::Response) -> (u16, Value) {
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// The error object's category, code and message.
fn error(body: &Value) -> (&str, &str, &str) {
    (
        body["category"].as_str().unwrap_or(""),
        body["code"].as_str().unwrap_or(""),
        body["message"].as_str().unwrap_or(""),
    )
}

#[tokio::test]
async fn arguments_come_from_the_request_and_bad_ones_are_400s_naming_them() {
    let server = common::start(app().build().expect("build")).await;
    let client = common::browser();
    let get = |path: &str| client.get(server.url(path)).send();

    // Path parameters by name, across the prefix and the route.
    let (status, body) = json_of(get("/users/7/notes/42").await.unwrap()).await;
    assert_eq!((status, body), (200, json!({"user": 7, "note": 42})));
    let (status, body) = json_of(get("/users/7/notes/x42").await.unwrap()).await;
    assert_eq!(status, 400);
    let (category, code, message) = error(&body);
    assert_eq!((category, code), ("validate", "invalid"));
    assert!(message.starts_with("path parameter note: "), "{message}");
    let (status, body) = json_of(get("/users/-1/notes/1").await.unwrap()).await;
    assert_eq!(status, 400, "{body}");
    assert!(error(&body).2.starts_with("path parameter user"));

    // Path<T>.
    let (status, body) = json_of(get("/users/3/ids/9").await.unwrap()).await;
    assert_eq!((status, body), (200, json!({"user": 3, "note": 9})));
    let (status, body) = json_of(get("/users/3/ids/nine").await.unwrap()).await;
    assert_eq!(status, 400);
    assert_eq!(error(&body).0, "validate");
    assert!(error(&body).2.starts_with("note: "), "{body}");

    // Query<T>: parsed, validated, the missing or bad field named.
    let (status, body) = json_of(get("/users/1/notes?size=10&after=b").await.unwrap()).await;
    assert_eq!(
        (status, body),
        (200, json!({"user": 1, "size": 10, "after": "b"}))
    );
    let (status, body) = json_of(get("/users/1/notes").await.unwrap()).await;
    assert_eq!(status, 400);
    assert_eq!(error(&body), ("validate", "required", "size: is required"));
    let (status, body) = json_of(get("/users/1/notes?size=ten").await.unwrap()).await;
    assert_eq!(status, 400);
    // Not a number at all: `invalid`; a number out of range: the rule's code.
    assert_eq!(error(&body).1, "invalid");
    assert!(error(&body).2.starts_with("size: "), "{body}");
    let (status, body) = json_of(get("/users/1/notes?size=51").await.unwrap()).await;
    assert_eq!(status, 400);
    assert_eq!(error(&body).0, "validate");
    assert_eq!(error(&body).1, "range");
    assert!(error(&body).2.starts_with("size"), "{body}");

    // Json<T> in, Json<T> out, with the context alongside.
    let res = client
        .post(server.url("/users/1/notes"))
        .json(&json!({"text": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(res).await, (201, json!({"text": "hi"})));
    let res = client
        .post(server.url("/users/1/notes"))
        .json(&json!({"text": ""}))
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(res).await;
    assert_eq!(
        (status, error(&body).0, error(&body).1),
        (400, "validate", "length")
    );
    let res = client
        .post(server.url("/users/1/notes"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(res).await;
    assert_eq!(status, 400);
    assert_eq!(error(&body).2, "text: is required");
    // A form where JSON is expected: 415.
    let res = client
        .post(server.url("/users/1/notes"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("text=hi")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 415);

    // Form<T>; JSON where a form is expected: 415.
    let res = client
        .post(server.url("/users/1/forms"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("text=from+a+form")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.text().await.unwrap(), "from a form");
    let res = client
        .post(server.url("/users/1/forms"))
        .json(&json!({"text": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 415);

    // Headers, a cookie, state and the app's own argument.
    let res = client
        .get(server.url("/users/1/whoami"))
        .header("x-api-key", "k1")
        .header("x-count", "3")
        .header("x-tenant", "acme")
        .header("cookie", "a=b; theme=dark")
        .send()
        .await
        .unwrap();
    assert_eq!(
        json_of(res).await,
        (
            200,
            json!({"key": "k1", "count": 3, "theme": "dark", "motto": "typed", "tenant": "acme"})
        )
    );
    let res = client
        .get(server.url("/users/1/whoami"))
        .header("x-api-key", "k1")
        .send()
        .await
        .unwrap();
    assert_eq!(
        json_of(res).await,
        (
            200,
            json!({"key": "k1", "count": null, "theme": null, "motto": "typed", "tenant": "public"})
        )
    );
    let (status, body) = json_of(get("/users/1/whoami").await.unwrap()).await;
    assert_eq!(status, 400);
    assert_eq!(
        error(&body),
        ("validate", "required", "header x-api-key: is required")
    );
    let res = client
        .get(server.url("/users/1/whoami"))
        .header("x-api-key", "k1")
        .header("x-count", "300")
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(res).await;
    assert_eq!(status, 400);
    assert!(error(&body).2.starts_with("header x-count: "), "{body}");
}

#[tokio::test]
async fn session_token_and_basic_user_are_arguments() {
    let server = common::start(app().build().expect("build")).await;
    let client = common::browser();

    // The session, alongside an owned argument, is saved after the handler changed it.
    for (step, total) in [(1, "1"), (2, "3")] {
        let res = client
            .get(server.url("/guarded/visits"))
            .header("x-step", step.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(res.text().await.unwrap(), total);
    }

    let token = JwtIssuer::hs256(SECRET, std::time::Duration::from_secs(60))
        .issue(&Claims { sub: "bob".into() })
        .unwrap();
    let res = client
        .get(server.url("/guarded/token"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.text().await.unwrap(), "bob");
    let res = client
        .get(server.url("/guarded/token"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let res = client
        .get(server.url("/guarded/maybe-token"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.text().await.unwrap(), "anonymous");
    let res = client
        .get(server.url("/guarded/maybe-token"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.text().await.unwrap(), "bob");
    let res = client
        .get(server.url("/guarded/no-jwt"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);

    let res = client
        .get(server.url("/guarded/basic"))
        .basic_auth("ada", Some("pw"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.text().await.unwrap(), "ada");
    let res = client
        .get(server.url("/guarded/basic"))
        .basic_auth("ada", Some("nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
}

/// The OpenAPI document describes the controllers' routes from their signatures, and is a
/// valid OpenAPI 3.1 document (checked with `openapi-spec-validator` from PyPI when it is
/// installed, as CI does).
#[tokio::test]
async fn the_document_describes_the_typed_routes() {
    let service = app()
        .openapi("/openapi.json")
        .openapi_info("typed", "1.2.3")
        .build()
        .expect("build");
    let server = common::start(service).await;
    let res = common::browser()
        .get(server.url("/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/json");
    let doc: Value = res.json().await.unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"], json!({"title": "typed", "version": "1.2.3"}));

    // Path parameters by name, from the prefix and the route, with their types' schemas.
    let one = &doc["paths"]["/users/{user}/notes/{note}"]["get"];
    assert_eq!(one["tags"], json!(["Typed"]));
    assert_eq!(
        one["summary"],
        "Two path parameters by name, one from the controller's prefix."
    );
    let params = one["parameters"].as_array().expect("parameters");
    let names: Vec<&str> = params.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["user", "note"]);
    assert!(
        params
            .iter()
            .all(|p| p["in"] == "path" && p["required"] == true)
    );
    assert_eq!(params[1]["schema"]["type"], "integer");
    assert!(one["responses"]["400"].is_object() && one["responses"]["500"].is_object());

    // Query<T>: one parameter per field, required as the type says.
    let list = &doc["paths"]["/users/{user}/notes"]["get"];
    let query: Vec<&Value> = list["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["in"] == "query")
        .collect();
    let size = query.iter().find(|p| p["name"] == "size").expect("size");
    assert_eq!(size["required"], true);
    // The Validate rule `range(min = 1, max = 50)` as schema constraints.
    assert_eq!(
        (&size["schema"]["minimum"], &size["schema"]["maximum"]),
        (&json!(1), &json!(50))
    );
    let after = query.iter().find(|p| p["name"] == "after").expect("after");
    assert_eq!(after["required"], false);

    // Json<T> in and out; the note's schema is a component.
    let add = &doc["paths"]["/users/{user}/notes"]["post"];
    assert_eq!(
        add["requestBody"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/Note"
    );
    assert_eq!(
        add["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/Note"
    );
    assert!(add["responses"]["415"].is_object());
    assert_eq!(
        doc["components"]["schemas"]["Note"]["required"],
        json!(["text"])
    );
    let text = &doc["components"]["schemas"]["Note"]["properties"]["text"];
    assert_eq!(
        (&text["minLength"], &text["maxLength"]),
        (&json!(1), &json!(20))
    );
    // Headers and cookies; a text answer.
    let whoami = &doc["paths"]["/users/{user}/whoami"]["get"];
    let key = whoami["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "x-api-key")
        .expect("header");
    assert_eq!(
        (&key["in"], &key["required"]),
        (&json!("header"), &json!(true))
    );
    let form = &doc["paths"]["/users/{user}/forms"]["post"];
    assert!(form["requestBody"]["content"]["application/x-www-form-urlencoded"].is_object());
    assert!(form["responses"]["200"]["content"]["text/plain; charset=utf-8"].is_object());
    assert_eq!(
        doc["components"]["schemas"]["Error"]["required"],
        json!(["statusCode", "category", "message"])
    );

    // What the middleware on each route adds: security schemes (the session's optional
    // cookie, jwt's bearer token, required or passed through, basic credentials), the
    // statuses it can answer (401, 429), and the handler's own `errors(409)`.
    assert_eq!(
        doc["components"]["securitySchemes"],
        json!({
            "session": {"type": "apiKey", "in": "cookie", "name": "sid"},
            "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
            "basic": {"type": "http", "scheme": "basic"},
        })
    );
    let guarded = |path: &str| doc["paths"][format!("/guarded/{path}")]["get"].clone();
    let visits = guarded("visits");
    assert_eq!(visits["security"], json!([{}, {"session": []}]));
    assert!(visits["responses"]["429"].is_object());
    assert!(visits["responses"].get("401").is_none());
    let token = guarded("token");
    assert_eq!(token["security"], json!([{"bearer": []}]));
    assert!(token["responses"]["401"].is_object());
    assert!(token["responses"].get("429").is_none());
    assert_eq!(
        guarded("maybe-token")["security"],
        json!([{}, {"bearer": []}])
    );
    let basic = guarded("basic");
    assert_eq!(basic["security"], json!([{"basic": []}]));
    assert!(basic["responses"]["401"].is_object());
    assert!(guarded("no-jwt").get("security").is_none());
    assert!(add["responses"]["409"].is_object());
    assert!(one["responses"].get("409").is_none());
    // The error handler answers JSON or text by `Accept`: both are documented.
    assert_eq!(
        add["responses"]["409"]["content"],
        json!({
            "application/json": {"schema": {"$ref": "#/components/schemas/Error"}},
            "text/plain": {"schema": {"type": "string"}},
        })
    );

    // A third-party validator's verdict, when it is installed.
    common::validate_openapi(&doc, "openapi");
}

/// `#[state]` of a type the app did not provide: a 500 naming the type, not a panic.
#[tokio::test]
async fn state_the_app_lacks_is_a_500() {
    let service = without_state().build().expect("build");
    let server = common::start(service).await;
    let res = common::browser()
        .get(server.url("/users/1/whoami"))
        .header("x-api-key", "k")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 500);
    let body: Value = res.json().await.unwrap();
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains("Motto"), "names the missing state: {body}");
}

/// Every built-in rule becomes a schema keyword; two patterns both hold (`allOf`).
#[test]
fn validate_rules_become_schema_constraints() {
    #[derive(Deserialize, Validate, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Rules {
        #[validate(length(min = 2, max = 8), hex, ascii)]
        code: String,
        #[validate(non_empty, charset("a-]"))]
        letters: String,
        #[validate(one_of("red", "green"))]
        color: String,
        #[validate(range(min = 1, max = 120))]
        age: u8,
    }
    let mut schema = schemars::schema_for!(Rules).to_value();
    <Rules as Validate>::describe_rules(&mut schema);
    let p = &schema["properties"];
    assert_eq!(
        (&p["code"]["minLength"], &p["code"]["maxLength"]),
        (&json!(2), &json!(8))
    );
    assert_eq!(p["code"]["pattern"], "^[0-9a-fA-F]*$");
    assert_eq!(p["code"]["allOf"], json!([{"pattern": "^[\\x00-\\x7F]*$"}]));
    assert_eq!(p["letters"]["minLength"], 1);
    assert_eq!(p["letters"]["pattern"], "^[a\\-\\]]*$");
    assert_eq!(p["color"]["enum"], json!(["red", "green"]));
    assert_eq!(
        (&p["age"]["minimum"], &p["age"]["maximum"]),
        (&json!(1), &json!(120))
    );
}

/// `App::openapi_docs`: the page and its files come from the app (the page names them under
/// its own path, a trailing `/` in the path is dropped), with their media types and caching;
/// without a document to show, the app does not build.
#[tokio::test]
async fn the_docs_page_is_served_with_its_files() {
    let service = app()
        .openapi("/api/openapi.json")
        .openapi_docs("/api/docs/")
        .openapi_info("typed", "1.2.3")
        .build()
        .expect("build");
    let server = common::start(service).await;
    let client = common::browser();
    // `/api/docs/` is a permanent redirect to the page (the client follows it).
    let slashed = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(server.url("/api/docs/"))
        .send()
        .await
        .unwrap();
    assert_eq!(slashed.status(), 308);
    assert_eq!(slashed.headers()["location"], "/api/docs");
    let followed = client.get(server.url("/api/docs/")).send().await.unwrap();
    assert_eq!(followed.status(), 200);
    assert_eq!(followed.url().path(), "/api/docs");
    let page = client.get(server.url("/api/docs")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    assert_eq!(page.headers()["cache-control"], "no-cache");
    let page_csp = page.headers()["content-security-policy"].clone();
    let html = page.text().await.unwrap();
    assert!(html.contains("<title>typed: API docs</title>"), "{html}");
    // No inline script: the page runs under its own strict policy.
    assert!(!html.contains("<script>"), "{html}");
    // Scripts come from the app only: `script-src`, or `default-src` without it, is exactly
    // `'self'` (no inline script, no eval, no other host).
    let csp = page_csp.to_str().unwrap();
    let directive = |name: &str| {
        csp.split(';')
            .map(str::trim)
            .find_map(|d| d.strip_prefix(name).map(str::trim))
    };
    let scripts = directive("script-src ").or_else(|| directive("default-src "));
    assert_eq!(scripts, Some("'self'"), "{csp}");
    let script = client
        .get(server.url("/api/docs/swagger-initializer.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        script.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    let script = script.text().await.unwrap();
    assert!(script.contains(r#"url: "/api/openapi.json""#), "{script}");
    assert!(script.contains(r#"validatorUrl: "none""#), "{script}");
    for (file, media) in [
        ("swagger-ui.css", "text/css; charset=utf-8"),
        ("index.css", "text/css; charset=utf-8"),
        ("swagger-ui-bundle.js", "text/javascript; charset=utf-8"),
        (
            "swagger-ui-standalone-preset.js",
            "text/javascript; charset=utf-8",
        ),
        ("favicon-16x16.png", "image/png"),
        ("favicon-32x32.png", "image/png"),
        ("swagger-initializer.js", "text/javascript; charset=utf-8"),
    ] {
        let path = format!("/api/docs/{file}");
        assert!(
            html.contains(&format!("\"{path}\"")),
            "{file} named by the page"
        );
        let res = client.get(server.url(&path)).send().await.unwrap();
        assert_eq!(res.status(), 200, "{path}");
        assert_eq!(res.headers()["content-type"], media, "{path}");
        assert_eq!(res.headers()["cache-control"], "public, max-age=86400");
        assert!(!res.bytes().await.unwrap().is_empty());
    }
    let missing = client
        .get(server.url("/api/docs/secret.txt"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    // The page is not an operation of the document.
    let doc: Value = client
        .get(server.url("/api/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(doc["paths"].get("/api/docs").is_none());
    server.stop().await;

    let Err(err) = app().openapi_docs("/docs").build() else {
        panic!("a docs page without a document builds")
    };
    assert!(err.to_string().contains("App::openapi"), "{err}");
}

//! Controllers mounted through `#[controller]` registration: state, named and route
//! middleware, returned values, parameter binding and validation.

use framework::middleware::body_parser::BodyParser;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::testing::TestClient;
use framework::{App, Context, FromState, Next, Result, State, Validate, controller, from_fn};
use serde::{Deserialize, Serialize};

struct Greeting(&'static str);

struct Hello {
    greeting: &'static str,
}

impl FromState for Hello {
    fn from_state(state: &State) -> Result<Self> {
        Ok(Self {
            greeting: state.require::<Greeting>()?.0,
        })
    }
}

#[derive(Serialize)]
struct Greeted {
    text: String,
}

#[allow(non_snake_case)]
fn xNick(v: &str) -> Result<(), &'static str> {
    if v.starts_with('_') {
        Err("must not start with _")
    } else {
        Ok(())
    }
}

#[derive(Deserialize, Validate)]
struct NickParams {
    #[validate(xNick, length(min = 2, max = 8))]
    nick: String,
    #[validate(range(min = 1, max = 120))]
    age: Option<u8>,
}

#[controller(prefix = "/hello", middleware(tag))]
impl Hello {
    #[get("/:name")]
    async fn greet(&self, ctx: &mut Context) -> Result<Greeted> {
        let name = ctx.param("name").unwrap_or_default();
        Ok(Greeted {
            text: format!("{} {name}", self.greeting),
        })
    }

    #[post("/", middleware(route_tag))]
    async fn nick(&self, ctx: &mut Context) -> Result<String> {
        let params: NickParams = ctx.bind()?;
        Ok(format!("{}:{}", params.nick, params.age.unwrap_or(0)))
    }

    #[delete("/:name")]
    async fn remove(&self, ctx: &mut Context) -> Result {
        ctx.set_status(framework::http::StatusCode::NO_CONTENT);
        Ok(())
    }
}

async fn tag(ctx: &mut Context, next: Next<'_>) -> Result {
    next.run(ctx).await?;
    ctx.set_response_header("x-tag", http::HeaderValue::from_static("group"));
    Ok(())
}

async fn route_tag(ctx: &mut Context, next: Next<'_>) -> Result {
    next.run(ctx).await?;
    ctx.set_response_header("x-route-tag", http::HeaderValue::from_static("route"));
    Ok(())
}

fn client() -> TestClient {
    let service = App::new()
        .with_state(Greeting("hi"))
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(BodyParser::default())
        .register_middleware("tag", from_fn(tag))
        .register_middleware("route_tag", from_fn(route_tag))
        .mount_controllers()
        .build()
        .unwrap();
    TestClient::new(service)
}

#[test]
fn routes_are_mounted_and_listed() {
    let service = App::new()
        .with_state(Greeting("hi"))
        .register_middleware("tag", from_fn(tag))
        .register_middleware("route_tag", from_fn(route_tag))
        .mount_controllers()
        .build()
        .unwrap();
    let table = service.route_table();
    assert!(
        table.contains("GET     /hello/:name  Hello::greet"),
        "{table}"
    );
    assert!(
        table.contains("POST    /hello        Hello::nick"),
        "{table}"
    );
    assert!(
        table.contains("DELETE  /hello/:name  Hello::remove"),
        "{table}"
    );
}

#[tokio::test]
async fn state_params_and_group_middleware() {
    let res = client().get("/hello/bob").send().await;
    assert_eq!(res.status, 200);
    assert_eq!(res.json()["text"], "hi bob");
    assert_eq!(res.header("x-tag"), Some("group"));
    assert_eq!(res.header("x-route-tag"), None);
    let res = client().delete("/hello/bob").send().await;
    assert_eq!(res.status, 204);
}

#[tokio::test]
async fn bind_validates_before_the_handler_runs() {
    let c = client();
    let res = c
        .post("/hello")
        .json(&serde_json::json!({"nick": "neo", "age": 30}))
        .send()
        .await;
    assert_eq!(res.text(), "neo:30");
    assert_eq!(res.header("x-route-tag"), Some("route"));
    let cases = [
        (
            serde_json::json!({"nick": "_neo"}),
            "xNick",
            "nick: must not start with _",
        ),
        (
            serde_json::json!({"nick": "n"}),
            "length",
            "nick: length must be between 2 and 8",
        ),
        (
            serde_json::json!({"nick": "neo", "age": 0}),
            "range",
            "age: must be between 1 and 120",
        ),
        // Missing: `required`; the wrong type: `invalid` (not the field's first rule).
        (serde_json::json!({}), "required", "nick: is required"),
        (
            serde_json::json!({"nick": 5}),
            "invalid",
            "nick: invalid type: integer `5`, expected a string",
        ),
        (
            serde_json::json!({"nick": "neo", "age": "x"}),
            "invalid",
            "age: invalid type: string \"x\", expected u8",
        ),
        (
            serde_json::json!(["neo"]),
            "json",
            "request body must be a JSON object",
        ),
        (
            serde_json::json!("neo"),
            "json",
            "request body must be a JSON object",
        ),
    ];
    for (body, code, message) in cases {
        let res = c
            .post("/hello")
            .header("accept", "application/json")
            .json(&body)
            .send()
            .await;
        assert_eq!(res.status, 400, "{body}");
        let err = res.json();
        assert_eq!(err["category"], "validate", "{body}");
        assert_eq!(err["code"], code, "{body}");
        assert_eq!(err["message"], message, "{body}");
    }
}

#[test]
fn missing_state_fails_the_build_naming_the_controller() {
    let err = App::new()
        .register_middleware("tag", from_fn(tag))
        .register_middleware("route_tag", from_fn(route_tag))
        .mount_controllers()
        .build()
        .err()
        .expect("refused");
    let msg = err.to_string();
    assert!(msg.contains("controller Hello could not be built"), "{msg}");
    assert!(msg.contains("Greeting"), "{msg}");
}

#[test]
fn unknown_middleware_name_fails_the_build_naming_the_controller() {
    let err = App::new()
        .with_state(Greeting("hi"))
        .register_middleware("route_tag", from_fn(route_tag))
        .mount_controllers()
        .build()
        .err()
        .expect("refused");
    assert_eq!(
        err.to_string(),
        "Hello: middleware `tag` is not registered (use App::register_middleware)"
    );
}

//! Routing through the app: params, wildcard, 404, 405 with Allow, HEAD, chain order.

use std::sync::{Arc, Mutex};

use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::testing::TestClient;
use framework::{App, Context, Group, Next, Result, from_fn};
use http::Method;

async fn show_params(ctx: &mut Context) -> Result<String> {
    let params: Vec<String> = ctx
        .params()
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    Ok(params.join(","))
}

async fn ok(_ctx: &mut Context) -> Result<&'static str> {
    Ok("ok")
}

fn client() -> TestClient {
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/users/:id", show_params)
        .get("/users/me", ok)
        .post("/users/me", ok)
        .get("/files/*", show_params)
        .get("/posts/{post}/comments/:n", show_params)
        .build()
        .unwrap();
    TestClient::new(service)
}

#[tokio::test]
async fn params_are_decoded() {
    let c = client();
    assert_eq!(c.get("/users/42").send().await.text(), "id=42");
    assert_eq!(c.get("/users/a%20b").send().await.text(), "id=a b");
    assert_eq!(
        c.get("/posts/p1/comments/7").send().await.text(),
        "post=p1,n=7"
    );
}

#[tokio::test]
async fn static_beats_param_and_wildcard_takes_the_rest() {
    let c = client();
    assert_eq!(c.get("/users/me").send().await.text(), "ok");
    assert_eq!(c.get("/files/a/b/c.txt").send().await.text(), "*=a/b/c.txt");
}

#[tokio::test]
async fn unknown_path_is_404() {
    let res = client()
        .get("/nope")
        .header("accept", "application/json")
        .send()
        .await;
    assert_eq!(res.status, 404);
    assert_eq!(
        res.json(),
        serde_json::json!({"statusCode": 404, "category": "framework-router", "message": "not found"})
    );
}

#[tokio::test]
async fn wrong_method_is_405_with_allow() {
    let res = client().delete("/users/me").send().await;
    assert_eq!(res.status, 405);
    assert_eq!(res.header("allow"), Some("GET, HEAD, POST"));
    let res = client().put("/users/7").send().await;
    assert_eq!(res.status, 405);
    assert_eq!(res.header("allow"), Some("GET, HEAD"));
}

#[tokio::test]
async fn get_answers_head_without_body() {
    let res = client().head("/users/me").send().await;
    assert_eq!(res.status, 200);
    assert!(res.body.is_empty());
    assert_eq!(res.header("content-length"), Some("2"));
}

#[tokio::test]
async fn request_id_is_echoed_or_generated() {
    let c = client();
    let res = c
        .get("/users/me")
        .header("x-request-id", "abc-123")
        .send()
        .await;
    assert_eq!(res.header("x-request-id"), Some("abc-123"));
    let res = c
        .get("/users/me")
        .header("x-request-id", "bad id!")
        .send()
        .await;
    let id = res.header("x-request-id").unwrap();
    assert_eq!(id.len(), 32);
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
}

type Log = Arc<Mutex<Vec<String>>>;

fn recorder(log: &Log, name: &'static str) -> framework::SharedMiddleware {
    struct Rec(Log, &'static str);
    impl framework::Middleware for Rec {
        fn handle<'a>(
            &'a self,
            ctx: &'a mut Context,
            next: Next<'a>,
        ) -> framework::handler::BoxFuture<'a, Result> {
            Box::pin(async move {
                self.0.lock().unwrap().push(format!("{}>", self.1));
                let r = next.run(ctx).await;
                self.0.lock().unwrap().push(format!("<{}", self.1));
                r
            })
        }
    }
    Arc::new(Rec(Arc::clone(log), name))
}

#[tokio::test]
async fn chain_runs_global_then_group_then_route_as_an_onion() {
    let log: Log = Arc::default();
    let service = App::new()
        .use_middleware(recorder(&log, "global"))
        .group(
            Group::new("/g")
                .use_middleware(recorder(&log, "group"))
                .route_with(Method::GET, "/x", vec![recorder(&log, "route")], ok),
        )
        .build()
        .unwrap();
    TestClient::new(service).get("/g/x").send().await;
    assert_eq!(
        *log.lock().unwrap(),
        ["global>", "group>", "route>", "<route", "<group", "<global"]
    );
}

#[tokio::test]
async fn not_found_runs_global_middleware_only() {
    let log: Log = Arc::default();
    let service = App::new()
        .use_middleware(recorder(&log, "global"))
        .group(
            Group::new("/g")
                .use_middleware(recorder(&log, "group"))
                .get("/x", ok),
        )
        .build()
        .unwrap();
    let res = TestClient::new(service).get("/g/y").send().await;
    assert_eq!(res.status, 404);
    assert_eq!(*log.lock().unwrap(), ["global>", "<global"]);
}

async fn add_header(ctx: &mut Context, next: Next<'_>) -> Result {
    next.run(ctx).await?;
    ctx.set_response_header("x-after", http::HeaderValue::from_static("1"));
    Ok(())
}

#[tokio::test]
async fn async_fn_middleware() {
    let service = App::new()
        .use_middleware(from_fn(add_header))
        .use_middleware(Responder::default())
        .get("/", ok)
        .build()
        .unwrap();
    let res = TestClient::new(service).get("/").send().await;
    assert_eq!(res.header("x-after"), Some("1"));
    assert_eq!(res.text(), "ok");
}

#[test]
fn duplicate_routes_name_both_handlers() {
    let err = App::new()
        .get("/a", ok)
        .group(Group::new("").get("/a", show_params))
        .build()
        .err()
        .expect("duplicate refused");
    let msg = err.to_string();
    assert!(msg.contains("duplicate route GET /a"), "{msg}");
    assert!(
        msg.contains("routing::ok") && msg.contains("routing::show_params"),
        "{msg}"
    );
}

#[test]
fn malformed_paths_are_refused_at_build() {
    let err = App::new().get("nope", ok).build().err().expect("refused");
    assert!(err.to_string().contains("must start with `/`"), "{err}");
}

#[test]
fn route_table_is_sorted() {
    let service = App::new()
        .post("/b", ok)
        .get("/b", ok)
        .get("/a", ok)
        .build()
        .unwrap();
    let table: Vec<(String, String)> = service
        .routes()
        .iter()
        .map(|r| (r.method.clone(), r.path.clone()))
        .collect();
    assert_eq!(
        table,
        [
            ("GET".into(), "/a".into()),
            ("GET".into(), "/b".into()),
            ("POST".into(), "/b".into())
        ]
    );
}

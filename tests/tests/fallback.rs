//! `App::fallback`, `App::method_not_allowed` and groups inside groups, over real requests:
//! the fallback answers unrouted paths through the app's middleware with the status it sets,
//! the 405 handler starts from 405 with `Allow`, a bare app refuses a fallback whose value no
//! responder turns into a body, and nested groups join prefixes and run middleware outside in.

mod common;

use framework::{App, Before, Context, Group, Middleware, Result};
use http::StatusCode;

/// Appends its name to `x-chain` on the way in, so the header lists the middleware in the
/// order they ran.
struct Tag(&'static str);

impl Middleware for Tag {
    fn before(&self, ctx: &mut Context) -> Before {
        let chain = match ctx
            .response_headers()
            .get("x-chain")
            .and_then(|v| v.to_str().ok())
        {
            Some(before) => format!("{before} {}", self.0),
            None => self.0.to_owned(),
        };
        ctx.set_response_header("x-chain", chain.parse().unwrap());
        Before::Pass
    }
}

fn tag(name: &'static str) -> Tag {
    Tag(name)
}

async fn page(ctx: &mut Context) -> Result<String> {
    Ok(format!("{} {}", ctx.method(), ctx.path()))
}

async fn get(server: &common::Running, path: &str) -> (u16, Option<String>, String) {
    let res = reqwest::get(server.url(path)).await.unwrap();
    let status = res.status().as_u16();
    let chain = res
        .headers()
        .get("x-chain")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, chain, res.text().await.unwrap())
}

#[tokio::test]
async fn the_fallback_answers_unrouted_paths_through_the_apps_middleware() {
    let service = App::new()
        .use_middleware(tag("app"))
        .get("/notes", page)
        .post("/notes", page)
        .fallback(|ctx: &mut Context| {
            ctx.set_status(StatusCode::NOT_FOUND);
            let text = format!("no page at {}", ctx.path());
            async move { Ok(text) }
        })
        .build()
        .unwrap();
    let server = common::start(service).await;
    assert_eq!(
        get(&server, "/nowhere/deep").await,
        (404, Some("app".into()), "no page at /nowhere/deep".into())
    );
    // Routed paths and the 405 are untouched.
    assert_eq!(get(&server, "/notes").await.2, "GET /notes");
    let res = reqwest::Client::new()
        .delete(server.url("/notes"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 405);
    assert_eq!(res.headers()["allow"], "GET, HEAD, POST");
    server.stop().await;
}

#[tokio::test]
async fn a_fallback_that_sets_no_status_answers_200() {
    // A single-page app: every unknown path gets the page.
    let service = App::new()
        .fallback(|_ctx: &mut Context| async { Ok("<!doctype html><title>app</title>") })
        .build()
        .unwrap();
    let server = common::start(service).await;
    let (status, _, body) = get(&server, "/settings/profile").await;
    assert_eq!(
        (status, body.as_str()),
        (200, "<!doctype html><title>app</title>")
    );
    server.stop().await;
}

#[tokio::test]
async fn without_a_fallback_an_unrouted_path_is_the_routers_404() {
    let service = App::new().get("/notes", page).build().unwrap();
    let server = common::start(service).await;
    let res = reqwest::Client::new()
        .get(server.url("/nowhere"))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body["category"], "framework-router");
    server.stop().await;
}

#[tokio::test]
async fn the_405_handler_starts_from_405_with_allow() {
    let service = App::new()
        .use_middleware(tag("app"))
        .get("/notes", page)
        .method_not_allowed(|ctx: &mut Context| {
            let text = format!("{} is not for {}", ctx.method(), ctx.path());
            async move { Ok(text) }
        })
        .build()
        .unwrap();
    let server = common::start(service).await;
    let res = reqwest::Client::new()
        .put(server.url("/notes"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 405);
    assert_eq!(res.headers()["allow"], "GET, HEAD");
    assert_eq!(res.headers()["x-chain"], "app");
    assert_eq!(res.text().await.unwrap(), "PUT is not for /notes");
    // An unrouted path is still a 404: the 405 handler only answers known paths.
    assert_eq!(get(&server, "/other").await.0, 404);
    server.stop().await;
}

#[tokio::test]
async fn a_bare_app_refuses_a_fallback_whose_value_no_responder_sends() {
    let Err(err) = App::bare()
        .fallback(|_ctx: &mut Context| async { Ok("page") })
        .build()
    else {
        panic!("a bare app without a responder must refuse the fallback");
    };
    let text = err.to_string();
    assert!(text.starts_with("the fallback ("), "{text}");
    assert!(text.contains("no responder"), "{text}");
    let Err(err) = App::bare()
        .method_not_allowed(|_ctx: &mut Context| async { Ok("no") })
        .build()
    else {
        panic!("a bare app without a responder must refuse the 405 handler");
    };
    assert!(
        err.to_string()
            .starts_with("the method-not-allowed handler ("),
        "{err}"
    );
}

#[tokio::test]
async fn groups_inside_groups_join_prefixes_and_run_middleware_outside_in() {
    let deepest =
        Group::new("/daily")
            .use_middleware(tag("daily"))
            .get("/{day}", |ctx: &mut Context| {
                let day = ctx.param("day").unwrap_or_default().into_owned();
                async move { Ok(day) }
            });
    let reports = Group::new("/reports/")
        .use_middleware(tag("reports"))
        .get("/", page)
        .group(deepest);
    let admin = Group::new("/admin")
        .use_middleware(tag("admin"))
        .get("/users", page)
        .group(reports);
    let service = App::new()
        .use_middleware(tag("app"))
        .group(admin)
        .group(Group::new("/v2").group(Group::new("").get("/ping", page)))
        .build()
        .unwrap();
    let paths: Vec<_> = service.routes().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        paths,
        [
            "/admin/reports",
            "/admin/reports/daily/{day}",
            "/admin/users",
            "/v2/ping"
        ]
    );
    let server = common::start(service).await;
    assert_eq!(
        get(&server, "/admin/reports/daily/monday").await,
        (200, Some("app admin reports daily".into()), "monday".into())
    );
    assert_eq!(
        get(&server, "/admin/reports").await,
        (
            200,
            Some("app admin reports".into()),
            "GET /admin/reports".into()
        )
    );
    assert_eq!(
        get(&server, "/admin/users").await,
        (200, Some("app admin".into()), "GET /admin/users".into())
    );
    assert_eq!(get(&server, "/v2/ping").await.2, "GET /v2/ping");
    server.stop().await;
}

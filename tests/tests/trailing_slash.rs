//! `App::trailing_slash`: strict (404), redirect (308 to the routed form, query kept, never to
//! another host) and ignore (routed as the other form), over real requests.

mod common;

use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::{App, Context, Result, TrailingSlash};

async fn path(ctx: &mut Context) -> Result<String> {
    let id = ctx
        .param("id")
        .map(|id| format!(" id={id}"))
        .unwrap_or_default();
    Ok(format!("{} {}{id}", ctx.method(), ctx.uri()))
}

async fn serve(policy: TrailingSlash) -> common::Running {
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .trailing_slash(policy)
        .get("/", path)
        .get("/notes", path)
        .post("/notes", path)
        .get("/dir/", path)
        .get("/users/{id}", path)
        .get("/{a}/{b}", path)
        .build()
        .expect("routes");
    common::start(service).await
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

async fn get(server: &common::Running, path: &str) -> (u16, Option<String>, String) {
    let res = client().get(server.url(path)).send().await.unwrap();
    let status = res.status().as_u16();
    let location = res
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, location, res.text().await.unwrap())
}

#[tokio::test]
async fn strict_is_the_default_and_answers_404() {
    let server = serve(TrailingSlash::default()).await;
    assert_eq!(get(&server, "/notes").await.0, 200);
    assert_eq!(get(&server, "/notes/").await.0, 404);
    assert_eq!(get(&server, "/dir/").await.0, 200);
    assert_eq!(get(&server, "/dir").await.0, 404);
    server.stop().await;
}

#[tokio::test]
async fn redirect_answers_308_to_the_routed_form_with_the_query() {
    let server = serve(TrailingSlash::Redirect).await;
    assert_eq!(
        get(&server, "/notes/?page=2").await,
        (308, Some("/notes?page=2".into()), String::new())
    );
    assert_eq!(get(&server, "/dir").await.0, 308);
    assert_eq!(get(&server, "/dir").await.1.as_deref(), Some("/dir/"));
    assert_eq!(
        get(&server, "/users/7/").await.1.as_deref(),
        Some("/users/7")
    );
    // Routed paths and the root are untouched; a path routed neither way is a 404.
    assert_eq!(get(&server, "/notes").await.0, 200);
    assert_eq!(get(&server, "/").await.0, 200);
    assert_eq!(get(&server, "/nothing/here/at/all/").await.0, 404);

    // 308 keeps the method: a POST is redirected, and followed, as a POST.
    let res = client()
        .post(server.url("/notes/"))
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 308);
    let following = reqwest::Client::new();
    let res = following
        .post(server.url("/notes/"))
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.text().await.unwrap(), "POST /notes");
    server.stop().await;
}

#[tokio::test]
async fn redirect_never_points_at_another_host() {
    let server = serve(TrailingSlash::Redirect).await;
    // A `Location: //evil.example` would send a browser to another host. The router gives no
    // route to a path with an empty first segment, and `other_slash_form` refuses a `//`
    // target besides; this pins the outcome, whichever of the two stops it.
    for path in ["//evil.example/", "//evil.example//"] {
        let raw = common::raw_get(server.addr, path).await;
        assert_eq!(raw.status, 404, "{path}: {raw:?}");
        assert_eq!(raw.header("location"), None, "{path}: {raw:?}");
    }
    server.stop().await;
}

#[tokio::test]
async fn ignore_routes_the_other_form_and_shows_it_to_the_handler() {
    let server = serve(TrailingSlash::Ignore).await;
    assert_eq!(
        get(&server, "/notes/?page=2").await,
        (200, None, "GET /notes?page=2".into())
    );
    assert_eq!(get(&server, "/dir").await.2, "GET /dir/");
    assert_eq!(get(&server, "/users/7/").await.2, "GET /users/7 id=7");
    assert_eq!(get(&server, "/nothing/here/at/all/").await.0, 404);
    server.stop().await;
}

#[tokio::test]
async fn a_group_prefix_with_a_slash_route_is_the_prefix_itself() {
    for (policy, slashed) in [
        (TrailingSlash::Strict, (404, None)),
        (TrailingSlash::Redirect, (308, Some("/admin".to_owned()))),
        (TrailingSlash::Ignore, (200, None)),
    ] {
        let service = App::new()
            .use_middleware(ErrorHandler::default())
            .use_middleware(Responder::default())
            .trailing_slash(policy)
            .group(framework::Group::new("/admin").get("/", path))
            .build()
            .expect("routes");
        let server = common::start(service).await;
        let (status, _, body) = get(&server, "/admin").await;
        assert_eq!((status, body.as_str()), (200, "GET /admin"), "{policy:?}");
        let (status, location, _) = get(&server, "/admin/").await;
        assert_eq!((status, location), slashed, "{policy:?}");
        server.stop().await;
    }
}

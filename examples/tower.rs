//! tower both ways: tower-http layers as middleware, a `ServeDir` and an axum `Router` as
//! endpoints (an axum service moved over one route at a time), on the framework's own server.
//!
//! ```sh
//! cargo run -p examples --example tower
//! curl -i http://127.0.0.1:3000/hello                        # the framework's handler, traced, CORS headers
//! curl -i -X OPTIONS -H 'origin: https://a.example' \
//!      -H 'access-control-request-method: POST' http://127.0.0.1:3000/hello   # preflight, by CorsLayer
//! curl -i http://127.0.0.1:3000/slow                         # 408 from TimeoutLayer after 500 ms
//! curl -i http://127.0.0.1:3000/legacy/users/7               # still answered by the axum Router
//! curl -i http://127.0.0.1:3000/files/                       # examples/static/index.html by ServeDir
//! ```
//!
//! The layers on the app sit outside the framework's error handler and responder, so they see
//! the answer as the client will; `use_when` puts the timeout on one route only.

use std::time::Duration;

use framework::http::{Method, StatusCode};
use framework::tower::layer;
use framework::{App, Context};
use tower_http::cors::{Any, CorsLayer};
use tower_http::services::ServeDir;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

/// The part of the service still written for axum.
fn legacy() -> axum::Router {
    axum::Router::new().route(
        "/users/{id}",
        axum::routing::get(
            |axum::extract::Path(id): axum::extract::Path<u32>| async move {
                format!("user {id}, from the axum router")
            },
        ),
    )
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter("tower_http=debug")
        .init();
    let static_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/static");
    let service = App::new()
        .use_middleware(layer(TraceLayer::new_for_http()))
        .use_middleware(layer(
            CorsLayer::new()
                .allow_origin(Any)
                .allow_methods([Method::GET, Method::POST]),
        ))
        .use_when(
            |ctx: &Context| ctx.path() == "/slow",
            layer(TimeoutLayer::with_status_code(
                StatusCode::REQUEST_TIMEOUT,
                Duration::from_millis(500),
            )),
        )
        .get("/hello", |_ctx: &mut Context| async {
            Ok("hello from the framework")
        })
        .get("/slow", |_ctx: &mut Context| async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok("too late")
        })
        .nest_service("/legacy", legacy())
        .nest_service("/files", ServeDir::new(static_dir))
        .build()
        .map_err(std::io::Error::other)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    service.serve(listener).await
}

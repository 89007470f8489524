//! A custom middleware from an `async fn` with `from_fn`: on one route, and on a group.
//! Code before `next.run(ctx)` sees the request; code after it sees the response.
//!
//! ```sh
//! cargo run -p examples --example middleware_fn
//! curl -i http://127.0.0.1:3000/timed                  # x-elapsed-us: ...
//! curl -i http://127.0.0.1:3000/admin/stats            # 401
//! curl -i -H 'x-api-key: let-me-in' http://127.0.0.1:3000/admin/stats   # 200
//! ```

use std::time::Instant;

use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::{App, Context, Group, HttpError, Next, Result, from_fn};
use http::{HeaderValue, Method, StatusCode};

/// Measures the rest of the chain and reports it in a header.
async fn timing(ctx: &mut Context, next: Next<'_>) -> Result {
    let started = Instant::now();
    let result = next.run(ctx).await;
    let elapsed = started.elapsed().as_micros().to_string();
    if let Ok(value) = HeaderValue::try_from(elapsed) {
        ctx.set_response_header("x-elapsed-us", value);
    }
    result
}

/// Refuses requests without the right `x-api-key`; the handler never runs for them.
async fn api_key(ctx: &mut Context, next: Next<'_>) -> Result {
    if ctx.request_header("x-api-key") != Some("let-me-in") {
        return Err(HttpError::new("an x-api-key header is required")
            .with_status(StatusCode::UNAUTHORIZED)
            .into());
    }
    next.run(ctx).await
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        // On one route:
        .group(Group::new("").route_with(
            Method::GET,
            "/timed",
            vec![from_fn(timing)],
            |_ctx: &mut Context| async { Ok("timed") },
        ))
        // On every route of a group:
        .group(
            Group::new("/admin")
                .use_middleware(from_fn(api_key))
                .get("/stats", |_ctx: &mut Context| async { Ok("42 requests") }),
        )
        .build()
        .expect("valid routes");
    service.listen("127.0.0.1:3000").await
}

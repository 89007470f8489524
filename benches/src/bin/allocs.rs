//! Heap allocations per request for `GET /json` (`{"message":"Hello, World!"}` via serde):
//! this framework against axum 0.8, both in process, no sockets.
//!
//! - framework: `Service::handle` on an app with the `Responder` middleware and the route
//!   declared with `App::get`, the handler returning the value for the responder to marshal;
//! - axum: a `Router` whose handler returns `Json(...)`, driven by `tower::ServiceExt::oneshot`
//!   on a clone of the router.
//!
//! Both read the whole response body (`http_body_util::BodyExt::collect`). Requests are built
//! before the measured window, so it covers handling the request and reading the response
//! only. Counting is done by dhat's global allocator; after a warm-up, `N` requests are
//! measured for each and the result is printed one line each, for instance:
//!
//! ```text
//! allocs framework GET /json: 12.00 allocs/req, 1234 bytes/req
//! allocs axum GET /json: 10.00 allocs/req, 987 bytes/req
//! ```
//!
//! Run with `cargo run --release -p benches --bin allocs`. To see where the allocations come
//! from, add `-- --profile framework` (or `axum`): only that side runs, and dhat writes its
//! full profile to `dhat-framework.json` (or `dhat-axum.json`), which the viewer at
//! <https://nnethercote.github.io/dh_view/dh_view.html> opens.

use std::hint::black_box;
use std::process::ExitCode;

use bytes::Bytes;
use framework::body::RequestBody;
use framework::middleware::responder::Responder;
use framework::testing::TEST_PEER;
use framework::{App, Context, Service};
use http::{Request, StatusCode, Uri};
use http_body_util::BodyExt;
use serde::Serialize;
use tower::ServiceExt;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// Measured requests per server.
const N: u64 = 1000;
/// Unmeasured requests first, so lazily built things (runtime, caches) are in place.
const WARM_UP: u64 = 100;
/// The body both must send.
const EXPECTED: &str = r#"{"message":"Hello, World!"}"#;

#[derive(Serialize)]
struct Message {
    message: &'static str,
}

fn hello() -> Message {
    Message {
        message: "Hello, World!",
    }
}

async fn framework_json(_ctx: &mut Context) -> framework::Result<Message> {
    Ok(hello())
}

fn framework_service() -> Service {
    App::new()
        .use_middleware(Responder::default())
        .get("/json", framework_json)
        .build()
        .expect("framework app builds")
}

fn axum_router() -> axum::Router {
    axum::Router::new().route(
        "/json",
        axum::routing::get(|| async { axum::Json(hello()) }),
    )
}

fn framework_request() -> Request<RequestBody> {
    let mut request = Request::new(RequestBody::Full(Bytes::new()));
    *request.uri_mut() = Uri::from_static("/json");
    request
}

fn axum_request() -> Request<axum::body::Body> {
    let mut request = Request::new(axum::body::Body::empty());
    *request.uri_mut() = Uri::from_static("/json");
    request
}

/// One request through the framework, body read to the end.
async fn framework_once(service: &Service, request: Request<RequestBody>) -> Bytes {
    let response = service.handle(request, TEST_PEER).await;
    assert_eq!(response.status(), StatusCode::OK);
    response
        .into_body()
        .collect()
        .await
        .expect("in-memory body")
        .to_bytes()
}

/// One request through axum, body read to the end.
async fn axum_once(router: &axum::Router, request: Request<axum::body::Body>) -> Bytes {
    let response = match router.clone().oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    assert_eq!(response.status(), StatusCode::OK);
    response
        .into_body()
        .collect()
        .await
        .expect("in-memory body")
        .to_bytes()
}

/// Allocation totals over the measured requests.
struct Counts {
    blocks: u64,
    bytes: u64,
}

/// Warms up, checks the answer, then counts allocations over `N` requests made by `once`.
async fn measure<R, F, Fut>(make_request: fn() -> R, once: F) -> Counts
where
    F: Fn(R) -> Fut,
    Fut: Future<Output = Bytes>,
{
    let body = once(make_request()).await;
    assert_eq!(body, EXPECTED, "unexpected body");
    for _ in 1..WARM_UP {
        black_box(once(make_request()).await);
    }
    let requests: Vec<R> = (0..N).map(|_| make_request()).collect();
    let before = dhat::HeapStats::get();
    for request in requests {
        black_box(once(black_box(request)).await);
    }
    let after = dhat::HeapStats::get();
    Counts {
        blocks: after.total_blocks - before.total_blocks,
        bytes: after.total_bytes - before.total_bytes,
    }
}

fn report(name: &str, counts: &Counts) {
    let (blocks, bytes) = (
        counts.blocks as f64 / N as f64,
        counts.bytes as f64 / N as f64,
    );
    println!("allocs {name} GET /json: {blocks:.2} allocs/req, {bytes:.0} bytes/req");
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let profile = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => None,
        ["--profile", which @ ("framework" | "axum")] => Some(which.to_owned()),
        _ => {
            eprintln!("usage: allocs [--profile framework|axum]");
            return ExitCode::from(2);
        }
    };
    let _profiler = match &profile {
        None => dhat::Profiler::builder().testing().build(),
        Some(which) => dhat::Profiler::builder()
            .file_name(format!("dhat-{which}.json"))
            .build(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio runtime");

    if profile.as_deref() != Some("axum") {
        let service = framework_service();
        let counts = rt.block_on(measure(framework_request, |request| {
            framework_once(&service, request)
        }));
        report("framework", &counts);
    }
    if profile.as_deref() != Some("framework") {
        let router = axum_router();
        let counts = rt.block_on(measure(axum_request, |request| axum_once(&router, request)));
        report("axum", &counts);
    }
    ExitCode::SUCCESS
}

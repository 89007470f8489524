//! Per-request cost of the operations and protection middleware: each is measured as the only
//! middleware in front of one GET route, beside the same route with none (`baseline`) and with
//! a middleware that only calls `next` (`pass-through`, the cost of any middleware hop); the
//! difference to `pass-through` is the component's own cost per request.
//!
//! - `logger`: LoggerCombined, the whole job (capturing the request, rendering the line into
//!   the reused buffer, calling a hook that only reads it).
//! - `stats`: the in-flight counter and a hook that only reads the figures.
//! - `global-limiter`, `router-limiter`: one uncontended slot (an atomic add and sub).
//! - `concurrent-limiter`: key `:ip`, in-process lock (a sharded map insert and remove).
//!
//! Run with `cargo bench -p benches --bench middleware`.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;

use bytes::Bytes;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use framework::body::RequestBody;
use framework::middleware::concurrent_limiter::{ConcurrentLimiter, ConcurrentLimiterConfig};
use framework::middleware::global_concurrent_limiter::{
    GlobalConcurrentLimiter, GlobalConcurrentLimiterConfig,
};
use framework::middleware::logger::{LOGGER_COMBINED, Logger, LoggerConfig};
use framework::middleware::router_concurrent_limiter::{
    RouterConcurrentLimiter, RouterConcurrentLimiterConfig,
};
use framework::middleware::stats::{Stats, StatsConfig};
use framework::testing::TEST_PEER;
use framework::{App, Context, Result, Service, SharedMiddleware, share};
use http::{Method, Request, StatusCode, Uri};

async fn ok(ctx: &mut Context) -> Result {
    ctx.body_mut().set_bytes(Bytes::from_static(b"ok"));
    Ok(())
}

async fn pass(ctx: &mut Context, next: framework::Next<'_>) -> Result {
    next.run(ctx).await
}

fn service(middleware: Option<SharedMiddleware>) -> Service {
    let mut app = App::new();
    if let Some(m) = middleware {
        app = app.use_middleware(m);
    }
    app.get("/", ok).build().expect("app builds")
}

fn request() -> Request<RequestBody> {
    let mut request = Request::new(RequestBody::Full(Bytes::new()));
    *request.method_mut() = Method::GET;
    *request.uri_mut() = Uri::from_static("/");
    let headers = request.headers_mut();
    headers.insert(
        "referer",
        "https://example.com/page".parse().expect("header"),
    );
    headers.insert("user-agent", "bench/1.0".parse().expect("header"));
    headers.insert("x-request-id", "bench-request-1".parse().expect("header"));
    request
}

fn cases() -> Vec<(&'static str, Option<SharedMiddleware>)> {
    vec![
        ("baseline", None),
        // A middleware that only calls `next`: the hop every middleware pays (a boxed
        // future); subtract it to get a component's own cost.
        ("pass-through", Some(framework::from_fn(pass))),
        (
            "logger",
            Some(share(Logger::new(
                LoggerConfig::default()
                    .format(LOGGER_COMBINED.to_owned())
                    .on_log(Some(Arc::new(|line, _record, _request| {
                        black_box(line.len());
                    }))),
            ))),
        ),
        (
            "stats",
            Some(share(Stats::new(StatsConfig::default().on_stats(Some(
                Arc::new(|info, _ctx| {
                    black_box(info.latency);
                }),
            ))))),
        ),
        (
            "global-limiter",
            Some(share(GlobalConcurrentLimiter::new(
                GlobalConcurrentLimiterConfig::default(),
            ))),
        ),
        (
            "router-limiter",
            Some(share(
                RouterConcurrentLimiter::new(
                    RouterConcurrentLimiterConfig::default()
                        .limits(HashMap::from([("GET /".to_owned(), 1000)])),
                )
                .expect("limits"),
            )),
        ),
        (
            "concurrent-limiter",
            Some(share(
                ConcurrentLimiter::new(
                    ConcurrentLimiterConfig::default().keys(vec![":ip".to_owned()]),
                )
                .expect("keys"),
            )),
        ),
    ]
}

fn bench_middleware(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio runtime");
    let mut group = c.benchmark_group("middleware");
    for (name, middleware) in cases() {
        let service = service(middleware);
        let response = rt.block_on(service.handle(request(), TEST_PEER));
        assert_eq!(response.status(), StatusCode::OK, "{name}");
        group.bench_function(name, |b| {
            b.iter_batched(
                request,
                |request| rt.block_on(service.handle(black_box(request), TEST_PEER)),
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, bench_middleware);
criterion_main!(benches);

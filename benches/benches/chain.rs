//! Middleware chain cost: `Service::handle` for one GET route behind 0, 1, 5 and 10
//! pass-through middlewares (each just `next.run(ctx).await`s, built with
//! `framework::from_fn`).
//!
//! Requests are handled in process on a tokio current-thread runtime; building the request is
//! done outside the timed part. The difference between `chain/0` and `chain/N` is the cost of
//! N middleware hops (a boxed future each); `chain/0` is the fixed cost of routing, the
//! context, the handler and the response.
//!
//! Run with `cargo bench -p benches --bench chain` (add `-- --quick` for a fast pass).

use std::hint::black_box;

use bytes::Bytes;
use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use framework::body::RequestBody;
use framework::testing::TEST_PEER;
use framework::{App, Context, Next, Result, Service, from_fn};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::BodyExt;

/// Middleware counts measured.
const COUNTS: [usize; 4] = [0, 1, 5, 10];

async fn pass(ctx: &mut Context, next: Next<'_>) -> Result {
    next.run(ctx).await
}

async fn ok(ctx: &mut Context) -> Result {
    ctx.body_mut().set_bytes(Bytes::from_static(b"ok"));
    Ok(())
}

fn service(middlewares: usize) -> Service {
    let mut app = App::new();
    for _ in 0..middlewares {
        app = app.use_middleware(from_fn(pass));
    }
    app.get("/", ok).build().expect("app builds")
}

fn request() -> Request<RequestBody> {
    let mut request = Request::new(RequestBody::Full(Bytes::new()));
    *request.method_mut() = Method::GET;
    *request.uri_mut() = Uri::from_static("/");
    request
}

fn bench_chain(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio runtime");
    let mut group = c.benchmark_group("chain");
    for count in COUNTS {
        let service = service(count);
        let response = rt.block_on(service.handle(request(), TEST_PEER));
        assert_eq!(response.status(), StatusCode::OK);
        let body = rt
            .block_on(response.into_body().collect())
            .map(http_body_util::Collected::to_bytes)
            .expect("in-memory body");
        assert_eq!(body, "ok");

        group.bench_function(BenchmarkId::from_parameter(count), |b| {
            b.iter_batched(
                request,
                |request| rt.block_on(service.handle(black_box(request), TEST_PEER)),
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, bench_chain);
criterion_main!(benches);

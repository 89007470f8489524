//! What the response middleware cost and save, per request, in process (no socket, one thread):
//!
//! - a 16 KiB JSON answer built by its handler (128 records with `json!` and `format!`, then
//!   serialised by the responder; error handler + responder), beside the same bytes handed
//!   over ready-made (the framework's own path), with and without
//!   compress for a gzip client, against the same answer from the cache: a memory hit for a
//!   gzip client (the stored bytes as they are), for an identity client (decompressed per hit),
//!   and a Redis hit (with `TEST_REDIS_URL`; its time includes the Redis round trip);
//! - etag + fresh on a small JSON answer: the 200 with its tag, and the 304 for a matching
//!   `If-None-Match`, beside the same route without them; and etag on the 16 KiB answer.
//!
//! Time per iteration is CPU time per request on one thread (requests/s = 1 / time), except the
//! Redis case, which waits on the network.
//!
//! Run with `cargo bench -p benches --bench response` (add `-- --quick` for a fast pass).

use std::hint::black_box;
use std::sync::Arc;

use bytes::Bytes;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use framework::body::RequestBody;
use framework::middleware::cache::{
    Cache, CacheConfig, CacheStore, MemoryCacheStore, RedisCacheStore,
};
use framework::middleware::compress::Compress;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::etag::ETag;
use framework::middleware::fresh::Fresh;
use framework::middleware::responder::Responder;
use framework::testing::TEST_PEER;
use framework::{App, Context, Result, Service, SharedMiddleware, share};
use http::{HeaderValue, Method, Request, StatusCode, Uri};
use serde_json::{Value, json};

/// About 16 KiB of JSON: 128 records.
fn payload() -> Value {
    let items: Vec<Value> = (0..128)
        .map(|i| json!({"id": i, "name": format!("item number {i}"), "tags": ["alpha", "beta", "gamma"], "score": i * 7, "note": "a little padding text, and a little more of it"}))
        .collect();
    json!({"items": items})
}

async fn big(ctx: &mut Context) -> Result<Value> {
    ctx.set_response_header(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    Ok(payload())
}

/// The same 16 KiB already serialised: the cheapest handler, so the framework's own path.
async fn prebuilt(ctx: &mut Context) -> Result {
    static BODY: std::sync::OnceLock<Bytes> = std::sync::OnceLock::new();
    let body = BODY.get_or_init(|| Bytes::from(serde_json::to_vec(&payload()).expect("json")));
    ctx.set_response_header(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    ctx.body_mut().set_bytes(body.clone());
    Ok(())
}

async fn small(_ctx: &mut Context) -> Result<Value> {
    Ok(json!({"name": "alice", "id": 42}))
}

fn service(outer: Vec<SharedMiddleware>) -> Service {
    let mut app = App::new();
    for m in outer {
        app = app.use_middleware(m);
    }
    app.use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/big", big)
        .get("/small", small)
        .get("/prebuilt", prebuilt)
        .build()
        .expect("app builds")
}

fn request(path: &'static str, headers: &[(&'static str, &str)]) -> Request<RequestBody> {
    let mut request = Request::new(RequestBody::Full(Bytes::new()));
    *request.method_mut() = Method::GET;
    *request.uri_mut() = Uri::from_static(path);
    request
        .headers_mut()
        .insert("host", HeaderValue::from_static("bench"));
    for (name, value) in headers {
        request
            .headers_mut()
            .insert(*name, HeaderValue::from_str(value).expect("header"));
    }
    request
}

fn cache(store: Arc<dyn CacheStore>) -> SharedMiddleware {
    share(Cache::new(store, CacheConfig::default()))
}

fn bench_case(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &tokio::runtime::Runtime,
    name: &str,
    service: &Service,
    path: &'static str,
    headers: &[(&'static str, &str)],
    (expect, expect_cache): (StatusCode, Option<&str>),
) {
    // Warm up (the first request fills a cache) and check the answer is what is measured.
    for _ in 0..2 {
        rt.block_on(service.handle(request(path, headers), TEST_PEER));
    }
    let response = rt.block_on(service.handle(request(path, headers), TEST_PEER));
    assert_eq!(response.status(), expect, "{name}");
    assert_eq!(
        response
            .headers()
            .get("x-cache")
            .map(|v| v.to_str().expect("ascii")),
        expect_cache,
        "{name}"
    );
    c.bench_function(name, |b| {
        b.iter_batched(
            || request(path, headers),
            |request| rt.block_on(service.handle(black_box(request), TEST_PEER)),
            BatchSize::SmallInput,
        );
    });
}

fn bench_response(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let gzip = [("accept-encoding", "gzip")];
    let size = serde_json::to_vec(&payload()).expect("json").len();
    eprintln!("the big answer is {size} bytes of JSON");
    assert!((16_000..18_000).contains(&size), "{size}");
    let mut group = c.benchmark_group("response");

    let plain = service(vec![]);
    bench_case(
        &mut group,
        &rt,
        "16k handler",
        &plain,
        "/big",
        &[],
        (StatusCode::OK, None),
    );
    bench_case(
        &mut group,
        &rt,
        "16k prebuilt bytes (no JSON work)",
        &plain,
        "/prebuilt",
        &[],
        (StatusCode::OK, None),
    );
    let compressed = service(vec![share(Compress::default())]);
    bench_case(
        &mut group,
        &rt,
        "16k handler + compress (gzip client)",
        &compressed,
        "/big",
        &gzip,
        (StatusCode::OK, None),
    );
    let memory = service(vec![
        share(Compress::default()),
        cache(Arc::new(MemoryCacheStore::new())),
    ]);
    bench_case(
        &mut group,
        &rt,
        "16k memory cache hit (gzip client)",
        &memory,
        "/big",
        &gzip,
        (StatusCode::OK, Some("hit")),
    );
    bench_case(
        &mut group,
        &rt,
        "16k memory cache hit (identity client)",
        &memory,
        "/big",
        &[],
        (StatusCode::OK, Some("hit")),
    );
    if let Some(url) = std::env::var("TEST_REDIS_URL")
        .ok()
        .filter(|u| !u.is_empty())
    {
        let store = rt
            .block_on(RedisCacheStore::connect(&url, "bench-cache:"))
            .expect("redis");
        let redis = service(vec![share(Compress::default()), cache(Arc::new(store))]);
        bench_case(
            &mut group,
            &rt,
            "16k redis cache hit (gzip client)",
            &redis,
            "/big",
            &gzip,
            (StatusCode::OK, Some("hit")),
        );
    } else {
        eprintln!("skipped the Redis case: TEST_REDIS_URL is not set");
    }
    let tagged = service(vec![share(Fresh), share(ETag)]);
    bench_case(
        &mut group,
        &rt,
        "16k + etag + fresh",
        &tagged,
        "/big",
        &[],
        (StatusCode::OK, None),
    );

    bench_case(
        &mut group,
        &rt,
        "small handler",
        &plain,
        "/small",
        &[],
        (StatusCode::OK, None),
    );
    bench_case(
        &mut group,
        &rt,
        "small + etag + fresh (200)",
        &tagged,
        "/small",
        &[],
        (StatusCode::OK, None),
    );
    let tag = rt
        .block_on(tagged.handle(request("/small", &[]), TEST_PEER))
        .headers()["etag"]
        .to_str()
        .expect("ascii")
        .to_owned();
    let tag: &'static str = Box::leak(tag.into_boxed_str());
    bench_case(
        &mut group,
        &rt,
        "small + etag + fresh (304)",
        &tagged,
        "/small",
        &[("if-none-match", tag)],
        (StatusCode::NOT_MODIFIED, None),
    );
    group.finish();
}

criterion_group!(benches, bench_response);
criterion_main!(benches);

//! The cache over real sockets: fetch, hit (handler once, `Age`), hit-for-pass for each
//! non-cacheable answer, expiry, compressed storage served to gzip and identity clients,
//! coalescing of concurrent misses, the memory store's bounds, the Redis store shared by two
//! instances, a failing store, per-host keys and `Authorization`.

mod common;

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use common::backends::TestRedis;
use framework::middleware::cache::{
    Cache, CacheConfig, CacheStore, MemoryCacheStore, RedisCacheStore,
};
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::etag::ETag;
use framework::middleware::fresh::Fresh;
use framework::middleware::recover::Recover;
use framework::middleware::responder::Responder;
use framework::{App, Context, HttpError, Result, Service};
use http::HeaderValue;
use http::header::{CACHE_CONTROL, SET_COOKIE, VARY};
use serde_json::{Value, json};

#[derive(Default)]
struct Calls(AtomicUsize);

fn count(ctx: &Context) -> usize {
    ctx.state()
        .get::<Arc<Calls>>()
        .map_or(0, |c| c.0.fetch_add(1, Ordering::SeqCst) + 1)
}

fn cc(ctx: &mut Context, value: &'static str) {
    ctx.set_response_header(CACHE_CONTROL, HeaderValue::from_static(value));
}

async fn cached(ctx: &mut Context) -> Result<Value> {
    let n = count(ctx);
    cc(ctx, "public, max-age=60");
    Ok(json!({"call": n}))
}

async fn big(ctx: &mut Context) -> Result<Value> {
    count(ctx);
    cc(ctx, "public, max-age=60");
    Ok(json!({"text": "cacheable lorem ipsum ".repeat(200)}))
}

async fn short(ctx: &mut Context) -> Result<Value> {
    let n = count(ctx);
    cc(ctx, "max-age=1");
    Ok(json!({"call": n}))
}

async fn slow(ctx: &mut Context) -> Result<Value> {
    let n = count(ctx);
    tokio::time::sleep(Duration::from_millis(300)).await;
    cc(ctx, "max-age=60");
    Ok(json!({"call": n}))
}

async fn failing(ctx: &mut Context) -> Result<Value> {
    count(ctx);
    tokio::time::sleep(Duration::from_millis(200)).await;
    Err(HttpError::new("upstream failed")
        .with_status(http::StatusCode::BAD_GATEWAY)
        .into())
}

async fn panicking(ctx: &mut Context) -> Result<Value> {
    count(ctx);
    tokio::time::sleep(Duration::from_millis(200)).await;
    panic!("handler panicked");
}

fn uncacheable(
    kind: &'static str,
) -> impl Fn(&mut Context) -> std::future::Ready<Result<&'static str>> + Clone + Send + Sync + 'static
{
    move |ctx: &mut Context| {
        count(ctx);
        match kind {
            "no-store" => cc(ctx, "no-store, max-age=60"),
            "private" => cc(ctx, "private, max-age=60"),
            "no-cache" => cc(ctx, "no-cache, max-age=60"),
            "zero" => cc(ctx, "max-age=0"),
            "none" => {}
            "cookie" => {
                cc(ctx, "max-age=60");
                ctx.set_response_header(SET_COOKIE, HeaderValue::from_static("a=1"));
            }
            "vary" => {
                cc(ctx, "max-age=60");
                ctx.set_response_header(VARY, HeaderValue::from_static("Cookie"));
            }
            _ => unreachable!(),
        }
        std::future::ready(Ok(kind))
    }
}

fn app(store: Arc<dyn CacheStore>, calls: Arc<Calls>) -> Service {
    let mut app = App::new()
        .with_state(calls)
        .use_middleware(Recover::default())
        .use_middleware(Fresh)
        .use_middleware(Cache::new(store, CacheConfig::default()))
        .use_middleware(ETag)
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/cached", cached)
        .get("/big", big)
        .get("/short", short)
        .get("/slow", slow)
        .get("/failing", failing)
        .get("/panicking", panicking);
    for kind in [
        "no-store", "private", "no-cache", "zero", "none", "cookie", "vary",
    ] {
        app = app.get(&format!("/pass/{kind}"), uncacheable(kind));
    }
    app.build().expect("app")
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_gzip()
        .build()
        .expect("client")
}

struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Bytes,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

async fn get(request: reqwest::RequestBuilder) -> Answer {
    let response = request.send().await.expect("request");
    Answer {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        body: response.bytes().await.expect("body"),
    }
}

fn calls(c: &Calls) -> usize {
    c.0.load(Ordering::SeqCst)
}

#[tokio::test]
async fn fetch_then_hit_runs_the_handler_once() {
    let counter = Arc::new(Calls::default());
    let server = common::start(app(Arc::new(MemoryCacheStore::new()), counter.clone())).await;
    let client = client();
    let first = get(client.get(server.url("/cached"))).await;
    assert_eq!(first.status, 200);
    assert_eq!(first.header("x-cache"), Some("fetch"));
    assert_eq!(first.header("age"), None);
    for _ in 0..3 {
        let hit = get(client.get(server.url("/cached"))).await;
        assert_eq!(hit.status, 200);
        assert_eq!(hit.header("x-cache"), Some("hit"));
        let age: u64 = hit.header("age").expect("Age on a hit").parse().unwrap();
        assert!(age <= 60);
        assert_eq!(hit.body, first.body);
        assert_eq!(hit.header("etag"), first.header("etag"), "the stored tag");
        assert_eq!(hit.header("content-type"), first.header("content-type"));
        assert_ne!(
            hit.header("x-request-id"),
            first.header("x-request-id"),
            "never stored"
        );
    }
    assert_eq!(calls(&counter), 1);
    // A hit still revalidates: fresh sits outside the cache.
    let tag = first.header("etag").unwrap();
    let revalidated = get(client
        .get(server.url("/cached"))
        .header("if-none-match", tag))
    .await;
    assert_eq!(revalidated.status, 304);
    // Another query string or host is another key.
    assert_eq!(
        get(client.get(server.url("/cached?x=1")))
            .await
            .header("x-cache"),
        Some("fetch")
    );
    let other_host = get(client
        .get(server.url("/cached"))
        .header("host", "other.example"))
    .await;
    assert_eq!(other_host.header("x-cache"), Some("fetch"));
    assert_eq!(calls(&counter), 3);
    // A request that asks for no-cache goes to the handler (and refreshes the entry).
    let bypass = get(client
        .get(server.url("/cached"))
        .header("cache-control", "no-cache"))
    .await;
    assert_eq!(bypass.header("x-cache"), Some("fetch"));
    assert_eq!(calls(&counter), 4);
    let hit = get(client.get(server.url("/cached"))).await;
    assert_eq!(hit.header("x-cache"), Some("hit"));
    assert_eq!(
        serde_json::from_slice::<Value>(&hit.body).unwrap(),
        json!({"call": 4})
    );
    server.stop().await;
}

#[tokio::test]
async fn each_uncacheable_answer_gives_hit_for_pass() {
    let counter = Arc::new(Calls::default());
    let server = common::start(app(Arc::new(MemoryCacheStore::new()), counter.clone())).await;
    let client = client();
    for kind in [
        "no-store", "private", "no-cache", "zero", "none", "cookie", "vary",
    ] {
        let url = server.url(&format!("/pass/{kind}"));
        let before = calls(&counter);
        assert_eq!(
            get(client.get(&url)).await.header("x-cache"),
            Some("fetch"),
            "{kind}"
        );
        for _ in 0..2 {
            let pass = get(client.get(&url)).await;
            assert_eq!(pass.status, 200, "{kind}");
            assert_eq!(pass.header("x-cache"), Some("hit-for-pass"), "{kind}");
            assert_eq!(pass.header("age"), None, "{kind}");
        }
        assert_eq!(
            calls(&counter) - before,
            3,
            "{kind}: the handler ran every time"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn an_entry_expires_after_its_ttl() {
    let counter = Arc::new(Calls::default());
    let server = common::start(app(Arc::new(MemoryCacheStore::new()), counter.clone())).await;
    let client = client();
    assert_eq!(
        get(client.get(server.url("/short")))
            .await
            .header("x-cache"),
        Some("fetch")
    );
    assert_eq!(
        get(client.get(server.url("/short")))
            .await
            .header("x-cache"),
        Some("hit")
    );
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(
        get(client.get(server.url("/short")))
            .await
            .header("x-cache"),
        Some("fetch")
    );
    assert_eq!(calls(&counter), 2);
    server.stop().await;
}

#[tokio::test]
async fn compressed_entries_serve_gzip_and_identity_clients() {
    let counter = Arc::new(Calls::default());
    // Many small slots, so `bytes()` is close to the stored bytes.
    let store = Arc::new(MemoryCacheStore::with_bounds(1_000_000, 64 * 1024 * 1024));
    let server = common::start(app(store.clone(), counter.clone())).await;
    let client = client();
    let first = get(client.get(server.url("/big"))).await;
    assert_eq!(first.header("x-cache"), Some("fetch"));
    assert!(first.body.len() > 4_000);
    assert!(
        store.bytes() < first.body.len() as u64,
        "stored compressed: {} bytes for a {}-byte body",
        store.bytes(),
        first.body.len()
    );
    let zipped = get(client
        .get(server.url("/big"))
        .header("accept-encoding", "gzip"))
    .await;
    assert_eq!(zipped.header("x-cache"), Some("hit"));
    assert_eq!(zipped.header("content-encoding"), Some("gzip"));
    assert_eq!(zipped.header("vary"), Some("Accept-Encoding"));
    assert!(zipped.header("etag").unwrap().starts_with("W/"), "weakened");
    let mut decoded = Vec::new();
    flate2::read::GzDecoder::new(&zipped.body[..])
        .read_to_end(&mut decoded)
        .expect("valid gzip");
    assert_eq!(decoded, first.body);
    let plain = get(client
        .get(server.url("/big"))
        .header("accept-encoding", "identity"))
    .await;
    assert_eq!(plain.header("x-cache"), Some("hit"));
    assert_eq!(plain.header("content-encoding"), None);
    assert_eq!(plain.body, first.body);
    assert_eq!(plain.header("etag"), first.header("etag"));
    assert_eq!(calls(&counter), 1);
    server.stop().await;
}

#[tokio::test]
async fn concurrent_misses_run_the_handler_once_and_failures_release_the_waiters() {
    let counter = Arc::new(Calls::default());
    let server = common::start(app(Arc::new(MemoryCacheStore::new()), counter.clone())).await;
    let client = client();
    let answers =
        futures_util::future::join_all((0..50).map(|_| get(client.get(server.url("/slow"))))).await;
    assert!(answers.iter().all(|a| a.status == 200));
    assert_eq!(
        calls(&counter),
        1,
        "one handler run for 50 concurrent misses"
    );
    assert!(answers.iter().all(|a| a.body == answers[0].body));
    let fetches = answers
        .iter()
        .filter(|a| a.header("x-cache") == Some("fetch"))
        .count();
    assert_eq!(fetches, 1);

    // A failing or panicking fetch releases its waiters: every request is answered.
    for path in ["/failing", "/panicking"] {
        let answers = tokio::time::timeout(
            Duration::from_secs(10),
            futures_util::future::join_all((0..20).map(|_| get(client.get(server.url(path))))),
        )
        .await
        .expect("no waiter hangs");
        let expected = if path == "/failing" { 502 } else { 500 };
        assert!(answers.iter().all(|a| a.status == expected), "{path}");
    }
    server.stop().await;
}

#[tokio::test]
async fn the_memory_store_stays_within_its_bounds() {
    let store = MemoryCacheStore::with_bounds(1_000, 256 * 1024);
    let value = Bytes::from(vec![b'v'; 1024]);
    for i in 0..10_000 {
        store
            .set(
                &format!("GET host /item/{i}"),
                value.clone(),
                Duration::from_secs(60),
            )
            .await
            .unwrap();
        assert!(store.bytes() <= 256 * 1024, "{} bytes", store.bytes());
    }
    assert!(store.len() <= 1_000);
    // Small values: the entry bound holds too.
    let small = MemoryCacheStore::with_bounds(100, 1024 * 1024);
    for i in 0..10_000 {
        small
            .set(
                &format!("k{i}"),
                Bytes::from_static(b"x"),
                Duration::from_secs(60),
            )
            .await
            .unwrap();
    }
    assert!(small.len() <= 100, "{} entries", small.len());
    // A value larger than the whole bound is not stored.
    store
        .set(
            "huge",
            Bytes::from(vec![0; 300 * 1024]),
            Duration::from_secs(60),
        )
        .await
        .unwrap();
    assert!(store.get("huge").await.unwrap().is_none());
}

/// A store that always fails, as Redis does when it is down.
struct Broken;

#[async_trait]
impl CacheStore for Broken {
    async fn get(&self, _key: &str) -> Result<Option<Bytes>> {
        Err(HttpError::new("store down").into())
    }
    async fn set(&self, _key: &str, _value: Bytes, _ttl: Duration) -> Result {
        Err(HttpError::new("store down").into())
    }
    async fn delete(&self, _key: &str) -> Result {
        Err(HttpError::new("store down").into())
    }
}

#[tokio::test]
async fn a_failing_store_is_bypassed() {
    let counter = Arc::new(Calls::default());
    let server = common::start(app(Arc::new(Broken), counter.clone())).await;
    let client = client();
    for _ in 0..3 {
        let answer = get(client.get(server.url("/cached"))).await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.header("x-cache"), None);
    }
    assert_eq!(calls(&counter), 3);
    server.stop().await;
}

#[tokio::test]
async fn authorization_needs_public_or_s_maxage() {
    let counter = Arc::new(Calls::default());
    let service = App::new()
        .with_state(counter.clone())
        .use_middleware(Cache::new(
            Arc::new(MemoryCacheStore::new()),
            CacheConfig::default(),
        ))
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/mine", |ctx: &mut Context| {
            count(ctx);
            cc(ctx, "max-age=60");
            async { Ok("mine") }
        })
        .get("/shared", |ctx: &mut Context| {
            count(ctx);
            cc(ctx, "public, max-age=60");
            async { Ok("shared") }
        })
        .build()
        .unwrap();
    let server = common::start(service).await;
    let client = client();
    let with_auth = |path: &str| {
        client
            .get(server.url(path))
            .header("authorization", "Bearer t")
    };
    assert_eq!(
        get(with_auth("/mine")).await.header("x-cache"),
        Some("fetch")
    );
    assert_eq!(
        get(with_auth("/mine")).await.header("x-cache"),
        Some("hit-for-pass")
    );
    assert_eq!(
        get(with_auth("/shared")).await.header("x-cache"),
        Some("fetch")
    );
    assert_eq!(
        get(with_auth("/shared")).await.header("x-cache"),
        Some("hit")
    );
    server.stop().await;
}

#[tokio::test]
#[cfg_attr(
    no_test_redis,
    ignore = "needs Redis: set TEST_REDIS_URL=redis://127.0.0.1:6379"
)]
async fn the_redis_store_is_shared_by_two_instances() {
    the_redis_store_is_shared_by_two_instances_on(TestRedis::server()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    no_test_redis,
    ignore = "needs redis-server and redis-cli: set TEST_REDIS_URL"
)]
async fn the_redis_store_is_shared_by_two_instances_on_a_cluster() {
    the_redis_store_is_shared_by_two_instances_on(TestRedis::cluster().await).await;
}

async fn the_redis_store_is_shared_by_two_instances_on(backend: TestRedis) {
    let url = backend.url();
    let prefix = common::unique("test-cache-") + ":";
    let store = || async {
        Arc::new(
            RedisCacheStore::connect(&url, prefix.clone())
                .await
                .expect("redis"),
        ) as Arc<dyn CacheStore>
    };
    let counter = Arc::new(Calls::default());
    let a = common::start(app(store().await, counter.clone())).await;
    let b = common::start(app(store().await, counter.clone())).await;
    let client = client();
    let fetched = get(client.get(a.url("/big"))).await;
    assert_eq!(fetched.header("x-cache"), Some("fetch"));
    let hit = get(client.get(b.url("/big")).header("host", fetched_host(&a))).await;
    assert_eq!(
        hit.header("x-cache"),
        Some("hit"),
        "B serves what A fetched"
    );
    assert_eq!(hit.body, fetched.body);
    assert_eq!(calls(&counter), 1);
    // The entry carries the TTL in Redis.
    let keys = backend.keys(&prefix).await;
    assert_eq!(keys.len(), 1, "{keys:?}");
    let ttl: i64 = backend
        .connection()
        .await
        .query(redis::cmd("PTTL").arg(&keys[0]))
        .await
        .unwrap();
    assert!((1..=60_000).contains(&ttl), "pttl {ttl}");
    backend.remove_keys(&prefix).await;
    a.stop().await;
    b.stop().await;
}

/// The `Host` A's requests carried, so B's key is the same.
fn fetched_host(a: &common::Running) -> String {
    a.addr.to_string()
}

/// A memory store that counts its look-ups.
struct CountedLookups {
    inner: MemoryCacheStore,
    gets: std::sync::atomic::AtomicUsize,
}

#[async_trait]
impl CacheStore for CountedLookups {
    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.inner.get(key).await
    }
    async fn set(&self, key: &str, value: Bytes, ttl: Duration) -> Result {
        self.inner.set(key, value, ttl).await
    }
    async fn delete(&self, key: &str) -> Result {
        self.inner.delete(key).await
    }
}

#[tokio::test]
async fn a_fetch_whose_client_leaves_hands_the_lead_to_one_waiter() {
    use tokio::io::AsyncWriteExt;
    let counter = Arc::new(Calls::default());
    let store = Arc::new(CountedLookups {
        inner: MemoryCacheStore::new(),
        gets: AtomicUsize::new(0),
    });
    let server = common::start(app(store.clone(), counter.clone())).await;
    let client = client();
    // The first requester starts the fetch and leaves while the handler runs. (Its Host is the
    // one reqwest sends, so the waiters' key is the same.)
    let mut first = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    first
        .write_all(format!("GET /slow HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr).as_bytes())
        .await
        .unwrap();
    common::wait_for(|| calls(&counter) == 1).await;
    let waiters = tokio::spawn({
        let client = client.clone();
        let url = server.url("/slow");
        async move { futures_util::future::join_all((0..50).map(|_| get(client.get(&url)))).await }
    });
    // Every waiter has looked the key up (one look-up each, after the first's), and found the
    // fetch in flight: on this one-thread runtime a request runs from its look-up to its wait
    // without yielding. The first's handler (300 ms) has not finished: nothing is stored yet,
    // so the lead is handed over, not taken afresh.
    common::wait_for(|| store.gets.load(Ordering::SeqCst) == 51).await;
    assert_eq!(
        store.inner.len(),
        0,
        "the first fetch ended before the hand-over"
    );
    assert_eq!(calls(&counter), 1);
    drop(first);
    let answers = tokio::time::timeout(Duration::from_secs(10), waiters)
        .await
        .expect("no waiter hangs")
        .unwrap();
    assert!(answers.iter().all(|a| a.status == 200));
    // The abandoned run and one waiter's, not one per waiter.
    assert_eq!(calls(&counter), 2);
    assert_eq!(
        answers
            .iter()
            .filter(|a| a.header("x-cache") == Some("fetch"))
            .count(),
        1
    );
    // And the waiter's fetch was stored.
    let again = get(client.get(server.url("/slow"))).await;
    assert_eq!(again.header("x-cache"), Some("hit"));
    assert_eq!(calls(&counter), 2);
    server.stop().await;
}

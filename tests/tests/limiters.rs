//! The three concurrency limiters and basic auth over real sockets: exact counts at the limit,
//! slots and locks freed however a request ends (success, error, panic, client gone, streamed
//! body), the Redis lock shared by two instances.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use common::backends::TestRedis;
use framework::body::BodyStream;
use framework::middleware::basic_auth::{BasicAuth, BasicAuthConfig};
use framework::middleware::body_parser::BodyParser;
use framework::middleware::concurrent_limiter::{
    ConcurrentLimiter, ConcurrentLimiterConfig, Lock, MemoryLock, RedisLock,
};
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::global_concurrent_limiter::{
    GlobalConcurrentLimiter, GlobalConcurrentLimiterConfig,
};
use framework::middleware::recover::Recover;
use framework::middleware::responder::Responder;
use framework::middleware::router_concurrent_limiter::{
    RouterConcurrentLimiter, RouterConcurrentLimiterConfig,
};
use framework::{App, Context, Group, HttpError, Result};
use http::Method;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

/// Handlers wait until the test opens the gate, so requests are in flight together.
struct Gate(watch::Receiver<bool>);

async fn wait_gate(ctx: &Context) {
    if let Some(gate) = ctx.state().get::<Gate>() {
        let mut rx = gate.0.clone();
        let _ = rx.wait_for(|open| *open).await;
    }
}

async fn slow(ctx: &mut Context) -> Result<&'static str> {
    wait_gate(ctx).await;
    Ok("done")
}

async fn slow_error(ctx: &mut Context) -> Result {
    wait_gate(ctx).await;
    Err(HttpError::new("failed").into())
}

async fn slow_panic(ctx: &mut Context) -> Result {
    wait_gate(ctx).await;
    panic!("boom");
}

async fn streamed(ctx: &mut Context) -> Result {
    let gate = ctx.state().get::<Gate>().map(|g| g.0.clone());
    let body = futures_util::stream::unfold((0, gate), |(i, gate)| async move {
        if i == 2 {
            return None;
        }
        if i == 1
            && let Some(mut gate) = gate.clone()
        {
            let _ = gate.wait_for(|open| *open).await;
        }
        Some((
            Ok::<_, std::io::Error>(Bytes::from("part\n")),
            (i + 1, gate),
        ))
    });
    ctx.body_mut().set_stream(BodyStream::from_stream(body));
    Ok(())
}

fn chain(limiter: impl framework::Middleware, gate: watch::Receiver<bool>) -> framework::Service {
    App::new()
        .with_state(Gate(gate))
        .use_middleware(Recover::default())
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(BodyParser::default())
        .use_middleware(limiter)
        .get("/slow", slow)
        .get("/error", slow_error)
        .get("/panic", slow_panic)
        .get("/stream", streamed)
        .post("/submit", slow)
        .get("/free", |_ctx: &mut Context| async { Ok("free") })
        .build()
        .unwrap()
}

#[tokio::test]
async fn global_limit_is_exact_and_slots_come_back() {
    let (open, gate) = watch::channel(false);
    let limiter = GlobalConcurrentLimiter::new(GlobalConcurrentLimiterConfig::default().max(3));
    let counter = limiter.counter();
    let server = common::start(chain(limiter, gate)).await;
    let client = common::browser();

    // 3 + 2 at once: exactly 3 run, 2 are refused.
    let requests: Vec<_> = (0..5)
        .map(|_| tokio::spawn(client.get(server.url("/slow")).send()))
        .collect();
    common::wait_for(|| counter.load(Ordering::SeqCst) == 3).await;
    let mut refused = 0;
    for _ in 0..200 {
        refused = requests.iter().filter(|r| r.is_finished()).count();
        if refused == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(refused, 2);
    open.send_replace(true);
    let mut statuses = Vec::new();
    for r in requests {
        let res = r.await.unwrap().unwrap();
        let status = res.status().as_u16();
        if status == 429 {
            let body: Value = res.json().await.unwrap();
            assert_eq!(body["category"], "framework-global-concurrent-limiter");
            assert_eq!(body["message"], "too many requests");
        }
        statuses.push(status);
    }
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    assert_eq!(counter.load(Ordering::SeqCst), 0);

    // Error and panic: the slot comes back.
    for (path, status) in [("/error", 400), ("/panic", 500)] {
        let res = client.get(server.url(path)).send().await.unwrap();
        // The handler's error (an `HttpError` is 400 by default) and the recovered panic, not
        // a refusal by the limiter.
        assert_eq!(res.status(), status, "{path}");
        assert_eq!(counter.load(Ordering::SeqCst), 0, "{path}");
    }
    open.send_replace(false);

    // A client that goes away while its request waits: the dropped request frees its slot.
    let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    socket
        .write_all(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    common::wait_for(|| counter.load(Ordering::SeqCst) == 1).await;
    drop(socket);
    common::wait_for(|| counter.load(Ordering::SeqCst) == 0).await;

    // A streamed body holds the slot until it has been sent.
    let mut res = client.get(server.url("/stream")).send().await.unwrap();
    assert_eq!(res.chunk().await.unwrap().unwrap(), "part\n");
    assert_eq!(
        counter.load(Ordering::SeqCst),
        1,
        "held while the body streams"
    );
    open.send_replace(true);
    while res.chunk().await.unwrap().is_some() {}
    common::wait_for(|| counter.load(Ordering::SeqCst) == 0).await;
    server.stop().await;
}

#[tokio::test]
async fn router_limit_per_route() {
    let (open, gate) = watch::channel(false);
    let limiter = RouterConcurrentLimiter::new(
        RouterConcurrentLimiterConfig::default()
            .limits(HashMap::from([("GET /slow".to_owned(), 1)])),
    )
    .unwrap();
    let server = common::start(chain(limiter, gate)).await;
    let client = common::browser();
    let first = tokio::spawn(client.get(server.url("/slow")).send());
    // Poll until the second one is refused (the first has taken the slot).
    let mut refused = None;
    for _ in 0..200 {
        let res = client
            .get(server.url("/slow"))
            .timeout(Duration::from_millis(200))
            .send()
            .await;
        if let Ok(res) = res
            && res.status() == 429
        {
            refused = Some(res.json::<Value>().await.unwrap());
            break;
        }
    }
    let refused = refused.expect("a second request is refused");
    assert_eq!(refused["category"], "framework-router-concurrent-limiter");
    assert_eq!(refused["message"], "too many requests, current: 2, max: 1");
    // Other routes are not limited.
    assert_eq!(
        client
            .get(server.url("/free"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    open.send_replace(true);
    assert_eq!(first.await.unwrap().unwrap().status(), 200);
    assert_eq!(
        client
            .get(server.url("/slow"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    assert!(
        RouterConcurrentLimiter::new(
            RouterConcurrentLimiterConfig::default().limits(HashMap::from([("GET".to_owned(), 1)]))
        )
        .is_err()
    );
    server.stop().await;
}

fn submit_limiter(lock: Arc<dyn Lock>) -> ConcurrentLimiter {
    ConcurrentLimiter::new(
        ConcurrentLimiterConfig::default()
            .keys(vec!["account".into()])
            .lock(lock),
    )
    .unwrap()
}

#[tokio::test]
async fn concurrent_limiter_by_body_field() {
    let (open, gate) = watch::channel(false);
    let lock = MemoryLock::new();
    let server = common::start(chain(submit_limiter(Arc::new(lock.clone())), gate)).await;
    let client = common::browser();
    let submit = |account: &str| {
        client
            .post(server.url("/submit"))
            .json(&json!({"account": account}))
            .send()
    };
    let first = tokio::spawn(submit("alice"));
    common::wait_for(|| lock.held() == 1).await;
    let second = submit("alice").await.unwrap();
    assert_eq!(second.status(), 429);
    let body: Value = second.json().await.unwrap();
    assert_eq!(body["category"], "framework-concurrent-limiter");
    assert_eq!(body["message"], "submit too frequently");
    // Another key is free.
    let other = tokio::spawn(submit("bob"));
    common::wait_for(|| lock.held() == 2).await;
    open.send_replace(true);
    assert_eq!(first.await.unwrap().unwrap().status(), 200);
    assert_eq!(other.await.unwrap().unwrap().status(), 200);
    common::wait_for(|| lock.held() == 0).await;
    // A missing key part.
    let res = client
        .post(server.url("/submit"))
        .json(&json!({"name": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["message"], "account is required");
    assert_eq!(lock.held(), 0);
    server.stop().await;
}

#[tokio::test]
#[cfg_attr(
    no_test_redis,
    ignore = "needs Redis: set TEST_REDIS_URL=redis://127.0.0.1:6379"
)]
async fn redis_lock_shared_by_two_instances() {
    redis_lock_shared_by_two_instances_on(TestRedis::server()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    no_test_redis,
    ignore = "needs redis-server and redis-cli: set TEST_REDIS_URL"
)]
async fn redis_lock_shared_by_two_instances_on_a_cluster() {
    redis_lock_shared_by_two_instances_on(TestRedis::cluster().await).await;
}

async fn redis_lock_shared_by_two_instances_on(backend: TestRedis) {
    let url = backend.url();
    let prefix = common::unique("test-lock-") + ":";
    let (open, gate) = watch::channel(false);
    let lock_a: Arc<dyn Lock> = Arc::new(RedisLock::connect(&url, prefix.clone()).await.unwrap());
    let lock_b: Arc<dyn Lock> = Arc::new(RedisLock::connect(&url, prefix.clone()).await.unwrap());
    let a = common::start(chain(submit_limiter(lock_a), gate.clone())).await;
    let b = common::start(chain(submit_limiter(lock_b), gate)).await;
    let client = common::browser();
    let body = json!({"account": "shared"});
    let first = tokio::spawn(client.post(a.url("/submit")).json(&body).send());
    let redis = backend.connection().await;
    let key = format!("{prefix}shared");
    let exists = async || -> bool { redis.query(redis::cmd("EXISTS").arg(&key)).await.unwrap() };
    for _ in 0..500 {
        if exists().await {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let second = client
        .post(b.url("/submit"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(
        second.status(),
        429,
        "the other instance refuses the duplicate"
    );
    open.send_replace(true);
    assert_eq!(first.await.unwrap().unwrap().status(), 200);
    // Released before the response was written: gone by the time the client has the answer.
    assert!(
        !exists().await,
        "the lock was released in Redis before the response"
    );
    a.stop().await;
    b.stop().await;
}

async fn admin(_ctx: &mut Context) -> Result<&'static str> {
    Ok("admin area")
}

#[tokio::test]
async fn basic_auth_cases() {
    let auth = BasicAuth::new(
        BasicAuthConfig::from_fn(|account, password, _ctx| match account {
            "http-error" => Err(HttpError::new("blocked")
                .with_status(http::StatusCode::FORBIDDEN)
                .into()),
            "plain-error" => Err(framework::Error::msg("directory down")),
            _ => Ok(account == "admin" && password == "pa:ss"),
        })
        .realm("ops \"team\""),
    );
    let calls = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .group(
            Group::new("/admin")
                .use_middleware(auth)
                .get("/", admin)
                .route(Method::OPTIONS, "/", move |_ctx: &mut Context| {
                    counted.fetch_add(1, Ordering::SeqCst);
                    async { Ok("preflight") }
                }),
        )
        .build()
        .unwrap();
    let server = common::start(service).await;
    let client = common::browser();
    let b64 = |raw: &str| base64::engine::general_purpose::STANDARD.encode(raw);
    let send = |auth: Option<String>| {
        let mut req = client.get(server.url("/admin"));
        if let Some(auth) = auth {
            req = req.header("authorization", auth);
        }
        async move {
            let res = req.send().await.unwrap();
            let status = res.status().as_u16();
            let challenge = res
                .headers()
                .get("www-authenticate")
                .map(|v| v.to_str().unwrap().to_owned());
            let body: Value = res.json().await.unwrap_or(Value::Null);
            (status, challenge, body)
        }
    };
    let (status, _, body) = send(Some(format!("Basic {}", b64("admin:pa:ss")))).await;
    assert_eq!((status, body), (200, Value::Null), "valid credentials pass");
    for bad in [
        None,
        Some(format!("Basic {}", b64("admin:wrong"))),
        Some(format!("Basic {}", b64("nobody:pa:ss"))),
        Some(format!("Basic {}", b64("no-colon"))),
        Some("Basic !!!not-base64".to_owned()),
        Some(format!("BasicX {}", b64("admin:pa:ss"))),
        Some(format!("Bearer {}", b64("admin:pa:ss"))),
        Some("Basic".to_owned()),
    ] {
        let (status, challenge, body) = send(bad.clone()).await;
        assert_eq!(status, 401, "{bad:?}");
        assert_eq!(
            challenge.as_deref(),
            Some("Basic realm=\"ops \\\"team\\\"\"")
        );
        assert_eq!(body["category"], "framework-basic-auth");
        assert_eq!(body["message"], "unauthorized");
    }
    let (status, _, body) = send(Some(format!("Basic {}", b64("http-error:x")))).await;
    assert_eq!((status, body["message"].as_str()), (403, Some("blocked")));
    let (status, _, body) = send(Some(format!("Basic {}", b64("plain-error:x")))).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (400, Some("directory down"))
    );
    let res = client
        .request(reqwest::Method::OPTIONS, server.url("/admin"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    server.stop().await;
}

#[tokio::test]
async fn key_lock_is_free_after_error_panic_disconnect_and_stream() {
    let (open, gate) = watch::channel(false);
    let lock = MemoryLock::new();
    let limiter = ConcurrentLimiter::new(
        ConcurrentLimiterConfig::default()
            .keys(vec![":ip".into(), "h:x-user".into()])
            .lock(Arc::new(lock.clone())),
    )
    .unwrap();
    let server = common::start(chain(limiter, gate)).await;
    let client = common::browser();
    open.send_replace(true);
    for path in ["/slow", "/error", "/panic"] {
        let res = client
            .get(server.url(path))
            .header("x-user", "u1")
            .send()
            .await
            .unwrap();
        assert_ne!(res.status(), 429, "{path}");
        assert_eq!(lock.held(), 0, "{path}");
    }
    open.send_replace(false);
    // Disconnect while the handler waits.
    let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    socket
        .write_all(b"GET /slow HTTP/1.1\r\nHost: t\r\nX-User: u1\r\n\r\n")
        .await
        .unwrap();
    common::wait_for(|| lock.held() == 1).await;
    let refused = client
        .get(server.url("/slow"))
        .header("x-user", "u1")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 429, "held while the first runs");
    drop(socket);
    common::wait_for(|| lock.held() == 0).await;
    // The lock covers the handler, not the transfer: a streamed body's head goes out with the
    // lock already released.
    let mut res = client
        .get(server.url("/stream"))
        .header("x-user", "u1")
        .send()
        .await
        .unwrap();
    assert_eq!(res.chunk().await.unwrap().unwrap(), "part\n");
    assert_eq!(lock.held(), 0);
    open.send_replace(true);
    while res.chunk().await.unwrap().is_some() {}
    // A missing header: 400 naming the key form.
    let res = client.get(server.url("/slow")).send().await.unwrap();
    assert_eq!(res.status(), 400);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["message"], "h:x-user is required");
    server.stop().await;
}

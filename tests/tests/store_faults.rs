//! The shared Redis policy against a `redis-server` of the test's own (killed, restarted,
//! paused), the per-key lock's guarantees under faults, and the categories of store failures.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use common::backends::RedisServer;
use framework::middleware::concurrent_limiter::{
    ConcurrentLimiter, ConcurrentLimiterConfig, Lock, LockToken, MemoryLock, RedisLock,
};
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::middleware::session::{RedisStore, SessionConfig, SessionMiddleware};
use framework::redis_connection::{RedisConnection, RedisFailure, RedisPolicy};
use framework::{App, Context, Result};
use serde_json::{Value, json};
use user_service::throttle::AttemptStore;
use user_service::{Config, Stores};

fn fast_policy() -> RedisPolicy {
    RedisPolicy {
        command_timeout: Duration::from_millis(300),
        connect_timeout: Duration::from_millis(300),
        probe_interval: Duration::from_millis(200),
    }
}

async fn set(redis: &RedisConnection, key: &str) -> Result<(), RedisFailure> {
    let cmd = framework::redis_connection::redis::cmd("SET")
        .arg(key)
        .arg("v")
        .clone();
    redis.query::<()>(&cmd).await
}

/// Polls `set` until it succeeds; how long that took.
async fn until_up(redis: &RedisConnection) -> Duration {
    let start = Instant::now();
    while set(redis, "probe").await.is_err() {
        assert!(start.elapsed() < Duration::from_secs(10), "never back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    start.elapsed()
}

#[tokio::test]
#[cfg_attr(
    no_test_redis,
    ignore = "needs redis-server: set TEST_REDIS_URL (the test starts its own server)"
)]
async fn redis_policy_fails_fast_while_down_and_recovers() {
    let mut server = tokio::task::spawn_blocking(RedisServer::start)
        .await
        .unwrap();
    let redis = RedisConnection::connect(&server.url(), fast_policy())
        .await
        .unwrap();
    set(&redis, "a").await.unwrap();

    // Killed: the first command meets the broken connection, retries on a new one (refused),
    // and fails; the server is down, so the next fails without waiting.
    server.kill();
    let start = Instant::now();
    assert!(set(&redis, "a").await.is_err());
    let first = start.elapsed();
    assert!(!redis.is_up());
    let start = Instant::now();
    assert!(matches!(
        set(&redis, "a").await,
        Err(RedisFailure::Unavailable)
    ));
    let next = start.elapsed();
    println!("killed: first failure after {first:?}, the next after {next:?}");
    assert!(first < Duration::from_secs(1), "{first:?}");
    assert!(next < Duration::from_millis(50), "{next:?}");

    // Back: the probe finds it.
    let server = tokio::task::spawn_blocking(move || {
        server.restart();
        server
    })
    .await
    .unwrap();
    let back = until_up(&redis).await;
    println!("restarted: commands succeed again after {back:?}");
    assert!(back < Duration::from_secs(2), "{back:?}");

    // Paused: the first command waits out its deadline (no retry after a timeout), the next
    // ones fail at once.
    server.pause();
    let start = Instant::now();
    assert!(matches!(set(&redis, "a").await, Err(RedisFailure::Timeout)));
    let first = start.elapsed();
    let start = Instant::now();
    assert!(matches!(
        set(&redis, "a").await,
        Err(RedisFailure::Unavailable)
    ));
    let next = start.elapsed();
    println!("paused: first failure after {first:?}, the next after {next:?}");
    assert!(
        first >= Duration::from_millis(300) && first < Duration::from_millis(900),
        "{first:?}"
    );
    assert!(next < Duration::from_millis(50), "{next:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.resume();
    let back = until_up(&redis).await;
    println!("resumed: commands succeed again after {back:?}");
    assert!(back < Duration::from_secs(2), "{back:?}");
    // A server error is an answer: the connection stays up.
    let wrong = framework::redis_connection::redis::cmd("INCR")
        .arg("probe")
        .clone();
    assert!(matches!(
        redis.query::<i64>(&wrong).await,
        Err(RedisFailure::Server(_))
    ));
    assert!(redis.is_up());
}

fn limiter(lock: Arc<dyn Lock>, ttl: Duration) -> ConcurrentLimiter {
    ConcurrentLimiter::new(
        ConcurrentLimiterConfig::default()
            .keys(vec!["h:x-account".into()])
            .lock(lock)
            .ttl(ttl)
            .renew_every(ttl / 4),
    )
    .unwrap()
}

/// Holds `/long` open from when it starts until the test lets it end.
#[derive(Default)]
struct Gate {
    started: tokio::sync::Notify,
    release: tokio::sync::Notify,
}

fn lock_app(lock: Arc<dyn Lock>, ttl: Duration, gate: Arc<Gate>) -> framework::Service {
    App::bare()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(limiter(lock, ttl))
        .get("/quick", |_ctx: &mut Context| async { Ok("done") })
        .get("/long", move |_ctx: &mut Context| {
            let gate = Arc::clone(&gate);
            async move {
                gate.started.notify_one();
                gate.release.notified().await;
                Ok("done")
            }
        })
        .build()
        .unwrap()
}

/// A client's next request is never refused by its own previous one, and a request that runs
/// longer than the TTL keeps its lock (renewed), on both locks.
async fn lock_guarantees(lock: Arc<dyn Lock>) {
    let gate = Arc::new(Gate::default());
    let server = common::start(lock_app(
        lock,
        Duration::from_millis(400),
        Arc::clone(&gate),
    ))
    .await;
    let client = common::browser();
    for i in 0..300 {
        let res = client
            .get(server.url("/quick"))
            .header("x-account", "same")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "request {i}");
    }
    let long = tokio::spawn(
        client
            .get(server.url("/long"))
            .header("x-account", "long")
            .send(),
    );
    // The request holds its lock from before its handler starts; past the 400 ms TTL three
    // times over it still holds it (renewed), and keeps running until let go.
    gate.started.notified().await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let refused = client
        .get(server.url("/quick"))
        .header("x-account", "long")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 429, "renewed while the request runs");
    gate.release.notify_one();
    assert_eq!(long.await.unwrap().unwrap().status(), 200);
    let res = client
        .get(server.url("/quick"))
        .header("x-account", "long")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "released when it ended");
    server.stop().await;
}

#[tokio::test]
async fn memory_lock_guarantees() {
    lock_guarantees(Arc::new(MemoryLock::new())).await;
}

#[tokio::test]
#[cfg_attr(
    no_test_redis,
    ignore = "needs Redis: set TEST_REDIS_URL=redis://127.0.0.1:6379"
)]
async fn redis_lock_guarantees() {
    let url = common::store_url("TEST_REDIS_URL");
    let lock = RedisLock::connect(&url, common::unique("test-lockg-") + ":")
        .await
        .unwrap();
    lock_guarantees(Arc::new(lock)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    no_test_redis,
    ignore = "needs redis-server and redis-cli: set TEST_REDIS_URL"
)]
async fn redis_lock_guarantees_on_a_cluster() {
    let cluster = common::backends::TestRedis::cluster().await;
    let lock = RedisLock::connect(&cluster.url(), "lockg:").await.unwrap();
    lock_guarantees(Arc::new(lock)).await;
}

/// A lock whose acquisition takes effect but whose answer never comes.
struct LostAnswer(MemoryLock);

#[async_trait]
impl Lock for LostAnswer {
    async fn acquire(&self, key: &str, token: &LockToken, ttl: Duration) -> Result<bool> {
        self.0.try_acquire(key, token, ttl);
        std::future::pending().await
    }
    async fn renew(&self, key: &str, token: &LockToken, ttl: Duration) -> Result<bool> {
        self.0.renew(key, token, ttl).await
    }
    async fn release(&self, key: &str, token: &LockToken) -> Result {
        self.0.release(key, token).await
    }
}

#[tokio::test]
async fn an_acquisition_whose_request_gave_up_is_deleted() {
    use tokio::io::AsyncWriteExt;
    let memory = MemoryLock::new();
    let server = common::start(lock_app(
        Arc::new(LostAnswer(memory.clone())),
        Duration::from_secs(600),
        Arc::default(),
    ))
    .await;
    let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    socket
        .write_all(b"GET /quick HTTP/1.1\r\nHost: t\r\nX-Account: gone\r\n\r\n")
        .await
        .unwrap();
    common::wait_for(|| memory.held() == 1).await;
    // The client gives up while the acquisition's answer is outstanding.
    drop(socket);
    common::wait_for(|| memory.held() == 0).await;
    server.stop().await;
}

/// `GET <path>` with `x-account: <account>`: status, category, and how long it took.
async fn timed(server: &common::Running, path: &str, account: &str) -> (u16, Value, Duration) {
    let start = Instant::now();
    let res = common::browser()
        .get(server.url(path))
        .header("x-account", account)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let body = res.json().await.unwrap_or(Value::Null);
    (status, body["category"].clone(), start.elapsed())
}

#[tokio::test]
#[cfg_attr(
    no_test_redis,
    ignore = "needs redis-server: set TEST_REDIS_URL (the test starts its own server)"
)]
async fn paused_redis_costs_one_deadline_and_leaves_no_lock() {
    let server = tokio::task::spawn_blocking(RedisServer::start)
        .await
        .unwrap();
    let redis = RedisConnection::connect(&server.url(), fast_policy())
        .await
        .unwrap();
    // A lock that would stay a minute if nobody deleted it.
    let locked = common::start(lock_app(
        Arc::new(RedisLock::new(redis.clone(), "lock:")),
        Duration::from_secs(60),
        Arc::default(),
    ))
    .await;
    let sessions = common::start(
        App::bare()
            .use_middleware(ErrorHandler::default())
            .use_middleware(Responder::default())
            .use_middleware(SessionMiddleware::new(
                Arc::new(RedisStore::new(redis.clone(), "s:")),
                SessionConfig::default(),
            ))
            .get("/quick", |_ctx: &mut Context| async { Ok("done") })
            .build()
            .unwrap(),
    )
    .await;
    assert_eq!(timed(&locked, "/quick", "p").await.0, 200);

    server.pause();
    // The first request waits out one command deadline (300 ms), the next ones nothing; each
    // failure carries its component's category.
    let (status, category, first) = timed(&locked, "/quick", "p").await;
    assert_eq!(
        (status, category.as_str()),
        (500, Some("framework-concurrent-limiter"))
    );
    let (status, category, next) = timed(&locked, "/quick", "p").await;
    assert_eq!(
        (status, category.as_str()),
        (500, Some("framework-concurrent-limiter"))
    );
    // A session cookie makes the session middleware load from Redis.
    let (status, category, session) = {
        let start = Instant::now();
        let res = common::browser()
            .get(sessions.url("/quick"))
            .header("cookie", "sid=AAAAAAAAAAAAAAAAAAAAAA")
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        let body: Value = res.json().await.unwrap();
        (status, body["category"].clone(), start.elapsed())
    };
    assert_eq!(
        (status, category.as_str()),
        (500, Some("framework-session"))
    );
    println!("paused: first {first:?}, next {next:?}, session {session:?}");
    assert!(first < Duration::from_millis(900), "{first:?}");
    assert!(next < Duration::from_millis(100), "{next:?}");
    assert!(session < Duration::from_millis(100), "{session:?}");

    // Back: the acquisition that Redis ran after the pause is deleted by its token, so the
    // account is not refused for the lock's minute.
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.resume();
    let start = Instant::now();
    loop {
        let (status, _, _) = timed(&locked, "/quick", "p").await;
        if status == 200 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "still {status} {:?} after the resume",
            start.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "resumed: the account submits again after {:?}",
        start.elapsed()
    );
    let keys: Vec<String> = redis
        .query(
            &framework::redis_connection::redis::cmd("KEYS")
                .arg("lock:*")
                .clone(),
        )
        .await
        .unwrap();
    assert!(keys.is_empty(), "{keys:?}");
    locked.stop().await;
    sessions.stop().await;
    drop(server);
}

#[tokio::test]
async fn failed_login_count_store_failure_has_its_category() {
    struct Broken;
    #[async_trait]
    impl AttemptStore for Broken {
        async fn count(&self, _key: &str) -> Result<Option<(u32, Duration)>> {
            Err(framework::Error::msg("timed out"))
        }
        async fn record(&self, _key: &str, _window: Duration) -> Result {
            Err(framework::Error::msg("timed out"))
        }
        async fn clear(&self, _key: &str) -> Result {
            Err(framework::Error::msg("timed out"))
        }
    }
    let stores = Stores {
        attempts: Arc::new(Broken),
        ..Stores::in_memory()
    };
    let server = common::start(user_service::build(&Config::default(), stores).unwrap()).await;
    let client = common::browser();
    let digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    let res = client
        .post(server.url("/users/v1/login"))
        .json(&json!({"account": "alice", "password": digest}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 500);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["category"], "user-login-throttle");
    assert_eq!(body["exception"], true);
    server.stop().await;
}

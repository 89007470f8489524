//! The rate limiter over real sockets: the budget per key with its headers, the refill, the
//! bounded key table, a failing store that lets requests through, and the Redis store shared
//! by two instances.

mod common;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use common::backends::TestRedis;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::rate_limiter::{
    Decision, MemoryRateStore, RateLimiter, RateLimiterConfig, RateQuota, RateStore, RedisRateStore,
};
use framework::middleware::responder::Responder;
use framework::{App, Context, HttpError, Result, Service};
use serde_json::Value;

fn app(config: RateLimiterConfig) -> Service {
    App::bare()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(RateLimiter::new(config).expect("valid keys"))
        .get("/", |_ctx: &mut Context| async { Ok("ok") })
        .build()
        .expect("app builds")
}

async fn get(client: &reqwest::Client, url: &str, who: Option<&str>) -> reqwest::Response {
    let mut request = client.get(url);
    if let Some(who) = who {
        request = request.header("x-client", who);
    }
    request.send().await.expect("request")
}

fn header(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .map(|v| v.to_str().expect("ascii").to_owned())
}

fn quota(burst: u32, period: Duration) -> RateQuota {
    RateQuota::new(burst, period).expect("valid quota")
}

#[tokio::test]
async fn a_key_gets_its_burst_then_429_with_retry_after_and_ratelimit_headers() {
    let store = MemoryRateStore::new(quota(3, Duration::from_secs(60)));
    let server = common::start(app(RateLimiterConfig::new(["h:x-client"], store))).await;
    let client = common::browser();
    let url = server.url("/");
    for left in ["2", "1", "0"] {
        let response = get(&client, &url, Some("alice")).await;
        assert_eq!(response.status(), 200);
        assert_eq!(header(&response, "ratelimit-limit").as_deref(), Some("3"));
        assert_eq!(
            header(&response, "ratelimit-remaining").as_deref(),
            Some(left)
        );
        let reset: u64 = header(&response, "ratelimit-reset")
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=60).contains(&reset), "reset {reset}");
    }
    let refused = get(&client, &url, Some("alice")).await;
    assert_eq!(refused.status(), 429);
    let retry: u64 = header(&refused, "retry-after").unwrap().parse().unwrap();
    assert!(
        (1..=20).contains(&retry),
        "one request refills in 20 s, retry after {retry}"
    );
    assert_eq!(
        header(&refused, "ratelimit-remaining").as_deref(),
        Some("0")
    );
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["category"], "framework-rate-limiter");
    assert_eq!(body["message"], "too many requests");
    // Another key has its own budget.
    assert_eq!(get(&client, &url, Some("bob")).await.status(), 200);
    // No key: 400 naming the key form.
    let missing = get(&client, &url, None).await;
    assert_eq!(missing.status(), 400);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["message"], "h:x-client is required");
    assert_eq!(body["category"], "framework-rate-limiter");
    server.stop().await;
}

#[tokio::test]
async fn the_budget_refills_after_retry_after() {
    let store = MemoryRateStore::new(quota(1, Duration::from_secs(1)));
    let server = common::start(app(RateLimiterConfig::new([":ip"], store))).await;
    let client = common::browser();
    let url = server.url("/");
    assert_eq!(get(&client, &url, None).await.status(), 200);
    let refused = get(&client, &url, None).await;
    assert_eq!(refused.status(), 429);
    assert_eq!(header(&refused, "retry-after").as_deref(), Some("1"));
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(get(&client, &url, None).await.status(), 200, "refilled");
    server.stop().await;
}

#[tokio::test]
async fn headers_can_be_turned_off_and_allow_empty_counts_a_missing_key() {
    let store = MemoryRateStore::new(quota(1, Duration::from_secs(60)));
    let mut config = RateLimiterConfig::new(["h:x-client"], store);
    config.headers = false;
    config.allow_empty = true;
    let server = common::start(app(config)).await;
    let client = common::browser();
    let url = server.url("/");
    let first = get(&client, &url, None).await;
    assert_eq!(first.status(), 200);
    assert_eq!(header(&first, "ratelimit-limit"), None);
    let second = get(&client, &url, None).await;
    assert_eq!(second.status(), 429, "the empty key has one budget");
    assert!(
        header(&second, "retry-after").is_some(),
        "Retry-After is always sent"
    );
    server.stop().await;
}

#[tokio::test]
async fn the_key_table_stays_within_its_bound_and_idle_keys_are_dropped() {
    // Through HTTP: 3 000 distinct keys against a table of 1 000.
    let store = Arc::new(MemoryRateStore::with_max_keys(
        quota(1, Duration::from_secs(1)),
        1_000,
    ));
    let server = common::start(app(RateLimiterConfig::new(["h:x-client"], store.clone()))).await;
    let client = common::browser();
    let url = server.url("/");
    // A key in the table is limited.
    assert_eq!(get(&client, &url, Some("first")).await.status(), 200);
    assert_eq!(get(&client, &url, Some("first")).await.status(), 429);
    for i in 0..3_000 {
        let response = get(&client, &url, Some(&format!("client-{i}"))).await;
        assert_eq!(
            response.status(),
            200,
            "a new key is let through (fail open)"
        );
        assert!(store.len() <= 1_000, "{} keys", store.len());
    }
    // A key is dropped two refill intervals after its last request; sweeps run at most once a
    // second, from the request that finds one due.
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    assert_eq!(get(&client, &url, Some("late")).await.status(), 200);
    assert_eq!(store.len(), 1, "idle keys were swept");
    server.stop().await;

    // Directly on the store: 300 000 distinct keys in three waves stay at the default bound,
    // and the table empties once they are idle.
    let store = MemoryRateStore::new(quota(1, Duration::from_millis(200)));
    for wave in 0..3 {
        for i in 0..100_000 {
            store.check(format!("{wave}-{i}")).await.unwrap();
        }
        assert!(store.len() <= 100_000, "wave {wave}: {} keys", store.len());
        tokio::time::sleep(Duration::from_millis(1_050)).await;
    }
    store.check("last".into()).await.unwrap();
    assert_eq!(store.len(), 1, "idle keys were swept");
}

/// A store that always fails, as Redis does when it is down.
struct Broken;

#[async_trait]
impl RateStore for Broken {
    async fn check(&self, _key: String) -> Result<Decision> {
        Err(HttpError::new("store down").into())
    }
}

#[tokio::test]
async fn a_failing_store_lets_requests_through() {
    let server = common::start(app(RateLimiterConfig::new([":ip"], Broken))).await;
    let client = common::browser();
    for _ in 0..5 {
        let response = get(&client, &server.url("/"), None).await;
        assert_eq!(response.status(), 200);
        assert_eq!(header(&response, "ratelimit-limit"), None);
    }
    server.stop().await;
}

/// The Redis store on a `redis-server` of this test's own: killed, then paused, the limiter
/// lets requests through (fail open) within the Redis deadlines (a command's 1 s and one
/// retry's), without its headers; once Redis is back the budget holds again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_test_redis, ignore = "needs redis-server: set TEST_REDIS_URL")]
async fn the_redis_store_fails_open_when_redis_is_killed_or_paused() {
    use common::backends::RedisServer;
    let redis = std::sync::Arc::new(std::sync::Mutex::new(
        tokio::task::spawn_blocking(RedisServer::start)
            .await
            .unwrap(),
    ));
    let url = redis.lock().unwrap().url();
    let store = RedisRateStore::connect(&url, quota(2, Duration::from_secs(60)))
        .await
        .expect("redis");
    let server = common::start(app(RateLimiterConfig::new(["h:x-client"], store))).await;
    let client = common::browser();
    let url = server.url("/");
    let act = |f: fn(&mut RedisServer)| {
        let redis = std::sync::Arc::clone(&redis);
        tokio::task::spawn_blocking(move || f(&mut redis.lock().unwrap()))
    };
    // Limited while Redis answers.
    let limited = |who: &'static str| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            let mut statuses = Vec::new();
            for _ in 0..3 {
                statuses.push(get(&client, &url, Some(who)).await.status().as_u16());
            }
            statuses
        }
    };
    assert_eq!(limited("before").await, [200, 200, 429]);
    for (fault, broken, mended) in [
        (
            "killed",
            RedisServer::kill as fn(&mut RedisServer),
            RedisServer::restart as fn(&mut RedisServer),
        ),
        ("paused", |r| r.pause(), |r| r.resume()),
    ] {
        act(broken).await.unwrap();
        for i in 0..5 {
            let started = std::time::Instant::now();
            let response = get(&client, &url, Some("during")).await;
            let took = started.elapsed();
            assert_eq!(
                response.status(),
                200,
                "Redis {fault}: request {i} let through"
            );
            assert_eq!(header(&response, "ratelimit-limit"), None, "{fault}");
            assert!(
                took < Duration::from_millis(2_500),
                "Redis {fault}: took {took:?}"
            );
        }
        act(mended).await.unwrap();
        // Back within a probe (at most a second apart): the budget holds again.
        let key: &'static str = if fault == "killed" {
            "after-kill"
        } else {
            "after-pause"
        };
        let mut back = false;
        for _ in 0..40 {
            if get(&client, &url, Some(key)).await.status() == 429 {
                back = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(back, "Redis {fault}: the budget did not come back");
    }
    server.stop().await;
}

#[tokio::test]
#[cfg_attr(
    no_test_redis,
    ignore = "needs Redis: set TEST_REDIS_URL=redis://127.0.0.1:6379"
)]
async fn the_redis_store_is_one_budget_for_two_instances() {
    the_redis_store_is_one_budget_for_two_instances_on(TestRedis::server()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    no_test_redis,
    ignore = "needs redis-server and redis-cli: set TEST_REDIS_URL"
)]
async fn the_redis_store_is_one_budget_for_two_instances_on_a_cluster() {
    the_redis_store_is_one_budget_for_two_instances_on(TestRedis::cluster().await).await;
}

async fn the_redis_store_is_one_budget_for_two_instances_on(backend: TestRedis) {
    let url = backend.url();
    let prefix = common::unique("test-rate-") + ":";
    let q = quota(4, Duration::from_secs(60));
    let store = |prefix: String| {
        let url = url.clone();
        async move {
            RedisRateStore::connect(&url, q)
                .await
                .expect("redis")
                .with_prefix(prefix)
        }
    };
    let a = common::start(app(RateLimiterConfig::new(
        ["h:x-client"],
        store(prefix.clone()).await,
    )))
    .await;
    let b = common::start(app(RateLimiterConfig::new(
        ["h:x-client"],
        store(prefix.clone()).await,
    )))
    .await;
    let client = common::browser();
    let mut remaining = Vec::new();
    for server in [&a, &b, &a, &b] {
        let response = get(&client, &server.url("/"), Some("carol")).await;
        assert_eq!(response.status(), 200);
        remaining.push(header(&response, "ratelimit-remaining").unwrap());
    }
    assert_eq!(
        remaining,
        ["3", "2", "1", "0"],
        "one budget across instances"
    );
    for server in [&a, &b] {
        let refused = get(&client, &server.url("/"), Some("carol")).await;
        assert_eq!(refused.status(), 429);
        let retry: u64 = header(&refused, "retry-after").unwrap().parse().unwrap();
        assert!(
            (1..=15).contains(&retry),
            "one request refills in 15 s, retry after {retry}"
        );
    }
    assert_eq!(get(&client, &b.url("/"), Some("dave")).await.status(), 200);

    // The key expires when its bucket would be full again (at most the period).
    let ttl: i64 = backend
        .connection()
        .await
        .query(redis::cmd("PTTL").arg(format!("{prefix}carol")))
        .await
        .unwrap();
    assert!((1..=60_000).contains(&ttl), "pttl {ttl}");

    // Another prefix is another budget.
    let other = common::start(app(RateLimiterConfig::new(
        ["h:x-client"],
        store(common::unique("test-rate-") + ":").await,
    )))
    .await;
    assert_eq!(
        get(&client, &other.url("/"), Some("carol")).await.status(),
        200
    );
    for server in [a, b, other] {
        server.stop().await;
    }
}

/// The user service with `token_rate` and `login_rate`, one proxy hop trusted so the test can
/// play several client IPs through `X-Forwarded-For`.
fn user_config(token: &str, login: &str) -> user_service::Config {
    user_service::Config {
        trust_proxy: framework::client_ip::TrustedProxies::Hops(1),
        token_rate: user_service::config::parse_rate(token).unwrap(),
        login_rate: user_service::config::parse_rate(login).unwrap(),
        ..user_service::Config::default()
    }
}

async fn token(client: &reqwest::Client, at: &common::Running, ip: &str) -> reqwest::Response {
    client
        .get(at.url("/users/v1/login"))
        .header("x-forwarded-for", ip)
        .send()
        .await
        .expect("request")
}

#[tokio::test]
async fn the_user_service_limits_tokens_and_logins_per_client_ip() {
    let config = user_config("3/1m", "2/1m");
    let service = user_service::build(&config, user_service::Stores::in_memory()).unwrap();
    let server = common::start(service).await;
    let client = common::browser();
    for _ in 0..3 {
        assert_eq!(token(&client, &server, "203.0.113.7").await.status(), 200);
    }
    let refused = token(&client, &server, "203.0.113.7").await;
    assert_eq!(refused.status(), 429);
    let retry: u64 = header(&refused, "retry-after").unwrap().parse().unwrap();
    assert!((1..=20).contains(&retry), "retry after {retry}");
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["category"], "framework-rate-limiter");
    // Another client IP has its own budget; the proxy's own address is not the key.
    assert_eq!(token(&client, &server, "198.51.100.1").await.status(), 200);

    // Logins: every attempt counts, right or wrong.
    let login = |ip: &'static str| {
        client
            .post(server.url("/users/v1/login"))
            .header("x-forwarded-for", ip)
            .json(&serde_json::json!({"account": "nobody", "password": "0".repeat(64)}))
            .send()
    };
    for _ in 0..2 {
        assert_eq!(login("203.0.113.9").await.unwrap().status(), 400);
    }
    let refused = login("203.0.113.9").await.unwrap();
    assert_eq!(refused.status(), 429);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["category"], "framework-rate-limiter");
    assert_eq!(login("198.51.100.2").await.unwrap().status(), 400);
    server.stop().await;
}

#[tokio::test]
async fn the_user_service_limits_can_be_turned_off() {
    let config = user_config("off", "off");
    let service = user_service::build(&config, user_service::Stores::in_memory()).unwrap();
    let server = common::start(service).await;
    let client = common::browser();
    for _ in 0..100 {
        let response = token(&client, &server, "203.0.113.7").await;
        assert_eq!(response.status(), 200);
        assert_eq!(header(&response, "ratelimit-limit"), None);
    }
    server.stop().await;
}

#[tokio::test]
#[cfg_attr(
    no_test_redis,
    ignore = "needs Redis: set TEST_REDIS_URL=redis://127.0.0.1:6379"
)]
async fn user_service_instances_share_the_token_budget_in_redis() {
    user_service_instances_share_the_token_budget_on(TestRedis::server()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    no_test_redis,
    ignore = "needs redis-server and redis-cli: set TEST_REDIS_URL"
)]
async fn user_service_instances_share_the_token_budget_on_a_cluster() {
    user_service_instances_share_the_token_budget_on(TestRedis::cluster().await).await;
}

async fn user_service_instances_share_the_token_budget_on(backend: TestRedis) {
    let prefix = common::unique("test-rate-svc-") + ":";
    let config = user_service::Config {
        database_url: "memory".into(),
        redis_url: Some(backend.url()),
        session_key_prefix: prefix.clone(),
        ..user_config("4/1m", "off")
    };
    let mut servers = Vec::new();
    for _ in 0..2 {
        let stores = user_service::Stores::connect(&config)
            .await
            .expect("stores");
        servers.push(common::start(user_service::build(&config, stores).unwrap()).await);
    }
    let client = common::browser();
    for i in 0..4 {
        let response = token(&client, &servers[i % 2], "203.0.113.50").await;
        assert_eq!(response.status(), 200, "token {i}");
    }
    for server in &servers {
        assert_eq!(token(&client, server, "203.0.113.50").await.status(), 429);
    }
    for server in servers {
        server.stop().await;
    }
    backend.remove_keys(&prefix).await;
}

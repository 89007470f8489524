//! Persistent stores and scale-out: SQLite across a restart, two instances sharing PostgreSQL
//! and Redis, a registration race, a Redis outage, and fail-fast start-up.
//!
//! The PostgreSQL and Redis tests read `TEST_DATABASE_URL` and `TEST_REDIS_URL` (`.ci/run`
//! sets both) and print that they were skipped when those are unset. Each test works in its
//! own PostgreSQL schema and Redis key prefix, and removes them at the end. The Redis tests run
//! twice: on that server and on a three-master Redis Cluster of their own.

mod common;
/// Links the user service into this test only: its controllers register themselves.
#[path = "common/userflow.rs"]
mod userflow;

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use user_service::{Config, Stores};

use userflow::{Browser, PgSchema, sha256_hex, start, test_key};

use common::backends::TestRedis;
use common::proxy::Switch;
use framework::redis_connection::{RedisConnection, RedisPolicy};

/// `framework_store_errors_total{category="user-store"}` from the service's `/metrics`.
async fn user_store_errors(server: &common::Running) -> u64 {
    let text = reqwest::get(server.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(r#"framework_store_errors_total{category="user-store"} "#))
        .map_or(0, |n| n.parse().unwrap())
}

/// `/readyz`'s status once it is `want`, or its last status after 5 s. Its checks run at most
/// once a second (probes in between get the last report) and each within 1 s, so a change
/// shows within about 2 s.
async fn readiness(server: &common::Running, want: StatusCode) -> StatusCode {
    let mut status = StatusCode::OK;
    for _ in 0..25 {
        status = reqwest::get(server.url("/readyz")).await.unwrap().status();
        if status == want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    status
}

/// `/livez`'s status.
async fn liveness(server: &common::Running) -> StatusCode {
    reqwest::get(server.url("/livez")).await.unwrap().status()
}

#[tokio::test]
async fn sqlite_keeps_users_across_a_restart() {
    let path = std::env::temp_dir().join(format!("{}.db", common::unique("users-")));
    let config = Config {
        database_url: format!("sqlite://{}?mode=rwc", path.display()),
        ..Config::default()
    };
    let digest = sha256_hex("pw");

    let first = start(&config).await;
    let mut browser = Browser::default();
    assert_eq!(
        browser.register(&first, "sam", &digest).await,
        StatusCode::CREATED
    );
    first.stop().await;

    let second = start(&config).await;
    let mut browser = Browser::default();
    assert_eq!(
        browser.register(&second, "sam", &digest).await,
        StatusCode::CONFLICT
    );
    // Unique ignoring case, in SQL too.
    assert_eq!(
        browser.register(&second, "SAM", &digest).await,
        StatusCode::CONFLICT
    );
    let token = browser.token(&second).await;
    let (status, body) = browser
        .login(&second, "Sam", &sha256_hex(&format!("{digest}{token}")))
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!({"account": "sam"})));
    second.stop().await;

    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

fn shared_config(schema: &PgSchema, redis_url: &str, prefix: &str) -> Config {
    Config {
        database_url: schema.url.clone(),
        store_key: Some(test_key()),
        redis_url: Some(redis_url.to_owned()),
        session_key_prefix: prefix.to_owned(),
        ..Config::default()
    }
}

/// Two instances sharing a fresh PostgreSQL schema and a Redis key prefix, on the machine's
/// Redis server or on a cluster.
struct Pair {
    a: common::Running,
    b: common::Running,
    schema: PgSchema,
    backend: TestRedis,
    prefix: String,
}

impl Pair {
    async fn start(backend: TestRedis) -> Self {
        let db = common::store_url("TEST_DATABASE_URL");
        let schema = PgSchema::create(&db).await;
        let prefix = common::unique("test:") + ":session:";
        let config = shared_config(&schema, &backend.url(), &prefix);
        let (a, b) = (start(&config).await, start(&config).await);
        Self {
            a,
            b,
            schema,
            backend,
            prefix,
        }
    }

    /// Stops both instances and removes the schema and the keys.
    async fn stop(self) {
        self.a.stop().await;
        self.b.stop().await;
        self.schema.drop_schema().await;
        self.backend.remove_keys(&self.prefix).await;
    }
}

#[tokio::test]
#[cfg_attr(
    any(no_test_database, no_test_redis),
    ignore = "needs PostgreSQL and Redis: set TEST_DATABASE_URL and TEST_REDIS_URL"
)]
async fn two_instances_act_as_one_service() {
    two_instances_act_as_one_service_on(TestRedis::server()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    any(no_test_database, no_test_redis),
    ignore = "needs PostgreSQL, redis-server and redis-cli: set TEST_DATABASE_URL and TEST_REDIS_URL"
)]
async fn two_instances_act_as_one_service_on_a_cluster() {
    two_instances_act_as_one_service_on(TestRedis::cluster().await).await;
}

async fn two_instances_act_as_one_service_on(backend: TestRedis) {
    let pair = Pair::start(backend).await;
    let (a, b) = (&pair.a, &pair.b);

    let digest = sha256_hex("pw");
    let mut browser = Browser::default();
    assert_eq!(
        browser.register(a, "tess", &digest).await,
        StatusCode::CREATED
    );
    assert_eq!(
        browser.register(b, "tess", &digest).await,
        StatusCode::CONFLICT
    );
    // PostgreSQL: unique ignoring case as well.
    assert_eq!(
        browser.register(b, "Tess", &digest).await,
        StatusCode::CONFLICT
    );
    let token = browser.token(a).await;
    let (status, _) = browser
        .login(b, "tess", &sha256_hex(&format!("{digest}{token}")))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        browser.me(a).await,
        (StatusCode::OK, json!({"name": "tess"}))
    );
    assert_eq!(
        browser.me(b).await,
        (StatusCode::OK, json!({"name": "tess"}))
    );

    pair.stop().await;
}

#[tokio::test]
#[cfg_attr(
    any(no_test_database, no_test_redis),
    ignore = "needs PostgreSQL and Redis: set TEST_DATABASE_URL and TEST_REDIS_URL"
)]
async fn concurrent_registrations_race_to_exactly_one_winner_each() {
    concurrent_registrations_race_to_exactly_one_winner_each_on(TestRedis::server()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    any(no_test_database, no_test_redis),
    ignore = "needs PostgreSQL, redis-server and redis-cli: set TEST_DATABASE_URL and TEST_REDIS_URL"
)]
async fn concurrent_registrations_race_to_exactly_one_winner_each_on_a_cluster() {
    concurrent_registrations_race_to_exactly_one_winner_each_on(TestRedis::cluster().await).await;
}

async fn concurrent_registrations_race_to_exactly_one_winner_each_on(backend: TestRedis) {
    let pair = Pair::start(backend).await;
    let (a, b) = (&pair.a, &pair.b);
    let urls = [a.url("/users/v1/me"), b.url("/users/v1/me")];
    let http = reqwest::Client::new();
    let digest = sha256_hex("pw");

    let mut tasks = Vec::new();
    for i in 0..200usize {
        // The two requests for one account go to different instances.
        let url = urls[(i + i / 100) % 2].clone();
        let body = json!({"account": format!("racer{}", i % 100), "password": digest});
        let http = http.clone();
        tasks.push(tokio::spawn(async move {
            http.post(url).json(&body).send().await.map(|r| r.status())
        }));
    }
    // The second request for an account is refused either by the store (409, it exists) or,
    // when both arrive at the same moment, by the per-account submit lock shared in Redis
    // (429); never a second 201.
    let (mut created, mut refused, mut other) = (0, 0, Vec::new());
    for task in tasks {
        match task.await.unwrap() {
            Ok(StatusCode::CREATED) => created += 1,
            Ok(StatusCode::CONFLICT | StatusCode::TOO_MANY_REQUESTS) => refused += 1,
            unexpected => other.push(format!("{unexpected:?}")),
        }
    }
    assert_eq!((created, refused), (100, 100), "others: {other:?}");
    assert!(other.is_empty(), "{other:?}");
    assert_eq!(pair.schema.users().await, 100);

    pair.stop().await;
}

#[tokio::test]
#[cfg_attr(
    no_test_redis,
    ignore = "needs Redis: set TEST_REDIS_URL=redis://127.0.0.1:6379"
)]
async fn redis_outage_is_a_500_then_the_service_recovers_by_itself() {
    let redis_url = common::store_url("TEST_REDIS_URL");
    let upstream = redis_url
        .trim_start_matches("redis://")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .expect("TEST_REDIS_URL is redis://<ip>:<port>");
    let switch = Switch::start(upstream).await;
    let prefix = common::unique("test:") + ":session:";
    let config = Config {
        database_url: "memory".to_owned(),
        redis_url: Some(format!("redis://{}", switch.addr)),
        session_key_prefix: prefix.clone(),
        ..Config::default()
    };
    let server = start(&config).await;
    let digest = sha256_hex("pw");
    let mut browser = Browser::default();
    browser.register(&server, "rita", &digest).await;
    let token = browser.token(&server).await;

    assert_eq!(readiness(&server, StatusCode::OK).await, StatusCode::OK);

    switch.down();
    let (status, body) = browser.me(&server).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert_eq!(body["category"], "framework-session");
    assert_eq!(body["exception"], true);
    // Out of the balancer while its session store is down, but alive: no restart wanted.
    let unavailable = StatusCode::SERVICE_UNAVAILABLE;
    assert_eq!(readiness(&server, unavailable).await, unavailable);
    assert_eq!(liveness(&server).await, StatusCode::OK);

    switch.up();
    // The shared connection reconnects on its own (the probe); no restart. Bounded wait.
    let mut recovered = false;
    for _ in 0..50 {
        if browser.me(&server).await.0 == StatusCode::OK {
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(recovered, "the service did not recover within 10 s");
    assert_eq!(readiness(&server, StatusCode::OK).await, StatusCode::OK);
    // The session survived in Redis: the token taken before the outage still logs in.
    let (status, _) = browser
        .login(&server, "rita", &sha256_hex(&format!("{digest}{token}")))
        .await;
    assert_eq!(status, StatusCode::OK);

    server.stop().await;
    TestRedis::server().remove_keys(&prefix).await;
}

#[tokio::test]
async fn unreachable_stores_fail_fast_without_leaking_passwords() {
    let config = Config {
        database_url: "memory".to_owned(),
        redis_url: Some("redis://:hunter2@127.0.0.1:1".to_owned()),
        ..Config::default()
    };
    let err = Stores::connect(&config).await.err().expect("refused");
    assert!(
        err.starts_with("session store redis://:***@127.0.0.1:1 is not reachable"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");

    let config = Config {
        database_url: "postgres://app:hunter2@127.0.0.1:1/users".to_owned(),
        store_key: Some(test_key()),
        ..Config::default()
    };
    let err = tokio::time::timeout(Duration::from_secs(30), Stores::connect(&config))
        .await
        .expect("fails within the acquire timeout")
        .err()
        .expect("refused");
    assert!(
        err.starts_with("user store postgres://app:***@127.0.0.1:1/users is not usable"),
        "{err}"
    );
    assert!(err.contains("refused"), "says why: {err}");
    assert!(!err.contains("timed out"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");

    let malformed = Config {
        database_url: "memory".to_owned(),
        redis_url: Some("redis//:hunter2@nowhere".to_owned()),
        ..Config::default()
    };
    let err = Stores::connect(&malformed).await.err().expect("refused");
    assert!(err.contains("is malformed"), "{err}");
}

#[tokio::test]
#[cfg_attr(
    no_test_database,
    ignore = "needs PostgreSQL: set TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test"
)]
async fn an_unknown_postgres_database_is_named() {
    let db = common::store_url("TEST_DATABASE_URL");
    let (base, _) = db.rsplit_once('/').expect("url with a database");
    let config = Config {
        database_url: format!("{base}/no_such_database_here"),
        store_key: Some(test_key()),
        ..Config::default()
    };
    let started = std::time::Instant::now();
    let err = Stores::connect(&config).await.err().expect("refused");
    assert!(err.contains("does not exist"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "at once, not after the pool timeout"
    );
}

#[tokio::test]
#[cfg_attr(
    no_test_database,
    ignore = "needs PostgreSQL: set TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test"
)]
async fn postgres_outage_is_a_500_then_the_service_recovers_by_itself() {
    let db = common::store_url("TEST_DATABASE_URL");
    let schema = PgSchema::create(&db).await;
    // postgres://user@host:port/db?… with host:port replaced by the switch's address.
    let (scheme_user, rest) = schema.url.split_once('@').expect("url with user@host");
    let (host_port, tail) = rest.split_at(rest.find('/').expect("url with a database"));
    let switch = Switch::start(host_port.parse().expect("ip:port")).await;
    let config = Config {
        database_url: format!("{scheme_user}@{}{tail}", switch.addr),
        store_key: Some(test_key()),
        ..Config::default()
    };
    let server = start(&config).await;
    let digest = sha256_hex("pw");
    let mut browser = Browser::default();
    assert_eq!(
        browser.register(&server, "pia", &digest).await,
        StatusCode::CREATED
    );

    let errors_before = user_store_errors(&server).await;
    switch.down();
    let req = browser
        .http
        .post(server.url("/users/v1/me"))
        .json(&json!({"account": "pia2", "password": digest}));
    let (status, body) = browser.send(req).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert_eq!(
        body,
        json!({"statusCode": 500, "category": "user-store",
               "message": "user store is unavailable", "exception": true})
    );
    // The metrics count it by its category.
    assert!(user_store_errors(&server).await > errors_before);
    // Not ready while its user store is down, still alive.
    let unavailable = StatusCode::SERVICE_UNAVAILABLE;
    assert_eq!(readiness(&server, unavailable).await, unavailable);
    assert_eq!(liveness(&server).await, StatusCode::OK);

    switch.up();
    let mut status = StatusCode::INTERNAL_SERVER_ERROR;
    for _ in 0..50 {
        status = browser.register(&server, "pia2", &digest).await;
        if status != StatusCode::INTERNAL_SERVER_ERROR {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        status,
        StatusCode::CREATED,
        "the service did not recover within 10 s"
    );
    assert_eq!(readiness(&server, StatusCode::OK).await, StatusCode::OK);
    assert_eq!(schema.users().await, 2);

    server.stop().await;
    schema.drop_schema().await;
}

#[tokio::test]
#[cfg_attr(
    no_test_redis,
    ignore = "needs Redis: set TEST_REDIS_URL=redis://127.0.0.1:6379"
)]
async fn a_token_only_session_lives_ten_minutes_in_redis() {
    a_token_only_session_lives_ten_minutes_on(TestRedis::server()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    no_test_redis,
    ignore = "needs redis-server and redis-cli: set TEST_REDIS_URL"
)]
async fn a_token_only_session_lives_ten_minutes_on_a_cluster() {
    a_token_only_session_lives_ten_minutes_on(TestRedis::cluster().await).await;
}

async fn a_token_only_session_lives_ten_minutes_on(backend: TestRedis) {
    let redis_url = backend.url();
    let prefix = common::unique("ttl-") + ":";
    let config = Config {
        database_url: "memory".into(),
        redis_url: Some(redis_url.clone()),
        session_key_prefix: prefix.clone(),
        ..Config::default()
    };
    let server = start(&config).await;
    let conn = RedisConnection::connect(&redis_url, RedisPolicy::default())
        .await
        .unwrap();
    let ttl_of =
        async |key: String| -> i64 { conn.query(redis::cmd("PTTL").arg(key)).await.unwrap() };
    let mut browser = Browser::default();
    let digest = sha256_hex("pw");
    assert_eq!(
        browser.register(&server, "tina", &digest).await,
        StatusCode::CREATED
    );
    let token = browser.token(&server).await;
    let sid = browser.sid.clone().expect("a session cookie");
    let id = sid.trim_start_matches("sid=");
    let pttl = ttl_of(format!("{prefix}{id}")).await;
    assert!((1..=600_000).contains(&pttl), "token session TTL {pttl} ms");
    let (status, _) = browser
        .login(&server, "tina", &sha256_hex(&format!("{digest}{token}")))
        .await;
    assert_eq!(status, StatusCode::OK);
    let sid = browser.sid.clone().expect("a new session cookie");
    let pttl = ttl_of(format!("{prefix}{}", sid.trim_start_matches("sid="))).await;
    assert!(pttl > 600_000, "logged-in session TTL {pttl} ms");
    server.stop().await;
    backend.remove_keys(&prefix).await;
}

#[tokio::test]
#[cfg_attr(
    no_test_redis,
    ignore = "needs Redis: set TEST_REDIS_URL=redis://127.0.0.1:6379"
)]
async fn failed_logins_are_counted_across_instances_in_redis() {
    failed_logins_are_counted_across_instances_on(TestRedis::server()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    no_test_redis,
    ignore = "needs redis-server and redis-cli: set TEST_REDIS_URL"
)]
async fn failed_logins_are_counted_across_instances_on_a_cluster() {
    failed_logins_are_counted_across_instances_on(TestRedis::cluster().await).await;
}

/// The failed-login counters (per account and per IP) live in Redis when it is configured.
async fn failed_logins_are_counted_across_instances_on(backend: TestRedis) {
    let prefix = common::unique("throttle-") + ":";
    let config = Config {
        database_url: "memory".into(),
        redis_url: Some(backend.url()),
        session_key_prefix: prefix.clone(),
        login_limits: user_service::throttle::LoginLimits {
            per_account: 2,
            per_ip: 100,
            window: Duration::from_secs(60),
        },
        ..Config::default()
    };
    let a = start(&config).await;
    let b = start(&config).await;
    let mut browser = Browser::default();
    let wrong = sha256_hex("wrong");
    for server in [&a, &b] {
        browser.token(server).await;
        let (status, _) = browser.login(server, "shared", &wrong).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
    }
    // Two failures, one on each instance: the account is over the limit on both.
    for server in [&a, &b] {
        browser.token(server).await;
        let (status, body) = browser.login(server, "shared", &wrong).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    }
    a.stop().await;
    b.stop().await;
    backend.remove_keys(&prefix).await;
}

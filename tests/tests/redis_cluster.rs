//! Every Redis-backed store on a Redis Cluster of the test's own (three masters started here
//! with `redis-server --cluster-enabled yes` and joined with `redis-cli --cluster create`),
//! named by its nodes' URLs separated by commas: sessions, cache entries, lock keys, rate
//! budgets, failed-login counters and WebSocket fan-out; then two user-service instances on the
//! cluster pass the user flow while a thousand slots move between masters under a load of
//! logins, and no session is lost. (The Redis tests of `stores.rs`, `cache.rs`, `limiters.rs`,
//! `rate_limit.rs`, `store_faults.rs`, `submit_once.rs` and `websocket.rs` also run on a
//! cluster of their own.)

mod common;
/// Links the user service into this test only: its controllers register themselves.
#[path = "common/userflow.rs"]
mod userflow;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use common::backends::RedisCluster;
use framework::middleware::cache::{CacheStore, RedisCacheStore};
use framework::middleware::concurrent_limiter::{Lock, LockToken, RedisLock};
use framework::middleware::rate_limiter::{RateQuota, RateStore, RedisRateStore};
use framework::middleware::session::{RedisStore, SessionStore};
use framework::redis_connection::{RedisConnection, RedisFailure, RedisPolicy};
use framework::ws::Broadcast;
use reqwest::StatusCode;
use user_service::Config;
use user_service::throttle::{AttemptStore, RedisAttempts};
use userflow::{Browser, PgSchema, proof, sha256_hex, start, test_key};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    no_test_redis,
    ignore = "needs redis-server and redis-cli: set TEST_REDIS_URL"
)]
async fn every_store_works_on_a_cluster() {
    let cluster = RedisCluster::start_async(3).await;
    let redis = RedisConnection::connect(&cluster.url(), RedisPolicy::default())
        .await
        .expect("the cluster");

    // Sessions: 100 ids spread over the slots of all three masters.
    let sessions = RedisStore::new(redis.clone(), "session:");
    for i in 0..100 {
        let id = format!("id-{i}");
        sessions
            .save(
                &id,
                format!("{{\"n\":{i}}}").as_bytes(),
                Duration::from_secs(60),
            )
            .await
            .unwrap();
    }
    for i in 0..100 {
        let record = sessions.load(&format!("id-{i}")).await.unwrap();
        assert_eq!(record.as_deref(), Some(format!("{{\"n\":{i}}}").as_bytes()));
    }
    sessions.destroy("id-7").await.unwrap();
    assert_eq!(sessions.load("id-7").await.unwrap(), None);
    let spread: Vec<usize> = (0..3)
        .map(|i| cluster.cli(i, &["dbsize"]).trim().parse::<usize>().unwrap())
        .collect();
    assert!(
        spread.iter().all(|n| *n > 10),
        "keys on every master: {spread:?}"
    );

    // Cache entries.
    let cache = RedisCacheStore::new(redis.clone(), "cache:");
    for i in 0..20 {
        let key = format!("GET /page/{i}");
        cache
            .set(
                &key,
                Bytes::from(format!("page {i}")),
                Duration::from_secs(60),
            )
            .await
            .unwrap();
        assert_eq!(
            cache.get(&key).await.unwrap(),
            Some(Bytes::from(format!("page {i}")))
        );
    }

    // Locks: the owner's token decides, wherever the key's slot is.
    let locks = RedisLock::new(redis.clone(), "lock:");
    for i in 0..20 {
        let key = format!("account-{i}");
        let (first, second) = (LockToken::new(), LockToken::new());
        assert!(
            locks
                .acquire(&key, &first, Duration::from_secs(5))
                .await
                .unwrap()
        );
        assert!(
            !locks
                .acquire(&key, &second, Duration::from_secs(5))
                .await
                .unwrap()
        );
        assert!(
            locks
                .renew(&key, &first, Duration::from_secs(5))
                .await
                .unwrap()
        );
        locks.release(&key, &second).await.unwrap();
        assert!(
            !locks
                .acquire(&key, &second, Duration::from_secs(5))
                .await
                .unwrap()
        );
        locks.release(&key, &first).await.unwrap();
        assert!(
            locks
                .acquire(&key, &second, Duration::from_secs(5))
                .await
                .unwrap()
        );
    }

    // Rate budgets: a burst of 2 per key, for keys on every master.
    let quota = RateQuota::new(2, Duration::from_secs(60)).unwrap();
    let rates = RedisRateStore::new(redis.clone(), quota).with_prefix("rate:");
    for i in 0..20 {
        let key = format!("10.0.0.{i}");
        assert!(rates.check(key.clone()).await.unwrap().allowed);
        assert!(rates.check(key.clone()).await.unwrap().allowed);
        assert!(!rates.check(key).await.unwrap().allowed);
    }

    // Failed-login counters: counted, with their window, and cleared, on every master.
    let attempts = RedisAttempts::new(redis.clone(), "login:");
    for i in 0..20 {
        let key = format!("account:user{i}");
        assert_eq!(attempts.count(&key).await.unwrap(), None);
        attempts
            .record(&key, Duration::from_secs(60))
            .await
            .unwrap();
        attempts
            .record(&key, Duration::from_secs(60))
            .await
            .unwrap();
        let (n, left) = attempts.count(&key).await.unwrap().expect("counted");
        assert_eq!(n, 2);
        assert!(
            left <= Duration::from_secs(60) && left > Duration::ZERO,
            "{left:?}"
        );
        attempts.clear(&key).await.unwrap();
        assert_eq!(attempts.count(&key).await.unwrap(), None);
    }

    // WebSocket fan-out: published through one connection, received through another.
    let other = RedisConnection::connect(&cluster.url(), RedisPolicy::default())
        .await
        .unwrap();
    let a = Broadcast::redis(redis.clone(), "chat", 16).await.unwrap();
    let b = Broadcast::redis(other, "chat", 16).await.unwrap();
    let mut received = b.subscribe();
    a.publish("hello over the cluster").await.unwrap();
    let message = tokio::time::timeout(Duration::from_secs(5), received.recv())
        .await
        .expect("delivered")
        .unwrap();
    assert_eq!(message, Bytes::from("hello over the cluster"));
}

/// A browser that registered `account` on `a`, got its token on `a` and logged in on `b`.
async fn registered_and_logged_in(
    a: &common::Running,
    b: &common::Running,
    account: String,
    digest: &str,
) -> (String, Browser) {
    let mut browser = Browser::default();
    assert_eq!(
        browser.register(a, &account, digest).await,
        StatusCode::CREATED
    );
    let token = browser.token(a).await;
    let (status, body) = browser.login(b, &account, &proof(digest, &token)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    (account, browser)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    any(no_test_database, no_test_redis),
    ignore = "needs PostgreSQL, redis-server and redis-cli: set TEST_DATABASE_URL and TEST_REDIS_URL"
)]
async fn two_instances_on_a_cluster_keep_every_session_while_slots_move() {
    let cluster = Arc::new(RedisCluster::start_async(3).await);
    let schema = PgSchema::create(&common::store_url("TEST_DATABASE_URL")).await;
    let config = Config {
        database_url: schema.url.clone(),
        store_key: Some(test_key()),
        redis_url: Some(cluster.url()),
        token_rate: None,
        login_rate: None,
        ..Config::default()
    };
    let (a, b) = (start(&config).await, start(&config).await);

    // Twenty users register on A, get their token on A, log in on B; ten more do the same and
    // then rest while the slots move: their sessions were written before the move.
    let digest = sha256_hex("pw");
    let mut browsers = Vec::new();
    for i in 0..20 {
        browsers.push(registered_and_logged_in(&a, &b, format!("user{i}"), &digest).await);
    }
    let mut resting = Vec::new();
    for i in 0..10 {
        resting.push(registered_and_logged_in(&a, &b, format!("rester{i}"), &digest).await);
    }

    // A thousand slots move from the first master to the second while every user keeps
    // logging in again (token on one instance, login and `me` on the other).
    let moving = Arc::new(AtomicBool::new(true));
    let mover = {
        let (cluster, moving) = (Arc::clone(&cluster), Arc::clone(&moving));
        tokio::task::spawn_blocking(move || {
            cluster.move_slots(0, 1, 1000);
            moving.store(false, Ordering::SeqCst);
        })
    };
    let rounds = AtomicUsize::new(0);
    let mut failures = Vec::new();
    while moving.load(Ordering::SeqCst) || rounds.load(Ordering::SeqCst) == 0 {
        for (n, (account, browser)) in browsers.iter_mut().enumerate() {
            let (first, second) = if n % 2 == 0 { (&a, &b) } else { (&b, &a) };
            let token = browser.token(first).await;
            let (status, body) = browser
                .login(second, account, &proof(&digest, &token))
                .await;
            if status != StatusCode::OK {
                failures.push(format!("{account} login: {status} {body}"));
            }
            let (status, body) = browser.me(first).await;
            if status != StatusCode::OK || body["name"] != account.as_str() {
                failures.push(format!("{account} me: {status} {body}"));
            }
        }
        rounds.fetch_add(1, Ordering::SeqCst);
    }
    mover.await.unwrap();
    // After the move every session is still there, on both instances: `me` names its account
    // (a lost session answers 200 too, with an empty name).
    for (account, browser) in browsers.iter_mut().chain(resting.iter_mut()) {
        for at in [&a, &b] {
            let (status, body) = browser.me(at).await;
            assert_eq!(status, StatusCode::OK, "{account}: {body}");
            assert_eq!(body["name"], account.as_str(), "{account}: {body}");
        }
    }
    println!(
        "{} rounds of 20 logins while 1000 slots moved; failures: {failures:?}",
        rounds.load(Ordering::SeqCst)
    );
    assert!(failures.is_empty(), "{failures:?}");
    a.stop().await;
    b.stop().await;
    schema.drop_schema().await;
}

/// A dead master keeps the whole cluster counted down (every command fails at once) until it
/// is back and the cluster is ok. A `PING` probe through a fresh cluster connection reaches only
/// the live masters and passed: the cluster counted up again within milliseconds, and each
/// command for the dead master's slots waited out the 1 s deadline again (a login of three
/// such commands took 3 s in the fault suite).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    no_test_redis,
    ignore = "needs redis-server and redis-cli: set TEST_REDIS_URL"
)]
async fn a_dead_master_keeps_the_cluster_down_until_it_is_back() {
    let cluster = RedisCluster::start_async(3).await;
    let policy = RedisPolicy {
        probe_interval: Duration::from_millis(100),
        ..RedisPolicy::default()
    };
    let redis = RedisConnection::connect(&cluster.url(), policy)
        .await
        .expect("the cluster");
    // Keys on every master's slots.
    let keys: Vec<String> = (0..30).map(|i| format!("key-{i}")).collect();
    let get = |key: &str| redis::cmd("GET").arg(key).clone();
    for key in &keys {
        redis
            .query::<()>(redis::cmd("SET").arg(key).arg(1))
            .await
            .unwrap();
    }

    let mut cluster = tokio::task::spawn_blocking(move || {
        let mut cluster = cluster;
        cluster.kill(1);
        cluster
    })
    .await
    .unwrap();
    let mut met = false;
    for key in &keys {
        if redis.query::<Option<i64>>(&get(key)).await.is_err() {
            met = true;
            break;
        }
    }
    assert!(met, "no command met the dead master");

    // Thirty probe intervals: still down, and nothing is sent.
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            !redis.is_up(),
            "a probe counted the cluster up with a master dead"
        );
        for key in &keys {
            let failure = redis.query::<Option<i64>>(&get(key)).await.unwrap_err();
            assert!(
                matches!(failure, RedisFailure::Unavailable),
                "sent while down: {failure}"
            );
        }
    }

    cluster = tokio::task::spawn_blocking(move || {
        cluster.restart(1);
        cluster
    })
    .await
    .unwrap();
    let back = tokio::time::Instant::now() + Duration::from_secs(10);
    while !redis.is_up() {
        assert!(
            tokio::time::Instant::now() < back,
            "not up 10 s after the master is back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for key in &keys {
        redis.query::<Option<i64>>(&get(key)).await.unwrap();
    }
    drop(cluster);
}

//! The user service refuses a second registration of the same account while the first is
//! running (429 from the concurrent limiter), in one instance and across two sharing Redis.

mod common;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use framework::Result;
use framework::middleware::concurrent_limiter::{Lock, MemoryLock, RedisLock};
use serde_json::{Value, json};
use tokio::sync::watch;
use user_service::avatar::Avatar;
use user_service::store::{MemoryUserStore, User, UserStore};
use user_service::{Config, Stores};

/// A user store whose `create` waits for the test, so two registrations overlap.
struct GatedStore {
    inner: MemoryUserStore,
    gate: watch::Receiver<bool>,
    entered: watch::Sender<u32>,
}

#[async_trait]
impl UserStore for GatedStore {
    async fn create(&self, account: &str, password: &str) -> Result<User> {
        self.entered.send_modify(|n| *n += 1);
        let mut gate = self.gate.clone();
        let _ = gate.wait_for(|open| *open).await;
        self.inner.create(account, password).await
    }

    async fn find(&self, account: &str) -> Result<Option<User>> {
        self.inner.find(account).await
    }

    async fn set_avatar(&self, account: &str, avatar: &Avatar) -> Result<()> {
        self.inner.set_avatar(account, avatar).await
    }

    async fn avatar(&self, account: &str) -> Result<Option<Avatar>> {
        self.inner.avatar(account).await
    }
}

fn stores(
    gate: watch::Receiver<bool>,
    entered: watch::Sender<u32>,
    locks: Arc<dyn Lock>,
) -> Stores {
    Stores {
        users: Arc::new(GatedStore {
            inner: MemoryUserStore::new(),
            gate,
            entered,
        }),
        sessions: Arc::new(framework::middleware::session::MemoryStore::new()),
        locks,
        attempts: Arc::new(user_service::throttle::MemoryAttempts::default()),
        rates: user_service::RateBackend::Memory,
        used_tokens: Arc::new(user_service::used_tokens::MemoryUsedTokens::default()),
        description: "test".into(),
    }
}

const DIGEST: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

async fn overlapping_registrations(
    a: &common::Running,
    b: &common::Running,
    entered: &mut watch::Receiver<u32>,
    open: &watch::Sender<bool>,
) {
    let client = common::browser();
    let body = json!({"account": "twice", "password": DIGEST});
    let first = tokio::spawn(client.post(a.url("/users/v1/me")).json(&body).send());
    tokio::time::timeout(Duration::from_secs(5), entered.wait_for(|n| *n >= 1))
        .await
        .expect("the first registration reached the store")
        .unwrap();
    let second = client
        .post(b.url("/users/v1/me"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(second.status(), 429);
    let err: Value = second.json().await.unwrap();
    assert_eq!(err["category"], "framework-concurrent-limiter");
    assert_eq!(err["message"], "submit too frequently");
    open.send_replace(true);
    assert_eq!(first.await.unwrap().unwrap().status(), 201);
    // Afterwards the lock is free: a new attempt is answered by the store (409, exists).
    let mut third = None;
    for _ in 0..100 {
        let res = client
            .post(b.url("/users/v1/me"))
            .json(&body)
            .send()
            .await
            .unwrap();
        if res.status() != 429 {
            third = Some(res.status());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        matches!(third.map(|s| s.as_u16()), Some(201 | 409)),
        "{third:?}"
    );
}

#[tokio::test]
async fn same_account_twice_at_once_in_one_instance() {
    let (open, gate) = watch::channel(false);
    let (entered_tx, mut entered) = watch::channel(0u32);
    let service = user_service::build(
        &Config::default(),
        stores(gate, entered_tx, Arc::new(MemoryLock::new())),
    )
    .unwrap();
    let server = common::start(service).await;
    overlapping_registrations(&server, &server, &mut entered, &open).await;
    server.stop().await;
}

#[tokio::test]
#[cfg_attr(
    no_test_redis,
    ignore = "needs Redis: set TEST_REDIS_URL=redis://127.0.0.1:6379"
)]
async fn same_account_on_two_instances_sharing_redis() {
    same_account_on_two_instances_sharing(common::store_url("TEST_REDIS_URL")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    no_test_redis,
    ignore = "needs redis-server and redis-cli: set TEST_REDIS_URL"
)]
async fn same_account_on_two_instances_sharing_a_redis_cluster() {
    let cluster = common::backends::TestRedis::cluster().await;
    same_account_on_two_instances_sharing(cluster.url()).await;
}

/// Two instances whose submit locks live in the Redis at `url`.
async fn same_account_on_two_instances_sharing(url: String) {
    let prefix = common::unique("test-submit-") + ":";
    let (open, gate) = watch::channel(false);
    let (entered_tx, mut entered) = watch::channel(0u32);
    let lock_a: Arc<dyn Lock> = Arc::new(RedisLock::connect(&url, prefix.clone()).await.unwrap());
    let lock_b: Arc<dyn Lock> = Arc::new(RedisLock::connect(&url, prefix).await.unwrap());
    // Both instances share one gated user store, as they would share PostgreSQL.
    let shared = Arc::new(GatedStore {
        inner: MemoryUserStore::new(),
        gate,
        entered: entered_tx,
    });
    let build = |locks| {
        user_service::build(
            &Config::default(),
            Stores {
                users: Arc::clone(&shared) as Arc<dyn UserStore>,
                sessions: Arc::new(framework::middleware::session::MemoryStore::new()),
                locks,
                attempts: Arc::new(user_service::throttle::MemoryAttempts::default()),
                rates: user_service::RateBackend::Memory,
                used_tokens: Arc::new(user_service::used_tokens::MemoryUsedTokens::default()),
                description: "test".into(),
            },
        )
        .unwrap()
    };
    let a = common::start(build(lock_a)).await;
    let b = common::start(build(lock_b)).await;
    overlapping_registrations(&a, &b, &mut entered, &open).await;
    a.stop().await;
    b.stop().await;
}

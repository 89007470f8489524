//! The stored login secret: sealed at rest, so a copy of the users table logs nobody in; plain
//! rows from before encryption are sealed at start-up; a key rotation re-seals; a wrong key
//! stops the start-up instead of failing every login.

mod common;

use reqwest::StatusCode;
use serde_json::json;
use sha2::{Digest, Sha256};
use user_service::store::secret::StoreKey;
use user_service::{Config, Stores};

fn sha256_hex(data: &str) -> String {
    hex::encode(Sha256::digest(data.as_bytes()))
}

async fn start(config: &Config) -> common::Running {
    let stores = Stores::connect(config).await.expect("stores");
    common::start(user_service::build(config, stores).expect("service")).await
}

async fn register(at: &common::Running, account: &str, digest: &str) -> StatusCode {
    common::browser()
        .post(at.url("/users/v1/me"))
        .json(&json!({"account": account, "password": digest}))
        .send()
        .await
        .expect("register")
        .status()
}

/// Logs in as someone who holds `digest` (the value the proof is computed from).
async fn login_with(at: &common::Running, account: &str, digest: &str) -> StatusCode {
    let client = common::browser();
    let token: serde_json::Value = client
        .get(at.url("/users/v1/login"))
        .send()
        .await
        .expect("token")
        .json()
        .await
        .expect("json");
    let token = token["token"].as_str().expect("token");
    let proof = sha256_hex(&format!("{digest}{token}"));
    client
        .post(at.url("/users/v1/login"))
        .json(&json!({"account": account, "password": proof}))
        .send()
        .await
        .expect("login")
        .status()
}

struct Sqlite {
    path: std::path::PathBuf,
    url: String,
}

impl Sqlite {
    fn new() -> Self {
        let path = std::env::temp_dir().join(format!("{}.db", common::unique("secret-")));
        let url = format!("sqlite://{}?mode=rwc", path.display());
        Self { path, url }
    }

    fn config(&self, key: Option<u8>, previous: &[u8]) -> Config {
        Config {
            database_url: self.url.clone(),
            store_key: key.map(|k| StoreKey([k; 32])),
            store_previous_keys: previous.iter().map(|k| StoreKey([*k; 32])).collect(),
            ..Config::default()
        }
    }

    async fn pool(&self) -> sqlx::SqlitePool {
        sqlx::SqlitePool::connect(&self.url).await.expect("sqlite")
    }

    async fn stored(&self, account: &str) -> String {
        let pool = self.pool().await;
        let value = sqlx::query_scalar("SELECT password FROM users WHERE account = $1")
            .bind(account)
            .fetch_one(&pool)
            .await
            .expect("row");
        pool.close().await;
        value
    }
}

impl Drop for Sqlite {
    fn drop(&mut self) {
        for suffix in ["", ".key", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.path.display()));
        }
    }
}

#[tokio::test]
async fn a_copy_of_the_row_does_not_log_in_and_the_key_file_is_private() {
    let db = Sqlite::new();
    let server = start(&db.config(None, &[])).await;
    let digest = sha256_hex("correct horse");
    assert_eq!(register(&server, "ada", &digest).await, StatusCode::CREATED);
    let stored = db.stored("ada").await;
    assert!(stored.starts_with("v1:"), "{stored}");
    assert!(!stored.contains(&digest));
    assert_eq!(
        login_with(&server, "ada", &stored).await,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(login_with(&server, "ada", &digest).await, StatusCode::OK);
    server.stop().await;

    let key_file = format!("{}.key", db.path.display());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_file)
            .expect("key file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "the key file is the owner's only");
    }
    // A restart reads the same key: the user still logs in.
    let server = start(&db.config(None, &[])).await;
    assert_eq!(login_with(&server, "ada", &digest).await, StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn plain_rows_from_before_encryption_are_sealed_at_start_up() {
    let db = Sqlite::new();
    start(&db.config(Some(1), &[])).await.stop().await;
    let digest = sha256_hex("old password");
    let pool = db.pool().await;
    sqlx::query("INSERT INTO users (account, password) VALUES ('Old', $1)")
        .bind(&digest)
        .execute(&pool)
        .await
        .expect("insert a legacy row");
    pool.close().await;

    let server = start(&db.config(Some(1), &[])).await;
    let stored = db.stored("Old").await;
    assert!(stored.starts_with("v1:"), "migrated: {stored}");
    assert_eq!(login_with(&server, "old", &digest).await, StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn rotating_the_key_re_seals_and_a_missing_key_stops_the_start_up() {
    let db = Sqlite::new();
    let digest = sha256_hex("rotate me");
    let server = start(&db.config(Some(1), &[])).await;
    assert_eq!(register(&server, "rot", &digest).await, StatusCode::CREATED);
    server.stop().await;
    let under_first = db.stored("rot").await;

    // New key, the old one kept to open: the row is re-sealed under the new key.
    let server = start(&db.config(Some(2), &[1])).await;
    let under_second = db.stored("rot").await;
    assert_ne!(under_first, under_second);
    let id = |v: &str| v.split(':').nth(1).map(str::to_owned);
    assert_ne!(id(&under_first), id(&under_second), "sealed by another key");
    assert_eq!(login_with(&server, "rot", &digest).await, StatusCode::OK);
    server.stop().await;

    // The old key is no longer needed.
    let server = start(&db.config(Some(2), &[])).await;
    assert_eq!(login_with(&server, "rot", &digest).await, StatusCode::OK);
    server.stop().await;

    // A key that opens nothing: refused at start-up, naming the remedy.
    let err = Stores::connect(&db.config(Some(3), &[]))
        .await
        .err()
        .expect("refused");
    assert!(err.contains("cannot be opened"), "{err}");
    assert!(err.contains("USER_STORE_PREVIOUS_KEYS"), "{err}");
}

#[tokio::test]
#[cfg_attr(
    no_test_database,
    ignore = "needs PostgreSQL: set TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test"
)]
async fn postgres_rows_are_sealed_and_postgres_without_a_key_is_refused() {
    let refused = Stores::connect(&Config {
        database_url: "postgres://postgres@127.0.0.1:5432/test".into(),
        ..Config::default()
    })
    .await
    .err()
    .expect("refused without a key");
    assert!(refused.contains("USER_STORE_KEY"), "{refused}");

    let base = common::store_url("TEST_DATABASE_URL");
    let admin = sqlx::PgPool::connect(&base).await.expect("postgres");
    let schema = common::unique("secret_");
    sqlx::query(&format!("CREATE SCHEMA {schema}"))
        .execute(&admin)
        .await
        .expect("schema");
    let sep = if base.contains('?') { '&' } else { '?' };
    let config = Config {
        database_url: format!("{base}{sep}options=-c%20search_path%3D{schema}"),
        store_key: Some(StoreKey([7; 32])),
        ..Config::default()
    };
    let server = start(&config).await;
    let digest = sha256_hex("pg secret");
    assert_eq!(
        register(&server, "pgsam", &digest).await,
        StatusCode::CREATED
    );
    let stored: String = sqlx::query_scalar(&format!(
        "SELECT password FROM {schema}.users WHERE account = 'pgsam'"
    ))
    .fetch_one(&admin)
    .await
    .expect("row");
    assert!(
        stored.starts_with("v1:") && !stored.contains(&digest),
        "{stored}"
    );
    assert_eq!(
        login_with(&server, "pgsam", &stored).await,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(login_with(&server, "pgsam", &digest).await, StatusCode::OK);
    server.stop().await;
    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE"))
        .execute(&admin)
        .await
        .expect("drop schema");
}

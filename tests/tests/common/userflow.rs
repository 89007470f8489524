//! The user service's flow as a browser drives it, and the stores its tests share: for the
//! tests that run instances of the service against PostgreSQL and Redis (single or cluster).
//! Not a module of `common`: it links `user_service`, whose controllers would then register in
//! every test binary's apps. A test includes it with `#[path = "common/userflow.rs"]`.

#![allow(dead_code, unreachable_pub)]

use reqwest::StatusCode;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use user_service::{Config, Stores};

/// Lowercase hex SHA-256 of `data`.
pub fn sha256_hex(data: &str) -> String {
    hex::encode(Sha256::digest(data.as_bytes()))
}

/// The proof a login sends: `sha256(digest + token)`.
pub fn proof(digest: &str, token: &str) -> String {
    sha256_hex(&format!("{digest}{token}"))
}

/// A client that carries the `sid` cookie by hand, so it can be moved between instances.
#[derive(Default)]
pub struct Browser {
    pub http: reqwest::Client,
    pub sid: Option<String>,
}

impl Browser {
    pub async fn send(&mut self, request: reqwest::RequestBuilder) -> (StatusCode, Value) {
        let request = match &self.sid {
            Some(sid) => request.header("cookie", sid),
            None => request,
        };
        let res = request
            .header("accept", "application/json")
            .send()
            .await
            .expect("request");
        if let Some(cookie) = res.headers().get("set-cookie") {
            let pair = cookie.to_str().unwrap().split(';').next().unwrap();
            self.sid = Some(pair.to_owned());
        }
        let status = res.status();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    pub async fn register(
        &mut self,
        at: &crate::common::Running,
        account: &str,
        digest: &str,
    ) -> StatusCode {
        let req = self
            .http
            .post(at.url("/users/v1/me"))
            .json(&json!({"account": account, "password": digest}));
        self.send(req).await.0
    }

    pub async fn token(&mut self, at: &crate::common::Running) -> String {
        let req = self.http.get(at.url("/users/v1/login"));
        let (status, body) = self.send(req).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["token"].as_str().unwrap().to_owned()
    }

    pub async fn login(
        &mut self,
        at: &crate::common::Running,
        account: &str,
        proof: &str,
    ) -> (StatusCode, Value) {
        let req = self
            .http
            .post(at.url("/users/v1/login"))
            .json(&json!({"account": account, "password": proof}));
        self.send(req).await
    }

    pub async fn me(&mut self, at: &crate::common::Running) -> (StatusCode, Value) {
        let req = self.http.get(at.url("/users/v1/me"));
        self.send(req).await
    }
}

/// Serves the user service with `config` on a loopback port.
pub async fn start(config: &Config) -> crate::common::Running {
    let stores = Stores::connect(config).await.expect("stores");
    crate::common::start(user_service::build(config, stores).expect("service")).await
}

/// A PostgreSQL schema of its own, dropped by [`PgSchema::drop_schema`].
pub struct PgSchema {
    pub admin: sqlx::PgPool,
    pub name: String,
    pub url: String,
}

impl PgSchema {
    pub async fn create(base_url: &str) -> Self {
        let admin = sqlx::PgPool::connect(base_url).await.expect("postgres");
        let name = crate::common::unique("test_");
        sqlx::query(&format!("CREATE SCHEMA {name}"))
            .execute(&admin)
            .await
            .expect("create schema");
        let sep = if base_url.contains('?') { '&' } else { '?' };
        let url = format!("{base_url}{sep}options=-c%20search_path%3D{name}");
        Self { admin, name, url }
    }

    pub async fn users(&self) -> i64 {
        sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {}.users", self.name))
            .fetch_one(&self.admin)
            .await
            .expect("count")
    }

    pub async fn drop_schema(self) {
        sqlx::query(&format!("DROP SCHEMA {} CASCADE", self.name))
            .execute(&self.admin)
            .await
            .expect("drop schema");
    }
}

/// The key sealing login secrets in the PostgreSQL tests (every instance needs the same one).
pub fn test_key() -> user_service::store::secret::StoreKey {
    user_service::store::secret::StoreKey([42; 32])
}

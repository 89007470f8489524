//! Users in SQL through sqlx: SQLite (an embedded file, the default) or PostgreSQL.
//!
//! One implementation serves both through sqlx's `Any` driver: the queries and the migration
//! are portable SQL. Migrations are embedded in the binary and run at start-up; on PostgreSQL
//! sqlx holds an advisory lock while migrating, so instances starting together do not race.
//! Accounts are unique ignoring case (a unique index on `lower(account)`; lookups compare the
//! same way). That index and the `account` primary key make a duplicate registration a 409, also when two
//! instances race on the same name.
//!
//! A failure at run time (database restarted, connection dropped) is a 500 with category
//! `user-store` and `exception: true`, and is logged; the pool reconnects by itself.

use std::time::Duration;

use async_trait::async_trait;
use framework::{HttpError, Result};
use http::StatusCode;
use sqlx::AnyPool;
use sqlx::any::AnyPoolOptions;

use super::{User, UserStore, account_exists};

/// Category of user store failures.
pub const STORE_CATEGORY: &str = "user-store";

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();

/// Pool settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolOptions {
    /// Most connections the pool opens.
    pub max_connections: u32,
    /// How long a request waits for a connection before failing.
    pub acquire_timeout: Duration,
}

impl Default for PoolOptions {
    fn default() -> Self {
        Self {
            max_connections: 10,
            acquire_timeout: Duration::from_secs(5),
        }
    }
}

/// A [`UserStore`] on SQLite or PostgreSQL.
#[derive(Debug, Clone)]
pub struct SqlUserStore {
    pool: AnyPool,
}

fn unavailable(err: &sqlx::Error) -> framework::Error {
    tracing::error!(error = %err, "user store failed");
    HttpError::with(
        StatusCode::INTERNAL_SERVER_ERROR,
        STORE_CATEGORY,
        "user store is unavailable",
    )
    .with_exception(true)
    .into()
}

impl SqlUserStore {
    /// Connects to `url` (`sqlite://users.db?mode=rwc`, `postgres://…`) and runs the
    /// migrations. Fails when the database cannot be reached or migrated.
    pub async fn connect(url: &str, options: PoolOptions) -> Result<Self, sqlx::Error> {
        sqlx::any::install_default_drivers();
        let pool = AnyPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .connect(url)
            .await?;
        MIGRATOR.run(&pool).await?;
        Ok(Self { pool })
    }

    /// Number of users stored.
    pub async fn count(&self) -> Result<i64, sqlx::Error> {
        sqlx::query_scalar("SELECT COUNT(*) FROM users")
            .fetch_one(&self.pool)
            .await
    }

    /// Closes the pool's connections.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

#[async_trait]
impl UserStore for SqlUserStore {
    async fn create(&self, account: &str, password: &str) -> Result<User> {
        let inserted = sqlx::query("INSERT INTO users (account, password) VALUES ($1, $2)")
            .bind(account)
            .bind(password)
            .execute(&self.pool)
            .await;
        match inserted {
            Ok(_) => Ok(User {
                account: account.to_owned(),
                password: password.to_owned(),
            }),
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                Err(account_exists().into())
            }
            Err(e) => Err(unavailable(&e)),
        }
    }

    async fn find(&self, account: &str) -> Result<Option<User>> {
        let row: Option<(String, String)> =
            sqlx::query_as("SELECT account, password FROM users WHERE lower(account) = lower($1)")
                .bind(account)
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| unavailable(&e))?;
        Ok(row.map(|(account, password)| User { account, password }))
    }
}

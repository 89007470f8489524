//! Users in SQL through sqlx: SQLite (an embedded file, the default) or PostgreSQL.
//!
//! One implementation serves both through sqlx's `Any` driver: the queries and the migration
//! are portable SQL. Migrations are embedded in the binary and run at start-up; on PostgreSQL
//! sqlx holds an advisory lock while migrating, so instances starting together do not race.
//! Accounts are unique ignoring case (a unique index on `lower(account)`; lookups compare the
//! same way). That index and the `account` primary key make a duplicate registration a 409, also when two
//! instances race on the same name.
//!
//! The digest is stored sealed under the [`Keyring`]'s current key (see [`super::secret`]). At
//! start-up, rows that are plain (from before encryption) or sealed by a previous key are
//! re-sealed under the current key; a row sealed by a key that is not configured stops the
//! start-up, so a wrong key never looks like every password being wrong.
//!
//! A failure at run time (database restarted, connection dropped) is a 500 with category
//! `user-store` and `exception: true`, and is logged; the pool reconnects by itself. So is a
//! stored value that does not open (tampered, or copied from another account's row).
//!
//! **Deadlines.** Every call runs under a client-side deadline ([`PoolOptions::timeout`],
//! default 5 s), which includes waiting for a pooled connection ([`PoolOptions::acquire_timeout`],
//! default 2 s); on PostgreSQL each connection also gets the same `statement_timeout`, so the
//! server gives up on a statement the client gave up on. A hung database (paused, a network
//! partition) thus costs a request at most the deadline, then a 500 `user-store`. A
//! registration that timed out may still have been stored (the database may run the statement
//! after the client gave up): its retry gets 409 `account already exists`, and logging in with
//! the password tells whether it was stored.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use framework::{HttpError, Result};
use http::StatusCode;
use sqlx::AnyPool;
use sqlx::any::AnyPoolOptions;

use super::secret::{Keyring, SecretError};
use super::{User, UserStore, account_exists, no_such_account};
use crate::avatar::{Avatar, ImageType};

/// Category of user store failures.
pub const STORE_CATEGORY: &str = "user-store";

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();

/// Pool settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolOptions {
    /// Most connections the pool opens.
    pub max_connections: u32,
    /// How long a call waits for a connection before failing. Default 2 s.
    pub acquire_timeout: Duration,
    /// The deadline of every call (waiting for a connection included), and PostgreSQL's
    /// `statement_timeout`. Default 5 s.
    pub timeout: Duration,
}

impl Default for PoolOptions {
    fn default() -> Self {
        Self {
            max_connections: 10,
            acquire_timeout: Duration::from_secs(2),
            timeout: Duration::from_secs(5),
        }
    }
}

/// A [`UserStore`] on SQLite or PostgreSQL.
#[derive(Debug, Clone)]
pub struct SqlUserStore {
    pool: AnyPool,
    keyring: Arc<Keyring>,
    timeout: Duration,
}

/// Why the store could not start.
#[derive(Debug)]
pub enum ConnectError {
    /// The database could not be reached, migrated or read.
    Sql(sqlx::Error),
    /// Rows are sealed by a key that is not configured.
    Key {
        /// How many rows.
        rows: usize,
        /// What was wrong with the first one.
        error: SecretError,
    },
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sql(e) => e.fmt(f),
            Self::Key { rows, error } => write!(
                f,
                "{rows} stored login secret(s) cannot be opened ({error}); configure that key \
                 in USER_STORE_KEY or USER_STORE_PREVIOUS_KEYS"
            ),
        }
    }
}

impl std::error::Error for ConnectError {}

impl From<sqlx::Error> for ConnectError {
    fn from(e: sqlx::Error) -> Self {
        Self::Sql(e)
    }
}

fn secret_failed(err: &SecretError) -> framework::Error {
    tracing::error!(error = %err, "a stored login secret cannot be sealed or opened");
    store_unavailable()
}

/// Runs `call` under the store's deadline; a call past it is a 500 `user-store`, like any
/// other failure.
async fn within<T>(
    timeout: Duration,
    call: impl std::future::Future<Output = Result<T, sqlx::Error>>,
) -> Result<T, sqlx::Error> {
    match tokio::time::timeout(timeout, call).await {
        Ok(result) => result,
        Err(_) => Err(sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no answer within the {timeout:?} deadline"),
        ))),
    }
}

fn unavailable(err: &sqlx::Error) -> framework::Error {
    tracing::error!(error = %err, "user store failed");
    store_unavailable()
}

/// The 500 of every store failure (the cause is logged, never sent), counted in the
/// `framework_store_errors_total` metric.
fn store_unavailable() -> framework::Error {
    framework::telemetry::counters().store_error(STORE_CATEGORY);
    HttpError::with(
        StatusCode::INTERNAL_SERVER_ERROR,
        STORE_CATEGORY,
        "user store is unavailable",
    )
    .with_exception(true)
    .into()
}

impl SqlUserStore {
    /// Connects to `url` (`sqlite://users.db?mode=rwc`, `postgres://…`), runs the migrations
    /// and re-seals rows that are not sealed by the keyring's current key. Fails when the
    /// database cannot be reached or migrated, or holds rows no configured key opens.
    pub async fn connect(
        url: &str,
        options: PoolOptions,
        keyring: Keyring,
    ) -> Result<Self, ConnectError> {
        sqlx::any::install_default_drivers();
        // One direct connection first: a pool only reports "timed out" after its acquire
        // timeout, where this says why (connection refused, authentication failed, unknown
        // database) at once.
        {
            use sqlx::Connection;
            sqlx::AnyConnection::connect(url).await?.close().await?;
        }
        // PostgreSQL takes at most i32::MAX milliseconds (about 24 days).
        let millis = options.timeout.as_millis().min(i32::MAX as u128);
        let statement_timeout = format!("SET statement_timeout = {millis}");
        let pool = AnyPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .after_connect(move |connection, _meta| {
                let statement_timeout = statement_timeout.clone();
                Box::pin(async move {
                    if connection.backend_name() == "PostgreSQL" {
                        sqlx::query(&statement_timeout).execute(connection).await?;
                    }
                    Ok(())
                })
            })
            .connect(url)
            .await?;
        MIGRATOR.run(&pool).await.map_err(sqlx::Error::from)?;
        let store = Self {
            pool,
            keyring: Arc::new(keyring),
            timeout: options.timeout,
        };
        let resealed = store.reseal().await?;
        if resealed > 0 {
            tracing::info!(
                rows = resealed,
                key = store.keyring.current_id(),
                "stored login secrets sealed under the current key"
            );
        }
        Ok(store)
    }

    /// Seals every row that is plain or sealed by a previous key under the current key; returns
    /// how many were rewritten. Each update only applies while the row still holds the value
    /// read, so an instance doing the same at the same time (or a login changing nothing) is
    /// never overwritten with a stale value.
    async fn reseal(&self) -> Result<usize, ConnectError> {
        let current = format!("v1:{}:%", self.keyring.current_id());
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT account, password FROM users WHERE password NOT LIKE $1")
                .bind(&current)
                .fetch_all(&self.pool)
                .await?;
        let mut opened = Vec::with_capacity(rows.len());
        let mut failed = Vec::new();
        for (account, stored) in rows {
            if !self.keyring.needs_reseal(&stored) {
                continue;
            }
            match self.keyring.open(&account, &stored) {
                Ok(digest) => opened.push((account, stored, digest)),
                Err(error) => failed.push(error),
            }
        }
        if let Some(error) = failed.first() {
            return Err(ConnectError::Key {
                rows: failed.len(),
                error: error.clone(),
            });
        }
        let mut rewritten = 0;
        for (account, stored, digest) in opened {
            let sealed = self
                .keyring
                .seal(&account, &digest)
                .map_err(|error| ConnectError::Key { rows: 1, error })?;
            let done =
                sqlx::query("UPDATE users SET password = $1 WHERE account = $2 AND password = $3")
                    .bind(&sealed)
                    .bind(&account)
                    .bind(&stored)
                    .execute(&self.pool)
                    .await?;
            rewritten += usize::try_from(done.rows_affected()).unwrap_or(0);
        }
        Ok(rewritten)
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
        let sealed = self
            .keyring
            .seal(account, password)
            .map_err(|e| secret_failed(&e))?;
        let insert = sqlx::query("INSERT INTO users (account, password) VALUES ($1, $2)")
            .bind(account)
            .bind(&sealed)
            .execute(&self.pool);
        let inserted = within(self.timeout, insert).await;
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
        let select =
            sqlx::query_as("SELECT account, password FROM users WHERE lower(account) = lower($1)")
                .bind(account)
                .fetch_optional(&self.pool);
        let row: Option<(String, String)> = within(self.timeout, select)
            .await
            .map_err(|e| unavailable(&e))?;
        let Some((account, stored)) = row else {
            return Ok(None);
        };
        let password = self
            .keyring
            .open(&account, &stored)
            .map_err(|e| secret_failed(&e))?;
        Ok(Some(User { account, password }))
    }

    async fn set_avatar(&self, account: &str, avatar: &Avatar) -> Result<()> {
        // One statement: an insert or a replacement, whichever applies, also when two
        // instances store the same account's avatar at once (the last one wins).
        let upsert = sqlx::query(
            "INSERT INTO avatars (account, content_type, image, sha256) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (account) DO UPDATE SET content_type = excluded.content_type, \
             image = excluded.image, sha256 = excluded.sha256",
        )
        .bind(account)
        .bind(avatar.image_type.media_type())
        .bind(avatar.bytes.to_vec())
        .bind(hex::encode(avatar.sha256))
        .execute(&self.pool);
        match within(self.timeout, upsert).await {
            Ok(_) => Ok(()),
            // The account is the users table's key: no such row, no avatar.
            Err(sqlx::Error::Database(e)) if e.is_foreign_key_violation() => {
                Err(no_such_account().into())
            }
            Err(e) => Err(unavailable(&e)),
        }
    }

    async fn avatar(&self, account: &str) -> Result<Option<Avatar>> {
        let select = sqlx::query_as(
            "SELECT content_type, image, sha256 FROM avatars WHERE lower(account) = lower($1)",
        )
        .bind(account)
        .fetch_optional(&self.pool);
        let row: Option<(String, Vec<u8>, String)> = within(self.timeout, select)
            .await
            .map_err(|e| unavailable(&e))?;
        let Some((content_type, image, sha256)) = row else {
            return Ok(None);
        };
        let image_type = ImageType::from_media_type(&content_type);
        let sha256 = hex::decode(&sha256)
            .ok()
            .and_then(|d| <[u8; 32]>::try_from(d).ok());
        match (image_type, sha256) {
            (Some(image_type), Some(sha256)) => Ok(Some(Avatar {
                image_type,
                bytes: image.into(),
                sha256,
            })),
            _ => {
                tracing::error!(account, "a stored avatar has an unknown type or digest");
                Err(store_unavailable())
            }
        }
    }
}

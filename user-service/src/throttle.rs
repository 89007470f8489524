//! Failed-login limits: online password guessing costs time.
//!
//! Failures are counted per account (ignoring case) and per client IP over a window. Once an
//! account has [`LoginLimits::per_account`] failures (default 5 per 15 minutes) or an IP has
//! [`LoginLimits::per_ip`] (default 50 per 15 minutes), further attempts get **429** `too many
//! failed logins`, category `user`, with `Retry-After` set to the seconds left in the window,
//! before the proof is even looked at. The answer is the same for existing and unknown
//! accounts, so the limit cannot be used to find accounts. A successful login clears the
//! account's count. The counts live in Redis when `REDIS_URL` is set (so instances share them,
//! through the framework's shared [Redis policy](framework::redis_connection)), else in a
//! bounded in-process map.
//!
//! A failure of the count store is a 500 with category [`THROTTLE_CATEGORY`]
//! (`user-login-throttle`) and `exception: true`: the login is refused rather than let through
//! uncounted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use framework::{HttpError, Result};
use http::StatusCode;

use crate::store::CATEGORY;

/// Category of a failed-login count store failure.
pub const THROTTLE_CATEGORY: &str = "user-login-throttle";

/// The 500 of a count store failure (the cause is logged, never sent).
fn store_failed(err: &framework::Error) -> framework::Error {
    tracing::error!(error = %err, "failed-login count store failed");
    framework::telemetry::counters().store_error(THROTTLE_CATEGORY);
    HttpError::with(
        StatusCode::INTERNAL_SERVER_ERROR,
        THROTTLE_CATEGORY,
        "failed-login count store is unavailable",
    )
    .with_exception(true)
    .into()
}

/// Where failure counts live.
#[async_trait]
pub trait AttemptStore: Send + Sync + 'static {
    /// The count under `key` and the time left in its window (`None` when there is none).
    async fn count(&self, key: &str) -> Result<Option<(u32, Duration)>>;
    /// Adds one failure under `key`, starting a `window` when there is none.
    async fn record(&self, key: &str, window: Duration) -> Result;
    /// Forgets `key`.
    async fn clear(&self, key: &str) -> Result;
}

/// Counts in process memory, at most 100 000 keys (the least recently used go first).
pub struct MemoryAttempts {
    counts: quick_cache::sync::Cache<String, (u32, Instant)>,
}

impl Default for MemoryAttempts {
    fn default() -> Self {
        Self {
            counts: quick_cache::sync::Cache::new(100_000),
        }
    }
}

#[async_trait]
impl AttemptStore for MemoryAttempts {
    async fn count(&self, key: &str) -> Result<Option<(u32, Duration)>> {
        let now = Instant::now();
        Ok(self
            .counts
            .get(key)
            .filter(|(_, ends)| *ends > now)
            .map(|(n, ends)| (n, ends - now)))
    }

    async fn record(&self, key: &str, window: Duration) -> Result {
        let now = Instant::now();
        let (n, ends) = self
            .counts
            .get(key)
            .filter(|(_, ends)| *ends > now)
            .unwrap_or((0, now + window));
        self.counts.insert(key.to_owned(), (n + 1, ends));
        Ok(())
    }

    async fn clear(&self, key: &str) -> Result {
        self.counts.remove(key);
        Ok(())
    }
}

/// Counts in Redis: `INCR` then `PEXPIRE` on the first failure of a window, on a shared
/// [`RedisConnection`](framework::redis_connection::RedisConnection) (its policy: a deadline on
/// every command, one retry after a broken connection, fail-fast while Redis is down). A retried
/// `INCR` whose first answer was lost counts one failure twice, which errs on the safe side.
#[cfg(feature = "redis")]
pub struct RedisAttempts {
    connection: framework::redis_connection::RedisConnection,
    prefix: String,
}

#[cfg(feature = "redis")]
impl RedisAttempts {
    /// Counts under `<prefix><key>` on `connection`.
    pub fn new(
        connection: framework::redis_connection::RedisConnection,
        prefix: impl Into<String>,
    ) -> Self {
        Self {
            connection,
            prefix: prefix.into(),
        }
    }
}

#[cfg(feature = "redis")]
#[async_trait]
impl AttemptStore for RedisAttempts {
    async fn count(&self, key: &str) -> Result<Option<(u32, Duration)>> {
        use framework::redis_connection::redis;
        let key = format!("{}{key}", self.prefix);
        let mut pipe = redis::pipe();
        pipe.cmd("GET").arg(&key).cmd("PTTL").arg(&key);
        let (count, ttl): (Option<u32>, i64) = self
            .connection
            .run(|mut c| {
                let pipe = &pipe;
                async move { pipe.query_async(&mut c).await }
            })
            .await?;
        Ok(count.map(|n| (n, Duration::from_millis(u64::try_from(ttl).unwrap_or(0)))))
    }

    async fn record(&self, key: &str, window: Duration) -> Result {
        use framework::redis_connection::redis;
        let key = format!("{}{key}", self.prefix);
        let millis = u64::try_from(window.as_millis()).unwrap_or(u64::MAX).max(1);
        // NX: the window starts at the first failure and is not extended by later ones.
        let mut pipe = redis::pipe();
        pipe.cmd("INCR")
            .arg(&key)
            .ignore()
            .cmd("PEXPIRE")
            .arg(&key)
            .arg(millis)
            .arg("NX")
            .ignore();
        let () = self
            .connection
            .run(|mut c| {
                let pipe = &pipe;
                async move { pipe.query_async(&mut c).await }
            })
            .await?;
        Ok(())
    }

    async fn clear(&self, key: &str) -> Result {
        use framework::redis_connection::redis;
        let mut cmd = redis::cmd("DEL");
        cmd.arg(format!("{}{key}", self.prefix));
        let _removed: i64 = self.connection.query(&cmd).await?;
        Ok(())
    }
}

/// The limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginLimits {
    /// Failures allowed per account in a window. Default 5.
    pub per_account: u32,
    /// Failures allowed per client IP in a window. Default 50.
    pub per_ip: u32,
    /// The window. Default 15 minutes.
    pub window: Duration,
}

impl Default for LoginLimits {
    fn default() -> Self {
        Self {
            per_account: 5,
            per_ip: 50,
            window: Duration::from_secs(15 * 60),
        }
    }
}

/// The login throttle the controller consults.
#[derive(Clone)]
pub struct LoginThrottle {
    store: Arc<dyn AttemptStore>,
    limits: LoginLimits,
}

fn account_key(account: &str) -> String {
    format!("account:{}", account.to_ascii_lowercase())
}

fn ip_key(ip: std::net::IpAddr) -> String {
    format!("ip:{ip}")
}

impl LoginThrottle {
    /// A throttle over `store` with `limits`.
    pub fn new(store: Arc<dyn AttemptStore>, limits: LoginLimits) -> Self {
        Self { store, limits }
    }

    /// The seconds to wait when the account or the IP is over its limit, else `None`.
    pub async fn check(&self, account: &str, ip: std::net::IpAddr) -> Result<Option<u64>> {
        let over = |count: Option<(u32, Duration)>, max: u32| {
            count.filter(|(n, _)| *n >= max).map(|(_, left)| left)
        };
        let count =
            |key: String| async move { self.store.count(&key).await.map_err(|e| store_failed(&e)) };
        let account_left = over(count(account_key(account)).await?, self.limits.per_account);
        let ip_left = over(count(ip_key(ip)).await?, self.limits.per_ip);
        Ok(account_left
            .max(ip_left)
            .map(|left| left.as_secs_f64().ceil().max(1.0) as u64))
    }

    /// The answer to an attempt over the limit (`Retry-After` is set by the caller).
    pub fn refusal() -> HttpError {
        HttpError::with(
            StatusCode::TOO_MANY_REQUESTS,
            CATEGORY,
            "too many failed logins",
        )
    }

    /// Counts a failure against the account and the IP.
    pub async fn failed(&self, account: &str, ip: std::net::IpAddr) -> Result {
        self.store
            .record(&account_key(account), self.limits.window)
            .await
            .map_err(|e| store_failed(&e))?;
        self.store
            .record(&ip_key(ip), self.limits.window)
            .await
            .map_err(|e| store_failed(&e))
    }

    /// Clears the account's failures after a successful login.
    pub async fn succeeded(&self, account: &str) -> Result {
        self.store
            .clear(&account_key(account))
            .await
            .map_err(|e| store_failed(&e))
    }
}

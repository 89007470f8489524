//! Refuses a request while another with the same key is running: the same form submitted
//! twice, the same account registered twice at once.
//!
//! The key is built from [`keys`](ConcurrentLimiterConfig::keys): `:ip` (the real client IP),
//! `h:<name>` (a header), `q:<name>` (a query parameter), `p:<name>` (a route param), or any
//! other name for a top-level field of the JSON body (put the body parser before it). The
//! values are joined with `,` into one lock key. A key part without a value: **400** `<key> is
//! required` (category `framework-concurrent-limiter`), unless `allow_empty`. The lock is
//! taken from a [`Lock`]: [`MemoryLock`] in process (default), or `RedisLock` (feature
//! `limiter-redis`) so instances behind a load balancer share it. Lock held: **429** `submit
//! too frequently`. A lock store failure is a 500 (`exception: true`).
//!
//! Each acquisition has its own owner token ([`LockToken`]); only that token renews or releases
//! the lock, so a request never releases a lock another request holds.
//! - **Released before the response is written**: once the rest of the chain has returned (the
//!   handler's work is done), the lock is released and that release awaited, before the response
//!   head goes out. A client's next request is never refused by its own previous one. (A
//!   streamed body is still being sent then; the lock covers the handler, not the transfer.)
//! - **A short TTL, renewed while the request runs**: [`ttl`](ConcurrentLimiterConfig::ttl)
//!   (default 5 s) is extended every [`renew_every`](ConcurrentLimiterConfig::renew_every)
//!   (default 1.5 s) while the chain runs, so a long request keeps its lock and the lock of a
//!   crashed instance is gone within the TTL.
//! - **A request that ends any other way** (the lock store failing while the lock was taken,
//!   a panic, the client going away while the lock was being taken or held) releases through a
//!   guard's `Drop`
//!   ([`Lock::release_detached`]): at once for the [`MemoryLock`], as a background task for
//!   Redis, which also deletes an acquisition that completes after its request gave up (same
//!   token).
//!
//! ```
//! use framework::middleware::concurrent_limiter::{ConcurrentLimiter, ConcurrentLimiterConfig};
//!
//! let limiter = ConcurrentLimiter::new(ConcurrentLimiterConfig::default()
//!     .keys(vec![":ip".into(), "account".into()]))
//! .expect("valid keys");
//! let app = framework::App::new().register_middleware("submit-once", limiter);
//! # let _ = app;
//! ```

mod lock;
#[cfg(feature = "limiter-redis")]
mod redis;

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;

use crate::context::Context;
use crate::error::{HttpError, Result};
use crate::handler::{BoxFuture, Middleware, Next};
use crate::middleware::ConfigError;
use crate::request_key::RequestKey;

pub use lock::{Lock, LockToken, MemoryLock};
#[cfg(feature = "limiter-redis")]
pub use redis::RedisLock;

/// Category of rejections.
pub const CATEGORY: &str = "framework-concurrent-limiter";

/// Concurrent limiter settings.
#[derive(Clone)]
#[non_exhaustive]
pub struct ConcurrentLimiterConfig {
    /// Key forms, joined into one lock key.
    pub keys: Vec<String>,
    /// Where locks live. Default: a new [`MemoryLock`].
    pub lock: Arc<dyn Lock>,
    /// How long a lock lives without renewal: the longest a crashed holder's lock stays.
    /// Default 5 s.
    pub ttl: Duration,
    /// How often a held lock is renewed to `ttl` while its request runs (keep it well below
    /// `ttl`). Default 1.5 s.
    pub renew_every: Duration,
    /// Lock even when a key part has no value (it counts as empty). Default false: 400.
    pub allow_empty: bool,
}

crate::config::setters!(ConcurrentLimiterConfig {
    keys: Vec<String>,
    lock: Arc<dyn Lock>,
    ttl: Duration,
    renew_every: Duration,
    allow_empty: bool,
});

impl Default for ConcurrentLimiterConfig {
    fn default() -> Self {
        Self {
            keys: Vec::new(),
            lock: Arc::new(MemoryLock::new()),
            ttl: Duration::from_secs(5),
            renew_every: Duration::from_millis(1500),
            allow_empty: false,
        }
    }
}

/// The concurrent limiter.
pub struct ConcurrentLimiter {
    key: RequestKey,
    config: ConcurrentLimiterConfig,
}

impl ConcurrentLimiter {
    /// Checks the key forms and builds the limiter.
    pub fn new(config: ConcurrentLimiterConfig) -> std::result::Result<Self, ConfigError> {
        Ok(Self {
            key: RequestKey::for_limiter(&config.keys)
                .map_err(|m| ConfigError::new("concurrent limiter", m))?,
            config,
        })
    }
}

/// A 500 for a lock store that failed, in the limiter's category (the cause is logged, never
/// sent).
fn store_error(err: &crate::Error) -> crate::Error {
    tracing::error!(error = %err, "lock store failed");
    crate::telemetry::counters().store_error(CATEGORY);
    HttpError::with(
        StatusCode::INTERNAL_SERVER_ERROR,
        CATEGORY,
        "lock store is unavailable",
    )
    .with_exception(true)
    .into()
}

/// Renews the lock every `every` for as long as it is polled (it never completes); a renewal
/// that fails or finds the lock gone is logged, and the request goes on.
async fn renew(
    lock: &dyn Lock,
    key: &str,
    token: &LockToken,
    ttl: Duration,
    every: Duration,
) -> std::convert::Infallible {
    let every = every.max(Duration::from_millis(10));
    loop {
        tokio::time::sleep(every).await;
        match lock.renew(key, token, ttl).await {
            Ok(true) => {}
            Ok(false) => tracing::warn!(key, "a held lock expired before its request ended"),
            Err(err) => {
                tracing::warn!(key, error = %err.into_http().message(), "renewing a lock failed");
            }
        }
    }
}

/// One acquisition: released by [`Held::release`] when the chain returns, or by `Drop` when the
/// request ends any other way.
struct Held {
    lock: Option<Arc<dyn Lock>>,
    key: Box<str>,
    token: LockToken,
    ttl: Duration,
}

impl Held {
    fn new(lock: Arc<dyn Lock>, key: String, ttl: Duration) -> Self {
        Self {
            lock: Some(lock),
            key: key.into_boxed_str(),
            token: LockToken::new(),
            ttl,
        }
    }

    /// Nothing to release (the lock was not taken).
    fn disarm(mut self) {
        self.lock = None;
    }

    /// Releases now and waits for it (within the store's deadlines). A release that fails, or
    /// whose request is dropped while it waits, is left to `Drop` (retried in the background).
    async fn release(mut self) {
        let Some(lock) = &self.lock else { return };
        match lock.release(&self.key, &self.token).await {
            Ok(()) => self.lock = None,
            Err(err) => tracing::warn!(
                key = &*self.key,
                error = %err.into_http().message(),
                "releasing a lock failed; retried in the background"
            ),
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(lock) = self.lock.take() {
            let key = std::mem::take(&mut self.key);
            lock.release_detached(key, self.token, self.ttl);
        }
    }
}

impl Middleware for ConcurrentLimiter {
    /// 429 while the same key is in flight; 400 when the key is missing from the request
    /// (unless `allow_empty`).
    fn describe(&self, operation: &mut crate::openapi::Operation<'_>) {
        if !self.config.allow_empty {
            operation.error(400);
        }
        operation.error(429);
    }

    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        Box::pin(async move {
            if ctx.is_committed() {
                return next.run(ctx).await;
            }
            let key = self.key.require(ctx, self.config.allow_empty, CATEGORY)?;
            let lock = &self.config.lock;
            let ttl = self.config.ttl;
            // Armed before the acquisition is sent: a request dropped while it waits for the
            // answer still deletes whatever the acquisition left.
            let held = Held::new(Arc::clone(lock), key, ttl);
            let taken = lock
                .acquire(&held.key, &held.token, ttl)
                .await
                .map_err(|err| store_error(&err))?;
            if !taken {
                held.disarm();
                crate::telemetry::counters().refused(crate::telemetry::Refusal::ConcurrentLimiter);
                return Err(HttpError::with(
                    StatusCode::TOO_MANY_REQUESTS,
                    CATEGORY,
                    "submit too frequently",
                )
                .into());
            }
            let result = {
                let renewing = renew(
                    &**lock,
                    &held.key,
                    &held.token,
                    ttl,
                    self.config.renew_every,
                );
                tokio::pin!(renewing);
                tokio::select! {
                    biased;
                    result = next.run(ctx) => result,
                    never = &mut renewing => match never {},
                }
            };
            held.release().await;
            result
        })
    }
}

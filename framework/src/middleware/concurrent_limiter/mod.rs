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
//! The lock is released by a guard's `Drop` when the request ends in any way: success, error,
//! panic, or the client going away (the request future is dropped); for a streamed response,
//! when the body has been sent. Never by code after `next`, which a dropped request does not
//! reach.
//!
//! ```
//! use framework::middleware::concurrent_limiter::{ConcurrentLimiter, ConcurrentLimiterConfig};
//!
//! let limiter = ConcurrentLimiter::new(ConcurrentLimiterConfig {
//!     keys: vec![":ip".into(), "account".into()],
//!     ..ConcurrentLimiterConfig::default()
//! })
//! .expect("valid keys");
//! let app = framework::App::new().register_middleware("submit-once", limiter.into_shared());
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
use crate::handler::{BoxFuture, Middleware, Next, SharedMiddleware, Skipper, should_skip};
use crate::request_key::RequestKey;

pub use lock::{Lock, MemoryLock, Unlock};
#[cfg(feature = "limiter-redis")]
pub use redis::RedisLock;

/// Category of rejections.
pub const CATEGORY: &str = "framework-concurrent-limiter";

/// Concurrent limiter settings.
#[derive(Clone)]
pub struct ConcurrentLimiterConfig {
    /// Key forms, joined into one lock key.
    pub keys: Vec<String>,
    /// Where locks live. Default: a new [`MemoryLock`].
    pub lock: Arc<dyn Lock>,
    /// How long a lock may be held at most (a crashed holder's lock expires). Default 30 s.
    pub ttl: Duration,
    /// Lock even when a key part has no value (it counts as empty). Default false: 400.
    pub allow_empty: bool,
    /// Skips the limiter for some requests.
    pub skipper: Option<Skipper>,
}

impl Default for ConcurrentLimiterConfig {
    fn default() -> Self {
        Self {
            keys: Vec::new(),
            lock: Arc::new(MemoryLock::new()),
            ttl: Duration::from_secs(30),
            allow_empty: false,
            skipper: None,
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
    pub fn new(config: ConcurrentLimiterConfig) -> std::result::Result<Self, String> {
        Ok(Self {
            key: RequestKey::for_limiter("concurrent limiter", &config.keys)?,
            config,
        })
    }

    /// Shares it for use in a chain.
    pub fn into_shared(self) -> SharedMiddleware {
        Arc::new(self)
    }
}

impl Middleware for ConcurrentLimiter {
    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        Box::pin(async move {
            if should_skip(ctx, self.config.skipper.as_ref()) {
                return next.run(ctx).await;
            }
            let key = self.key.require(ctx, self.config.allow_empty, CATEGORY)?;
            let unlock = self
                .config
                .lock
                .lock(&key, self.config.ttl, ctx)
                .await
                .map_err(|err| {
                    HttpError::with(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        CATEGORY,
                        format!("lock failed: {}", err.into_http().message()),
                    )
                    .with_exception(true)
                })?;
            let Some(unlock) = unlock else {
                return Err(HttpError::with(
                    StatusCode::TOO_MANY_REQUESTS,
                    CATEGORY,
                    "submit too frequently",
                )
                .into());
            };
            let result = next.run(ctx).await;
            ctx.hold_until_body_ends(unlock);
            result
        })
    }
}

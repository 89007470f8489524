//! Limits how often a key may send requests: a token bucket per key (GCRA, the "generic cell
//! rate algorithm": `burst` requests at once, then one more every `period / burst`).
//!
//! The key is built like the [concurrent limiter](super::concurrent_limiter)'s: `:ip` (the
//! real client IP), `h:<name>` (a header), `q:<name>` (a query parameter), `p:<name>` (a route
//! param), or a top-level field of the JSON body (put the body parser before it); the values
//! are joined with `,`. A key part without a value: **400** `<key> is required` (category
//! `framework-rate-limiter`), unless `allow_empty`.
//!
//! Over the budget: **429** `too many requests` (category `framework-rate-limiter`) with
//! `Retry-After` (whole seconds until one more request is allowed, at least 1). Every answer
//! the limiter let through or refused carries the headers of the IETF draft
//! `draft-ietf-httpapi-ratelimit-headers`: `RateLimit-Limit` (the burst), `RateLimit-Remaining`
//! (requests left now) and `RateLimit-Reset` (whole seconds until the bucket is full again).
//!
//! The budgets live in a [`RateStore`]:
//! - [`MemoryRateStore`] (default, in process, on the `governor` crate). A key whose bucket is
//!   full again holds no information and is dropped by a sweep that runs at most once per
//!   refill time, so memory follows the keys active in the last refill period. The number of
//!   keys is bounded ([`MemoryRateStore::with_max_keys`], 100 000 by default): when the table is
//!   full of active keys, a new key is let through unlimited (fail open, with a warning at most
//!   once a minute). Failing closed instead would let whoever chooses keys (a header, a body
//!   field) lock every new client out.
//! - `RedisRateStore` (feature `limiter-redis`): one atomic Lua script per request on Redis's
//!   own clock, so every instance behind a load balancer spends the same budget. Keys expire
//!   when their bucket is full again.
//!
//! A store error (Redis down) never fails the request: it is logged and the request is let
//! through, as a limiter that fails closed would turn a Redis outage into a full outage.
//!
//! ```
//! use std::time::Duration;
//! use framework::middleware::rate_limiter::{MemoryRateStore, RateLimiter, RateLimiterConfig, RateQuota};
//!
//! // 10 requests at once per client IP, refilled over a minute.
//! let quota = RateQuota::new(10, Duration::from_secs(60)).expect("valid quota");
//! let limiter = RateLimiter::new(RateLimiterConfig::new([":ip"], MemoryRateStore::new(quota)))
//!     .expect("valid keys");
//! let app = framework::App::new().register_middleware("per-ip", limiter);
//! # let _ = app;
//! ```

mod memory;
#[cfg(feature = "limiter-redis")]
mod redis;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use http::{HeaderName, HeaderValue, StatusCode};

use crate::context::Context;
use crate::error::{HttpError, Result};
use crate::handler::{BoxFuture, Middleware, Next};
use crate::middleware::ConfigError;
use crate::request_key::RequestKey;

pub use memory::{DEFAULT_MAX_KEYS, MemoryRateStore};
#[cfg(feature = "limiter-redis")]
pub use redis::RedisRateStore;

/// Category of rejections.
pub const CATEGORY: &str = "framework-rate-limiter";

/// `RateLimit-Limit`: the burst.
pub const RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("ratelimit-limit");
/// `RateLimit-Remaining`: requests left now.
pub const RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("ratelimit-remaining");
/// `RateLimit-Reset`: seconds until the bucket is full again.
pub const RATELIMIT_RESET: HeaderName = HeaderName::from_static("ratelimit-reset");

/// A budget: `burst` requests at once, refilled one at a time over `period` (one request every
/// `period / burst`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateQuota {
    burst: u32,
    period: Duration,
}

impl RateQuota {
    /// `burst` requests per `period`. `None` when `burst` is 0 or the refill interval
    /// (`period / burst`) is shorter than a microsecond.
    pub fn new(burst: u32, period: Duration) -> Option<Self> {
        if burst == 0 || (period / burst) < Duration::from_micros(1) {
            return None;
        }
        Some(Self { burst, period })
    }

    /// `burst` requests per second.
    pub fn per_second(burst: u32) -> Option<Self> {
        Self::new(burst, Duration::from_secs(1))
    }

    /// `burst` requests per minute.
    pub fn per_minute(burst: u32) -> Option<Self> {
        Self::new(burst, Duration::from_secs(60))
    }

    /// Requests allowed at once.
    pub fn burst(&self) -> u32 {
        self.burst
    }

    /// Time to refill the whole burst.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Time to refill one request.
    pub fn interval(&self) -> Duration {
        self.period / self.burst
    }
}

/// A store's answer for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// The request may go on.
    pub allowed: bool,
    /// The burst.
    pub limit: u32,
    /// Requests left after this one.
    pub remaining: u32,
    /// Time until the bucket is full again.
    pub reset: Duration,
    /// Time until one more request is allowed (zero when `allowed`).
    pub retry_after: Duration,
}

/// Where budgets live. A store is built with its [`RateQuota`].
#[async_trait]
pub trait RateStore: Send + Sync {
    /// Spends one request of `key`'s budget, if there is one left.
    async fn check(&self, key: String) -> Result<Decision>;
}

/// A shared store (e.g. kept to read [`MemoryRateStore::len`]) is a store.
#[async_trait]
impl<T: RateStore + ?Sized> RateStore for Arc<T> {
    async fn check(&self, key: String) -> Result<Decision> {
        (**self).check(key).await
    }
}

/// Rate limiter settings.
#[derive(Clone)]
#[non_exhaustive]
pub struct RateLimiterConfig {
    /// Key forms, joined into one key.
    pub keys: Vec<String>,
    /// Where the budgets live (and their quota).
    pub store: Arc<dyn RateStore>,
    /// Count requests whose key part has no value (it counts as empty). Default false: 400.
    pub allow_empty: bool,
    /// Add the `RateLimit-*` headers to answers. Default true.
    pub headers: bool,
}

crate::config::setters!(RateLimiterConfig {
    keys: Vec<String>,
    store: Arc<dyn RateStore>,
    allow_empty: bool,
    headers: bool,
});

impl RateLimiterConfig {
    /// A limiter on `keys` with budgets in `store`; the other settings at their defaults.
    pub fn new(
        keys: impl IntoIterator<Item = impl Into<String>>,
        store: impl RateStore + 'static,
    ) -> Self {
        Self {
            keys: keys.into_iter().map(Into::into).collect(),
            store: Arc::new(store),
            allow_empty: false,
            headers: true,
        }
    }
}

impl fmt::Debug for RateLimiterConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimiterConfig")
            .field("keys", &self.keys)
            .field("allow_empty", &self.allow_empty)
            .field("headers", &self.headers)
            .finish_non_exhaustive()
    }
}

/// The rate limiter.
pub struct RateLimiter {
    key: RequestKey,
    config: RateLimiterConfig,
}

impl RateLimiter {
    /// Checks the key forms and builds the limiter.
    pub fn new(config: RateLimiterConfig) -> std::result::Result<Self, ConfigError> {
        Ok(Self {
            key: RequestKey::for_limiter(&config.keys)
                .map_err(|m| ConfigError::new("rate limiter", m))?,
            config,
        })
    }
}

/// Whole seconds, rounded up.
fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

fn set_headers(ctx: &mut Context, decision: &Decision) {
    ctx.set_response_header(RATELIMIT_LIMIT, HeaderValue::from(decision.limit));
    ctx.set_response_header(RATELIMIT_REMAINING, HeaderValue::from(decision.remaining));
    ctx.set_response_header(
        RATELIMIT_RESET,
        HeaderValue::from(ceil_secs(decision.reset)),
    );
}

impl Middleware for RateLimiter {
    /// 429 when the budget is spent; 400 when the key is missing from the request (unless
    /// `allow_empty`).
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
            let decision = match self.config.store.check(key).await {
                Ok(decision) => decision,
                Err(err) => {
                    crate::telemetry::counters().store_error(CATEGORY);
                    tracing::warn!(
                        error = %err.into_http().message(),
                        "rate limiter store failed; the request is let through"
                    );
                    return next.run(ctx).await;
                }
            };
            if !decision.allowed {
                if self.config.headers {
                    set_headers(ctx, &decision);
                }
                crate::telemetry::counters().refused(crate::telemetry::Refusal::RateLimiter);
                let wait = ceil_secs(decision.retry_after).max(1);
                ctx.set_response_header(http::header::RETRY_AFTER, HeaderValue::from(wait));
                return Err(HttpError::with(
                    StatusCode::TOO_MANY_REQUESTS,
                    CATEGORY,
                    "too many requests",
                )
                .into());
            }
            let result = next.run(ctx).await;
            if self.config.headers {
                set_headers(ctx, &decision);
            }
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_rejects_zero_and_sub_microsecond_intervals() {
        assert!(RateQuota::new(0, Duration::from_secs(1)).is_none());
        assert!(RateQuota::new(2_000_000, Duration::from_secs(1)).is_none());
        let q = RateQuota::new(4, Duration::from_secs(2)).expect("valid");
        assert_eq!(q.interval(), Duration::from_millis(500));
        assert_eq!(q.burst(), 4);
        assert_eq!(
            RateQuota::per_minute(60).expect("valid").interval(),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn seconds_round_up() {
        assert_eq!(ceil_secs(Duration::ZERO), 0);
        assert_eq!(ceil_secs(Duration::from_millis(1)), 1);
        assert_eq!(ceil_secs(Duration::from_secs(3)), 3);
        assert_eq!(ceil_secs(Duration::from_millis(3001)), 4);
    }

    #[test]
    fn no_keys_or_bad_key_is_refused() {
        let store = || MemoryRateStore::new(RateQuota::per_second(1).expect("valid"));
        assert!(RateLimiter::new(RateLimiterConfig::new(Vec::<String>::new(), store())).is_err());
        assert!(RateLimiter::new(RateLimiterConfig::new(["h:bad header"], store())).is_err());
    }
}

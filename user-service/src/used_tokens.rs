//! Login tokens already used: a record of each token a login attempt consumed, kept until the
//! token could no longer be used anyway, so a token works for one attempt whatever the session
//! store.
//!
//! A server-side session (memory, Redis) forgets its token when an attempt consumes it. A
//! cookie session (`SESSION_STORE=cookie`) is the cookie itself: a client that sends the
//! cookie it had before the attempt sends the token again. So every attempt also records its
//! token here, and an attempt with a recorded token fails as a wrong proof does. A token is
//! good for [`TOKEN_LIFETIME`] (10 minutes) after it was issued, which bounds how long a record
//! must be kept.
//!
//! The record is in Redis when `REDIS_URL` is set (`SET <prefix>used-token:<token> NX PX`,
//! shared by every instance), else in process memory: at most [`MAX_MEMORY_TOKENS`] tokens,
//! each forgotten when its lifetime is over. A record that is full refuses the attempt (**503**
//! `user-login-token`) rather than forget a token that could still be replayed. A record that fails (Redis down) is a 500 in the same category.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use framework::{HttpError, Result};
use http::StatusCode;

/// Category of a used-token record's failure or refusal.
pub const CATEGORY: &str = "user-login-token";

/// How long a login token is good for after it was issued.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// The most tokens the in-memory record holds (about 80 bytes each, 8 MB in all): a login per
/// 6 ms for 10 minutes, far above what the per-IP rate limits let one client do.
pub const MAX_MEMORY_TOKENS: usize = 100_000;

/// Where used tokens are recorded.
#[async_trait]
pub trait UsedTokenStore: Send + Sync + 'static {
    /// Records `token` as used for `lifetime`: `true` when it was not recorded already.
    async fn consume(&self, token: &str, lifetime: Duration) -> Result<bool>;
}

/// The record the login handler consults, from the app state.
#[derive(Clone)]
pub struct UsedTokens(pub Arc<dyn UsedTokenStore>);

impl UsedTokens {
    /// Whether `token` is used for the first time (and now recorded).
    pub async fn first_use(&self, token: &str) -> Result<bool> {
        self.0
            .consume(token, TOKEN_LIFETIME)
            .await
            .map_err(|err| match err.as_http() {
                Some(http) if http.category() == CATEGORY => err,
                _ => {
                    tracing::error!(error = %err, "used-token record failed");
                    framework::telemetry::counters().store_error(CATEGORY);
                    HttpError::with(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        CATEGORY,
                        "used-token record is unavailable",
                    )
                    .with_exception(true)
                    .into()
                }
            })
    }
}

/// Used tokens in process memory, forgotten when their lifetime is over; at most `capacity`.
pub struct MemoryUsedTokens {
    inner: Mutex<Recorded>,
    capacity: usize,
}

#[derive(Default)]
struct Recorded {
    tokens: HashSet<String>,
    /// The same tokens, oldest first, with when each may be forgotten (the lifetime is the
    /// same for all, so this is also the order they expire in).
    expiry: VecDeque<(Instant, String)>,
}

impl MemoryUsedTokens {
    /// A record of at most `capacity` tokens.
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Recorded::default()),
            capacity,
        }
    }
}

impl Default for MemoryUsedTokens {
    /// At most [`MAX_MEMORY_TOKENS`].
    fn default() -> Self {
        Self::new(MAX_MEMORY_TOKENS)
    }
}

#[async_trait]
impl UsedTokenStore for MemoryUsedTokens {
    async fn consume(&self, token: &str, lifetime: Duration) -> Result<bool> {
        let now = Instant::now();
        let mut recorded = self
            .inner
            .lock()
            .map_err(|_| framework::Error::msg("used-token record poisoned"))?;
        while let Some((ends, _)) = recorded.expiry.front() {
            if *ends > now {
                break;
            }
            if let Some((_, old)) = recorded.expiry.pop_front() {
                recorded.tokens.remove(&old);
            }
        }
        if recorded.tokens.contains(token) {
            return Ok(false);
        }
        if recorded.tokens.len() >= self.capacity {
            return Err(HttpError::with(
                StatusCode::SERVICE_UNAVAILABLE,
                CATEGORY,
                "too many logins at once; try again shortly",
            )
            .into());
        }
        recorded.tokens.insert(token.to_owned());
        recorded
            .expiry
            .push_back((now + lifetime, token.to_owned()));
        Ok(true)
    }
}

/// Used tokens in Redis: `SET <prefix><token> 1 NX PX <lifetime>` on a shared
/// [`RedisConnection`](framework::redis_connection::RedisConnection) (its deadline on every
/// command, fail-fast while Redis is down). A retried `SET` whose first answer was lost reads
/// as a replay, which refuses that one attempt: the safe side.
#[cfg(feature = "redis")]
pub struct RedisUsedTokens {
    connection: framework::redis_connection::RedisConnection,
    prefix: String,
}

#[cfg(feature = "redis")]
impl RedisUsedTokens {
    /// Tokens under `<prefix><token>` on `connection`.
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
impl UsedTokenStore for RedisUsedTokens {
    async fn consume(&self, token: &str, lifetime: Duration) -> Result<bool> {
        use framework::redis_connection::redis;
        let millis = u64::try_from(lifetime.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let mut cmd = redis::cmd("SET");
        cmd.arg(format!("{}{token}", self.prefix))
            .arg(1)
            .arg("NX")
            .arg("PX")
            .arg(millis);
        let set: Option<String> = self.connection.query(&cmd).await?;
        Ok(set.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_token_is_used_once_until_its_lifetime_ends() {
        let record = MemoryUsedTokens::new(10);
        let life = Duration::from_millis(50);
        assert!(record.consume("a", life).await.unwrap());
        assert!(!record.consume("a", life).await.unwrap());
        assert!(record.consume("b", life).await.unwrap());
        tokio::time::sleep(Duration::from_millis(80)).await;
        // Forgotten once its lifetime is over: the session that held it has no token left.
        assert!(record.consume("a", life).await.unwrap());
    }

    #[tokio::test]
    async fn a_full_record_refuses_rather_than_forgets() {
        let record = MemoryUsedTokens::new(2);
        let life = Duration::from_secs(60);
        assert!(record.consume("a", life).await.unwrap());
        assert!(record.consume("b", life).await.unwrap());
        let err = record.consume("c", life).await.unwrap_err();
        let http = err.as_http().expect("an HttpError");
        assert_eq!(http.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(http.category(), CATEGORY);
        // The recorded ones stay recorded.
        assert!(!record.consume("a", life).await.unwrap());
    }
}

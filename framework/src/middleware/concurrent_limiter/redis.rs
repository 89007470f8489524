//! A [`Lock`] in Redis (feature `limiter-redis`), so several instances refuse the same
//! duplicate submit.

use std::time::Duration;

use async_trait::async_trait;
use redis::aio::ConnectionManager;

use super::lock::{Lock, Unlock};
use crate::context::Context;
use crate::error::Result;

/// Deletes the key only while it still holds our token: a lock that expired and was taken by
/// another request is not released by the first holder. One script, so the check and the delete
/// are atomic.
const UNLOCK: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then \
                      return redis.call('del', KEYS[1]) else return 0 end";

/// Locks as Redis keys: `SET <prefix><key> <token> NX PX <ttl>`, released with a
/// compare-and-delete script when the request ends. The TTL bounds a lock whose holder died.
#[derive(Clone)]
pub struct RedisLock {
    connection: ConnectionManager,
    prefix: String,
}

impl std::fmt::Debug for RedisLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLock")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisLock {
    /// Connects to `url`; fails when Redis cannot be reached.
    pub async fn connect(url: &str, prefix: impl Into<String>) -> redis::RedisResult<Self> {
        let connection = crate::redis_connection::connect(url).await?;
        Ok(Self::from_manager(connection, prefix))
    }

    /// A lock on an existing connection manager (e.g. the session store's).
    pub fn from_manager(connection: ConnectionManager, prefix: impl Into<String>) -> Self {
        Self {
            connection,
            prefix: prefix.into(),
        }
    }
}

#[async_trait]
impl Lock for RedisLock {
    async fn lock(&self, key: &str, ttl: Duration, _ctx: &Context) -> Result<Option<Unlock>> {
        let mut token = [0u8; 16];
        getrandom::fill(&mut token)?;
        let token = hex::encode(token);
        let key = format!("{}{key}", self.prefix);
        let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let set = redis::cmd("SET")
            .arg(&key)
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(millis)
            .clone();
        // Sent once more after a connection broken while idle (Redis restarted), so the first
        // submit after an outage is not a 500. (Had the lost answer been a success, the retry
        // sees our own key and answers "held": a 429, never a double lock.)
        let taken: Option<String> = crate::redis_connection::query(&self.connection, &set).await?;
        let mut connection = self.connection.clone();
        if taken.is_none() {
            return Ok(None);
        }
        Ok(Some(Unlock::new(move || {
            // Drop cannot wait: the release runs as its own task.
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                return;
            };
            runtime.spawn(async move {
                let released: redis::RedisResult<i64> = redis::cmd("EVAL")
                    .arg(UNLOCK)
                    .arg(1)
                    .arg(&key)
                    .arg(&token)
                    .query_async(&mut connection)
                    .await;
                if let Err(err) = released {
                    tracing::warn!(%err, key, "releasing a Redis lock failed; it expires by its TTL");
                }
            });
        })))
    }
}

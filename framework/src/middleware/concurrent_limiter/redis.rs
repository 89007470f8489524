//! A [`Lock`] in Redis (feature `limiter-redis`), so several instances refuse the same
//! duplicate submit.

use std::time::Duration;

use async_trait::async_trait;
use redis::Script;

use super::lock::{Lock, LockToken};
use crate::error::Result;
use crate::redis_connection::{RedisConnection, RedisFailure, RedisPolicy, millis};

/// Takes the key for the token, or renews it when the token already holds it: sending it twice
/// (the policy's retry after a lost answer) never refuses its own sender.
const ACQUIRE: &str = "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then \
                       return 1 end \
                       if redis.call('get', KEYS[1]) == ARGV[1] then \
                       redis.call('pexpire', KEYS[1], ARGV[2]) return 1 end \
                       return 0";

/// Extends the key's expiry while it holds the token.
const RENEW: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then \
                     return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";

/// Deletes the key only while it still holds the token: a lock that expired and was taken by
/// another request is not released by the first holder. One script, so the check and the delete
/// are atomic.
const RELEASE: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then \
                       return redis.call('del', KEYS[1]) else return 0 end";

/// Locks as Redis keys `<prefix><key>` holding their owner's token: taken with `SET NX PX`
/// (in a script that also accepts its own token), renewed and released by compare-and-expire
/// and compare-and-delete scripts. The connection follows the shared
/// [Redis policy](crate::redis_connection): while Redis fails, acquiring is an error (the
/// [limiter](super) answers 500) within the policy's deadlines.
#[derive(Clone)]
pub struct RedisLock {
    connection: RedisConnection,
    prefix: String,
    acquire: Script,
    renew: Script,
    release: Script,
}

impl std::fmt::Debug for RedisLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLock")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisLock {
    /// Connects to `url` with the default policy; fails when Redis cannot be reached.
    pub async fn connect(url: &str, prefix: impl Into<String>) -> Result<Self, RedisFailure> {
        let connection = RedisConnection::connect(url, RedisPolicy::default()).await?;
        Ok(Self::new(connection, prefix))
    }

    /// Locks on a shared connection (e.g. the session store's).
    pub fn new(connection: RedisConnection, prefix: impl Into<String>) -> Self {
        Self {
            connection,
            prefix: prefix.into(),
            acquire: Script::new(ACQUIRE),
            renew: Script::new(RENEW),
            release: Script::new(RELEASE),
        }
    }

    /// Runs `script` on `<prefix><key>` with the token (and a TTL) as arguments.
    async fn call(
        &self,
        script: &Script,
        key: &str,
        token: &LockToken,
        ttl: Option<Duration>,
    ) -> Result<i64, RedisFailure> {
        let mut invocation = script.key(format!("{}{key}", self.prefix));
        invocation.arg(token.as_str());
        if let Some(ttl) = ttl {
            invocation.arg(millis(ttl));
        }
        self.connection
            .run(|mut c| {
                let invocation = &invocation;
                async move { invocation.invoke_async(&mut c).await }
            })
            .await
    }
}

#[async_trait]
impl Lock for RedisLock {
    async fn acquire(&self, key: &str, token: &LockToken, ttl: Duration) -> Result<bool> {
        Ok(self.call(&self.acquire, key, token, Some(ttl)).await? == 1)
    }

    async fn renew(&self, key: &str, token: &LockToken, ttl: Duration) -> Result<bool> {
        Ok(self.call(&self.renew, key, token, Some(ttl)).await? == 1)
    }

    async fn release(&self, key: &str, token: &LockToken) -> Result {
        self.call(&self.release, key, token, None).await?;
        Ok(())
    }
}

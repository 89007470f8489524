//! Entries in Redis (feature `cache-redis`): several instances share one cache.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use redis::aio::ConnectionManager;

use super::CacheStore;
use crate::error::Result;

/// Entries as Redis strings `<prefix><key>` (prefix `cache:` by default) with `PX` expiry, so
/// Redis drops them itself. Give Redis a `maxmemory` with an LRU policy to bound it.
#[derive(Clone)]
pub struct RedisCacheStore {
    connection: ConnectionManager,
    prefix: String,
}

impl std::fmt::Debug for RedisCacheStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCacheStore")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisCacheStore {
    /// Connects to `url`; fails when Redis cannot be reached.
    pub async fn connect(url: &str, prefix: impl Into<String>) -> redis::RedisResult<Self> {
        let connection = crate::redis_connection::connect(url).await?;
        Ok(Self::from_manager(connection, prefix))
    }

    /// A store on an existing connection manager (e.g. the session store's).
    pub fn from_manager(connection: ConnectionManager, prefix: impl Into<String>) -> Self {
        Self {
            connection,
            prefix: prefix.into(),
        }
    }

    fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }
}

/// Runs `cmd`, once more after a connection that broke while idle.
async fn query<T: redis::FromRedisValue>(
    connection: &ConnectionManager,
    cmd: &redis::Cmd,
) -> redis::RedisResult<T> {
    let mut connection = connection.clone();
    match cmd.query_async(&mut connection).await {
        Err(err) if err.is_connection_dropped() || err.is_io_error() => {
            cmd.query_async(&mut connection).await
        }
        other => other,
    }
}

#[async_trait]
impl CacheStore for RedisCacheStore {
    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        let cmd = redis::cmd("GET").arg(self.key(key)).clone();
        let value: Option<Vec<u8>> = query(&self.connection, &cmd).await?;
        Ok(value.map(Bytes::from))
    }

    async fn set(&self, key: &str, value: Bytes, ttl: Duration) -> Result {
        let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let cmd = redis::cmd("SET")
            .arg(self.key(key))
            .arg(value.as_ref())
            .arg("PX")
            .arg(millis)
            .clone();
        let () = query(&self.connection, &cmd).await?;
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result {
        let cmd = redis::cmd("DEL").arg(self.key(key)).clone();
        let _: i64 = query(&self.connection, &cmd).await?;
        Ok(())
    }
}

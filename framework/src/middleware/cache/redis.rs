//! Entries in Redis (feature `cache-redis`): several instances share one cache.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use redis::aio::ConnectionManager;

use super::CacheStore;
use crate::error::Result;
use crate::redis_connection::KeyValue;

/// Entries as Redis strings `<prefix><key>` (e.g. `cache:`) with `PX` expiry, so Redis drops
/// them itself. Give Redis a `maxmemory` with an LRU policy to bound it. A command that meets a
/// connection broken while idle is sent once more.
#[derive(Clone)]
pub struct RedisCacheStore {
    entries: KeyValue,
}

impl std::fmt::Debug for RedisCacheStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCacheStore")
            .field("prefix", &self.entries.prefix())
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
            entries: KeyValue::new(connection, prefix.into()),
        }
    }
}

#[async_trait]
impl CacheStore for RedisCacheStore {
    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        Ok(self.entries.get(key).await?)
    }

    async fn set(&self, key: &str, value: Bytes, ttl: Duration) -> Result {
        Ok(self.entries.set(key, &value, ttl).await?)
    }

    async fn delete(&self, key: &str) -> Result {
        Ok(self.entries.delete(key).await?)
    }
}

//! Entries in Redis (feature `cache-redis`): several instances share one cache.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use super::CacheStore;
use crate::error::Result;
use crate::redis_connection::{KeyValue, RedisConnection, RedisFailure, RedisPolicy};

/// Entries as Redis strings `<prefix><key>` (e.g. `cache:`) with `PX` expiry, so Redis drops
/// them itself. Give Redis a `maxmemory` with an LRU policy to bound it. The connection follows
/// the shared [Redis policy](crate::redis_connection); while Redis fails, the cache is bypassed
/// (requests are answered by the handler, nothing is stored) and the failure is logged.
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
    /// Connects to `url` with the default policy; fails when Redis cannot be reached.
    pub async fn connect(url: &str, prefix: impl Into<String>) -> Result<Self, RedisFailure> {
        let connection = RedisConnection::connect(url, RedisPolicy::default()).await?;
        Ok(Self::new(connection, prefix))
    }

    /// A store on a shared connection (e.g. the session store's).
    pub fn new(connection: RedisConnection, prefix: impl Into<String>) -> Self {
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

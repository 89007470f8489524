//! Get, set and delete with a TTL over a [`RedisConnection`], for the Redis session and cache
//! stores.

use std::time::Duration;

use super::{RedisConnection, RedisFailure, millis};

/// Byte values under `<prefix><key>` with a TTL: what the session store and the cache store
/// keep in Redis.
#[derive(Clone)]
pub(crate) struct KeyValue {
    connection: RedisConnection,
    prefix: String,
}

impl KeyValue {
    pub(crate) fn new(connection: RedisConnection, prefix: String) -> Self {
        Self { connection, prefix }
    }

    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    pub(crate) async fn get(&self, key: &str) -> Result<Option<bytes::Bytes>, RedisFailure> {
        let mut cmd = redis::cmd("GET");
        cmd.arg(self.key(key));
        let value: Option<Vec<u8>> = self.connection.query(&cmd).await?;
        Ok(value.map(bytes::Bytes::from))
    }

    /// `SET … PX <ttl>`; the TTL is at least 1 ms, since 0 is an error in Redis.
    pub(crate) async fn set(
        &self,
        key: &str,
        value: &[u8],
        ttl: Duration,
    ) -> Result<(), RedisFailure> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.key(key)).arg(value).arg("PX").arg(millis(ttl));
        self.connection.query(&cmd).await
    }

    pub(crate) async fn delete(&self, key: &str) -> Result<(), RedisFailure> {
        let mut cmd = redis::cmd("DEL");
        cmd.arg(self.key(key));
        let _removed: i64 = self.connection.query(&cmd).await?;
        Ok(())
    }
}

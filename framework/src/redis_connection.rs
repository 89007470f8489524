//! The Redis connection every Redis-backed component uses (sessions, locks): one place for the
//! timeouts and the reconnect policy.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

/// How long one connection attempt or one command may take before it counts as failed.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(2);

/// A connection manager on `url` (e.g. `redis://127.0.0.1:6379/0`) that reconnects by itself;
/// fails when Redis cannot be reached now, so a misconfigured service stops at start-up.
pub(crate) async fn connect(url: &str) -> redis::RedisResult<ConnectionManager> {
    let client = redis::Client::open(url)?;
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(TIMEOUT)
        .set_response_timeout(TIMEOUT)
        .set_number_of_retries(2)
        .set_factor(100)
        .set_max_delay(1000);
    ConnectionManager::new_with_config(client, config).await
}

/// True for the errors a retry on the reconnected manager can fix: the connection broke while
/// idle (Redis restarted) and only the next command noticed.
pub(crate) fn is_stale_connection(err: &redis::RedisError) -> bool {
    err.is_connection_dropped() || err.is_io_error()
}

/// Runs `cmd`, once more after a stale connection, so the first command after a Redis restart
/// does not fail. Only for commands that are safe to send twice.
pub(crate) async fn query<T: redis::FromRedisValue>(
    connection: &ConnectionManager,
    cmd: &redis::Cmd,
) -> redis::RedisResult<T> {
    let mut connection = connection.clone();
    match cmd.query_async(&mut connection).await {
        Err(err) if is_stale_connection(&err) => cmd.query_async(&mut connection).await,
        other => other,
    }
}

/// Byte values under `<prefix><key>` with a TTL: what the session store and the cache store
/// keep in Redis.
#[derive(Clone)]
pub(crate) struct KeyValue {
    connection: ConnectionManager,
    prefix: String,
}

impl KeyValue {
    pub(crate) fn new(connection: ConnectionManager, prefix: String) -> Self {
        Self { connection, prefix }
    }

    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    pub(crate) async fn get(&self, key: &str) -> redis::RedisResult<Option<bytes::Bytes>> {
        let cmd = redis::cmd("GET").arg(self.key(key)).clone();
        let value: Option<Vec<u8>> = query(&self.connection, &cmd).await?;
        Ok(value.map(bytes::Bytes::from))
    }

    /// `SET … PX <ttl>`; the TTL is at least 1 ms, since 0 is an error in Redis.
    pub(crate) async fn set(
        &self,
        key: &str,
        value: &[u8],
        ttl: std::time::Duration,
    ) -> redis::RedisResult<()> {
        let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let cmd = redis::cmd("SET")
            .arg(self.key(key))
            .arg(value)
            .arg("PX")
            .arg(millis)
            .clone();
        query(&self.connection, &cmd).await
    }

    pub(crate) async fn delete(&self, key: &str) -> redis::RedisResult<()> {
        let cmd = redis::cmd("DEL").arg(self.key(key)).clone();
        let _removed: i64 = query(&self.connection, &cmd).await?;
        Ok(())
    }
}

//! Sessions in Redis, so several instances share them (feature `session-redis`).
//!
//! Records live under `<prefix><id>` with the session TTL as the key's expiry (`SET … PX`), so
//! Redis drops expired sessions by itself. The connection follows the shared
//! [Redis policy](crate::redis_connection): a deadline on every command, one retry after a
//! connection broken while idle (the first command after a restart), and fail-fast while Redis
//! is down. Meanwhile requests get 500 `framework-session` (`exception: true`) within the
//! policy's deadlines. Sessions outlive a Redis restart only with Redis persistence (AOF) on.
//!
//! ```no_run
//! # async fn run() -> Result<(), framework::redis_connection::RedisFailure> {
//! use std::sync::Arc;
//! use framework::middleware::session::{RedisStore, SessionConfig, SessionMiddleware};
//!
//! let store = RedisStore::connect("redis://127.0.0.1:6379", "session:").await?;
//! let sessions = SessionMiddleware::new(Arc::new(store), SessionConfig::default());
//! # let _ = sessions;
//! # Ok(())
//! # }
//! ```

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use super::SessionStore;
use crate::error::Result;
use crate::redis_connection::{KeyValue, RedisConnection, RedisFailure, RedisPolicy};

/// A [`SessionStore`] on Redis.
#[derive(Clone)]
pub struct RedisStore {
    sessions: KeyValue,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.sessions.prefix())
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to `url` (e.g. `redis://127.0.0.1:6379/0`) with the default policy; fails when
    /// Redis cannot be reached, so a misconfigured service stops at start-up.
    pub async fn connect(url: &str, prefix: impl Into<String>) -> Result<Self, RedisFailure> {
        let connection = RedisConnection::connect(url, RedisPolicy::default()).await?;
        Ok(Self::new(connection, prefix))
    }

    /// A store on a shared connection.
    pub fn new(connection: RedisConnection, prefix: impl Into<String>) -> Self {
        Self {
            sessions: KeyValue::new(connection, prefix.into()),
        }
    }
}

#[async_trait]
impl SessionStore for RedisStore {
    async fn load(&self, id: &str) -> Result<Option<Bytes>> {
        Ok(self.sessions.get(id).await?)
    }

    async fn save(&self, id: &str, data: &[u8], ttl: Duration) -> Result {
        Ok(self.sessions.set(id, data, ttl).await?)
    }

    async fn destroy(&self, id: &str) -> Result {
        Ok(self.sessions.delete(id).await?)
    }
}

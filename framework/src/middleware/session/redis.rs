//! Sessions in Redis, so several instances share them (feature `session-redis`).
//!
//! Records live under `<prefix><id>` with the session TTL as the key's expiry (`SET … PX`), so
//! Redis drops expired sessions by itself. The connection is a `redis` connection manager: it
//! reconnects by itself after Redis restarts, and commands time out instead of hanging while
//! Redis is away. Meanwhile requests get 500 `framework-session`.
//!
//! ```no_run
//! # async fn run() -> Result<(), redis::RedisError> {
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
use redis::AsyncCommands;
use redis::aio::ConnectionManager;

use super::SessionStore;
use crate::error::Result;

/// A [`SessionStore`] on Redis.
#[derive(Clone)]
pub struct RedisStore {
    connection: ConnectionManager,
    prefix: String,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to `url` (e.g. `redis://127.0.0.1:6379/0`); fails when Redis cannot be reached,
    /// so a misconfigured service stops at start-up.
    pub async fn connect(url: &str, prefix: impl Into<String>) -> redis::RedisResult<Self> {
        let connection = crate::redis_connection::connect(url).await?;
        Ok(Self::from_manager(connection, prefix))
    }

    /// A store on an existing connection manager.
    pub fn from_manager(connection: ConnectionManager, prefix: impl Into<String>) -> Self {
        Self {
            connection,
            prefix: prefix.into(),
        }
    }

    fn key(&self, id: &str) -> String {
        format!("{}{id}", self.prefix)
    }
}

#[async_trait]
impl SessionStore for RedisStore {
    async fn load(&self, id: &str) -> Result<Option<Bytes>> {
        let mut connection = self.connection.clone();
        let data: Option<Vec<u8>> = connection.get(self.key(id)).await?;
        Ok(data.map(Bytes::from))
    }

    async fn save(&self, id: &str, data: &[u8], ttl: Duration) -> Result {
        let mut connection = self.connection.clone();
        // PX takes milliseconds; at least 1, since 0 is an error in Redis.
        let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let () = redis::cmd("SET")
            .arg(self.key(id))
            .arg(data)
            .arg("PX")
            .arg(millis)
            .query_async(&mut connection)
            .await?;
        Ok(())
    }

    async fn destroy(&self, id: &str) -> Result {
        let mut connection = self.connection.clone();
        let _removed: u64 = connection.del(self.key(id)).await?;
        Ok(())
    }
}

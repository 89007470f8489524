//! Sessions in Redis, so several instances share them (feature `session-redis`).
//!
//! Records live under `<prefix><id>` with the session TTL as the key's expiry (`SET … PX`), so
//! Redis drops expired sessions by itself. The connection is a `redis` connection manager: it
//! reconnects by itself after Redis restarts, and commands time out instead of hanging while
//! Redis is away. Meanwhile requests get 500 `framework-session`. A command that meets a
//! connection broken while idle (the first one after a restart) is sent once more.
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
use redis::aio::ConnectionManager;

use super::SessionStore;
use crate::error::Result;
use crate::redis_connection::KeyValue;

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
    /// Connects to `url` (e.g. `redis://127.0.0.1:6379/0`); fails when Redis cannot be reached,
    /// so a misconfigured service stops at start-up.
    pub async fn connect(url: &str, prefix: impl Into<String>) -> redis::RedisResult<Self> {
        let connection = crate::redis_connection::connect(url).await?;
        Ok(Self::from_manager(connection, prefix))
    }

    /// A store on an existing connection manager.
    pub fn from_manager(connection: ConnectionManager, prefix: impl Into<String>) -> Self {
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

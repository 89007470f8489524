//! The reference user service: register, get a one-time login token bound to the session, log
//! in with a SHA-256 proof of that token, read the current user.
//!
//! [`build`] assembles the app from its stores so tests and `main` share one construction.

pub mod config;
pub mod controllers;
pub mod params;
pub mod store;

use std::sync::Arc;

use framework::middleware::body_parser::BodyParser;
use framework::middleware::compress::Compress;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::recover::Recover;
use framework::middleware::responder::Responder;
use framework::middleware::session::{SessionConfig, SessionMiddleware, SessionStore};
use framework::{App, BuildError, Service};

pub use config::Config;
use store::UserStore;

/// The stores the service runs on.
pub struct Stores {
    /// Users.
    pub users: Arc<dyn UserStore>,
    /// Sessions.
    pub sessions: Arc<dyn SessionStore>,
    /// What they are, for the start-up line (no passwords).
    pub description: String,
}

impl Stores {
    /// Everything in process memory: for tests and throwaway runs.
    pub fn in_memory() -> Self {
        Self {
            users: Arc::new(store::MemoryUserStore::new()),
            sessions: Arc::new(framework::middleware::session::MemoryStore::new()),
            description: "users: memory, sessions: memory".to_owned(),
        }
    }

    /// The stores `config` asks for, connected and migrated. Fails with a message naming the
    /// store (and its URL without password) when one cannot be reached.
    pub async fn connect(config: &Config) -> Result<Self, String> {
        let (users, users_desc): (Arc<dyn UserStore>, String) = if config.database_url == "memory" {
            (Arc::new(store::MemoryUserStore::new()), "memory".to_owned())
        } else {
            connect_sql(config).await?
        };
        let (sessions, sessions_desc): (Arc<dyn SessionStore>, String) = match &config.redis_url {
            None => (
                Arc::new(framework::middleware::session::MemoryStore::new()),
                "memory".to_owned(),
            ),
            Some(url) => connect_redis(url, &config.session_key_prefix).await?,
        };
        Ok(Self {
            users,
            sessions,
            description: format!("users: {users_desc}, sessions: {sessions_desc}"),
        })
    }
}

#[cfg(feature = "sql")]
async fn connect_sql(config: &Config) -> Result<(Arc<dyn UserStore>, String), String> {
    let url = &config.database_url;
    let options = store::sql::PoolOptions {
        max_connections: config.database_max_connections,
        ..Default::default()
    };
    let store = store::sql::SqlUserStore::connect(url, options)
        .await
        .map_err(|e| format!("user store {} is not usable: {e}", config::redact(url)))?;
    Ok((Arc::new(store), config::redact(url)))
}

#[cfg(not(feature = "sql"))]
async fn connect_sql(config: &Config) -> Result<(Arc<dyn UserStore>, String), String> {
    Err(format!(
        "DATABASE_URL={} needs the `sql` feature; use DATABASE_URL=memory",
        config::redact(&config.database_url)
    ))
}

#[cfg(feature = "redis")]
async fn connect_redis(url: &str, prefix: &str) -> Result<(Arc<dyn SessionStore>, String), String> {
    let store = framework::middleware::session::RedisStore::connect(url, prefix)
        .await
        .map_err(|e| {
            format!(
                "session store {} is not reachable: {e}",
                config::redact(url)
            )
        })?;
    Ok((Arc::new(store), format!("redis {}", config::redact(url))))
}

#[cfg(not(feature = "redis"))]
async fn connect_redis(
    url: &str,
    _prefix: &str,
) -> Result<(Arc<dyn SessionStore>, String), String> {
    Err(format!(
        "REDIS_URL={} needs the `redis` feature",
        config::redact(url)
    ))
}

/// Builds the service: app middleware in the reference order (recover, compress, error
/// handler, responder, body parser; logger and stats go after recover, fresh and etag after
/// compress, as they land), the
/// session middleware registered as `session` for the controllers, and every controller
/// mounted.
pub fn build(config: &Config, stores: Stores) -> Result<Service, BuildError> {
    let session = SessionMiddleware::new(
        stores.sessions,
        SessionConfig {
            secure: config.session_secure,
            ..SessionConfig::default()
        },
    );
    App::new()
        .trust_proxy(config.trust_proxy)
        .with_state(stores.users)
        .use_middleware(Recover::default().into_shared())
        .use_middleware(Compress::default().into_shared())
        .use_middleware(ErrorHandler::default().into_shared())
        .use_middleware(Responder::default().into_shared())
        .use_middleware(BodyParser::default().into_shared())
        .register_middleware("session", session.into_shared())
        .mount_controllers()
        .build()
}

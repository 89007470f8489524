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
}

impl Stores {
    /// Everything in process memory: the default for one instance.
    pub fn in_memory() -> Self {
        Self {
            users: Arc::new(store::MemoryUserStore::new()),
            sessions: Arc::new(framework::middleware::session::MemoryStore::new()),
        }
    }
}

/// Builds the service: app middleware in the reference order (recover, then error handler,
/// responder and body parser; logger, stats, compress, fresh and etag join as they land), the
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
        .use_middleware(ErrorHandler::default().into_shared())
        .use_middleware(Responder::default().into_shared())
        .use_middleware(BodyParser::default().into_shared())
        .register_middleware("session", session.into_shared())
        .mount_controllers()
        .build()
}

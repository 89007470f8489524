//! Where users live: the [`UserStore`] trait, an in-memory implementation, and SQL
//! (SQLite/PostgreSQL) in [`sql`].

pub mod keys;
pub mod secret;
#[cfg(feature = "sql")]
pub mod sql;

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use framework::{HttpError, Result};
use http::StatusCode;
use serde::Serialize;

/// Category of user errors.
pub const CATEGORY: &str = "user";

/// A user record.
///
/// `password` is the SHA-256 digest (lowercase hex) the client registered with; the SQL store
/// keeps it sealed ([`secret`]) and hands it out opened. It is never serialised, so no response
/// can carry it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct User {
    /// Unique login name.
    pub account: String,
    /// The stored password digest.
    #[serde(skip_serializing)]
    #[schemars(skip)]
    pub password: String,
}

/// The 409 for a taken account name.
pub fn account_exists() -> HttpError {
    HttpError::with(StatusCode::CONFLICT, CATEGORY, "account already exists")
}

/// Storage of user records.
#[async_trait]
pub trait UserStore: Send + Sync + 'static {
    /// Creates a user; an existing account is [`account_exists`] (409).
    async fn create(&self, account: &str, password: &str) -> Result<User>;
    /// The user with this account, if any.
    async fn find(&self, account: &str) -> Result<Option<User>>;
}

/// How many accounts [`MemoryUserStore::new`] holds at most.
pub const DEFAULT_MEMORY_USERS: usize = 100_000;

/// The 507 for a registration the memory store has no room for.
pub fn store_full() -> HttpError {
    HttpError::with(
        StatusCode::INSUFFICIENT_STORAGE,
        CATEGORY,
        "the user store is full",
    )
}

/// Users in process memory: lost on restart, one instance only. Keyed by the lowercased
/// account, so accounts are unique ignoring case, as in the SQL store.
///
/// Bounded, as everything a client can make the server hold: at most `capacity` accounts
/// ([`DEFAULT_MEMORY_USERS`] by default, `MEMORY_USERS` in the service's settings), about
/// 200 bytes each. A registration past it is refused with 507 Insufficient Storage
/// ([`store_full`]); nobody is evicted, since an account is data, not a cached copy. A store
/// that must grow without bound is a database (`DATABASE_URL`).
#[derive(Debug)]
pub struct MemoryUserStore {
    users: Mutex<HashMap<String, User>>,
    capacity: usize,
}

impl Default for MemoryUserStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryUserStore {
    /// An empty store of at most [`DEFAULT_MEMORY_USERS`] accounts.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_MEMORY_USERS)
    }

    /// An empty store of at most `capacity` accounts.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            users: Mutex::default(),
            capacity,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, User>> {
        // Each operation is a single insert or read: a poisoned map is still consistent.
        self.users
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl UserStore for MemoryUserStore {
    async fn create(&self, account: &str, password: &str) -> Result<User> {
        let key = account.to_ascii_lowercase();
        let mut users = self.lock();
        if users.contains_key(&key) {
            return Err(account_exists().into());
        }
        if users.len() >= self.capacity {
            return Err(store_full().into());
        }
        let user = User {
            account: account.to_owned(),
            password: password.to_owned(),
        };
        users.insert(key, user.clone());
        Ok(user)
    }

    async fn find(&self, account: &str) -> Result<Option<User>> {
        Ok(self.lock().get(&account.to_ascii_lowercase()).cloned())
    }
}

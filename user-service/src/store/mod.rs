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

use crate::avatar::Avatar;

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

/// The record as the API answers with it: the account, never the digest.
impl From<User> for user_api::User {
    fn from(user: User) -> Self {
        user_api::User {
            account: user.account,
        }
    }
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
    /// Stores `avatar` as the avatar of the existing `account` (as registered), replacing any
    /// earlier one; an account that does not exist is [`no_such_account`] (404).
    async fn set_avatar(&self, account: &str, avatar: &Avatar) -> Result<()>;
    /// The avatar of `account` (ignoring case), if it has one.
    async fn avatar(&self, account: &str) -> Result<Option<Avatar>>;
}

/// The 404 for an account that does not exist.
pub fn no_such_account() -> HttpError {
    HttpError::with(StatusCode::NOT_FOUND, CATEGORY, "no such account")
}

/// How many accounts [`MemoryUserStore::new`] holds at most.
pub const DEFAULT_MEMORY_USERS: usize = 100_000;

/// How many bytes of avatars [`MemoryUserStore::new`] holds at most: 64 MiB.
pub const DEFAULT_MEMORY_AVATAR_BYTES: usize = 64 * 1024 * 1024;

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
///
/// Avatars are bounded the same way: at most `avatar_bytes` of images in all
/// ([`DEFAULT_MEMORY_AVATAR_BYTES`], `MEMORY_AVATAR_BYTES`); an upload that would pass it is
/// refused with 507 ([`avatar_store_full`]), and replacing an avatar frees the old one's bytes.
#[derive(Debug)]
pub struct MemoryUserStore {
    users: Mutex<HashMap<String, User>>,
    capacity: usize,
    avatars: Mutex<Avatars>,
    avatar_bytes: usize,
}

/// The memory store's avatars, by lowercased account, and their bytes in all.
#[derive(Debug, Default)]
struct Avatars {
    by_account: HashMap<String, Avatar>,
    bytes: usize,
}

/// The 507 for an avatar the memory store has no room for.
pub fn avatar_store_full() -> HttpError {
    HttpError::with(
        StatusCode::INSUFFICIENT_STORAGE,
        CATEGORY,
        "the avatar store is full",
    )
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

    /// An empty store of at most `capacity` accounts (and [`DEFAULT_MEMORY_AVATAR_BYTES`] of
    /// avatars).
    pub fn with_capacity(capacity: usize) -> Self {
        Self::with_limits(capacity, DEFAULT_MEMORY_AVATAR_BYTES)
    }

    /// An empty store of at most `capacity` accounts and `avatar_bytes` bytes of avatars.
    pub fn with_limits(capacity: usize, avatar_bytes: usize) -> Self {
        Self {
            users: Mutex::default(),
            capacity,
            avatars: Mutex::default(),
            avatar_bytes,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, User>> {
        // Each operation is a single insert or read: a poisoned map is still consistent.
        self.users
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn lock_avatars(&self) -> std::sync::MutexGuard<'_, Avatars> {
        // Each operation updates the map and the count together before it can panic.
        self.avatars
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

    async fn set_avatar(&self, account: &str, avatar: &Avatar) -> Result<()> {
        let key = account.to_ascii_lowercase();
        if !self.lock().contains_key(&key) {
            return Err(no_such_account().into());
        }
        let mut avatars = self.lock_avatars();
        let replaced = avatars.by_account.get(&key).map_or(0, |a| a.bytes.len());
        let total = avatars.bytes - replaced + avatar.bytes.len();
        if total > self.avatar_bytes {
            return Err(avatar_store_full().into());
        }
        avatars.by_account.insert(key, avatar.clone());
        avatars.bytes = total;
        Ok(())
    }

    async fn avatar(&self, account: &str) -> Result<Option<Avatar>> {
        let key = account.to_ascii_lowercase();
        Ok(self.lock_avatars().by_account.get(&key).cloned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use framework::body::Bytes;

    fn png(len: usize) -> Avatar {
        let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
        bytes.resize(len, 0);
        Avatar::from_image(Bytes::from(bytes)).unwrap()
    }

    #[tokio::test]
    async fn memory_avatars_are_bounded_and_replacing_frees_bytes() {
        let store = MemoryUserStore::with_limits(10, 100);
        store.create("Ann", "x").await.unwrap();
        store.create("bob", "x").await.unwrap();
        store.set_avatar("Ann", &png(60)).await.unwrap();
        assert_eq!(store.avatar("ANN").await.unwrap(), Some(png(60)));
        // 60 + 41 > 100: refused, and nothing changed.
        let full = store.set_avatar("bob", &png(41)).await.unwrap_err();
        assert_eq!(full.status(), StatusCode::INSUFFICIENT_STORAGE);
        assert_eq!(store.avatar("bob").await.unwrap(), None);
        // 60 + 40 fits exactly; replacing Ann's 60 by 20 frees 40.
        store.set_avatar("bob", &png(40)).await.unwrap();
        store.set_avatar("ann", &png(20)).await.unwrap();
        store.set_avatar("bob", &png(80)).await.unwrap();
        assert_eq!(store.avatar("Bob").await.unwrap(), Some(png(80)));
        // No account, no avatar.
        let missing = store.set_avatar("cat", &png(10)).await.unwrap_err();
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    }
}

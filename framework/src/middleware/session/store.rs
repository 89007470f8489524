//! Where session records live.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use super::{CookieStore, SessionData};
use crate::error::Result;

/// A store of session records (JSON bytes) by id, each with a time to live.
///
/// Implement it to keep sessions elsewhere (Redis, a database). Errors become 500 answers with
/// category `framework-session`.
#[async_trait]
pub trait SessionStore: Send + Sync + 'static {
    /// The record under `id`, `None` when missing or expired.
    async fn load(&self, id: &str) -> Result<Option<Bytes>>;
    /// Stores the record under `id` for `ttl`.
    async fn save(&self, id: &str, data: &[u8], ttl: Duration) -> Result;
    /// Deletes the record under `id`.
    async fn destroy(&self, id: &str) -> Result;

    /// The same store answering at once, for a store that never waits (it keeps its records
    /// in this process's memory): the session middleware then loads and saves in its
    /// synchronous hooks, without a future per request. `None` (the default) for a store that
    /// does I/O. A store answers the same way every time (the middleware asks before the chain
    /// and again after it), and its immediate calls see the same records as its async ones.
    fn immediate(&self) -> Option<&dyn ImmediateSessionStore> {
        None
    }

    /// The same store when it keeps sessions in the client's cookie ([`CookieStore`]): the
    /// middleware then opens and seals the cookie itself and calls neither `load` nor `save`.
    /// `None` (the default) for a store of records by id.
    fn in_cookie(&self) -> Option<&CookieStore> {
        None
    }
}

/// A [`SessionStore`] whose calls complete without waiting; see [`SessionStore::immediate`].
///
/// It takes and gives the session's values themselves, not their JSON record: a store in this
/// process's memory has no use for bytes, and skipping JSON saves the serialising on every
/// save and the parsing on every load.
pub trait ImmediateSessionStore: Send + Sync {
    /// The values under `id`, `None` when missing or expired.
    fn load_now(&self, id: &str) -> Result<Option<SessionData>>;
    /// Stores `data` under `id` for `ttl`.
    fn save_now(&self, id: &str, data: SessionData, ttl: Duration) -> Result;
    /// Deletes the record under `id`.
    fn destroy_now(&self, id: &str) -> Result;
}

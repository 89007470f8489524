//! Where session records live.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;

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
}

/// Sessions in process memory: the default, for one instance.
///
/// Expired records are dropped when read, and swept whenever the map has doubled since the last
/// sweep, so memory stays bounded by the live sessions.
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<MemoryInner>,
}

#[derive(Debug, Default)]
struct MemoryInner {
    records: HashMap<String, (Bytes, Instant)>,
    sweep_at: usize,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of records held (expired ones not yet swept included).
    pub fn len(&self) -> usize {
        self.lock().records.len()
    }

    /// True when no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryInner> {
        // A panic while holding this lock cannot leave the map half-updated (each operation is
        // one insert or remove), so a poisoned lock is still usable.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl SessionStore for MemoryStore {
    async fn load(&self, id: &str) -> Result<Option<Bytes>> {
        let mut inner = self.lock();
        match inner.records.get(id) {
            Some((data, expires)) if *expires > Instant::now() => Ok(Some(data.clone())),
            Some(_) => {
                inner.records.remove(id);
                Ok(None)
            }
            None => Ok(None),
        }
    }

    async fn save(&self, id: &str, data: &[u8], ttl: Duration) -> Result {
        let now = Instant::now();
        let mut inner = self.lock();
        inner
            .records
            .insert(id.to_owned(), (Bytes::copy_from_slice(data), now + ttl));
        if inner.records.len() >= inner.sweep_at {
            inner.records.retain(|_, (_, expires)| *expires > now);
            inner.sweep_at = (inner.records.len() * 2).max(1024);
        }
        Ok(())
    }

    async fn destroy(&self, id: &str) -> Result {
        self.lock().records.remove(id);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn expires_and_destroys() {
        let store = MemoryStore::new();
        store
            .save("a", b"{}", Duration::from_secs(60))
            .await
            .unwrap();
        store.save("b", b"{}", Duration::ZERO).await.unwrap();
        assert_eq!(store.load("a").await.unwrap().as_deref(), Some(&b"{}"[..]));
        assert_eq!(store.load("b").await.unwrap(), None);
        store.destroy("a").await.unwrap();
        assert_eq!(store.load("a").await.unwrap(), None);
        assert!(store.is_empty());
    }
}

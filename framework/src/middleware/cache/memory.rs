//! Entries in process memory, bounded by count and by bytes (`quick_cache`).

use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;

use super::CacheStore;
use crate::error::Result;

/// Default bound on entries.
pub const DEFAULT_MAX_ENTRIES: usize = 10_000;
/// Default bound on stored bytes (keys and values): 64 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Weighs an entry by its bytes, but never less than `floor` = max bytes / max entries, so at
/// most `max_entries` entries fit whatever their size.
#[derive(Clone)]
struct Weight {
    floor: u64,
}

impl quick_cache::Weighter<String, (Bytes, Instant)> for Weight {
    fn weight(&self, key: &String, value: &(Bytes, Instant)) -> u64 {
        let bytes = (key.len() + value.0.len()) as u64;
        bytes.max(self.floor)
    }
}

/// Entries in memory: one instance's own cache.
///
/// Bounded by [`max_entries`](Self::with_bounds) (default 10 000) and by stored bytes (default
/// 64 MiB, keys and values), whichever is reached first; the least recently used entries go
/// first (quick_cache's CLOCK-Pro). An entry past its TTL is dropped when next read. A value
/// larger than the byte bound is not stored.
pub struct MemoryCacheStore {
    entries: quick_cache::sync::Cache<String, (Bytes, Instant), Weight>,
    max_bytes: u64,
}

impl std::fmt::Debug for MemoryCacheStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryCacheStore")
            .field("entries", &self.entries.len())
            .field("bytes", &self.entries.weight())
            .finish_non_exhaustive()
    }
}

impl Default for MemoryCacheStore {
    fn default() -> Self {
        Self::with_bounds(DEFAULT_MAX_ENTRIES, DEFAULT_MAX_BYTES)
    }
}

impl MemoryCacheStore {
    /// A store with the default bounds.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store holding at most `max_entries` entries and `max_bytes` bytes.
    pub fn with_bounds(max_entries: usize, max_bytes: u64) -> Self {
        let max_entries = max_entries.max(1);
        let max_bytes = max_bytes.max(1);
        let floor = (max_bytes / max_entries as u64).max(1);
        Self {
            entries: quick_cache::sync::Cache::with_weighter(
                max_entries,
                max_bytes,
                Weight { floor },
            ),
            max_bytes,
        }
    }

    /// Entries held now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No entry is held.
    pub fn is_empty(&self) -> bool {
        self.entries.len() == 0
    }

    /// Bytes held now (keys and values, each entry counted at least max bytes / max entries).
    pub fn bytes(&self) -> u64 {
        self.entries.weight()
    }
}

#[async_trait]
impl CacheStore for MemoryCacheStore {
    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        let Some((value, expires)) = self.entries.get(key) else {
            return Ok(None);
        };
        if expires <= Instant::now() {
            self.entries.remove(key);
            return Ok(None);
        }
        Ok(Some(value))
    }

    async fn set(&self, key: &str, value: Bytes, ttl: Duration) -> Result {
        if (key.len() + value.len()) as u64 > self.max_bytes {
            return Ok(());
        }
        self.entries
            .insert(key.to_owned(), (value, Instant::now() + ttl));
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result {
        self.entries.remove(key);
        Ok(())
    }
}

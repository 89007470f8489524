//! Where session records live.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use quick_cache::sync::Cache;
use quick_cache::{DefaultHashBuilder, Lifecycle, UnitWeighter};

use async_trait::async_trait;
use bytes::Bytes;
use compact_str::CompactString;

use super::SessionData;
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

/// How many sessions [`MemoryStore::new`] keeps at most.
pub const DEFAULT_MEMORY_CAPACITY: usize = 100_000;

type Record = (SessionData, Instant);

/// Logs (at most once a minute) when live sessions are evicted to make room.
#[derive(Clone)]
struct WarnOnEvict {
    capacity: usize,
    evicted: Arc<AtomicU64>,
    last_warning: Arc<AtomicU64>,
    started: Instant,
}

impl Lifecycle<CompactString, Record> for WarnOnEvict {
    type RequestState = ();

    fn on_evict(&self, _state: &mut (), _id: CompactString, (_, expires): Record) {
        if expires <= Instant::now() {
            // An expired record going is no loss.
            return;
        }
        let total = self.evicted.fetch_add(1, Ordering::Relaxed) + 1;
        let now = self.started.elapsed().as_secs() + 60;
        let last = self.last_warning.load(Ordering::Relaxed);
        if now >= last + 60
            && self
                .last_warning
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::warn!(
                capacity = self.capacity,
                evicted_total = total,
                "session memory store is full: evicting the least recently used live sessions"
            );
        }
    }
}

/// Sessions in process memory: the default, for one instance.
///
/// Bounded: at most `capacity` records ([`DEFAULT_MEMORY_CAPACITY`] by default), so clients
/// that start sessions without end cannot exhaust memory. When full, the least recently used
/// records are evicted (quick_cache's CLOCK-based approximation of LRU) and a warning is logged
/// at most once a minute. Expired records are dropped when read or evicted first in practice.
/// The cache is sharded, so there is no global lock on the hot path. Ids of up to 24 bytes
/// (the middleware's are 22) are kept inline in the key on 64-bit targets.
///
/// Records are the session's values themselves ([`SessionData`], moved in by the middleware's
/// save), not JSON: a save serialises nothing and a load parses nothing (it clones the values).
/// Its byte interface ([`SessionStore`]) converts: `save` takes a JSON object (anything else is
/// an error) and `load` gives one.
pub struct MemoryStore {
    cache: Cache<CompactString, Record, UnitWeighter, DefaultHashBuilder, WarnOnEvict>,
    evicted: Arc<AtomicU64>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("len", &self.len())
            .field("evicted", &self.evicted())
            .finish()
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// An empty store of at most [`DEFAULT_MEMORY_CAPACITY`] sessions.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_MEMORY_CAPACITY)
    }

    /// An empty store of at most `capacity` sessions.
    pub fn with_capacity(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        let evicted = Arc::new(AtomicU64::new(0));
        let lifecycle = WarnOnEvict {
            capacity,
            evicted: Arc::clone(&evicted),
            last_warning: Arc::new(AtomicU64::new(0)),
            started: Instant::now(),
        };
        let cache = Cache::with(
            capacity,
            capacity as u64,
            UnitWeighter,
            DefaultHashBuilder::default(),
            lifecycle,
        );
        Self { cache, evicted }
    }

    /// Number of records held (expired ones not yet dropped included).
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// True when no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Live records evicted so far to stay within the capacity.
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }
}

impl ImmediateSessionStore for MemoryStore {
    fn load_now(&self, id: &str) -> Result<Option<SessionData>> {
        match self.cache.get(id) {
            Some((data, expires)) if expires > Instant::now() => Ok(Some(data)),
            Some(_) => {
                self.cache.remove(id);
                Ok(None)
            }
            None => Ok(None),
        }
    }

    fn save_now(&self, id: &str, mut data: SessionData, ttl: Duration) -> Result {
        data.shrink_to_fit();
        self.cache
            .insert(CompactString::new(id), (data, Instant::now() + ttl));
        Ok(())
    }

    fn destroy_now(&self, id: &str) -> Result {
        self.cache.remove(id);
        Ok(())
    }
}

#[async_trait]
impl SessionStore for MemoryStore {
    async fn load(&self, id: &str) -> Result<Option<Bytes>> {
        let Some(data) = self.load_now(id)? else {
            return Ok(None);
        };
        Ok(Some(serde_json::to_vec(&data)?.into()))
    }

    async fn save(&self, id: &str, data: &[u8], ttl: Duration) -> Result {
        let data = serde_json::from_slice(data).map_err(|e| {
            crate::Error::msg(format!("a session record must be a JSON object: {e}"))
        })?;
        self.save_now(id, data, ttl)
    }

    async fn destroy(&self, id: &str) -> Result {
        self.destroy_now(id)
    }

    fn immediate(&self) -> Option<&dyn ImmediateSessionStore> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(i: usize) -> SessionData {
        let mut data = SessionData::new();
        data.insert("i", serde_json::json!(i));
        data
    }

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

    /// Keys up to 24 bytes are kept inline (on 64-bit targets), longer ones on the heap: both
    /// are found again by the same string, and not by a prefix or an extension of it.
    #[test]
    fn finds_inline_and_heap_keys() {
        let store = MemoryStore::new();
        let ttl = Duration::from_secs(60);
        let ids = [
            "",
            "a",
            "0123456789abcdefghij-_",    // 22 bytes: the middleware's ids
            "0123456789abcdefghijklmn",  // 24: the longest inline key
            "0123456789abcdefghijklmno", // 25: the shortest heap key
            "an id of a custom store user, longer than any inline key",
        ];
        for (i, id) in ids.iter().enumerate() {
            if cfg!(target_pointer_width = "64") {
                assert_eq!(
                    CompactString::new(id).is_heap_allocated(),
                    id.len() > 24,
                    "{id:?}"
                );
            }
            store.save_now(id, numbered(i), ttl).unwrap();
        }
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(store.load_now(id).unwrap(), Some(numbered(i)), "{id:?}");
        }
        assert_eq!(store.load_now("0123456789abcdefghijklm").unwrap(), None);
        assert_eq!(store.load_now("0123456789abcdefghijklmnop").unwrap(), None);
        store.destroy_now(ids[4]).unwrap();
        assert_eq!(store.load_now(ids[4]).unwrap(), None);
        assert_eq!(store.len(), ids.len() - 1);
    }

    /// The byte interface speaks JSON objects; the immediate one sees the same records.
    #[tokio::test]
    async fn bytes_in_and_out_are_json_objects() {
        let store = MemoryStore::new();
        let ttl = Duration::from_secs(60);
        store.save("a", br#"{"i":7}"#, ttl).await.unwrap();
        assert_eq!(store.load_now("a").unwrap(), Some(numbered(7)));
        store.save_now("b", numbered(8), ttl).unwrap();
        assert_eq!(
            store.load("b").await.unwrap().as_deref(),
            Some(&br#"{"i":8}"#[..])
        );
        for bad in [&b"[1]"[..], b"not json", b""] {
            let err = store.save("c", bad, ttl).await.unwrap_err();
            assert!(err.to_string().contains("JSON object"), "{err}");
        }
        assert_eq!(store.load("c").await.unwrap(), None);
    }

    #[tokio::test]
    async fn stays_within_its_capacity() {
        let store = MemoryStore::with_capacity(1000);
        for i in 0..20_000 {
            store
                .save(&format!("id-{i}"), b"{}", Duration::from_secs(600))
                .await
                .unwrap();
        }
        assert!(store.len() <= 1000, "{}", store.len());
        assert!(store.evicted() >= 19_000, "{}", store.evicted());
        // The newest record is there.
        assert!(store.load("id-19999").await.unwrap().is_some());
    }
}

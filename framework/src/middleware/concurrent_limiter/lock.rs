//! The [`Lock`] trait and the in-process lock.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rustc_hash::{FxHashMap, FxHasher};

use crate::context::Context;
use crate::error::Result;

/// Releases a lock when dropped, however the request ended.
#[must_use = "the lock is released when this is dropped"]
pub struct Unlock(Option<Box<dyn FnOnce() + Send>>);

impl Unlock {
    /// Runs `release` on drop.
    pub fn new(release: impl FnOnce() + Send + 'static) -> Self {
        Self(Some(Box::new(release)))
    }
}

impl Drop for Unlock {
    fn drop(&mut self) {
        if let Some(release) = self.0.take() {
            release();
        }
    }
}

impl std::fmt::Debug for Unlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Unlock(..)")
    }
}

/// A lock on a key: `Ok(Some(unlock))` when taken, `Ok(None)` when someone holds it. `ttl`
/// bounds how long a holder that never releases (a crashed instance) can keep it.
#[async_trait]
pub trait Lock: Send + Sync + 'static {
    /// Tries to take `key`.
    async fn lock(&self, key: &str, ttl: Duration, ctx: &Context) -> Result<Option<Unlock>>;
}

const SHARDS: usize = 64;

type Shard = Mutex<FxHashMap<Box<str>, (u64, Instant)>>;

/// Locks held in this process: a map sharded 64 ways (no global mutex; no lock is held across
/// an `.await`). An entry lives only while its lock is held: releasing removes it, so the map
/// holds the keys locked right now, never every key ever seen. An expired entry (its holder
/// outlived `ttl`) is taken over, and the old holder's release then leaves the new one alone.
#[derive(Clone)]
pub struct MemoryLock {
    shards: Arc<[Shard; SHARDS]>,
    next_token: Arc<std::sync::atomic::AtomicU64>,
}

impl Default for MemoryLock {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for MemoryLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryLock")
            .field("held", &self.held())
            .finish()
    }
}

impl MemoryLock {
    /// An empty lock table.
    pub fn new() -> Self {
        Self {
            shards: Arc::new(std::array::from_fn(|_| Mutex::default())),
            next_token: Arc::default(),
        }
    }

    /// How many keys are locked now.
    pub fn held(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().map_or(0, |m| m.len()))
            .sum()
    }

    fn shard(&self, key: &str) -> usize {
        use std::hash::{Hash, Hasher};
        let mut hasher = FxHasher::default();
        key.hash(&mut hasher);
        (hasher.finish() as usize) % SHARDS
    }

    /// Takes `key` now, or says who holds it; the same as [`Lock::lock`] without the future.
    pub fn try_lock(&self, key: &str, ttl: Duration) -> Option<Unlock> {
        let index = self.shard(key);
        let token = self
            .next_token
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let now = Instant::now();
        {
            let mut shard = self.shards[index].lock().unwrap_or_else(|e| e.into_inner());
            match shard.get_mut(key) {
                Some(held) if held.1 > now => return None,
                Some(expired) => *expired = (token, now + ttl),
                None => {
                    shard.insert(key.into(), (token, now + ttl));
                }
            }
        }
        let shards = Arc::clone(&self.shards);
        let key: Box<str> = key.into();
        Some(Unlock::new(move || {
            let mut shard = shards[index].lock().unwrap_or_else(|e| e.into_inner());
            if shard.get(&key).is_some_and(|held| held.0 == token) {
                shard.remove(&key);
            }
        }))
    }
}

#[async_trait]
impl Lock for MemoryLock {
    async fn lock(&self, key: &str, ttl: Duration, _ctx: &Context) -> Result<Option<Unlock>> {
        Ok(self.try_lock(key, ttl))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_release_and_expiry() {
        let lock = MemoryLock::new();
        let held = lock.try_lock("a", Duration::from_secs(60)).unwrap();
        assert!(lock.try_lock("a", Duration::from_secs(60)).is_none());
        assert!(lock.try_lock("b", Duration::from_secs(60)).is_some());
        drop(held);
        assert_eq!(lock.held(), 0);
        // An expired holder is taken over; its release leaves the new holder alone.
        let old = lock.try_lock("c", Duration::ZERO).unwrap();
        let new = lock.try_lock("c", Duration::from_secs(60)).unwrap();
        drop(old);
        assert!(lock.try_lock("c", Duration::from_secs(60)).is_none());
        drop(new);
        assert_eq!(lock.held(), 0);
    }

    #[test]
    fn memory_stays_flat_over_many_keys() {
        let lock = MemoryLock::new();
        for i in 0..100_000 {
            let unlock = lock.try_lock(&format!("key-{i}"), Duration::from_secs(60));
            assert!(unlock.is_some());
        }
        assert_eq!(lock.held(), 0);
    }
}

//! The [`Lock`] trait, the owner token and the in-process lock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rustc_hash::{FxHashMap, FxHasher};

use crate::error::Result;

/// Who holds a lock: one value per acquisition, unique across processes (a random 64-bit
/// prefix chosen at start-up and a counter), as 32 hex digits. Only the holder's token
/// releases or renews a lock, so a request whose lock expired and was taken by another never
/// releases the other's.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(align(8))]
pub struct LockToken([u8; 32]);

impl LockToken {
    /// A token no other acquisition has (in this process, or, with overwhelming probability,
    /// in any other).
    pub fn new() -> Self {
        static PREFIX: OnceLock<u64> = OnceLock::new();
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let prefix = *PREFIX.get_or_init(|| {
            let mut bits = [0u8; 8];
            // Without the OS generator the time still tells processes apart.
            if getrandom::fill(&mut bits).is_err() {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                bits = (nanos as u64 ^ u64::from(std::process::id())).to_le_bytes();
            }
            u64::from_le_bytes(bits)
        });
        let count = COUNTER.fetch_add(1, Ordering::Relaxed);
        let mut bits = [0u8; 16];
        bits[..8].copy_from_slice(&prefix.to_le_bytes());
        bits[8..].copy_from_slice(&count.to_le_bytes());
        Self(crate::ids::hex_128(bits))
    }

    /// The token's text.
    pub fn as_str(&self) -> &str {
        // Hex digits only: the fallback is never taken.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl Default for LockToken {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for LockToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("LockToken").field(&self.as_str()).finish()
    }
}

/// Where per-key locks live. Every operation names the holder's [`LockToken`]:
/// - [`acquire`](Self::acquire) takes the key for `ttl` when nobody holds it, or when `token`
///   already does (so sending it twice, after a lost answer, is safe);
/// - [`renew`](Self::renew) extends the holder's `ttl` while its request runs;
/// - [`release`](Self::release) deletes the key only while `token` holds it.
///
/// A holder that never releases (a crashed instance) loses the key when its `ttl` runs out.
#[async_trait]
pub trait Lock: Send + Sync + 'static {
    /// Takes `key` for `token` for `ttl`: true when taken (or already held by `token`), false
    /// when another holds it.
    async fn acquire(&self, key: &str, token: &LockToken, ttl: Duration) -> Result<bool>;

    /// Extends `token`'s hold on `key` to `ttl` from now: false when it no longer holds it.
    async fn renew(&self, key: &str, token: &LockToken, ttl: Duration) -> Result<bool>;

    /// Releases `key` if `token` holds it; nothing otherwise.
    async fn release(&self, key: &str, token: &LockToken) -> Result;

    /// Releases from a `Drop`, where nothing can be awaited: the request was cancelled (the
    /// client went away) or panicked, perhaps while its acquisition was still under way. The
    /// default spawns [`release`](Self::release) on the current runtime and tries again every
    /// half second while the store fails, until `ttl` has passed (by then the key has expired
    /// anyway), so an acquisition that lands after its request gave up is still deleted.
    fn release_detached(self: Arc<Self>, key: Box<str>, token: LockToken, ttl: Duration) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let give_up = Instant::now()
                .checked_add(ttl)
                .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
            loop {
                match self.release(&key, &token).await {
                    Ok(()) => return,
                    Err(err) if Instant::now() >= give_up => {
                        tracing::warn!(
                            key = &*key,
                            error = %err.into_http().message(),
                            "releasing a lock failed; it expires by its TTL"
                        );
                        return;
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
                }
            }
        });
    }
}

const SHARDS: usize = 64;

type Shard = Mutex<FxHashMap<Box<str>, (LockToken, Instant)>>;

/// Locks held in this process: a map sharded 64 ways (no global mutex; no lock is held across
/// an `.await`). An entry lives only while its lock is held: releasing removes it, so the map
/// holds the keys locked right now, never every key ever seen. An expired entry (its holder
/// outlived `ttl` without renewing) is taken over, and the old holder's release then leaves the
/// new one alone. Release from a `Drop` is immediate (no task).
#[derive(Clone)]
pub struct MemoryLock {
    shards: Arc<[Shard; SHARDS]>,
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
        }
    }

    /// How many keys are locked now.
    pub fn held(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().map_or(0, |m| m.len()))
            .sum()
    }

    fn shard(
        &self,
        key: &str,
    ) -> std::sync::MutexGuard<'_, FxHashMap<Box<str>, (LockToken, Instant)>> {
        use std::hash::{Hash, Hasher};
        let mut hasher = FxHasher::default();
        key.hash(&mut hasher);
        let index = (hasher.finish() as usize) % SHARDS;
        self.shards[index]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// [`Lock::acquire`] without the future.
    pub fn try_acquire(&self, key: &str, token: &LockToken, ttl: Duration) -> bool {
        let now = Instant::now();
        let until = now
            .checked_add(ttl)
            .unwrap_or(now + Duration::from_secs(86_400 * 365));
        let mut shard = self.shard(key);
        match shard.get_mut(key) {
            Some(held) if held.1 > now && held.0 != *token => false,
            Some(held) => {
                *held = (*token, until);
                true
            }
            None => {
                shard.insert(key.into(), (*token, until));
                true
            }
        }
    }

    /// [`Lock::renew`] without the future.
    pub fn try_renew(&self, key: &str, token: &LockToken, ttl: Duration) -> bool {
        let now = Instant::now();
        let mut shard = self.shard(key);
        match shard.get_mut(key) {
            Some(held) if held.0 == *token => {
                held.1 = now.checked_add(ttl).unwrap_or(held.1);
                true
            }
            _ => false,
        }
    }

    /// [`Lock::release`] without the future.
    pub fn release_now(&self, key: &str, token: &LockToken) {
        let mut shard = self.shard(key);
        if shard.get(key).is_some_and(|held| held.0 == *token) {
            shard.remove(key);
        }
    }
}

#[async_trait]
impl Lock for MemoryLock {
    async fn acquire(&self, key: &str, token: &LockToken, ttl: Duration) -> Result<bool> {
        Ok(self.try_acquire(key, token, ttl))
    }

    async fn renew(&self, key: &str, token: &LockToken, ttl: Duration) -> Result<bool> {
        Ok(self.try_renew(key, token, ttl))
    }

    async fn release(&self, key: &str, token: &LockToken) -> Result {
        self.release_now(key, token);
        Ok(())
    }

    fn release_detached(self: Arc<Self>, key: Box<str>, token: LockToken, _ttl: Duration) {
        self.release_now(&key, &token);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn tokens_are_unique_hex() {
        let a = LockToken::new();
        let b = LockToken::new();
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), 32);
        assert!(a.as_str().bytes().all(|b| b.is_ascii_hexdigit()));
        // The same process prefix, another count.
        assert_eq!(a.as_str()[..16], b.as_str()[..16]);
    }

    #[test]
    fn only_the_holder_releases_or_renews() {
        let lock = MemoryLock::new();
        let (a, b) = (LockToken::new(), LockToken::new());
        assert!(lock.try_acquire("k", &a, MINUTE));
        // Sent twice by its holder: still taken (a retry after a lost answer).
        assert!(lock.try_acquire("k", &a, MINUTE));
        assert!(!lock.try_acquire("k", &b, MINUTE));
        assert!(lock.try_acquire("other", &b, MINUTE));
        // b's release and renewal leave a's lock alone.
        lock.release_now("k", &b);
        assert!(!lock.try_renew("k", &b, MINUTE));
        assert!(!lock.try_acquire("k", &b, MINUTE));
        assert!(lock.try_renew("k", &a, MINUTE));
        lock.release_now("k", &a);
        lock.release_now("other", &b);
        assert_eq!(lock.held(), 0);
    }

    #[test]
    fn expired_locks_are_taken_over_and_renewal_keeps_them() {
        let lock = MemoryLock::new();
        let (old, new) = (LockToken::new(), LockToken::new());
        assert!(lock.try_acquire("c", &old, Duration::ZERO));
        assert!(lock.try_acquire("c", &new, MINUTE));
        // The old holder's release leaves the new holder alone.
        lock.release_now("c", &old);
        assert!(!lock.try_acquire("c", &old, MINUTE));
        // A short lock renewed before it runs out is not taken over.
        let short = LockToken::new();
        assert!(lock.try_acquire("d", &short, Duration::from_millis(50)));
        assert!(lock.try_renew("d", &short, MINUTE));
        std::thread::sleep(Duration::from_millis(80));
        assert!(!lock.try_acquire("d", &new, MINUTE));
        lock.release_now("c", &new);
        lock.release_now("d", &short);
        assert_eq!(lock.held(), 0);
    }

    /// 100 000 keys, each locked and released: no entry is left behind, and the tables never
    /// grow past what one key at a time needs (their room, summed over the shards).
    #[test]
    fn memory_stays_flat_over_many_keys() {
        let lock = MemoryLock::new();
        let room = |lock: &MemoryLock| -> usize {
            lock.shards
                .iter()
                .map(|s| s.lock().map_or(0, |m| m.capacity()))
                .sum()
        };
        for i in 0..100_000 {
            let key = format!("key-{i}");
            let token = LockToken::new();
            assert!(lock.try_acquire(&key, &token, MINUTE));
            Arc::new(lock.clone()).release_detached(key.into(), token, MINUTE);
        }
        assert_eq!(lock.held(), 0);
        // A map's smallest allocation holds 3 entries; each shard saw one at a time.
        assert!(
            room(&lock) <= 4 * SHARDS,
            "room for {} entries",
            room(&lock)
        );
    }
}

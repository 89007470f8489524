//! Sessions in process memory: a sharded table with CLOCK eviction.
//!
//! Each shard is a mutex over a vector of records and a hash index into it (hashbrown's
//! `HashTable` of positions, hashed with a randomly seeded foldhash). A save into a shard with
//! capacity is one hash of the id, one lock, one probe and a move of the values into the vector
//! (a full shard adds the sweep for a victim); a load is the same and a clone. The lock is
//! never held across an `.await` (there is none) nor while user code runs: records hold only
//! the store's own values, and the values a save lets go of are dropped after the unlock.
//!
//! Why not a cache crate (quick_cache, which the response cache uses): its CLOCK-Pro keeps
//! hot, cold and ghost lists, built for caches of values that can be fetched again, and costs
//! more per save than this table (BENCHMARKS.md, "Hand-written fast paths"). A session is not
//! a cached copy: what the
//! store evicts is gone, so it needs only a bound and a sensible victim, and the whole policy
//! fits in [`Shard::sweep`].
//!
//! The eviction policy is CLOCK with a count of turns (a GCLOCK) and a minimum age:
//! - a session is never evicted before half its shard's capacity of newer sessions has been
//!   added to the shard (it is *young* until then), unless it expired: a new session lives
//!   long enough for its client to come back, wherever it sits in the shard (a deletion moves
//!   the last record into the hole, which may put it just ahead of the hand);
//! - past that age, the hand takes a turn from each record it passes and evicts the first with
//!   none left: a session has one turn when it is saved new, two after each load or save
//!   again, so a flood of new sessions that are never used again (anonymous clients, a
//!   script) evicts its own kind before the sessions of clients who keep coming back;
//! - an expired record the hand meets is the victim at once.
//!
//! At most half the records of a full shard are young, so the sweep ends within three turns
//! (it gives up then and evicts the record under the hand, which the counts make unreachable).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use compact_str::CompactString;
use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

use super::{ImmediateSessionStore, SessionData, SessionStore};
use crate::error::Result;

/// How many sessions [`MemoryStore::new`] keeps at most.
pub const DEFAULT_MEMORY_CAPACITY: usize = 100_000;

/// At most this many shards, and fewer when each would hold fewer than [`MIN_SHARD_CAPACITY`]
/// records: a shard is the unit of eviction, so a tiny one would evict almost at random.
const MAX_SHARDS: usize = 64;
const MIN_SHARD_CAPACITY: usize = 64;

/// Records a shard has capacity for from the start (its whole capacity when smaller). A store
/// that starts empty and fills up would otherwise grow each shard a dozen times on the way,
/// moving its records and rehashing its index each time (BENCHMARKS.md, "Hand-written fast
/// paths"). The reserved capacity is address space: the OS
/// gives a page memory when a record is first written to it, so the default store (100 000
/// records, ~13 MB reserved) costs little more than its index's control bytes until it fills.
/// A larger shard grows by doubling past it.
const RESERVED_PER_SHARD: usize = 16_384;

/// The turns of the hand a record loaded or saved again is spared; see [`Record::uses`].
const MAX_USES: u8 = 2;

/// One session record.
struct Record {
    id: CompactString,
    /// The id's hash, kept so that moving or evicting the record needs no rehash.
    hash: u64,
    data: SessionData,
    expires: Instant,
    /// Turns of the clock hand the record is spared: 1 when saved new, [`MAX_USES`] after each
    /// load or save again; the hand takes one each time it passes.
    uses: u8,
    /// The shard's count of new records when this one was added (wrapping): its age.
    born: u32,
}

/// A part of the store: records in a vector, found through an index of their positions.
struct Shard {
    index: HashTable<u32>,
    records: Vec<Record>,
    capacity: usize,
    /// The clock hand: the next position the sweep looks at.
    hand: usize,
    /// New records added so far (wrapping): the clock that ages records.
    added: u32,
}

/// What a save let go of, for the store to drop and count once the shard is unlocked.
struct Released {
    /// The session's old values, or the values of the record evicted to make space.
    _values: Option<SessionData>,
    /// A record that had not expired was evicted.
    evicted_alive: bool,
}

impl Shard {
    fn new(capacity: usize) -> Self {
        let reserved = capacity.min(RESERVED_PER_SHARD);
        Self {
            index: HashTable::with_capacity(reserved),
            records: Vec::with_capacity(reserved),
            capacity,
            hand: 0,
            added: 0,
        }
    }

    fn position(&self, hash: u64, id: &str) -> Option<usize> {
        let records = &self.records;
        self.index
            .find(hash, |&at| records[at as usize].id == id)
            .map(|&at| at as usize)
    }

    fn load(&mut self, hash: u64, id: &str, now: Instant) -> Option<&SessionData> {
        let at = self.position(hash, id)?;
        if self.records[at].expires <= now {
            // Dropped under the lock: values the store itself made, nothing of a caller's.
            drop(self.remove_at(at));
            return None;
        }
        let record = &mut self.records[at];
        record.uses = MAX_USES;
        Some(&record.data)
    }

    fn save(
        &mut self,
        hash: u64,
        id: &str,
        data: SessionData,
        now: Instant,
        ttl: Duration,
    ) -> Released {
        // A TTL past what the clock can count is as good as forever: a century.
        let expires = now
            .checked_add(ttl)
            .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 60 * 60));
        // One probe finds the session or the place for it (space for one more is made first).
        let records = &self.records;
        let vacant = match self.index.entry(
            hash,
            |&i| records[i as usize].id == id,
            |&i| records[i as usize].hash,
        ) {
            Entry::Occupied(entry) => {
                let record = &mut self.records[*entry.get() as usize];
                record.expires = expires;
                record.uses = MAX_USES;
                return Released {
                    _values: Some(std::mem::replace(&mut record.data, data)),
                    evicted_alive: false,
                };
            }
            Entry::Vacant(vacant) => vacant,
        };
        let record = Record {
            id: CompactString::new(id),
            hash,
            data,
            expires,
            uses: 1,
            born: self.added,
        };
        self.added = self.added.wrapping_add(1);
        if self.records.len() < self.capacity {
            if self.records.len() == self.records.capacity() {
                // Double, but never past the capacity: a full shard holds no spare capacity.
                let grown = (self.records.len() * 2).max(4).min(self.capacity);
                self.records.reserve_exact(grown - self.records.len());
            }
            vacant.insert(self.records.len() as u32);
            self.records.push(record);
            return Released {
                _values: None,
                evicted_alive: false,
            };
        }
        // Full: the vacant place goes unused (its borrow ends here); a victim makes space.
        let at = self.sweep(now);
        let old = std::mem::replace(&mut self.records[at], record);
        let (at32, old_hash) = (at as u32, old.hash);
        if let Ok(entry) = self.index.find_entry(old_hash, |&i| i == at32) {
            entry.remove();
        }
        let records = &self.records;
        self.index
            .insert_unique(hash, at32, |&i| records[i as usize].hash);
        Released {
            evicted_alive: old.expires > now,
            _values: Some(old.data),
        }
    }

    /// The position of the record to evict in a full shard: from the hand on, the first
    /// expired record, or the first one past the minimum age with no turn left, taking a turn
    /// from each record past that age it passes (see the module doc).
    fn sweep(&mut self, now: Instant) -> usize {
        let len = self.records.len();
        // Young: fewer than half the capacity of newer records added since (the record being
        // saved, already counted in `added`, among them). Fewer than half of a full shard's
        // records are, so within three turns some other record runs out of turns (it has at
        // most two); the bound is only a guard.
        let young = (self.capacity / 2) as u32;
        for _ in 0..3 * len {
            if self.hand >= len {
                self.hand = 0;
            }
            let at = self.hand;
            self.hand += 1;
            let record = &mut self.records[at];
            if record.expires <= now {
                return at;
            }
            let newer = self.added.wrapping_sub(record.born).wrapping_sub(1);
            if newer < young {
                continue;
            }
            if record.uses == 0 {
                return at;
            }
            record.uses -= 1;
        }
        self.hand % len
    }

    /// Takes the record at `at` out; the last record moves into its place.
    fn remove_at(&mut self, at: usize) -> Record {
        let (at32, last) = (at as u32, (self.records.len() - 1) as u32);
        if let Ok(entry) = self.index.find_entry(self.records[at].hash, |&i| i == at32) {
            entry.remove();
        }
        let removed = self.records.swap_remove(at);
        if at32 != last {
            let moved = self.records[at].hash;
            if let Some(i) = self.index.find_mut(moved, |&i| i == last) {
                *i = at32;
            }
        }
        removed
    }

    fn destroy(&mut self, hash: u64, id: &str) -> Option<Record> {
        let at = self.position(hash, id)?;
        Some(self.remove_at(at))
    }
}

/// Sessions in process memory: the default, for one instance.
///
/// Bounded: at most `capacity` records ([`DEFAULT_MEMORY_CAPACITY`] by default), so clients
/// that start sessions without end cannot exhaust memory. When full, a save evicts a record:
/// the first expired one the sweep meets, or the first one not used for its last turns of the
/// sweep (CLOCK with a count of uses, an approximation of least recently used that spares the
/// sessions of returning clients from a flood of new ones). A session is never evicted before
/// half its shard's capacity of newer sessions has been added to the shard, unless it expired
/// (see the module source). Evicting a live record logs a warning at most once a minute and
/// counts in [`MemoryStore::evicted`]. Expired records are also dropped when read.
///
/// The store is split in shards (up to 64, by the id's hash), each behind its own mutex, so
/// there is no global lock; the capacity is split exactly between them. Ids of up to 24 bytes
/// (the middleware's are 22) are kept inline on 64-bit targets.
///
/// Records are the session's values themselves ([`SessionData`], moved in by the middleware's
/// save), not JSON: a save serialises nothing and a load parses nothing (it clones the values).
/// Its byte interface ([`SessionStore`]) converts: `save` takes a JSON object (anything else is
/// an error) and `load` gives one.
pub struct MemoryStore {
    shards: Box<[Mutex<Shard>]>,
    hasher: foldhash::fast::RandomState,
    capacity: usize,
    evicted: AtomicU64,
    /// Seconds after `started` (plus 60) of the last eviction warning.
    last_warning: AtomicU64,
    started: Instant,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("capacity", &self.capacity)
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

    /// An empty store of at most `capacity` sessions (at least one, at most `u32::MAX`).
    /// Room for the records is reserved up front, up to 16 384 records per shard (address
    /// space the OS backs with memory as records are written); a larger store grows past it
    /// with use, up to the capacity.
    pub fn with_capacity(capacity: usize) -> Self {
        let capacity = capacity.clamp(1, u32::MAX as usize);
        let cores = std::thread::available_parallelism().map_or(4, usize::from);
        let by_cores = (cores * 4).next_power_of_two().min(MAX_SHARDS);
        // The largest power of two that leaves every shard MIN_SHARD_CAPACITY records (or 1).
        let by_capacity = 1 << (capacity / MIN_SHARD_CAPACITY).max(1).ilog2();
        let count = by_cores.min(by_capacity);
        // The capacity split exactly: the first `capacity % count` shards hold one more.
        let shards = (0..count)
            .map(|i| {
                Mutex::new(Shard::new(
                    capacity / count + usize::from(i < capacity % count),
                ))
            })
            .collect();
        Self {
            shards,
            hasher: foldhash::fast::RandomState::default(),
            capacity,
            evicted: AtomicU64::new(0),
            last_warning: AtomicU64::new(0),
            started: Instant::now(),
        }
    }

    /// The most records it keeps.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Number of records held (expired ones not yet dropped included).
    pub fn len(&self) -> usize {
        (0..self.shards.len())
            .map(|i| self.lock(i).records.len())
            .sum()
    }

    /// True when no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Live records evicted so far to stay within the capacity.
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }

    /// The id's hash and the shard it lives in. The shard comes from bits the shard's table
    /// does not use for its buckets (the low ones) nor for its tags (the top seven).
    fn locate(&self, id: &str) -> (u64, usize) {
        use std::hash::BuildHasher;
        let hash = self.hasher.hash_one(id);
        (hash, (hash >> 40) as usize & (self.shards.len() - 1))
    }

    /// A shard, locked. A panic under the lock cannot leave a shard half changed (no step
    /// that can panic runs between two changes), so a poisoned lock is taken over.
    fn lock(&self, shard: usize) -> MutexGuard<'_, Shard> {
        self.shards[shard]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a live record evicted, and warns at most once a minute.
    fn evicted_alive(&self) {
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
                "session memory store is full: evicting live sessions not used recently"
            );
        }
    }
}

impl ImmediateSessionStore for MemoryStore {
    fn load_now(&self, id: &str) -> Result<Option<SessionData>> {
        let (hash, shard) = self.locate(id);
        let now = Instant::now();
        Ok(self.lock(shard).load(hash, id, now).cloned())
    }

    fn save_now(&self, id: &str, mut data: SessionData, ttl: Duration) -> Result {
        data.shrink_to_fit();
        let (hash, shard) = self.locate(id);
        let now = Instant::now();
        // The guard goes at the end of this statement; what the save let go of is dropped at
        // the end of the function, with the shard unlocked.
        let released = self.lock(shard).save(hash, id, data, now, ttl);
        if released.evicted_alive {
            self.evicted_alive();
        }
        Ok(())
    }

    fn destroy_now(&self, id: &str) -> Result {
        let (hash, shard) = self.locate(id);
        let removed = self.lock(shard).destroy(hash, id);
        drop(removed);
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
mod tests;

//! Budgets in process: `governor`'s GCRA over a bounded key table.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::{DashMapStateStore, ShrinkableKeyedStateStore};
use governor::state::{InMemoryState, NotKeyed, StateStore};
use governor::{Quota, RateLimiter};

use super::{Decision, RateQuota, RateStore};
use crate::error::Result;

/// Keys kept at most by default.
pub const DEFAULT_MAX_KEYS: usize = 100_000;

/// The key table: `governor`'s `DashMap` store, but a new key finds no room once `max_keys` are
/// held; it is then measured against a fresh bucket that is not kept (let through, not counted).
struct BoundedTable {
    map: DashMapStateStore<String>,
    max_keys: usize,
    /// Seconds since `started` when the last "table full" warning was logged, plus one (0: never).
    warned_at: AtomicU64,
    started: Instant,
}

impl BoundedTable {
    fn warn_full(&self) {
        let now = self.started.elapsed().as_secs() + 1;
        let last = self.warned_at.load(Ordering::Relaxed);
        if (last == 0 || now >= last + 60)
            && self
                .warned_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::warn!(
                max_keys = self.max_keys,
                "rate limiter key table full: new keys are let through unlimited until keys go idle"
            );
        }
    }
}

impl StateStore for BoundedTable {
    type Key = String;

    fn measure_and_replace<T, F, E>(&self, key: &String, f: F) -> std::result::Result<T, E>
    where
        F: Fn(Option<Nanos>) -> std::result::Result<(T, Nanos), E>,
    {
        if let Some(state) = self.map.get(key) {
            return state.measure_and_replace(&NotKeyed::NonKey, f);
        }
        if self.map.len() >= self.max_keys {
            self.warn_full();
            return InMemoryState::default().measure_and_replace(&NotKeyed::NonKey, f);
        }
        let state = self.map.entry(key.clone()).or_default();
        state.measure_and_replace(&NotKeyed::NonKey, f)
    }
}

impl ShrinkableKeyedStateStore<String> for BoundedTable {
    fn retain_recent(&self, drop_below: Nanos) {
        ShrinkableKeyedStateStore::retain_recent(&self.map, drop_below);
    }

    fn shrink_to_fit(&self) {
        ShrinkableKeyedStateStore::shrink_to_fit(&self.map);
    }

    fn len(&self) -> usize {
        ShrinkableKeyedStateStore::len(&self.map)
    }

    fn is_empty(&self) -> bool {
        ShrinkableKeyedStateStore::is_empty(&self.map)
    }
}

type Limiter = RateLimiter<String, BoundedTable, DefaultClock, StateInformationMiddleware>;

/// Budgets in process (one instance's own count), on the `governor` crate.
///
/// Keys whose bucket is full again are dropped by a sweep that runs at most once per refill
/// period (clamped to 1 s – 60 s), from the request that finds it due. At most
/// [`max_keys`](Self::with_max_keys) keys are held (default 100 000); see the
/// [module doc](super) for what happens above that.
pub struct MemoryRateStore {
    limiter: Limiter,
    quota: RateQuota,
    sweep_every: Duration,
    started: Instant,
    /// Nanoseconds since `started` of the last sweep.
    last_sweep: AtomicU64,
}

impl std::fmt::Debug for MemoryRateStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryRateStore")
            .field("quota", &self.quota)
            .field("keys", &self.len())
            .finish_non_exhaustive()
    }
}

impl MemoryRateStore {
    /// A store with `quota` per key and the default key bound.
    pub fn new(quota: RateQuota) -> Self {
        Self::with_max_keys(quota, DEFAULT_MAX_KEYS)
    }

    /// A store holding at most `max_keys` keys (at least 1).
    pub fn with_max_keys(quota: RateQuota, max_keys: usize) -> Self {
        let burst = NonZeroU32::new(quota.burst()).unwrap_or(NonZeroU32::MIN);
        let gov = Quota::with_period(quota.interval())
            .unwrap_or_else(|| Quota::per_second(burst))
            .allow_burst(burst);
        let started = Instant::now();
        let table = BoundedTable {
            map: DashMapStateStore::default(),
            max_keys: max_keys.max(1),
            warned_at: AtomicU64::new(0),
            started,
        };
        let limiter: Limiter =
            RateLimiter::<_, _, _, governor::middleware::NoOpMiddleware<_>>::new(
                gov,
                table,
                DefaultClock::default(),
            )
            .with_middleware::<StateInformationMiddleware>();
        Self {
            limiter,
            quota,
            sweep_every: quota
                .period()
                .clamp(Duration::from_secs(1), Duration::from_secs(60)),
            started,
            last_sweep: AtomicU64::new(0),
        }
    }

    /// Keys held now (active in the last refill period, plus any not swept yet).
    pub fn len(&self) -> usize {
        self.limiter.len()
    }

    /// No key is held.
    pub fn is_empty(&self) -> bool {
        self.limiter.is_empty()
    }

    /// Drops the keys whose bucket is full again.
    pub fn sweep(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }

    /// Sweeps when the last sweep is `sweep_every` old; one caller wins the race.
    fn sweep_if_due(&self) {
        let now = u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let last = self.last_sweep.load(Ordering::Relaxed);
        let every = u64::try_from(self.sweep_every.as_nanos()).unwrap_or(u64::MAX);
        if now.saturating_sub(last) >= every
            && self
                .last_sweep
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.sweep();
        }
    }

    fn decide(&self, key: &String) -> Decision {
        let limit = self.quota.burst();
        let interval = self.quota.interval();
        match self.limiter.check_key(key) {
            Ok(snapshot) => {
                let remaining = snapshot.remaining_burst_capacity().min(limit);
                Decision {
                    allowed: true,
                    limit,
                    remaining,
                    // At most one interval more than the exact time to full.
                    reset: interval * (limit - remaining),
                    retry_after: Duration::ZERO,
                }
            }
            Err(not_until) => {
                let wait = not_until.wait_time_from(self.limiter.clock().now());
                Decision {
                    allowed: false,
                    limit,
                    remaining: 0,
                    reset: wait + interval * (limit - 1),
                    retry_after: wait,
                }
            }
        }
    }
}

#[async_trait]
impl RateStore for MemoryRateStore {
    async fn check(&self, key: String) -> Result<Decision> {
        self.sweep_if_due();
        Ok(self.decide(&key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quota(burst: u32, period_ms: u64) -> RateQuota {
        RateQuota::new(burst, Duration::from_millis(period_ms)).expect("valid quota")
    }

    #[test]
    fn burst_then_refused_with_the_wait_then_refilled() {
        let store = MemoryRateStore::new(quota(3, 1_500));
        let key = "k".to_owned();
        let remaining: Vec<u32> = (0..3).map(|_| store.decide(&key).remaining).collect();
        assert_eq!(remaining, [2, 1, 0]);
        let refused = store.decide(&key);
        assert!(!refused.allowed);
        assert!(refused.retry_after > Duration::ZERO);
        assert!(refused.retry_after <= Duration::from_millis(500));
        assert!(refused.reset >= Duration::from_millis(1_000));
        assert!(refused.reset <= Duration::from_millis(1_500));
        // Another key has its own budget.
        assert!(store.decide(&"other".to_owned()).allowed);
        std::thread::sleep(Duration::from_millis(600));
        assert!(
            store.decide(&key).allowed,
            "one request refilled after the interval"
        );
    }

    #[test]
    fn idle_keys_are_swept_and_the_table_is_bounded() {
        let store = MemoryRateStore::with_max_keys(quota(2, 400), 1_000);
        for i in 0..1_500 {
            assert!(
                store.decide(&format!("key-{i}")).allowed,
                "new keys are let through"
            );
        }
        assert_eq!(store.len(), 1_000, "the table stops at max_keys");
        // A key that found no room is not counted: it is let through every time.
        let late = "key-1499".to_owned();
        assert!((0..10).all(|_| store.decide(&late).allowed));
        // A key in the table is limited as usual.
        let early = "key-0".to_owned();
        assert!(store.decide(&early).allowed);
        assert!(!store.decide(&early).allowed);
        std::thread::sleep(Duration::from_millis(700));
        store.sweep();
        assert_eq!(
            store.len(),
            0,
            "full buckets hold no information and are dropped"
        );
    }

    #[tokio::test]
    async fn check_sweeps_when_due() {
        let store = MemoryRateStore::new(quota(1, 10));
        for i in 0..100 {
            store
                .check(format!("k{i}"))
                .await
                .expect("memory never fails");
        }
        assert_eq!(store.len(), 100);
        // The sweep interval is at least a second.
        tokio::time::sleep(Duration::from_millis(1_050)).await;
        store
            .check("last".to_owned())
            .await
            .expect("memory never fails");
        assert_eq!(store.len(), 1, "the due sweep dropped the idle keys");
    }
}

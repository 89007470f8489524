//! Counted slots: a request's share of a counter (requests in flight, requests at once), given
//! back by `Drop` however the request ends.
//!
//! A middleware that only counts takes its [`Slot`] in [`before`](crate::Middleware::before)
//! and hands it to [`Context::hold`](crate::Context::hold), so it needs no future of its own:
//! the context gives the slot back when the request ends (success, error, panic, or the client
//! going away and the request being dropped), or, for a streamed response, moves it into the
//! body, which gives it back once the body has been sent. Stats and the global and per-route
//! concurrency limiters count this way.
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use framework::slot::Slot;
//!
//! let in_flight = Arc::new(AtomicU32::new(0));
//! let first = Slot::try_take(&in_flight, 1).unwrap();
//! assert_eq!(Slot::try_take(&in_flight, 1).err(), Some(2), "the one place is taken");
//! drop(first);
//! assert_eq!(in_flight.load(Ordering::Acquire), 0);
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// A taken slot of a counter; dropping it gives it back.
#[derive(Debug)]
#[must_use = "dropping the slot gives it back at once"]
pub struct Slot(Arc<AtomicU32>);

impl Slot {
    /// Counts one more on `counter`, unconditionally.
    pub fn take(counter: &Arc<AtomicU32>) -> Self {
        Self::take_counting(counter).0
    }

    /// Takes a slot of `counter` when fewer than `max` are taken: `Err(count)` with the count
    /// this request would have made otherwise (for the refusal's message and headers).
    pub fn try_take(counter: &Arc<AtomicU32>, max: u32) -> Result<Self, u32> {
        let (slot, before) = Self::take_counting(counter);
        if before >= max {
            // Dropping the slot gives the increment back.
            drop(slot);
            return Err(before.saturating_add(1));
        }
        Ok(slot)
    }

    /// Counts one more on `counter`; also returns the count before this one.
    fn take_counting(counter: &Arc<AtomicU32>) -> (Self, u32) {
        let before = counter.fetch_add(1, Ordering::AcqRel);
        (Slot(Arc::clone(counter)), before)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A counter with a ceiling: the one slot-counting core of the global and per-route
/// concurrency limiters (the keyed concurrent limiter locks a key instead, in memory or
/// Redis, and counts nothing). One atomic, no lock; a refused request counts nothing.
#[derive(Debug)]
pub struct Slots {
    current: Arc<AtomicU32>,
    max: u32,
}

impl Slots {
    /// At most `max` slots taken at once.
    pub fn new(max: u32) -> Self {
        Self {
            current: Arc::new(AtomicU32::new(0)),
            max,
        }
    }

    /// A slot, or `Err(count)` with the count this request would have made.
    pub fn try_take(&self) -> Result<Slot, u32> {
        Slot::try_take(&self.current, self.max)
    }

    /// Slots taken now.
    pub fn current(&self) -> u32 {
        self.current.load(Ordering::Acquire)
    }

    /// The ceiling.
    pub fn max(&self) -> u32 {
        self.max
    }

    /// A handle on the counter, to watch it from outside.
    pub fn counter(&self) -> Arc<AtomicU32> {
        Arc::clone(&self.current)
    }
}

/// What one request holds until it ends ([`Context::hold`](crate::Context::hold)). The first
/// slot is kept inline, so a request that holds one (the usual case: stats, or one limiter)
/// allocates nothing; any further slot and every other guard is boxed, in one vector.
#[derive(Default)]
pub(crate) struct Held {
    first: Option<Slot>,
    /// Never read, only dropped: the wrapper makes them `Sync` as the context must be.
    rest: Vec<sync_wrapper::SyncWrapper<Box<dyn Send>>>,
}

impl Held {
    pub(crate) fn push_slot(&mut self, slot: Slot) {
        match &self.first {
            None => self.first = Some(slot),
            Some(_) => self.push_boxed(Box::new(slot)),
        }
    }

    pub(crate) fn push_boxed(&mut self, guard: Box<dyn Send>) {
        self.rest.push(sync_wrapper::SyncWrapper::new(guard));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.first.is_none() && self.rest.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_and_guards_are_given_back_when_dropped() {
        let counter = Arc::new(AtomicU32::new(0));
        let mut held = Held::default();
        assert!(held.is_empty());
        held.push_slot(Slot::take(&counter));
        held.push_slot(Slot::try_take(&counter, 2).unwrap());
        assert!(!held.is_empty());
        assert_eq!(counter.load(Ordering::Acquire), 2);
        // The limit is reached: refused, and the refusal counts nothing.
        assert_eq!(Slot::try_take(&counter, 2).err(), Some(3));
        assert_eq!(counter.load(Ordering::Acquire), 2);
        held.push_slot(Slot::take(&counter));
        let guarded = Arc::new(());
        held.push_boxed(Box::new(Arc::clone(&guarded)));
        assert_eq!(counter.load(Ordering::Acquire), 3);
        assert_eq!(Arc::strong_count(&guarded), 2);
        drop(held);
        assert_eq!(counter.load(Ordering::Acquire), 0);
        assert_eq!(Arc::strong_count(&guarded), 1);
    }

    #[test]
    fn a_guard_alone_is_held() {
        let mut held = Held::default();
        held.push_boxed(Box::new(()));
        assert!(!held.is_empty());
    }
}

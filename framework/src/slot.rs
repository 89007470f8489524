//! Counted slots: a request's share of a counter (requests in flight, requests at once),
//! given back by `Drop` however the request ends.
//!
//! A middleware that only counts takes its slot in `before` and hands it to
//! [`Context::hold_slot`](crate::context::Context::hold_slot), so it needs no future of its
//! own: the context gives the slot back when the request ends (success, error, panic, or the
//! client going away and the request being dropped), or, for a streamed response, moves it into
//! the body, which gives it back once the body has been sent.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// A taken slot; dropping it gives it back.
pub(crate) struct Slot(Arc<AtomicU32>);

impl Slot {
    /// Counts one more on `counter`, unconditionally.
    pub(crate) fn take(counter: &Arc<AtomicU32>) -> Self {
        Self::take_counting(counter).0
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

/// Takes a slot of `counter` when fewer than `max` are taken: `Err(count)` with the count this
/// request would have made otherwise.
pub(crate) fn take_slot(counter: &Arc<AtomicU32>, max: u32) -> std::result::Result<Slot, u32> {
    let (slot, before) = Slot::take_counting(counter);
    if before >= max {
        // Dropping the slot gives the increment back.
        drop(slot);
        return Err(before.saturating_add(1));
    }
    Ok(slot)
}

/// The slots one request holds. The first is kept inline, so a request that holds one (the
/// usual case: stats, or one limiter) allocates nothing; more go to a vector.
#[derive(Default)]
pub(crate) struct HeldSlots {
    first: Option<Slot>,
    more: Vec<Slot>,
}

impl HeldSlots {
    pub(crate) fn push(&mut self, slot: Slot) {
        if self.first.is_none() {
            self.first = Some(slot);
        } else {
            self.more.push(slot);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.first.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_given_back_when_dropped() {
        let counter = Arc::new(AtomicU32::new(0));
        let mut held = HeldSlots::default();
        assert!(held.is_empty());
        held.push(Slot::take(&counter));
        held.push(take_slot(&counter, 2).unwrap());
        assert!(!held.is_empty());
        assert_eq!(counter.load(Ordering::Acquire), 2);
        // The limit is reached: refused, and the refusal counts nothing.
        assert_eq!(take_slot(&counter, 2).err(), Some(3));
        assert_eq!(counter.load(Ordering::Acquire), 2);
        held.push(Slot::take(&counter));
        assert_eq!(counter.load(Ordering::Acquire), 3);
        drop(held);
        assert_eq!(counter.load(Ordering::Acquire), 0);
    }
}

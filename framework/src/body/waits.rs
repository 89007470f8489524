//! How long a request's handling has waited for its body to arrive: what the
//! [`timeout`](crate::middleware::timeout) middleware leaves out of its deadline, so an
//! upload that arrives slowly but steadily (above the server's minimum data rate, which the
//! body itself enforces) is not cut off as a hang.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// No wait in progress.
const NOT_WAITING: u64 = u64::MAX;

/// The time a body's reads have spent waiting for data, shared between the body (which
/// records each wait) and whoever asked to watch it. Made only when asked for
/// ([`RequestBody::watch_waits`](super::RequestBody::watch_waits)), so a request nobody
/// watches pays nothing.
#[derive(Debug)]
pub(crate) struct BodyWaits {
    /// What the nanosecond counts below count from.
    base: Instant,
    /// Waits that ended, in nanoseconds.
    waited: AtomicU64,
    /// When the wait in progress began, in nanoseconds from `base`; [`NOT_WAITING`] when
    /// none is.
    waiting_since: AtomicU64,
    /// The longest a wait in progress counts: the body's own limit on one wait (the server's
    /// `body_read_timeout`). A read the handler started and then left (dropped, or no longer
    /// polled) would otherwise count for ever.
    longest: Duration,
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX - 1)
}

impl BodyWaits {
    /// A record whose wait in progress counts for at most `longest`.
    pub(crate) fn new(longest: Duration) -> Self {
        Self {
            base: Instant::now(),
            waited: AtomicU64::new(0),
            waiting_since: AtomicU64::new(NOT_WAITING),
            longest,
        }
    }

    /// A read began to wait at `at`.
    pub(crate) fn started(&self, at: Instant) {
        let since = nanos(at.saturating_duration_since(self.base));
        self.waiting_since.store(since, Ordering::Relaxed);
    }

    /// The wait in progress ended after `waited`.
    pub(crate) fn ended(&self, waited: Duration) {
        self.waited.fetch_add(nanos(waited), Ordering::Relaxed);
        self.waiting_since.store(NOT_WAITING, Ordering::Relaxed);
    }

    /// All the time spent waiting up to `now`, the wait in progress included.
    pub(crate) fn total(&self, now: Instant) -> Duration {
        let mut total = self.waited.load(Ordering::Relaxed);
        let since = self.waiting_since.load(Ordering::Relaxed);
        if since != NOT_WAITING {
            let now = nanos(now.saturating_duration_since(self.base));
            let current = now.saturating_sub(since).min(nanos(self.longest));
            total = total.saturating_add(current);
        }
        Duration::from_nanos(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ended_waits_and_the_one_in_progress_count() {
        let waits = BodyWaits::new(Duration::from_secs(30));
        let t0 = waits.base;
        assert_eq!(waits.total(t0 + Duration::from_secs(5)), Duration::ZERO);
        waits.started(t0 + Duration::from_secs(1));
        assert_eq!(
            waits.total(t0 + Duration::from_secs(3)),
            Duration::from_secs(2)
        );
        waits.ended(Duration::from_secs(2));
        assert_eq!(
            waits.total(t0 + Duration::from_secs(10)),
            Duration::from_secs(2)
        );
        waits.started(t0 + Duration::from_secs(10));
        assert_eq!(
            waits.total(t0 + Duration::from_secs(11)),
            Duration::from_secs(3)
        );
        // A wait left unfinished counts for the longest one wait may last, not for ever.
        assert_eq!(
            waits.total(t0 + Duration::from_secs(1000)),
            Duration::from_secs(32)
        );
    }
}

//! Process-wide event counters: what the components do besides answering requests (limiter
//! refusals, cache outcomes, sessions created, store errors, open connections), counted where
//! it happens with one relaxed atomic add and read by the metrics exposition
//! (`middleware::metrics`, feature `metrics`) or by anything else through [`counters`].
//!
//! The counters belong to the process, like a Prometheus client's default registry: two apps
//! in one process add to the same figures. Every label set is fixed in advance (an enum per
//! kind), except store errors, whose categories are the components' static category names;
//! at most [`MAX_STORE_ERROR_CATEGORIES`] of those are kept apart, the rest count as `other`.
//!
//! ```
//! use framework::telemetry::{self, Refusal};
//!
//! let before = telemetry::counters().refusals(Refusal::RateLimiter);
//! telemetry::counters().refused(Refusal::RateLimiter);
//! assert!(telemetry::counters().refusals(Refusal::RateLimiter) > before);
//! ```

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// A component that refused a request with 429.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `middleware::rate_limiter`: over the rate budget.
    RateLimiter,
    /// `middleware::concurrent_limiter`: the key's lock is held.
    ConcurrentLimiter,
    /// `middleware::global_concurrent_limiter`: the app is full.
    GlobalConcurrentLimiter,
    /// `middleware::router_concurrent_limiter`: the route is full.
    RouterConcurrentLimiter,
}

impl Refusal {
    /// Every kind, in exposition order.
    pub const ALL: [Refusal; 4] = [
        Refusal::RateLimiter,
        Refusal::ConcurrentLimiter,
        Refusal::GlobalConcurrentLimiter,
        Refusal::RouterConcurrentLimiter,
    ];

    /// Its label value, e.g. `rate_limiter`.
    pub fn label(self) -> &'static str {
        match self {
            Refusal::RateLimiter => "rate_limiter",
            Refusal::ConcurrentLimiter => "concurrent_limiter",
            Refusal::GlobalConcurrentLimiter => "global_concurrent_limiter",
            Refusal::RouterConcurrentLimiter => "router_concurrent_limiter",
        }
    }
}

/// What the cache did with a request it looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Answered from a stored entry.
    Hit,
    /// Nothing stored: the chain ran (and its answer may have been stored).
    Miss,
    /// A hit-for-pass marker: the chain ran without coalescing, nothing stored.
    HitForPass,
}

impl CacheOutcome {
    /// Every kind, in exposition order.
    pub const ALL: [CacheOutcome; 3] = [
        CacheOutcome::Hit,
        CacheOutcome::Miss,
        CacheOutcome::HitForPass,
    ];

    /// Its label value, e.g. `hit_for_pass`.
    pub fn label(self) -> &'static str {
        match self {
            CacheOutcome::Hit => "hit",
            CacheOutcome::Miss => "miss",
            CacheOutcome::HitForPass => "hit_for_pass",
        }
    }
}

/// The protocol of an open connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.x (TLS or not).
    Http1,
    /// HTTP/2.
    Http2,
    /// A WebSocket (counted from the upgrade to the close; its HTTP/1 connection stops
    /// counting as HTTP/1 then).
    WebSocket,
}

impl Protocol {
    /// Every kind, in exposition order.
    pub const ALL: [Protocol; 3] = [Protocol::Http1, Protocol::Http2, Protocol::WebSocket];

    /// Its label value, e.g. `http1`.
    pub fn label(self) -> &'static str {
        match self {
            Protocol::Http1 => "http1",
            Protocol::Http2 => "http2",
            Protocol::WebSocket => "websocket",
        }
    }
}

/// How many store error categories are counted apart; further ones count as `other`.
pub const MAX_STORE_ERROR_CATEGORIES: usize = 32;

/// The process's counters: see the module docs.
#[derive(Debug)]
pub struct Counters {
    refusals: [AtomicU64; 4],
    cache: [AtomicU64; 3],
    sessions_created: AtomicU64,
    connections: [AtomicI64; 3],
    /// Rare (a failing backend), so a short list under a lock.
    store_errors: Mutex<Vec<(&'static str, u64)>>,
}

static COUNTERS: Counters = Counters {
    refusals: [const { AtomicU64::new(0) }; 4],
    cache: [const { AtomicU64::new(0) }; 3],
    sessions_created: AtomicU64::new(0),
    connections: [const { AtomicI64::new(0) }; 3],
    store_errors: Mutex::new(Vec::new()),
};

/// The process's counters.
pub fn counters() -> &'static Counters {
    &COUNTERS
}

impl Counters {
    /// Counts a 429 from `component`.
    pub fn refused(&self, component: Refusal) {
        self.refusals[component as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// 429s from `component` so far.
    pub fn refusals(&self, component: Refusal) -> u64 {
        self.refusals[component as usize].load(Ordering::Relaxed)
    }

    /// Counts a cache outcome.
    pub fn cache(&self, outcome: CacheOutcome) {
        self.cache[outcome as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Cache outcomes of this kind so far.
    pub fn cache_outcomes(&self, outcome: CacheOutcome) -> u64 {
        self.cache[outcome as usize].load(Ordering::Relaxed)
    }

    /// Counts a session saved for the first time (a new id).
    pub fn session_created(&self) {
        self.sessions_created.fetch_add(1, Ordering::Relaxed);
    }

    /// Sessions created so far.
    pub fn sessions_created(&self) -> u64 {
        self.sessions_created.load(Ordering::Relaxed)
    }

    /// Counts a store failure answered in `category` (the component's error category, e.g.
    /// `framework-session`).
    pub fn store_error(&self, category: &'static str) {
        let mut errors = self
            .store_errors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let category = if errors.len() >= MAX_STORE_ERROR_CATEGORIES
            && !errors.iter().any(|(c, _)| *c == category)
        {
            "other"
        } else {
            category
        };
        match errors.iter_mut().find(|(c, _)| *c == category) {
            Some((_, n)) => *n += 1,
            None => errors.push((category, 1)),
        }
    }

    /// Store errors so far, by category.
    pub fn store_errors(&self) -> Vec<(&'static str, u64)> {
        self.store_errors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Counts a connection of `protocol` open until the guard drops.
    pub fn connection_opened(&'static self, protocol: Protocol) -> OpenConnection {
        self.connections[protocol as usize].fetch_add(1, Ordering::Relaxed);
        OpenConnection { protocol }
    }

    /// Connections of `protocol` open now.
    pub fn open_connections(&self, protocol: Protocol) -> i64 {
        self.connections[protocol as usize].load(Ordering::Relaxed)
    }
}

/// One open connection, counted until dropped.
#[derive(Debug)]
pub struct OpenConnection {
    protocol: Protocol,
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        COUNTERS.connections[self.protocol as usize].fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_count_while_open() {
        let before = counters().open_connections(Protocol::WebSocket);
        let open = counters().connection_opened(Protocol::WebSocket);
        assert_eq!(counters().open_connections(Protocol::WebSocket), before + 1);
        drop(open);
        assert_eq!(counters().open_connections(Protocol::WebSocket), before);
    }

    /// Categories past the bound count as `other`; the list never grows past it plus one.
    #[test]
    fn store_error_categories_are_bounded() {
        const NAMES: [&str; 40] = [
            "c00", "c01", "c02", "c03", "c04", "c05", "c06", "c07", "c08", "c09", "c10", "c11",
            "c12", "c13", "c14", "c15", "c16", "c17", "c18", "c19", "c20", "c21", "c22", "c23",
            "c24", "c25", "c26", "c27", "c28", "c29", "c30", "c31", "c32", "c33", "c34", "c35",
            "c36", "c37", "c38", "c39",
        ];
        for name in NAMES {
            counters().store_error(name);
        }
        let errors = counters().store_errors();
        assert!(errors.len() <= MAX_STORE_ERROR_CATEGORIES + 1, "{errors:?}");
        assert!(errors.iter().any(|(c, n)| *c == "other" && *n >= 1));
    }
}

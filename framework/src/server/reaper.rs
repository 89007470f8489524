//! The server's one timer: a coarse clock for the connections and the sweep that closes the
//! idle and the late ones.
//!
//! A connection notes when its request head started and when its last request ended; reading
//! the system clock for each note, and keeping a timer per connection that its task polls on
//! every wake, cost about a twentieth of a small request. Instead one sweeper per server ticks
//! every [`Clock::tick`] (on its own thread, see [`Sweeper`]): it advances the shared [`Clock`], which connections read with one
//! atomic load, and checks every open connection against its deadlines (nginx and Kestrel keep
//! a cached clock and a heartbeat sweep the same way).
//!
//! Resolution: a note is stamped with the end of the tick it falls in, so a connection is not
//! closed before its limit as long as the sweeper thread gets its ticks on time (one the OS
//! schedules late stamps late notes early by that delay); it is closed at most about two ticks
//! after it (the tick is a tenth
//! of the shorter of the head and idle timeouts, between 5 ms and 250 ms). The sweep holds the
//! registry's lock while it looks at each open connection once: a few atomic loads each, so
//! 10 000 connections take tens of microseconds, four times a second with the default limits.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::limits::ServerLimits;

/// Milliseconds since the server started, advanced once a tick.
pub(crate) struct Clock {
    epoch: Instant,
    /// The time of the last tick.
    now_ms: AtomicU64,
    tick_ms: u64,
    /// The exact time the graceful shutdown began, plus one (0: not shutting down).
    shutdown_ms: AtomicU64,
}

impl Clock {
    pub(crate) fn new(limits: &ServerLimits) -> Self {
        let shorter = limits.header_read_timeout.min(limits.keep_alive_timeout);
        let tick = (shorter / 10).clamp(Duration::from_millis(5), Duration::from_millis(250));
        Self {
            epoch: Instant::now(),
            now_ms: AtomicU64::new(0),
            tick_ms: u64::try_from(tick.as_millis()).unwrap_or(250),
            shutdown_ms: AtomicU64::new(0),
        }
    }

    /// Notes that the graceful shutdown begins now.
    pub(crate) fn begin_shutdown(&self) {
        self.shutdown_ms.store(self.exact() + 1, Ordering::Relaxed);
    }

    /// When the graceful shutdown began, if it has.
    pub(crate) fn shutdown_started(&self) -> Option<u64> {
        self.shutdown_ms.load(Ordering::Relaxed).checked_sub(1)
    }

    /// How often the clock advances and connections are checked.
    pub(crate) fn tick(&self) -> Duration {
        Duration::from_millis(self.tick_ms)
    }

    /// A time no earlier than now, in milliseconds: the end of the current tick. An event
    /// stamped with it is never taken for older than it is, so no timer fires early.
    #[inline]
    pub(crate) fn stamp(&self) -> u64 {
        self.now_ms.load(Ordering::Relaxed) + self.tick_ms
    }

    /// The exact time, read from the system clock.
    pub(crate) fn exact(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX / 2)
    }

    /// Reads the system clock and advances to it; returns the exact time.
    pub(crate) fn advance(&self) -> u64 {
        let now = self.exact();
        self.now_ms.store(now, Ordering::Relaxed);
        now
    }
}

/// The thread that ticks: advances the clock and sweeps, until dropped (the server drops it
/// when `serve` returns, however it returns). A thread rather than a task: a timer in the
/// runtime makes its driver compute the next deadline, reading the clock, every time a worker
/// parks, which a busy server does once a request.
pub(crate) struct Sweeper {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sweeper {
    /// Starts ticking: every [`Clock::tick`], `sweep` gets the exact time.
    pub(crate) fn start(
        clock: Arc<Clock>,
        mut sweep: impl FnMut(u64) + Send + 'static,
    ) -> std::io::Result<Self> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let thread = std::thread::Builder::new()
            .name("framework-sweep".to_owned())
            .spawn({
                let stop = Arc::clone(&stop);
                move || {
                    let (lock, wake) = &*stop;
                    let mut stopped = lock.lock().unwrap_or_else(PoisonError::into_inner);
                    while !*stopped {
                        stopped = wake
                            .wait_timeout(stopped, clock.tick())
                            .unwrap_or_else(PoisonError::into_inner)
                            .0;
                        if !*stopped {
                            sweep(clock.advance());
                        }
                    }
                }
            })?;
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Sweeper {
    fn drop(&mut self) {
        let (lock, wake) = &*self.stop;
        *lock.lock().unwrap_or_else(PoisonError::into_inner) = true;
        wake.notify_one();
        if let Some(thread) = self.thread.take() {
            // At most one sweep in progress: microseconds.
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(head_ms: u64, idle_ms: u64) -> ServerLimits {
        ServerLimits {
            header_read_timeout: Duration::from_millis(head_ms),
            keep_alive_timeout: Duration::from_millis(idle_ms),
            ..ServerLimits::default()
        }
    }

    #[test]
    fn the_tick_is_a_tenth_of_the_shorter_timeout_within_bounds() {
        assert_eq!(
            Clock::new(&limits(400, 1200)).tick(),
            Duration::from_millis(40)
        );
        assert_eq!(
            Clock::new(&limits(10, 1200)).tick(),
            Duration::from_millis(5)
        );
        assert_eq!(
            Clock::new(&limits(10_000, 60_000)).tick(),
            Duration::from_millis(250)
        );
    }

    #[test]
    fn a_stamp_lies_at_the_end_of_the_tick_it_falls_in() {
        let clock = Clock::new(&limits(100, 100));
        assert_eq!(clock.stamp(), 10);
        std::thread::sleep(Duration::from_millis(12));
        let exact = clock.advance();
        assert!(exact >= 12);
        assert_eq!(clock.stamp(), exact + 10);
    }

    #[test]
    fn the_sweeper_ticks_until_dropped() {
        let clock = Arc::new(Clock::new(&limits(50, 50)));
        let (sender, receiver) = std::sync::mpsc::channel();
        let sweeper = Sweeper::start(Arc::clone(&clock), move |now| {
            let _ = sender.send(now);
        })
        .unwrap();
        let first = receiver.recv_timeout(Duration::from_secs(5)).unwrap();
        let second = receiver.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(second >= first + 5, "{first} then {second}");
        assert!(clock.stamp() >= second + 5);
        drop(sweeper);
        // Joined: its sender is gone, and nothing more comes.
        while receiver.try_recv().is_ok() {}
        assert!(receiver.recv_timeout(Duration::from_millis(50)).is_err());
    }
}

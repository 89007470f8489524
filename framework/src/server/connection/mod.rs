//! One connection's life: what it is doing, its timers, and how it ends on shutdown.
//!
//! A [`ConnState`] is shared by the connection's task (its socket wrapper [`TrackedStream`]
//! notes the first byte of a new request head and unflushed writes; the service notes a
//! request starting, [`ConnState::request_started`]), the [`ActiveGuard`] inside each response
//! body, which notes the request ending (last byte sent, or the body dropped) wherever the body
//! is dropped (an HTTP/2 stream's body may be dropped when its connection is), and the
//! server's sweeper thread
//! ([`super::reaper`]); hence the atomics. The sweep marks a connection that is idle or late
//! with its head ([`ConnState::expire`]); its driver ([`drive`]) then looks again on the
//! connection's own task, where no request can start meanwhile, and closes it if it is still
//! overdue. Times come from the server's coarse [`Clock`]: no system clock read and no timer
//! per connection. The driver of an HTTP/1 connection also closes it when the client goes away
//! while a request is in progress ([`ClientGone`]), sharing the socket with [`TrackedStream`].
//!
//! One file per job: the state and the request guard here, protocol detection in
//! [`preface`], the socket wrapper in [`stream`], the driver futures in [`driver`], and the
//! HTTP/2 streams run in their connection's task in [`streams`].

mod driver;
mod preface;
mod socket;
mod stream;
mod streams;

pub(crate) use driver::drive;
pub(crate) use preface::detect;
#[cfg(feature = "tls")]
pub(crate) use preface::handshake;
pub(crate) use socket::Socket;
pub(crate) use stream::TrackedStream;
pub(crate) use streams::{StreamExecutor, WithStreams};

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::task::AtomicWaker;
use http_body::{Body, Frame, SizeHint};

use crate::body::{BoxError, ResponseBody};

use crate::limits::ServerLimits;
use crate::server::reaper::Clock;

const SIGNAL_NONE: u8 = 0;
const SIGNAL_SHUTDOWN: u8 = 1;
const SIGNAL_FORCE: u8 = 2;

/// How long a connection that was accepted before a graceful shutdown, and has not started its
/// first request, is given to start it; bounded by the head timeout too. A client connects and
/// sends its request at once, but the server may accept between the two: closing such a
/// connection at the signal would fail a request the client had every right to send, which
/// matters most where a restart must lose nothing (socket activation). Go's
/// `http.Server.Shutdown` likewise takes a new connection for idle only after 5 s; a second is
/// ample for a request already on its way, and keeps a silent or half-sent first head from
/// holding the shutdown for long.
pub(crate) const FIRST_REQUEST_GRACE: Duration = Duration::from_secs(1);

/// What one connection is doing, shared by its socket, its service and its driver.
pub(crate) struct ConnState {
    clock: Arc<Clock>,
    /// Requests in the service or still sending their response.
    active: AtomicU32,
    /// The [`Clock::stamp`] (plus one, so 0 means none) when the current request head started:
    /// the accept for the first request, then the first byte after a request ended.
    head_started: AtomicU64,
    /// The [`Clock::stamp`] when the last request ended (or the accept).
    last_end: AtomicU64,
    /// Bytes written but not yet flushed: a response may still be on its way out.
    unflushed: AtomicBool,
    /// HTTP/2 (set by [`detect`]): frames arrive all the time, so the head timer only covers
    /// the first request.
    http2: AtomicBool,
    /// No request has started on the connection yet: on a graceful shutdown it gets
    /// [`FIRST_REQUEST_GRACE`] to start one rather than being closed at once.
    fresh: AtomicBool,
    signal: AtomicU8,
    /// Set by the sweep when a deadline passed; the driver checks again and closes, or clears it.
    expired: AtomicBool,
    waker: AtomicWaker,
    /// How many wake-ups were sent through `waker` (each takes the waker out): a [`Signal`](driver::Signal)
    /// registers again only after one, not on every poll.
    wakes: AtomicU32,
    /// The connection's place under the connection limit, for a request that takes the
    /// connection over (an upgrade) to keep: the connection's task takes it out when it ends,
    /// and an upgrade holds its own clone until the upgraded connection ends.
    place: std::sync::Mutex<Option<Arc<dyn std::any::Any + Send + Sync>>>,
}

impl ConnState {
    pub(crate) fn new(clock: Arc<Clock>) -> Self {
        let now = clock.stamp();
        Self {
            clock,
            active: AtomicU32::new(0),
            head_started: AtomicU64::new(now + 1),
            last_end: AtomicU64::new(now),
            unflushed: AtomicBool::new(false),
            http2: AtomicBool::new(false),
            fresh: AtomicBool::new(true),
            signal: AtomicU8::new(SIGNAL_NONE),
            expired: AtomicBool::new(false),
            waker: AtomicWaker::new(),
            wakes: AtomicU32::new(0),
            place: std::sync::Mutex::new(None),
        }
    }

    fn place(&self) -> std::sync::MutexGuard<'_, Option<Arc<dyn std::any::Any + Send + Sync>>> {
        self.place
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Keeps `place` for upgrades ([`ConnState::upgrade_hold`]).
    pub(crate) fn set_place(&self, place: Arc<dyn std::any::Any + Send + Sync>) {
        *self.place() = Some(place);
    }

    /// Gives the place up: the connection's task ends.
    pub(crate) fn release_place(&self) {
        self.place().take();
    }

    /// A request head has been parsed and goes to the service.
    pub(crate) fn request_started(self: &Arc<Self>) -> ActiveGuard {
        self.active.fetch_add(1, Ordering::Relaxed);
        self.head_started.store(0, Ordering::Relaxed);
        self.fresh.store(false, Ordering::Relaxed);
        ActiveGuard(Arc::clone(self))
    }

    fn bytes_read(&self) {
        if self.head_started.load(Ordering::Relaxed) == 0
            && self.active.load(Ordering::Relaxed) == 0
            && !self.http2.load(Ordering::Relaxed)
        {
            self.head_started
                .store(self.clock.stamp() + 1, Ordering::Relaxed);
        }
    }

    /// Nothing in progress: no request, no half-written response. Dropping the connection
    /// now loses nothing but a partial request head or an idle keep-alive.
    fn is_quiet(&self) -> bool {
        self.active.load(Ordering::Relaxed) == 0 && !self.unflushed.load(Ordering::Relaxed)
    }

    /// No request has started yet ([`FIRST_REQUEST_GRACE`]).
    fn is_fresh(&self) -> bool {
        self.fresh.load(Ordering::Relaxed)
    }

    /// The sweep, at the exact time `now` (milliseconds on the server's clock): marks the
    /// connection expired if it is idle or late with its head, and says why. The caller wakes
    /// it ([`ConnState::wake`]), outside the registry's lock. A connection already marked, or
    /// being closed, is passed over.
    pub(crate) fn expire(&self, now: u64, limits: &ServerLimits) -> Option<&'static str> {
        if self.expired.load(Ordering::Relaxed)
            || self.signal.load(Ordering::Relaxed) == SIGNAL_FORCE
        {
            return None;
        }
        let reason = self.overdue(now, limits)?;
        self.expired.store(true, Ordering::Relaxed);
        Some(reason)
    }

    /// Wakes the connection's driver to look at its signals.
    pub(crate) fn wake(&self) {
        // Counted before the waker is taken: a poll that sees the old count finds its waker
        // still registered, or is about to be woken by this call.
        self.wakes.fetch_add(1, Ordering::AcqRel);
        self.waker.wake();
    }

    /// Why the connection should close at `now`, if it should. Once the server shuts down, a
    /// connection with nothing in progress closes at the next sweep, except one that has not
    /// started its first request: that one has [`FIRST_REQUEST_GRACE`] from the shutdown.
    fn overdue(&self, now: u64, limits: &ServerLimits) -> Option<&'static str> {
        // Acquire: a request's end stored `last_end` before it released `active`.
        if self.active.load(Ordering::Acquire) > 0 {
            // Busy: the end of the request starts the clocks again.
            return None;
        }
        if let Some(since) = self.clock.shutdown_started() {
            if !self.is_fresh() {
                // A response hyper has not written out yet (a slow reader) is left to finish.
                return (!self.unflushed.load(Ordering::Relaxed))
                    .then_some("idle while shutting down");
            }
            if now >= since.saturating_add(millis(FIRST_REQUEST_GRACE)) {
                return Some("no first request in the shutdown grace");
            }
        }
        let head = self.head_started.load(Ordering::Relaxed);
        let (deadline, reason) = if head == 0 {
            (
                self.last_end
                    .load(Ordering::Relaxed)
                    .saturating_add(millis(limits.keep_alive_timeout)),
                "idle connection timed out",
            )
        } else {
            (
                (head - 1).saturating_add(millis(limits.header_read_timeout)),
                "request head not received in time",
            )
        };
        (now >= deadline).then_some(reason)
    }

    pub(crate) fn signal(&self, force: bool) {
        let value = if force { SIGNAL_FORCE } else { SIGNAL_SHUTDOWN };
        self.signal.fetch_max(value, Ordering::Relaxed);
        self.wake();
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Marks the end of a request when dropped: the response body has been sent or dropped.
pub(crate) struct ActiveGuard(Arc<ConnState>);

impl ActiveGuard {
    /// What the request's upgrade keeps of its connection: its place under the connection
    /// limit and a request guard of its own (so the sweep never closes it as idle), and the
    /// state, to hear of shutdown. Called only for a request asking for an upgrade.
    #[cfg_attr(not(feature = "websocket"), allow(dead_code))]
    pub(crate) fn upgrade_hold(&self) -> UpgradeHold {
        UpgradeHold(Arc::new(Hold {
            _place: self.0.place().clone(),
            _active: self.0.request_started(),
            state: Arc::clone(&self.0),
        }))
    }
}

/// What a request asking for an upgrade carries (in its extensions), for the code that takes
/// the connection over (a WebSocket): see [`ActiveGuard::upgrade_hold`]. Held until the
/// upgraded connection ends, so it counts against the connection limit, and shutdown reaches
/// it ([`UpgradeHold::shutdown`]).
#[derive(Clone)]
#[cfg_attr(not(feature = "websocket"), allow(dead_code))]
pub(crate) struct UpgradeHold(Arc<Hold>);

struct Hold {
    _place: Option<Arc<dyn std::any::Any + Send + Sync>>,
    _active: ActiveGuard,
    state: Arc<ConnState>,
}

#[cfg_attr(not(feature = "websocket"), allow(dead_code))]
impl UpgradeHold {
    /// Completes when the server shuts down.
    pub(crate) async fn shutdown(&self) {
        driver::shutdown(&self.0.state).await;
    }
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        let state = &self.0;
        // The end time first: whoever sees `active` drop (the sweep) sees it too.
        state.last_end.store(state.clock.stamp(), Ordering::Relaxed);
        state.active.fetch_sub(1, Ordering::Release);
    }
}

/// The response body as hyper sees it: the app's body, and the guard that ends the request
/// when the body is done.
pub(crate) struct ConnBody {
    body: ResponseBody,
    _guard: ActiveGuard,
}

impl ConnBody {
    pub(crate) fn new(body: ResponseBody, guard: ActiveGuard) -> Self {
        Self {
            body,
            _guard: guard,
        }
    }
}

impl Body for ConnBody {
    type Data = Bytes;
    type Error = BoxError;

    #[inline]
    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    #[inline]
    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    #[inline]
    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::driver::Graceful;
    use super::*;
    use tokio::net::TcpStream;

    fn limits() -> ServerLimits {
        ServerLimits {
            header_read_timeout: Duration::from_millis(400),
            keep_alive_timeout: Duration::from_millis(1200),
            ..ServerLimits::default()
        }
    }

    fn state() -> Arc<ConnState> {
        Arc::new(ConnState::new(Arc::new(Clock::new(&limits()))))
    }

    #[test]
    fn a_late_head_expires_at_its_limit_and_not_before() {
        let state = state();
        // Accepted at stamp 40 (the end of the first 40 ms tick): the head is due by 440.
        assert_eq!(state.expire(439, &limits()), None);
        assert!(!state.expired.load(Ordering::Relaxed));
        assert_eq!(
            state.expire(440, &limits()),
            Some("request head not received in time")
        );
        assert!(state.expired.load(Ordering::Relaxed));
        // Marked once: later sweeps pass it over until the driver has looked.
        assert_eq!(state.expire(10_000, &limits()), None);
    }

    #[test]
    fn a_request_in_progress_never_expires_and_its_end_starts_the_idle_timer() {
        let state = state();
        let guard = state.request_started();
        assert_eq!(state.expire(1_000_000, &limits()), None);
        drop(guard);
        // Ended at stamp 40: idle until 1240.
        assert_eq!(state.expire(1239, &limits()), None);
        assert_eq!(
            state.expire(1240, &limits()),
            Some("idle connection timed out")
        );
    }

    /// Once the server shuts down, a connection that served a request and is idle closes at
    /// the next sweep (unless a response is still being written), and one that has not
    /// started its first request gets `FIRST_REQUEST_GRACE` from the shutdown, and no more.
    #[test]
    fn shutting_down_closes_the_idle_at_once_and_the_fresh_after_the_grace() {
        let limits = ServerLimits {
            header_read_timeout: Duration::from_secs(60),
            keep_alive_timeout: Duration::from_secs(60),
            ..ServerLimits::default()
        };
        let clock = Arc::new(Clock::new(&limits));
        let fresh = ConnState::new(Arc::clone(&clock));
        let idle = Arc::new(ConnState::new(Arc::clone(&clock)));
        drop(idle.request_started());
        let writing = Arc::new(ConnState::new(Arc::clone(&clock)));
        drop(writing.request_started());
        writing.unflushed.store(true, Ordering::Relaxed);
        assert_eq!(
            idle.expire(10, &limits),
            None,
            "idle well within its timeout"
        );

        clock.begin_shutdown();
        let since = clock.shutdown_started().expect("shutting down");
        assert_eq!(
            idle.expire(since, &limits),
            Some("idle while shutting down")
        );
        assert_eq!(writing.expire(since, &limits), None);
        let grace = millis(FIRST_REQUEST_GRACE);
        assert_eq!(fresh.expire(since + grace - 1, &limits), None);
        assert_eq!(
            fresh.expire(since + grace, &limits),
            Some("no first request in the shutdown grace")
        );
    }

    /// A connection that never ends by itself, and notes a graceful shutdown.
    struct Idle;

    impl Future for Idle {
        type Output = hyper::Result<()>;
        fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
            Poll::Pending
        }
    }

    impl Graceful for Idle {
        fn graceful_shutdown(self: Pin<&mut Self>) {}
    }

    /// The sweep marked the connection while it was idle, and a request started before the
    /// driver looked: the driver keeps it, and closes it once it is overdue for real.
    #[tokio::test]
    async fn the_driver_keeps_a_connection_whose_request_started_after_the_sweep() {
        let limits = ServerLimits {
            header_read_timeout: Duration::from_millis(30),
            keep_alive_timeout: Duration::from_millis(30),
            ..ServerLimits::default()
        };
        let state = Arc::new(ConnState::new(Arc::new(Clock::new(&limits))));
        let guard = state.request_started();
        state.expired.store(true, Ordering::Relaxed);
        let driver = tokio::spawn({
            let state = Arc::clone(&state);
            let limits = limits.clone();
            async move { drive(Idle, state, &limits, None::<&TcpStream>).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!driver.is_finished(), "a request in progress was cut");
        assert!(
            !state.expired.load(Ordering::Relaxed),
            "the mark was not cleared"
        );
        drop(guard);
        // Idle now: long past its 30 ms once the sweep marks it again.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            state.expire(state.clock.exact(), &limits),
            Some("idle connection timed out")
        );
        state.wake();
        tokio::time::timeout(Duration::from_secs(5), driver)
            .await
            .expect("closed once overdue")
            .unwrap();
    }

    /// The bytes `detect` read come back first, in pieces as small as the reader asks for,
    /// then the socket's.
    #[tokio::test]
    async fn the_stream_gives_back_what_detection_read_before_the_socket() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        client.write_all(b"xyz").await.unwrap();
        let mut stream = TrackedStream::new(
            Arc::new(server),
            state(),
            Bytes::from_static(b"abcdef"),
            false,
        );
        let mut buf = [0u8; 4];
        let n = stream.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"abcd");
        let n = stream.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"ef");
        let mut rest = [0u8; 3];
        stream.read_exact(&mut rest).await.unwrap();
        assert_eq!(&rest, b"xyz");
    }
}

//! One connection's life: what it is doing, its timers, and how it ends on shutdown.
//!
//! A [`ConnState`] is shared by the connection's task (its socket wrapper [`TrackedStream`]
//! notes the first byte of a new request head and unflushed writes; the service notes a
//! request starting, [`ConnState::request_started`]), the [`ActiveGuard`] inside each response
//! body, which notes the request ending (last byte sent, or the body dropped) wherever the body
//! is dropped (HTTP/2 streams run on other tasks), and the server's sweeper thread
//! ([`super::reaper`]); hence the atomics. The sweep marks a connection that is idle or late
//! with its head ([`ConnState::expire`]); its driver ([`drive`]) then looks again on the
//! connection's own task, where no request can start meanwhile, and closes it if it is still
//! overdue. Times come from the server's coarse [`Clock`]: no system clock read and no timer
//! per connection. The driver of an HTTP/1 connection also closes it when the client goes away
//! while a request is in progress ([`ClientGone`]), sharing the socket with [`TrackedStream`].

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::task::AtomicWaker;
use http_body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::body::{BoxError, ResponseBody};

use super::reaper::Clock;
use crate::limits::ServerLimits;

const SIGNAL_NONE: u8 = 0;
const SIGNAL_SHUTDOWN: u8 = 1;
const SIGNAL_FORCE: u8 = 2;

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
    signal: AtomicU8,
    /// Set by the sweep when a deadline passed; the driver checks again and closes, or clears it.
    expired: AtomicBool,
    waker: AtomicWaker,
    /// How many wake-ups were sent through `waker` (each takes the waker out): a [`Signal`]
    /// registers again only after one, not on every poll.
    wakes: AtomicU32,
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
            signal: AtomicU8::new(SIGNAL_NONE),
            expired: AtomicBool::new(false),
            waker: AtomicWaker::new(),
            wakes: AtomicU32::new(0),
        }
    }

    /// A request head has been parsed and goes to the service.
    pub(crate) fn request_started(self: &Arc<Self>) -> ActiveGuard {
        self.active.fetch_add(1, Ordering::Relaxed);
        self.head_started.store(0, Ordering::Relaxed);
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

    /// Why the connection should close at `now`, if it should.
    fn overdue(&self, now: u64, limits: &ServerLimits) -> Option<&'static str> {
        // Acquire: a request's end stored `last_end` before it released `active`.
        if self.active.load(Ordering::Acquire) > 0 {
            // Busy: the end of the request starts the clocks again.
            return None;
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

/// The HTTP/2 connection preface (RFC 9113 section 3.4), which a prior-knowledge client sends
/// first.
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Which protocol a new connection speaks, from its first bytes: HTTP/2 if they are the preface,
/// HTTP/1 as soon as they differ from it (for any HTTP/1 request, at its second byte at the
/// latest). Returns the bytes read, to be read again by hyper through [`TrackedStream`], and
/// whether it is HTTP/2; `None` when the client closed first, the read failed, or a signal came
/// (shutdown or the sweep: nothing is in progress yet, so the connection just closes).
pub(crate) async fn detect(stream: &mut TcpStream, state: &ConnState) -> Option<(Bytes, bool)> {
    let mut buf = [0u8; H2_PREFACE.len()];
    let mut filled = 0;
    let read = async {
        loop {
            let n = tokio::io::AsyncReadExt::read(stream, &mut buf[filled..]).await?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            filled += n;
            if buf[..filled] != H2_PREFACE[..filled] {
                return Ok(false);
            }
            if filled == H2_PREFACE.len() {
                return Ok(true);
            }
        }
    };
    let http2: io::Result<bool> = tokio::select! {
        biased;
        http2 = read => http2,
        _ = Signal::new(state, SIGNAL_NONE) => return None,
    };
    match http2 {
        Ok(http2) => {
            state.http2.store(http2, Ordering::Relaxed);
            Some((Bytes::copy_from_slice(&buf[..filled]), http2))
        }
        Err(err) => {
            tracing::debug!(%err, "connection closed before its first request");
            None
        }
    }
}

/// The socket, noting reads and writes in the connection's state; it first gives back the
/// bytes [`detect`] read.
///
/// The socket is shared with the connection's driver, which watches it for the client leaving
/// while a request is in progress ([`ClientGone`]), so reads and writes go through tokio's
/// `&self` socket calls rather than its `&mut` `AsyncRead`/`AsyncWrite`:
/// - the non-blocking call is tried first, as the socket is usually ready when asked; without
///   readiness it fails at once, with no system call, and the wait that follows registers for
///   the next event;
/// - a short read clears the read readiness, as tokio's own `poll_read` does where a short read
///   shows the socket drained ([`SHORT_READ_DRAINS`]), and the next read goes straight to
///   waiting for the next event instead of making a system call only to hear `WouldBlock`.
///   The readiness is looked at before the read and only that event is cleared (the read runs
///   inside `try_io`), so an event that comes in between is kept;
/// - on HTTP/2 (`budgeted`), each read and write takes a unit of tokio's cooperative budget, as
///   tokio's socket calls do: hyper's HTTP/2 connection reads until the socket has nothing, so
///   a client that never lets it run dry would otherwise keep the worker thread. An HTTP/1
///   connection yields by itself (hyper's dispatcher, every 16 turns), and an upgraded one is
///   copied by `copy_bidirectional`, which takes the budget.
pub(crate) struct TrackedStream {
    inner: Arc<TcpStream>,
    state: Arc<ConnState>,
    read_first: Bytes,
    budgeted: bool,
    /// The last read was short, and cleared the read readiness.
    drained: bool,
}

/// Whether a read shorter than asked shows the socket's receive buffer drained: on the
/// edge-triggered selectors (epoll, kqueue), where tokio's `PollEvented::poll_read` takes the
/// same shortcut (tokio#5866); the targets are tokio's list.
const SHORT_READ_DRAINS: bool = cfg!(any(
    target_os = "android",
    target_os = "illumos",
    target_os = "linux",
    target_os = "redox",
    target_os = "dragonfly",
    target_os = "freebsd",
    target_os = "ios",
    target_os = "macos",
    target_os = "netbsd",
    target_os = "openbsd",
    target_os = "tvos",
    target_os = "visionos",
    target_os = "watchos",
));

impl TrackedStream {
    pub(crate) fn new(
        inner: Arc<TcpStream>,
        state: Arc<ConnState>,
        read_first: Bytes,
        budgeted: bool,
    ) -> Self {
        Self {
            inner,
            state,
            read_first,
            budgeted,
            drained: false,
        }
    }

    /// A unit of tokio's cooperative budget, when this connection takes it: `Pending` (and a
    /// wake-up) once the task has used its budget.
    fn budget(&self, cx: &mut Context<'_>) -> Poll<Option<tokio::task::coop::RestoreOnPending>> {
        if self.budgeted {
            tokio::task::coop::poll_proceed(cx).map(Some)
        } else {
            Poll::Ready(None)
        }
    }

    /// Writes with `write`, waiting for the socket to be writable when it is not.
    fn poll_write_with(
        &self,
        cx: &mut Context<'_>,
        write: impl Fn(&TcpStream) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        self.state.unflushed.store(true, Ordering::Relaxed);
        let budget = std::task::ready!(self.budget(cx));
        loop {
            match write(&self.inner) {
                Ok(n) => {
                    if let Some(budget) = budget {
                        budget.made_progress();
                    }
                    return Poll::Ready(Ok(n));
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    std::task::ready!(self.inner.poll_write_ready(cx))?;
                }
                Err(err) => return Poll::Ready(Err(err)),
            }
        }
    }
}

impl AsyncRead for TrackedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.read_first.is_empty() {
            let n = this.read_first.len().min(buf.remaining());
            buf.put_slice(&this.read_first.split_to(n));
            return Poll::Ready(Ok(()));
        }
        let budget = std::task::ready!(this.budget(cx));
        if std::mem::take(&mut this.drained) {
            // The last read drained the socket: register for the next event straight away
            // rather than try a read that could only say so. Once woken, the read is tried.
            std::task::ready!(this.inner.poll_read_ready(cx))?;
        }
        loop {
            let wanted = buf.remaining();
            let mut got = 0;
            let result = this.inner.try_io(tokio::io::Interest::READABLE, || {
                got = this.inner.try_read_buf(buf)?;
                if SHORT_READ_DRAINS && 0 < got && got < wanted {
                    // Drained: `try_io` clears the readiness it saw before the read.
                    Err(io::ErrorKind::WouldBlock.into())
                } else {
                    Ok(())
                }
            });
            // Bytes read: a success, whether or not the readiness was cleared. Nothing read:
            // the end of the stream, or no readiness (wait for it), or an error.
            if got == 0
                && let Err(err) = result
            {
                if err.kind() != io::ErrorKind::WouldBlock {
                    return Poll::Ready(Err(err));
                }
                std::task::ready!(this.inner.poll_read_ready(cx))?;
                continue;
            }
            if got > 0 {
                this.state.bytes_read();
                // With bytes read, the only error is the drained marker above.
                this.drained = result.is_err();
            }
            if let Some(budget) = budget {
                budget.made_progress();
            }
            return Poll::Ready(Ok(()));
        }
    }
}

impl AsyncWrite for TrackedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_with(cx, |socket| socket.try_write(buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_with(cx, |socket| socket.try_write_vectored(bufs))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // A TCP socket has no buffer of its own to flush: what was written is with the kernel.
        self.state.unflushed.store(false, Ordering::Relaxed);
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // What tokio's `poll_shutdown` does: shut the write side, at once.
        Poll::Ready(socket2::SockRef::from(&*self.inner).shutdown(std::net::Shutdown::Write))
    }
}

/// Runs a connection to its end: closes it when the sweep found it idle or late with its head
/// and it still is, on shutdown when nothing is in progress (otherwise after its requests are
/// answered), and at once when forced. With `watch` (HTTP/1), it also closes it when the client
/// goes away while a request is in progress ([`ClientGone`]), which drops the request being
/// handled or sent.
pub(crate) async fn drive<C: Graceful>(
    connection: C,
    state: Arc<ConnState>,
    limits: &ServerLimits,
    watch: Option<&TcpStream>,
) {
    let mut connection = std::pin::pin!(connection);
    let mut seen = SIGNAL_NONE;
    loop {
        tokio::select! {
            biased;
            result = connection.as_mut() => {
                if let Err(err) = result {
                    tracing::debug!(%err, "connection ended with an error");
                }
                return;
            }
            () = ClientGone { socket: watch, state: &state } => {
                tracing::debug!("client closed the connection while a request was in progress");
                return;
            }
            signal = Signal::new(&state, seen) => {
                if signal == EXPIRED {
                    // The sweep's verdict may be stale: a request may have started since. Here
                    // on the connection's task none can start while we look.
                    if let Some(reason) = state.overdue(state.clock.exact(), limits) {
                        tracing::debug!(reason, "closing connection");
                        return;
                    }
                    state.expired.store(false, Ordering::Relaxed);
                    continue;
                }
                if signal == SIGNAL_FORCE || state.is_quiet() {
                    return;
                }
                seen = signal;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
}

/// A hyper server connection: a future that ends with the connection, and can be asked to
/// finish its requests and close.
pub(crate) trait Graceful: Future<Output = hyper::Result<()>> {
    fn graceful_shutdown(self: Pin<&mut Self>);
}

impl<I, S, B> Graceful for hyper::server::conn::http1::UpgradeableConnection<I, S>
where
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B>,
    S::Error: Into<BoxError>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    B: Body + 'static,
    B::Error: Into<BoxError>,
{
    fn graceful_shutdown(self: Pin<&mut Self>) {
        hyper::server::conn::http1::UpgradeableConnection::graceful_shutdown(self);
    }
}

impl<I, S, B, E> Graceful for hyper::server::conn::http2::Connection<I, S, E>
where
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B>,
    S::Error: Into<BoxError>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    B: Body + 'static,
    B::Error: Into<BoxError>,
    E: hyper::rt::bounds::Http2ServerConnExec<S::Future, B>,
{
    fn graceful_shutdown(self: Pin<&mut Self>) {
        hyper::server::conn::http2::Connection::graceful_shutdown(self);
    }
}

/// Ready when the client has closed the connection (or it failed) while a request is in
/// progress: being handled, or its response being sent.
///
/// Hyper can find this out itself, by reading the socket after each request head while the
/// request is in progress (its default, without `half_close`). But it makes that read before
/// it has polled the handler even once, into a read buffer the request still shares, so every
/// request paid for a fresh 8 KiB buffer and a read that found nothing. The server turns that
/// off (`half_close(true)`) and looks here instead: after the connection has been polled and is
/// waiting, on every wake-up of its task while a request is in progress. A handler that answers
/// at once is never looked at; a waiting one costs a check of the socket's read readiness per
/// wake-up, and a system call only when something arrived.
///
/// It looks with a one-byte `peek`, which takes nothing from the socket: end of stream (or an
/// error such as a reset) means the client is gone, and the driver closes the connection,
/// which drops the request (its guards run: the logger's 499, limiter slots). Bytes waiting in
/// the socket (a pipelined request, body bytes hyper has not read yet) are left to hyper, and
/// nothing is decided until they have been read: hyper's own check likewise skips a connection
/// whose read buffer holds bytes.
///
/// A client that only shuts its write side after a request (a half-close) is taken as gone, as
/// hyper's default takes it. One case differs from hyper's default: requests pipelined in the
/// same packet and followed by a half-close. Hyper held the later ones in its buffer and did
/// not look, so it answered them all; here the socket is found at its end and they are dropped.
struct ClientGone<'a> {
    socket: Option<&'a TcpStream>,
    state: &'a ConnState,
}

impl Future for ClientGone<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(socket) = self.socket else {
            return Poll::Pending;
        };
        // Nothing in progress: nothing to watch for. A request that starts wakes and polls the
        // connection first, and this again after it.
        if self.state.active.load(Ordering::Relaxed) == 0 {
            return Poll::Pending;
        }
        let mut byte = [std::mem::MaybeUninit::uninit()];
        match socket.poll_peek(cx, &mut ReadBuf::uninit(&mut byte)) {
            Poll::Ready(Ok(0) | Err(_)) => Poll::Ready(()),
            Poll::Ready(Ok(_)) | Poll::Pending => Poll::Pending,
        }
    }
}

/// What [`Signal`] gives when the sweep marked the connection expired.
const EXPIRED: u8 = u8::MAX;

/// Ready when a shutdown signal newer than `seen` has come (shutdown once, force once), or
/// with [`EXPIRED`] when the sweep marked the connection.
///
/// It registers the task's waker on its first poll and again only after a wake-up has taken it
/// ([`ConnState::wakes`] moved), not on every poll: the connection's task polls it each time it
/// wakes, and the waker of a task does not change.
struct Signal<'a> {
    state: &'a ConnState,
    seen: u8,
    /// The wake-up count when the waker was registered.
    registered: Option<u32>,
}

impl<'a> Signal<'a> {
    fn new(state: &'a ConnState, seen: u8) -> Self {
        Self {
            state,
            seen,
            registered: None,
        }
    }
}

impl Future for Signal<'_> {
    type Output = u8;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u8> {
        let this = self.get_mut();
        let state = this.state;
        let seen = this.seen;
        let ready = |state: &ConnState| match state.signal.load(Ordering::Relaxed) {
            signal if signal > seen => Some(signal),
            _ => state.expired.load(Ordering::Relaxed).then_some(EXPIRED),
        };
        if let Some(signal) = ready(state) {
            return Poll::Ready(signal);
        }
        let wakes = state.wakes.load(Ordering::Acquire);
        if this.registered == Some(wakes) {
            return Poll::Pending;
        }
        state.waker.register(cx.waker());
        this.registered = Some(wakes);
        match ready(state) {
            Some(signal) => Poll::Ready(signal),
            None => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            async move { drive(Idle, state, &limits, None).await }
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

//! One connection's life: what it is doing, its timers, and how it ends on shutdown.
//!
//! A [`ConnState`] is shared by three parties that all run on the connection's task (HTTP/2
//! streams may run elsewhere, hence the atomics): the socket wrapper [`TrackedStream`] notes the
//! first byte of a new request head and unflushed writes; the service notes a request starting
//! ([`ConnState::request_started`]) and the [`ActiveGuard`] inside its response body notes it
//! ending (last byte sent, or the body dropped); the driver ([`drive`]) wakes when a deadline
//! is due and closes the connection if it is idle or its head is late. One timer per
//! connection, reset only when a deadline passes; no clock read per byte.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::task::AtomicWaker;
use http_body::{Body, Frame, SizeHint};
use hyper_util::server::graceful::GracefulConnection;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::body::{BoxError, ResponseBody};

use super::limits::ServerLimits;

const SIGNAL_NONE: u8 = 0;
const SIGNAL_SHUTDOWN: u8 = 1;
const SIGNAL_FORCE: u8 = 2;

/// What one connection is doing, shared by its socket, its service and its driver.
pub(crate) struct ConnState {
    epoch: Instant,
    /// Requests in the service or still sending their response.
    active: AtomicU32,
    /// Milliseconds after `epoch` (plus one, so 0 means none) when the current request head
    /// started: the accept for the first request, then the first byte after a request ended.
    head_started: AtomicU64,
    /// Milliseconds after `epoch` when the last request ended (or the accept).
    last_end: AtomicU64,
    /// Bytes written but not yet flushed: a response may still be on its way out.
    unflushed: AtomicBool,
    /// HTTP/2: frames arrive all the time, so the head timer only covers the first request.
    http2: AtomicBool,
    signal: AtomicU8,
    waker: AtomicWaker,
}

impl ConnState {
    pub(crate) fn new() -> Self {
        Self {
            epoch: Instant::now(),
            active: AtomicU32::new(0),
            head_started: AtomicU64::new(1),
            last_end: AtomicU64::new(0),
            unflushed: AtomicBool::new(false),
            http2: AtomicBool::new(false),
            signal: AtomicU8::new(SIGNAL_NONE),
            waker: AtomicWaker::new(),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX - 1)
    }

    /// A request head has been parsed and goes to the service.
    pub(crate) fn request_started(self: &Arc<Self>, http2: bool) -> ActiveGuard {
        self.active.fetch_add(1, Ordering::Relaxed);
        self.head_started.store(0, Ordering::Relaxed);
        if http2 {
            self.http2.store(true, Ordering::Relaxed);
        }
        ActiveGuard(Arc::clone(self))
    }

    fn bytes_read(&self) {
        if self.head_started.load(Ordering::Relaxed) == 0
            && self.active.load(Ordering::Relaxed) == 0
            && !self.http2.load(Ordering::Relaxed)
        {
            self.head_started
                .store(self.now_ms() + 1, Ordering::Relaxed);
        }
    }

    /// Nothing in progress: no request, no half-written response. Dropping the connection
    /// now loses nothing but a partial request head or an idle keep-alive.
    fn is_quiet(&self) -> bool {
        self.active.load(Ordering::Relaxed) == 0 && !self.unflushed.load(Ordering::Relaxed)
    }

    /// When to look again, or why to close now.
    fn check(&self, limits: &ServerLimits) -> Result<Duration, &'static str> {
        let now = self.now_ms();
        if self.active.load(Ordering::Relaxed) > 0 {
            // Busy: look again later (the end of the request resets the clocks).
            return Ok(limits.header_read_timeout.min(limits.keep_alive_timeout));
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
        if now >= deadline {
            Err(reason)
        } else {
            Ok(Duration::from_millis(deadline - now))
        }
    }

    pub(crate) fn signal(&self, force: bool) {
        let value = if force { SIGNAL_FORCE } else { SIGNAL_SHUTDOWN };
        self.signal.fetch_max(value, Ordering::Relaxed);
        self.waker.wake();
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
        if state.active.fetch_sub(1, Ordering::Relaxed) == 1 {
            state.last_end.store(state.now_ms(), Ordering::Relaxed);
        }
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

/// The socket, noting reads and writes in the connection's state.
pub(crate) struct TrackedStream {
    inner: TcpStream,
    state: Arc<ConnState>,
}

impl TrackedStream {
    pub(crate) fn new(inner: TcpStream, state: Arc<ConnState>) -> Self {
        Self { inner, state }
    }
}

impl AsyncRead for TrackedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let result = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.state.bytes_read();
        }
        result
    }
}

impl AsyncWrite for TrackedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.state.unflushed.store(true, Ordering::Relaxed);
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.state.unflushed.store(true, Ordering::Relaxed);
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_flush(cx);
        if result.is_ready() {
            this.state.unflushed.store(false, Ordering::Relaxed);
        }
        result
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// Runs a connection to its end: closes it when idle or late with its head, on shutdown when
/// nothing is in progress (otherwise after its requests are answered), and at once when forced.
pub(crate) async fn drive<C>(connection: C, state: Arc<ConnState>, limits: Arc<ServerLimits>)
where
    C: GracefulConnection,
    C::Error: std::fmt::Display,
{
    let mut connection = std::pin::pin!(connection);
    let first = limits.header_read_timeout.min(limits.keep_alive_timeout);
    let timer = tokio::time::sleep(first);
    let mut timer = std::pin::pin!(timer);
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
            signal = Signal { state: &state, seen } => {
                if signal == SIGNAL_FORCE || state.is_quiet() {
                    return;
                }
                seen = signal;
                connection.as_mut().graceful_shutdown();
            }
            () = timer.as_mut() => match state.check(&limits) {
                Ok(next) => timer.as_mut().reset(tokio::time::Instant::now() + next),
                Err(reason) => {
                    tracing::debug!(reason, "closing connection");
                    return;
                }
            },
        }
    }
}

/// Ready when a shutdown signal newer than `seen` has come (shutdown once, force once).
struct Signal<'a> {
    state: &'a ConnState,
    seen: u8,
}

impl Future for Signal<'_> {
    type Output = u8;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u8> {
        let state = self.state;
        let signal = state.signal.load(Ordering::Relaxed);
        if signal > self.seen {
            return Poll::Ready(signal);
        }
        state.waker.register(cx.waker());
        match state.signal.load(Ordering::Relaxed) {
            signal if signal > self.seen => Poll::Ready(signal),
            _ => Poll::Pending,
        }
    }
}

//! The futures that run a connection: the driver, its graceful shutdown, the client-gone
//! watch and the signal it waits on.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use http_body::Body;

use crate::body::BoxError;

use crate::limits::ServerLimits;

use super::socket::Socket;
use super::*;

/// Runs a connection to its end: closes it when the sweep found it idle or late with its head
/// and it still is, on shutdown when nothing is in progress (otherwise after its requests are
/// answered), and at once when forced. With `watch` (HTTP/1), it also closes it when the client
/// goes away while a request is in progress ([`ClientGone`]), which drops the request being
/// handled or sent.
pub(crate) async fn drive<C: Graceful, S: Socket>(
    connection: C,
    state: Arc<ConnState>,
    limits: &ServerLimits,
    watch: Option<&S>,
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
                if signal == SIGNAL_FORCE || state.is_quiet() && !state.is_fresh() {
                    return;
                }
                seen = signal;
                // A connection that has not started its first request is left to start it
                // (hyper would close it at once if it had read nothing yet): the answer says
                // `Connection: close` as the service is draining, and the sweep closes the
                // connection if no request comes within the grace (`FIRST_REQUEST_GRACE`),
                // or once it is idle again.
                if !state.is_fresh() {
                    connection.as_mut().graceful_shutdown();
                }
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
pub(super) struct ClientGone<'a, S> {
    socket: Option<&'a S>,
    state: &'a ConnState,
}

impl<S: Socket> Future for ClientGone<'_, S> {
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
        match socket.poll_peek_byte(cx) {
            Poll::Ready(Ok(0) | Err(_)) => Poll::Ready(()),
            Poll::Ready(Ok(_)) | Poll::Pending => Poll::Pending,
        }
    }
}

/// What [`Signal`] gives when the sweep marked the connection expired.
const EXPIRED: u8 = u8::MAX;

/// Completes when the server shuts down (gracefully or forced): for a connection taken over
/// by an upgrade, which holds a request guard so the sweep never expires it.
pub(crate) async fn shutdown(state: &ConnState) {
    let mut seen = SIGNAL_NONE;
    loop {
        let signal = Signal::new(state, seen).await;
        if signal == SIGNAL_SHUTDOWN || signal == SIGNAL_FORCE {
            return;
        }
        // Marked expired while a request had just ended: clear it and wait on.
        state.expired.store(false, Ordering::Relaxed);
        seen = signal.min(SIGNAL_FORCE);
        tokio::task::yield_now().await;
    }
}

/// Ready when a shutdown signal newer than `seen` has come (shutdown once, force once), or
/// with [`EXPIRED`] when the sweep marked the connection.
///
/// It registers the task's waker on its first poll and again only after a wake-up has taken it
/// ([`ConnState::wakes`] moved), not on every poll: the connection's task polls it each time it
/// wakes, and the waker of a task does not change.
pub(super) struct Signal<'a> {
    state: &'a ConnState,
    seen: u8,
    /// The wake-up count when the waker was registered.
    registered: Option<u32>,
}

impl<'a> Signal<'a> {
    pub(super) fn new(state: &'a ConnState, seen: u8) -> Self {
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

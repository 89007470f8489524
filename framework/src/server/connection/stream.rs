//! The connection's socket, noting reads and writes in its state.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use super::socket::Socket;
use super::*;
use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

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
pub(crate) struct TrackedStream<S> {
    inner: Arc<S>,
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

impl<S: Socket> TrackedStream<S> {
    pub(crate) fn new(
        inner: Arc<S>,
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

    /// Takes tokio's cooperative budget from now on (HTTP/2, once TLS's ALPN chose it).
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    pub(crate) fn set_budgeted(&mut self, budgeted: bool) {
        self.budgeted = budgeted;
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
        write: impl Fn(&S) -> io::Result<usize>,
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

impl<S: Socket> AsyncRead for TrackedStream<S> {
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
                if let Err(drained) = result {
                    debug_assert_eq!(drained.kind(), io::ErrorKind::WouldBlock);
                    this.drained = true;
                }
            }
            if let Some(budget) = budget {
                budget.made_progress();
            }
            return Poll::Ready(Ok(()));
        }
    }
}

impl<S: Socket> AsyncWrite for TrackedStream<S> {
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
        // A socket has no buffer of its own to flush: what was written is with the kernel.
        self.state.unflushed.store(false, Ordering::Relaxed);
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // What tokio's `poll_shutdown` does: shut the write side, at once.
        Poll::Ready(self.inner.shutdown_write())
    }
}

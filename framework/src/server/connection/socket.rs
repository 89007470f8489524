//! What the connection code needs of a socket, for TCP and Unix-domain streams alike.
//!
//! Both tokio streams have the same `&self` calls ([`TrackedStream`] and the driver's watch
//! use them); the trait names them so the connection code is written once and compiled for
//! each kind, with no dispatch on the TCP path.

use std::io;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, Interest, ReadBuf};

/// A connected stream socket the server serves: [`tokio::net::TcpStream`] or
/// [`tokio::net::UnixStream`].
pub(crate) trait Socket: AsyncRead + Unpin + Send + Sync + 'static {
    fn try_io<R>(&self, interest: Interest, f: impl FnOnce() -> io::Result<R>) -> io::Result<R>;
    fn try_read_buf(&self, buf: &mut ReadBuf<'_>) -> io::Result<usize>;
    fn try_write(&self, buf: &[u8]) -> io::Result<usize>;
    fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize>;
    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
    fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
    /// Looks at the next byte without taking it from the socket (`MSG_PEEK`): `Ok(0)` at the
    /// end of the stream.
    fn poll_peek_byte(&self, cx: &mut Context<'_>) -> Poll<io::Result<usize>>;
    /// Shuts the write side, at once (what tokio's `poll_shutdown` does).
    fn shutdown_write(&self) -> io::Result<()>;
}

/// The calls both tokio streams have under the same names.
macro_rules! same_calls {
    () => {
        #[inline]
        fn try_io<R>(
            &self,
            interest: Interest,
            f: impl FnOnce() -> io::Result<R>,
        ) -> io::Result<R> {
            Self::try_io(self, interest, f)
        }
        #[inline]
        fn try_read_buf(&self, buf: &mut ReadBuf<'_>) -> io::Result<usize> {
            Self::try_read_buf(self, buf)
        }
        #[inline]
        fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
            Self::try_write(self, buf)
        }
        #[inline]
        fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
            Self::try_write_vectored(self, bufs)
        }
        #[inline]
        fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Self::poll_read_ready(self, cx)
        }
        #[inline]
        fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Self::poll_write_ready(self, cx)
        }
        fn shutdown_write(&self) -> io::Result<()> {
            socket2::SockRef::from(self).shutdown(std::net::Shutdown::Write)
        }
    };
}

impl Socket for tokio::net::TcpStream {
    same_calls!();

    fn poll_peek_byte(&self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let mut byte = [std::mem::MaybeUninit::uninit()];
        Self::poll_peek(self, cx, &mut ReadBuf::uninit(&mut byte))
    }
}

#[cfg(unix)]
impl Socket for tokio::net::UnixStream {
    same_calls!();

    /// tokio has no `poll_peek` for a Unix stream: what its TCP one does, a `recv` with
    /// `MSG_PEEK` once the socket is readable.
    fn poll_peek_byte(&self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        loop {
            std::task::ready!(Self::poll_read_ready(self, cx))?;
            let mut byte = [std::mem::MaybeUninit::uninit()];
            match Self::try_io(self, Interest::READABLE, || {
                socket2::SockRef::from(self).peek(&mut byte)
            }) {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                result => return Poll::Ready(result),
            }
        }
    }
}

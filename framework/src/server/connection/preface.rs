//! Which protocol a new connection speaks: the HTTP/2 preface, or HTTP/1.

use std::io;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::driver::Signal;
use super::socket::Socket;
use super::*;

/// The HTTP/2 connection preface (RFC 9113 section 3.4), which a prior-knowledge client sends
/// first.
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Completes when a connection that has not started a request must close: on a forced
/// shutdown, or when the sweep finds it late (with its head, or past the shutdown's
/// [`FIRST_REQUEST_GRACE`]). A graceful shutdown alone leaves it to send its first request.
async fn must_close(state: &ConnState) {
    let mut seen = SIGNAL_NONE;
    loop {
        let signal = Signal::new(state, seen).await;
        if signal != SIGNAL_SHUTDOWN {
            return;
        }
        seen = signal;
    }
}

/// The TLS handshake of a new connection, over its tracked socket; then which protocol it
/// speaks, by ALPN (`h2`, else HTTP/1.1). `None` when the handshake failed, or [`must_close`]
/// came first: a forced shutdown, or the sweep finding the request head late, since the head
/// timer runs from the accept, so a handshake that stalls (or never starts) is closed like a
/// slow request head.
#[cfg(feature = "tls")]
pub(crate) async fn handshake<S: Socket>(
    acceptor: &tokio_rustls::TlsAcceptor,
    stream: TrackedStream<S>,
    state: &ConnState,
) -> Option<(tokio_rustls::server::TlsStream<TrackedStream<S>>, bool)> {
    let accepted = tokio::select! {
        biased;
        accepted = acceptor.accept(stream) => accepted,
        () = must_close(state) => return None,
    };
    match accepted {
        Ok(mut tls) => {
            let http2 = tls.get_ref().1.alpn_protocol() == Some(b"h2".as_slice());
            state.http2.store(http2, Ordering::Relaxed);
            tls.get_mut().0.set_budgeted(http2);
            Some((tls, http2))
        }
        Err(err) => {
            tracing::debug!(%err, "TLS handshake failed");
            None
        }
    }
}

/// Which protocol a new connection speaks, from its first bytes: HTTP/2 if they are the preface,
/// HTTP/1 as soon as they differ from it (for any HTTP/1 request, at its second byte at the
/// latest). Returns the bytes read, to be read again by hyper through [`TrackedStream`], and
/// whether it is HTTP/2; `None` when the client closed first, the read failed, or
/// [`must_close`] (nothing is in progress yet, so the connection just closes).
pub(crate) async fn detect<S: Socket>(stream: &mut S, state: &ConnState) -> Option<(Bytes, bool)> {
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
        () = must_close(state) => return None,
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

//! Serving a [`Service`] on a TCP or Unix-domain listener with hyper 1.x.
//!
//! HTTP/1.1 with keep-alive and HTTP/2 (prior knowledge) on the same port: a connection whose
//! first bytes are the HTTP/2 preface is served by hyper's HTTP/2 connection, any other by its
//! HTTP/1 connection (with upgrades), each driven directly rather than through hyper-util's
//! auto connection, whose rewinding reader every read would pass through. Accepted sockets set
//! `TCP_NODELAY`, so small responses do not wait on Nagle's algorithm. The connection code is
//! generic over the socket ([`connection::Socket`]), compiled once for TCP and once for Unix
//! sockets ([`crate::listener`]), so the TCP path has no dispatch.
//!
//! Slow and idle clients are bounded by [`ServerLimits`] (set with
//! [`App::server_limits`](crate::App::server_limits)): a connection whose request head is late
//! (slowloris, or a silent connection), an idle keep-alive connection, and a stalled request
//! body (408) are closed; HTTP/2 connections are pinged; at most `max_connections` are open at
//! once and the next ones wait in the listen backlog rather than failing with "too many open
//! files".
//!
//! A client that goes away while its request is in progress (being handled, or its response
//! sent) ends the request: the connection closes and drops it, so its guards run. Over HTTP/1
//! the connection's driver watches for that, only while a request is in progress.
//!
//! On the shutdown signal the server first drains for
//! [`ServerLimits::drain_delay`] (default none): it says so to readiness probes
//! ([`Context::is_draining`](crate::Context::is_draining)) and asks HTTP/1 clients to close
//! (`Connection: close`) while it goes on serving. Then it stops accepting, closes at once every
//! connection with nothing in progress (idle, or a request head not yet complete) except one
//! that has not started its first request, which gets a second to start it
//! ([`connection::FIRST_REQUEST_GRACE`]: a client that connected before the stop sent its
//! request), lets requests being handled finish for up to `shutdown_timeout`, then closes
//! what is left and returns.
//!
//! An HTTP/1.1 request without exactly one `Host` header is answered 400 before it reaches the
//! app (RFC 9112 section 3.2: a server must refuse it; two `Host` headers let a proxy and the
//! app disagree about the target). HTTP/1.0 may omit it; HTTP/2 carries `:authority` instead.

mod accept;
mod connection;
mod reaper;

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::server::conn::{http1, http2};
use hyper_util::rt::TokioTimer;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::service::Service;

use crate::limits::ServerLimits;
#[cfg(unix)]
use crate::listener::UNIX_PEER_ADDR;
use crate::listener::{Accepted, Listener};
use accept::Accepting;
#[cfg(feature = "websocket")]
pub(crate) use connection::UpgradeHold;
use connection::{ConnBody, ConnState, Socket};

/// The open connections, so shutdown can reach each one.
#[derive(Default)]
struct Registry {
    next_id: AtomicU64,
    open: Mutex<HashMap<u64, Arc<ConnState>, rustc_hash::FxBuildHasher>>,
}

impl Registry {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<ConnState>, rustc_hash::FxBuildHasher>> {
        // Inserts and removes only: a poisoned map is still consistent.
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn signal_all(&self, force: bool) {
        for state in self.lock().values() {
            state.signal(force);
        }
    }

    /// Marks the connections that are idle or late with their head at `now`, then wakes them
    /// outside the lock (their drivers close them if they still are).
    fn sweep(&self, now: u64, limits: &ServerLimits) {
        let mut expired = Vec::new();
        for state in self.lock().values() {
            if let Some(reason) = state.expire(now, limits) {
                expired.push((Arc::clone(state), reason));
            }
        }
        for (state, reason) in expired {
            tracing::debug!(reason, "connection expired");
            state.wake();
        }
    }
}

/// What every connection of a server shares: hyper's two protocol builders, the limits, and
/// the sweep, which runs while any of them holds this.
struct Serving {
    http1: http1::Builder,
    http2: http2::Builder<connection::StreamExecutor>,
    limits: Arc<ServerLimits>,
    _sweeper: reaper::Sweeper,
}

/// A connection's verified client certificate, handed to each of its requests.
#[cfg(feature = "tls")]
type ClientCertOf = Option<Arc<crate::tls::ClientCert>>;
/// Without TLS there is none.
#[cfg(not(feature = "tls"))]
type ClientCertOf = Option<std::convert::Infallible>;

/// Releases the place a connection's state keeps for upgrades, when dropped.
struct ReleasePlace(Arc<ConnState>);

impl Drop for ReleasePlace {
    fn drop(&mut self) {
        self.0.release_place();
    }
}

impl Serving {
    /// Serves one connection over `io` (the tracked socket, or TLS over it) as HTTP/2 or
    /// HTTP/1 until it ends. HTTP/2 reads all the time (frames, pings) and resets streams
    /// itself: no watch, and its reads and writes take tokio's cooperative budget. HTTP/1 is
    /// watched for the client leaving mid-request ([`connection::drive`]) through `socket`.
    async fn run<I, S, K: Socket>(
        &self,
        io: I,
        http2: bool,
        handler: S,
        state: Arc<ConnState>,
        socket: &K,
    ) where
        I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
        S: hyper::service::HttpService<Incoming, ResBody = ConnBody> + Send,
        S::Future: Send + 'static,
        S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let protocol = if http2 {
            crate::telemetry::Protocol::Http2
        } else {
            crate::telemetry::Protocol::Http1
        };
        let _open = crate::telemetry::counters().connection_opened(protocol);
        if http2 {
            // Its streams run in this task: see `connection::WithStreams`.
            let connection = connection::WithStreams::new(self.http2.serve_connection(io, handler));
            connection::drive(connection, state, &self.limits, None::<&K>).await;
        } else {
            let connection = self.http1.serve_connection(io, handler).with_upgrades();
            connection::drive(connection, state, &self.limits, Some(socket)).await;
        }
    }
}

/// A connection's place: its slot under `max_connections` and its registry entry, both given
/// back when the connection's task ends (and any upgrade of it has ended), however it ends.
struct Ticket {
    id: u64,
    registry: Arc<Registry>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.registry.lock().remove(&self.id);
    }
}

impl Service {
    /// Binds `addr`, says where it listens (on stderr: `listening on http://127.0.0.1:3000`),
    /// and serves until SIGINT or SIGTERM: the short way for a program that needs no more
    /// control over its socket than that. `addr` is `host:port`, `unix:/path/to.sock` (a
    /// Unix-domain socket, mode `0o660`, removed when the server stops) or `fd:0` (a socket
    /// passed by systemd or `systemfd`): see [`framework::listener`](crate::listener). A bind
    /// failure names the address.
    ///
    /// ```no_run
    /// # async fn run() -> std::io::Result<()> {
    /// let service = framework::App::new().build().expect("valid routes");
    /// service.listen("127.0.0.1:3000").await
    /// # }
    /// ```
    pub async fn listen(self, addr: &str) -> std::io::Result<()> {
        let listener = Listener::bind(addr).await?;
        eprintln!("listening on {listener}");
        self.serve(listener).await
    }

    /// Serves until SIGINT or SIGTERM, then shuts down gracefully. `listener` is a tokio
    /// `TcpListener` or `UnixListener`, or a [`Listener`](crate::listener::Listener) (a Unix
    /// socket with its mode, an inherited socket).
    pub async fn serve(self, listener: impl Into<Listener>) -> std::io::Result<()> {
        self.serve_with_shutdown(listener, shutdown_signal()).await
    }

    /// Serves until `signal` completes, then shuts down gracefully.
    pub async fn serve_with_shutdown(
        self,
        listener: impl Into<Listener>,
        signal: impl Future<Output = ()>,
    ) -> std::io::Result<()> {
        let listener = listener.into();
        let limits = Arc::new(self.limits.clone());
        let max = u32::try_from(limits.max_connections.max(1)).unwrap_or(u32::MAX >> 3);
        let slots = Arc::new(Semaphore::new(max as usize));
        let registry = Arc::new(Registry::default());
        let clock = Arc::new(reaper::Clock::new(&limits));
        let sweeper = reaper::Sweeper::start(Arc::clone(&clock), {
            let (registry, limits) = (Arc::clone(&registry), Arc::clone(&limits));
            move |now| registry.sweep(now, &limits)
        })?;
        // The acceptor, and the reload watch for as long as the server runs.
        #[cfg(feature = "tls")]
        let (tls, _tls_watch) = match &self.tls {
            Some(tls) => {
                // ALPN offers what the server speaks.
                tls.speak(limits.http_versions)
                    .map_err(std::io::Error::other)?;
                (Some(tls.clone()), Some(tls.watch()))
            }
            None => (None, None),
        };
        let service = Arc::new(self);
        let mut h2 = http2::Builder::new(connection::StreamExecutor);
        // WebSockets over HTTP/2 (RFC 8441): clients may send an extended CONNECT.
        #[cfg(feature = "websocket")]
        h2.enable_connect_protocol();
        h2.timer(TokioTimer::new())
            .keep_alive_interval(limits.http2_keep_alive_interval)
            .keep_alive_timeout(limits.http2_keep_alive_timeout);
        // Each connection holds it, so the sweep goes on for as long as a connection is open,
        // even when the caller drops this future (e.g. in a `select!`).
        let serving = Arc::new(Serving {
            http1: {
                // The driver watches for a client that leaves mid-request instead of hyper,
                // which paid for it on every request: see `connection::ClientGone`.
                let mut http1 = http1::Builder::new();
                http1.half_close(true);
                http1
            },
            http2: h2,
            limits: Arc::clone(&limits),
            _sweeper: sweeper,
        });
        // The signal starts the drain: readiness fails at once, and the server goes on
        // accepting and serving for the drain delay before it stops.
        let drain_delay = limits.drain_delay;
        let drained = {
            let service = Arc::clone(&service);
            async move {
                signal.await;
                service.start_draining();
                if !drain_delay.is_zero() {
                    tracing::info!(delay = ?drain_delay, "shutting down: draining");
                    tokio::time::sleep(drain_delay).await;
                }
            }
        };
        let mut signal = std::pin::pin!(drained);
        let accepting = Accepting {
            service,
            serving,
            registry: Arc::clone(&registry),
            clock: Arc::clone(&clock),
            #[cfg(feature = "tls")]
            tls,
        };
        loop {
            // `biased`, the signal first: it is polled before anything is accepted, so a
            // signal future that registers its handler on first poll (as `tokio::signal`'s do)
            // has done so before the first request is served. Unbiased, a ready accept could
            // win every turn and a SIGINT sent right after the first answer would find the
            // default handler and kill the process.
            // Above `max_connections`, stop accepting: new connections wait in the backlog.
            let permit = tokio::select! {
                biased;
                () = &mut signal => break,
                permit = Arc::clone(&slots).acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break,
                },
            };
            let accepted = tokio::select! {
                biased;
                () = &mut signal => break,
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(err) => {
                        // EMFILE and friends: back off instead of spinning or giving up.
                        tracing::warn!(%err, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            match accepted {
                Accepted::Tcp(stream, peer) => {
                    if let Err(err) = stream.set_nodelay(true) {
                        tracing::debug!(%err, "set TCP_NODELAY failed");
                    }
                    accepting.spawn(stream, peer, None, permit);
                }
                #[cfg(unix)]
                Accepted::Unix(stream) => {
                    let unix_peer = crate::listener::UnixPeer::of(&stream);
                    accepting.spawn(stream, UNIX_PEER_ADDR, unix_peer, permit);
                }
            }
        }
        // Stopped accepting: new connections wait in the backlog of an inherited socket (for
        // the next process), and the file of a Unix socket bound here is removed.
        drop(listener);
        clock.begin_shutdown();
        // Idle and half-received connections close now; the others finish their requests,
        // and those that have not started their first request get a grace to start it.
        registry.signal_all(false);
        let all = Arc::clone(&slots).acquire_many_owned(max);
        if tokio::time::timeout(limits.shutdown_timeout, all)
            .await
            .is_err()
        {
            tracing::warn!(
                timeout = ?limits.shutdown_timeout,
                "graceful shutdown timed out, closing the remaining connections"
            );
            registry.signal_all(true);
            let all = Arc::clone(&slots).acquire_many_owned(max);
            let _ = tokio::time::timeout(Duration::from_secs(1), all).await;
        }
        Ok(())
    }
}

/// Completes on SIGINT (Ctrl-C) or, on Unix, SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}

//! What a request knows of the connection it came on: [`ConnectionInfo`], read with
//! [`Context::connection`](crate::Context::connection).
//!
//! The peer's address, or the process at the other end of a Unix socket; whether the
//! server's own TLS carried the request, the protocol its handshake chose (ALPN) and the
//! client certificate it verified. Made once per connection when it is accepted and shared by
//! its requests, so reading it costs nothing per request. What proxies in front say of the
//! client (`X-Forwarded-For`, `X-Forwarded-Proto`) is not a connection fact: see
//! [`ClientIpExt`](crate::client_ip::ClientIpExt).
//!
//! ```
//! use framework::{Context, Result};
//!
//! async fn whoami(ctx: &mut Context) -> Result<String> {
//!     let conn = ctx.connection();
//!     Ok(match conn.unix_peer() {
//!         Some(process) => format!("{process}"),
//!         None => format!("{} (tls: {})", conn.remote_addr(), conn.is_tls()),
//!     })
//! }
//! # let _ = whoami;
//! ```

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use crate::client_ip::Peer;

/// What [`ConnectionInfo::remote_addr`](crate::connection::ConnectionInfo::remote_addr) gives for a request over a Unix
/// socket: `127.0.0.1:0`, a process on this host (port 0 is never a TCP peer's).
pub const UNIX_PEER_ADDR: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0);

/// What the kernel says of the process at the other end of a Unix-socket connection
/// (`SO_PEERCRED`, read once when the connection is accepted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnixPeer {
    uid: u32,
    gid: u32,
    /// 0 when unknown (no process has pid 0).
    pid: u32,
}

impl UnixPeer {
    /// The peer process's user id.
    pub fn uid(&self) -> u32 {
        self.uid
    }
    /// The peer process's group id.
    pub fn gid(&self) -> u32 {
        self.gid
    }
    /// The peer process's id, where the platform tells it (Linux, Android, the BSDs do).
    pub fn pid(&self) -> Option<u32> {
        (self.pid != 0).then_some(self.pid)
    }

    /// The credentials of the peer of `stream`; `None` when the kernel will not say.
    #[cfg(unix)]
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) fn of(stream: &tokio::net::UnixStream) -> Option<Self> {
        let cred = stream.peer_cred().ok()?;
        Some(Self {
            uid: cred.uid(),
            gid: cred.gid(),
            pid: cred
                .pid()
                .and_then(|pid| u32::try_from(pid).ok())
                .unwrap_or(0),
        })
    }
}

/// `unix:pid=812,uid=33` (or `unix:uid=33` without a pid): what the access log prints.
impl fmt::Display for UnixPeer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pid() {
            Some(pid) => write!(f, "unix:pid={pid},uid={}", self.uid),
            None => write!(f, "unix:uid={}", self.uid),
        }
    }
}

/// How a connection's bytes travel: in the clear, or under the server's TLS with the
/// protocol its handshake chose (the server offers `h2` and `http/1.1` only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Transport {
    #[default]
    Plain,
    /// TLS without ALPN.
    Tls,
    TlsH2,
    TlsHttp11,
}

/// What a connection's requests share beyond its address, made once per connection that has
/// any of it (a Unix socket's peer process, a TLS client's verified certificate).
#[derive(Debug, Default)]
struct Facts {
    unix_peer: Option<UnixPeer>,
    #[cfg(feature = "tls")]
    client_cert: Option<Arc<crate::tls::ClientCert>>,
}

/// The connection a request came on: its peer, and the TLS the server ran on it.
///
/// Cheap to clone (an address, a byte and, over a Unix socket or with a client certificate,
/// one reference count).
#[derive(Debug, Clone)]
pub struct ConnectionInfo {
    remote_addr: SocketAddr,
    transport: Transport,
    /// `None` over TCP without a client certificate: most connections carry no pointer.
    facts: Option<Arc<Facts>>,
}

/// A connection from `remote_addr`, in the clear: what a request made in a test, or by a host
/// that serves the app as a tower service, comes with.
impl From<SocketAddr> for ConnectionInfo {
    fn from(remote_addr: SocketAddr) -> Self {
        Self::new(remote_addr)
    }
}

impl ConnectionInfo {
    /// A TCP (or Unix, with [`UNIX_PEER_ADDR`]) connection from `remote_addr`, in the clear.
    pub(crate) fn new(remote_addr: SocketAddr) -> Self {
        Self {
            remote_addr,
            transport: Transport::Plain,
            facts: None,
        }
    }

    /// The connection runs the server's TLS, whose handshake chose `alpn` (if any).
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    pub(crate) fn with_tls(mut self, alpn: Option<&[u8]>) -> Self {
        self.transport = match alpn {
            Some(b"h2") => Transport::TlsH2,
            Some(b"http/1.1") => Transport::TlsHttp11,
            _ => Transport::Tls,
        };
        self
    }

    /// The peer process over a Unix socket, and the client's verified certificate.
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) fn with_facts(
        mut self,
        unix_peer: Option<UnixPeer>,
        #[cfg(feature = "tls")] client_cert: Option<Arc<crate::tls::ClientCert>>,
    ) -> Self {
        #[cfg(feature = "tls")]
        let any = unix_peer.is_some() || client_cert.is_some();
        #[cfg(not(feature = "tls"))]
        let any = unix_peer.is_some();
        self.facts = any.then(|| {
            Arc::new(Facts {
                unix_peer,
                #[cfg(feature = "tls")]
                client_cert,
            })
        });
        self
    }

    /// The peer's socket address. Over a Unix socket, which has none, [`UNIX_PEER_ADDR`]
    /// (`127.0.0.1:0`): the peer is a process on this host, and
    /// [`unix_peer`](Self::unix_peer) says which.
    pub fn remote_addr(&self) -> SocketAddr {
        self.remote_addr
    }

    /// Who the peer is: an IP address, or a process over a Unix socket, which has none (its
    /// [`remote_addr`](Self::remote_addr) is [`UNIX_PEER_ADDR`], which no TCP peer has: port
    /// 0).
    pub fn peer(&self) -> Peer {
        if self.remote_addr == UNIX_PEER_ADDR {
            Peer::Unix
        } else {
            Peer::Ip(self.remote_addr.ip())
        }
    }

    /// The peer process (user, group, pid) when the request came over a Unix socket
    /// ([`framework::listener`](crate::listener)); `None` over TCP.
    pub fn unix_peer(&self) -> Option<UnixPeer> {
        self.facts.as_ref().and_then(|facts| facts.unix_peer)
    }

    /// True when the server's own TLS ([`App::tls`](crate::App::tls)) carried the request. A
    /// proxy that ended TLS in front of the app is told apart by
    /// [`ClientIpExt::is_https`](crate::client_ip::ClientIpExt::is_https).
    pub fn is_tls(&self) -> bool {
        self.transport != Transport::Plain
    }

    /// The protocol the TLS handshake chose by ALPN: `b"h2"` or `b"http/1.1"`; `None` in the
    /// clear (HTTP/2 over plain TCP is chosen by its preface, not by ALPN) or when the client
    /// offered none.
    pub fn alpn(&self) -> Option<&'static [u8]> {
        match self.transport {
            Transport::TlsH2 => Some(b"h2"),
            Transport::TlsHttp11 => Some(b"http/1.1"),
            Transport::Plain | Transport::Tls => None,
        }
    }

    /// The client certificate the client showed in its TLS handshake, verified against the
    /// CA bundle of [`Tls::client_auth`](crate::tls::Tls::client_auth); `None` over plain
    /// HTTP, without client authentication, or when an optional certificate was not shown.
    /// Read once per connection and shared by its requests: clone the `Arc` to keep it.
    ///
    /// A certificate a proxy in front checked (and passed on in a header) is not seen here:
    /// the connection's own handshake is the only source.
    #[cfg(feature = "tls")]
    pub fn client_cert(&self) -> Option<&Arc<crate::tls::ClientCert>> {
        self.facts.as_ref()?.client_cert.as_ref()
    }
}

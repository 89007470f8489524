//! Where the server takes its connections: a TCP port, a Unix-domain socket, or a socket
//! inherited from a supervisor (systemd socket activation, `systemfd`).
//!
//! [`Service::serve`](crate::Service::serve) takes anything that converts into a
//! [`Listener`]: a tokio `TcpListener` or `UnixListener` bound by the caller, or a
//! `Listener` made here. [`Service::listen`](crate::Service::listen) and [`Listener::bind`]
//! take an address as text, and [`ListenAddr`] parses the same forms for a setting:
//!
//! - `127.0.0.1:3000`, `[::1]:3000` (with `bind`, also a name: `localhost:3000`): TCP;
//! - `unix:/run/app/http.sock`: a Unix-domain socket ([`Listener::unix`]);
//! - `fd:0`: the first socket passed by the supervisor, TCP or Unix ([`Listener::inherited`],
//!   feature `socket-activation`, on by default).
//!
//! The accept loop, the connection limit, the timeouts, graceful shutdown and TLS
//! ([`App::tls`](crate::App::tls)) work the same on every kind.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use framework::listener::Listener;
//!
//! let service = framework::App::new().build().expect("valid routes");
//! // Only the owner and its group (nginx's, say) may connect.
//! let listener = Listener::unix_with_mode("/run/app/http.sock", 0o660).await?;
//! service.serve(listener).await
//! # }
//! ```
//!
//! # Unix-domain sockets
//!
//! Binding a path that exists: a socket file nobody listens on (left by a process that
//! crashed) is removed and bound again; a socket another process accepts on is not taken
//! (`AddrInUse`, naming the path); anything that is not a socket is never deleted
//! (`AlreadyExists`). The file gets the mode asked for (default [`DEFAULT_UNIX_MODE`],
//! `0o660`: owner and group read and write, as a socket that nginx of the same group connects
//! to needs) and is removed when the server stops, unless another process has put its own
//! socket there meanwhile. A `UnixListener` passed in, or an inherited one, is the caller's or
//! the supervisor's: its file is left as it is.
//!
//! A request over a Unix socket has no IP peer.
//! [`ConnectionInfo::remote_addr`](crate::connection::ConnectionInfo::remote_addr) then gives [`UNIX_PEER_ADDR`], the
//! loopback address with port 0, and [`ConnectionInfo::peer`](crate::connection::ConnectionInfo::peer) says
//! [`Peer::Unix`](crate::client_ip::Peer::Unix): a Unix-socket peer is a process on this
//! host, keyed by the limiters and logged as loopback, but never trusted as a proxy because
//! loopback is ([`App::trusted_proxies`](crate::App::trusted_proxies)): that would trust every
//! local process. Behind nginx on a Unix socket, trust it with `TrustedProxies::Hops(1)`, or
//! name it, `TrustedProxies::UnixAndNetworks(..)` (`"unix"` in a parsed list), and
//! [`ClientIpExt::real_ip`](crate::client_ip::ClientIpExt::real_ip) is the client that nginx names. What the
//! kernel says of the peer process (user, group, pid) is in
//! [`ConnectionInfo::unix_peer`](crate::connection::ConnectionInfo::unix_peer), and the access log's `{remote}` prints
//! it (`unix:pid=812,uid=33`).
//!
//! # Socket activation
//!
//! A supervisor that holds the listening socket and passes it to the process
//! (`LISTEN_FDS`/`LISTEN_PID`, as systemd and `systemfd` set them; read through the
//! [`listenfd`](https://docs.rs/listenfd) crate) lets the process restart without refusing a
//! connection: while none is running, new connections wait in the socket's backlog, and the
//! next process accepts them. A graceful shutdown answers every connection it had accepted,
//! including one whose first request had not arrived yet (given a second for it). Clients that
//! keep connections alive also need a short
//! [`ServerLimits::drain_delay`](crate::ServerLimits::drain_delay), so that none reuses an idle
//! connection as the process stops. The guide's deployment chapter has a systemd unit pair and
//! the measured figures.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use tokio::net::TcpListener;
#[cfg(unix)]
use tokio::net::UnixListener;

/// The mode a Unix socket file gets unless told otherwise: read and write for its owner and
/// group (connecting needs write permission), nothing for others.
pub const DEFAULT_UNIX_MODE: u32 = 0o660;

pub use crate::connection::{UNIX_PEER_ADDR, UnixPeer};

/// Where to listen, as a setting names it: `host:port`, `unix:/path` or `fd:N`.
///
/// ```
/// use framework::listener::ListenAddr;
///
/// assert_eq!(
///     "unix:/run/app.sock".parse::<ListenAddr>().unwrap(),
///     ListenAddr::Unix("/run/app.sock".into())
/// );
/// assert_eq!("fd:0".parse::<ListenAddr>().unwrap(), ListenAddr::Inherited(0));
/// assert!("localhost".parse::<ListenAddr>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListenAddr {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A Unix-domain socket at this path ([`Listener::unix`]).
    Unix(PathBuf),
    /// The supervisor's socket of this index: 0 is the first, file descriptor 3
    /// ([`Listener::inherited`]).
    Inherited(usize),
}

impl FromStr for ListenAddr {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, String> {
        if let Some(path) = value.strip_prefix("unix:") {
            if path.is_empty() {
                return Err("`unix:` needs a path, as in unix:/run/app/http.sock".into());
            }
            return Ok(Self::Unix(path.into()));
        }
        if let Some(index) = value.strip_prefix("fd:") {
            return index
                .parse()
                .map(Self::Inherited)
                .map_err(|_| format!("`{value}`: fd: takes the socket's index, as in fd:0"));
        }
        value.parse().map(Self::Tcp).map_err(|e| {
            format!("`{value}` is not an address like 127.0.0.1:3000, unix:/path or fd:0: {e}")
        })
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tcp(addr) => write!(f, "{addr}"),
            Self::Unix(path) => write!(f, "unix:{}", path.display()),
            Self::Inherited(index) => write!(f, "fd:{index}"),
        }
    }
}

impl ListenAddr {
    /// Binds it (or takes the inherited socket): [`Listener::bind`] for a parsed address.
    pub async fn bind(&self) -> io::Result<Listener> {
        match self {
            Self::Tcp(addr) => Ok(TcpListener::bind(addr).await?.into()),
            #[cfg(unix)]
            Self::Unix(path) => Listener::unix(path).await,
            #[cfg(not(unix))]
            Self::Unix(_) => Err(io::ErrorKind::Unsupported.into()),
            Self::Inherited(index) => inherited(*index),
        }
    }
}

/// A listening socket the server accepts on: TCP or Unix-domain, bound here or by the caller,
/// or inherited. See the [module](self) documentation.
pub struct Listener {
    inner: Inner,
}

enum Inner {
    Tcp(TcpListener),
    #[cfg(unix)]
    Unix {
        listener: UnixListener,
        /// The file to remove when the server stops: only for a socket bound here.
        _file: Option<SocketFile>,
    },
}

/// A connection just accepted.
#[cfg_attr(not(feature = "server"), allow(dead_code))]
pub(crate) enum Accepted {
    Tcp(tokio::net::TcpStream, SocketAddr),
    #[cfg(unix)]
    Unix(tokio::net::UnixStream),
}

impl Listener {
    /// Binds `addr`: `host:port` (a name is resolved), `unix:/path` (mode
    /// [`DEFAULT_UNIX_MODE`]) or `fd:N` (an inherited socket). Errors name the address.
    pub async fn bind(addr: &str) -> io::Result<Self> {
        let named =
            |e: io::Error| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}"));
        if addr.starts_with("unix:") || addr.starts_with("fd:") {
            let parsed: ListenAddr = addr
                .parse()
                .map_err(|e: String| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            return parsed.bind().await.map_err(named);
        }
        Ok(TcpListener::bind(addr).await.map_err(named)?.into())
    }

    /// A Unix-domain socket at `path`, mode [`DEFAULT_UNIX_MODE`]; see
    /// [`unix_with_mode`](Self::unix_with_mode).
    #[cfg(unix)]
    pub async fn unix(path: impl AsRef<Path>) -> io::Result<Self> {
        Self::unix_with_mode(path, DEFAULT_UNIX_MODE).await
    }

    /// A Unix-domain socket at `path` whose file gets `mode` (as `chmod` takes it, e.g.
    /// `0o600`). A stale socket file there is replaced; a live socket (another process accepts
    /// on it) gives `AddrInUse`, and a path that is not a socket `AlreadyExists`: neither is
    /// touched. The file is removed when the server stops (or this listener is dropped).
    #[cfg(unix)]
    pub async fn unix_with_mode(path: impl AsRef<Path>, mode: u32) -> io::Result<Self> {
        use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
        let path = path.as_ref();
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_socket() => {
                match tokio::net::UnixStream::connect(path).await {
                    Ok(_) => {
                        return Err(io::Error::new(
                            io::ErrorKind::AddrInUse,
                            format!("another process listens on {}", path.display()),
                        ));
                    }
                    // Nobody listens: left by a process that did not stop cleanly.
                    Err(err) if err.kind() == io::ErrorKind::ConnectionRefused => {
                        tracing::info!(path = %path.display(), "removing a stale socket file");
                        std::fs::remove_file(path)?;
                    }
                    Err(err) => return Err(err),
                }
            }
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not a socket", path.display()),
                ));
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(err),
        }
        let listener = UnixListener::bind(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
        let meta = std::fs::symlink_metadata(path)?;
        Ok(Self {
            inner: Inner::Unix {
                listener,
                _file: Some(SocketFile {
                    path: path.to_owned(),
                    id: (meta.dev(), meta.ino()),
                }),
            },
        })
    }

    /// The supervisor's listening socket of this `index` (0: the first, file descriptor 3),
    /// TCP or Unix-domain, passed as systemd does (`LISTEN_FDS`, and `LISTEN_PID` naming this
    /// process; `systemfd --no-pid` leaves it out). `NotFound` when there is none, or it was
    /// taken already. The sockets are those [`take_inherited_sockets`] took; when it was not
    /// called, the first call here takes them, which only a process with one thread may do
    /// (the environment is changed: see there), so in a multi-threaded runtime it is an
    /// error naming the fix.
    #[cfg(feature = "socket-activation")]
    pub fn inherited(index: usize) -> io::Result<Self> {
        inherited(index)
    }

    /// The TCP address it listens on; `None` for a Unix socket.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        match &self.inner {
            Inner::Tcp(listener) => listener.local_addr().ok(),
            #[cfg(unix)]
            Inner::Unix { .. } => None,
        }
    }

    /// Waits for the next connection.
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) async fn accept(&self) -> io::Result<Accepted> {
        match &self.inner {
            Inner::Tcp(listener) => {
                let (stream, peer) = listener.accept().await?;
                Ok(Accepted::Tcp(stream, peer))
            }
            #[cfg(unix)]
            Inner::Unix { listener, .. } => Ok(Accepted::Unix(listener.accept().await?.0)),
        }
    }
}

/// `http://127.0.0.1:3000` or `unix:/run/app/http.sock`: where clients reach it.
impl fmt::Display for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Inner::Tcp(listener) => match listener.local_addr() {
                Ok(addr) => write!(f, "http://{addr}"),
                Err(_) => f.write_str("a TCP socket"),
            },
            #[cfg(unix)]
            Inner::Unix { listener, .. } => match listener
                .local_addr()
                .ok()
                .as_ref()
                .and_then(|a| a.as_pathname())
            {
                Some(path) => write!(f, "unix:{}", path.display()),
                None => f.write_str("an unnamed Unix socket"),
            },
        }
    }
}

impl fmt::Debug for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Listener({self})")
    }
}

/// A listener the caller bound; serving it is what [`Service::serve`](crate::Service::serve)
/// always did.
impl From<TcpListener> for Listener {
    fn from(listener: TcpListener) -> Self {
        Self {
            inner: Inner::Tcp(listener),
        }
    }
}

/// A Unix listener the caller bound: its file is the caller's to remove.
#[cfg(unix)]
impl From<UnixListener> for Listener {
    fn from(listener: UnixListener) -> Self {
        Self {
            inner: Inner::Unix {
                listener,
                _file: None,
            },
        }
    }
}

/// A socket file this process bound, removed on drop if it is still the same file.
#[cfg(unix)]
struct SocketFile {
    path: PathBuf,
    /// Device and inode: a file another process put there since is not ours to remove.
    id: (u64, u64),
}

#[cfg(unix)]
impl Drop for SocketFile {
    fn drop(&mut self) {
        use std::os::unix::fs::MetadataExt;
        if let Ok(meta) = std::fs::symlink_metadata(&self.path)
            && (meta.dev(), meta.ino()) == self.id
            && let Err(err) = std::fs::remove_file(&self.path)
        {
            tracing::warn!(path = %self.path.display(), %err, "cannot remove the socket file");
        }
    }
}

/// The sockets a supervisor passed, once taken from the environment.
#[cfg(feature = "socket-activation")]
static INHERITED: std::sync::OnceLock<std::sync::Mutex<listenfd::ListenFd>> =
    std::sync::OnceLock::new();

/// Takes the listening sockets a supervisor passed (`LISTEN_FDS`, `LISTEN_PID`), for
/// [`Listener::inherited`] (`fd:0`) to serve later. Call it first in `main`, before the async
/// runtime or any other thread starts: it removes the two variables from the environment (so
/// a child process does not take the sockets for its own, as systemd's `sd_listen_fds` does),
/// and changing the environment while another thread may read it is undefined behaviour on
/// glibc. Later calls do nothing.
///
/// ```no_run
/// fn main() -> std::io::Result<()> {
///     // Before the runtime's threads exist.
///     framework::listener::take_inherited_sockets();
///     tokio::runtime::Runtime::new()?.block_on(async {
///         let listener = framework::listener::Listener::inherited(0)?;
///         # let _ = listener;
///         Ok(())
///     })
/// }
/// ```
#[cfg(feature = "socket-activation")]
pub fn take_inherited_sockets() {
    INHERITED.get_or_init(|| std::sync::Mutex::new(listenfd::ListenFd::from_env()));
}

/// Whether this process runs one thread (Linux: the entries of `/proc/self/task`); `false`
/// when that cannot be told.
#[cfg(feature = "socket-activation")]
fn single_threaded() -> bool {
    std::fs::read_dir("/proc/self/task").is_ok_and(|tasks| tasks.count() == 1)
}

#[cfg(feature = "socket-activation")]
fn inherited(index: usize) -> io::Result<Listener> {
    use std::sync::PoisonError;
    if INHERITED.get().is_none() {
        if !single_threaded() {
            return Err(io::Error::other(
                "the inherited sockets must be taken before threads start: call \
                 framework::listener::take_inherited_sockets() first in main, before the \
                 async runtime (it changes the environment)",
            ));
        }
        take_inherited_sockets();
    }
    let mut fds = INHERITED
        .get()
        .ok_or_else(|| io::Error::other("the inherited sockets were not taken"))?
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let passed = fds.len();
    let missing = || {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "no inherited socket fd:{index}: LISTEN_FDS passes {passed} to this process \
                 (LISTEN_PID must be its pid), or it was taken already"
            ),
        )
    };
    // Each `take_` call checks the socket's kind and leaves it in place when it differs.
    let inner = match fds.take_tcp_listener(index) {
        Ok(Some(listener)) => {
            listener.set_nonblocking(true)?;
            Inner::Tcp(TcpListener::from_std(listener)?)
        }
        Ok(None) => return Err(missing()),
        #[cfg(unix)]
        Err(_) => match fds.take_unix_listener(index)? {
            Some(listener) => {
                listener.set_nonblocking(true)?;
                Inner::Unix {
                    listener: UnixListener::from_std(listener)?,
                    _file: None,
                }
            }
            None => return Err(missing()),
        },
        #[cfg(not(unix))]
        Err(err) => return Err(err),
    };
    Ok(Listener { inner })
}

#[cfg(not(feature = "socket-activation"))]
fn inherited(index: usize) -> io::Result<Listener> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("fd:{index} needs the framework's `socket-activation` feature"),
    ))
}

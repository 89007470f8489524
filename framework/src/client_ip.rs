//! The real client IP behind proxies we run.
//!
//! `X-Forwarded-For` is a list each proxy appends to: `client, proxy1, proxy2`. Only the
//! entries our own proxies appended can be believed; the leftmost is whatever the client wrote.
//! So the client is found from the right: with [`TrustedProxies::Hops`]`(n)` (n proxies in
//! front of the app, the peer being the nearest) it is the n-th entry from the right; with
//! [`TrustedProxies::Networks`] it is the rightmost entry outside the trusted networks, and the
//! headers are believed only when the peer itself is one of our proxies. Without
//! `X-Forwarded-For`, a trusted proxy's `X-Real-Ip` is used; otherwise the peer address.

use std::net::IpAddr;
use std::str::FromStr;

use http::HeaderMap;
/// The network type of [`TrustedProxies::Networks`], re-exported so an app needs no `ipnet`
/// dependency of its own (or parse the list: `"10.0.0.0/8, 192.168.0.0/16".parse()`).
pub use ipnet::IpNet;

use crate::header::{X_FORWARDED_FOR, X_REAL_IP};

/// What a request says of its client through the proxies the app trusts: what
/// [`Context`](crate::Context) gains from this module.
///
/// ```
/// use framework::client_ip::ClientIpExt;
/// use framework::{Context, Result};
///
/// async fn hello(ctx: &mut Context) -> Result<String> {
///     Ok(format!("{} over {}", ctx.real_ip(), if ctx.is_https() { "https" } else { "http" }))
/// }
/// # let _ = hello;
/// ```
pub trait ClientIpExt {
    /// The real client IP: the peer address, or behind trusted proxies the client they name
    /// (counted from the right of `X-Forwarded-For`; see the [module](self)).
    fn real_ip(&self) -> IpAddr;
    /// True when this request's peer is one of the proxies the app trusts
    /// ([`App::trusted_proxies`](crate::App::trusted_proxies)), so the proxy headers it sent
    /// (`X-Forwarded-*`, `X-Real-Ip`, `Forwarded`) may be believed. Decided on the peer, as
    /// [`real_ip`](Self::real_ip) is: a client outside the trusted networks is never trusted,
    /// whatever else is configured.
    fn trusts_proxy(&self) -> bool;
    /// Whether the client reached the app over HTTPS: the server's own TLS
    /// ([`ConnectionInfo::is_tls`](crate::connection::ConnectionInfo::is_tls)), or a trusted
    /// proxy in front said so with `X-Forwarded-Proto: https`. What HSTS and the access log's
    /// scheme go by.
    fn is_https(&self) -> bool;
}

/// Who a connection's peer is: an IP address (TCP), or a process on this host over a Unix
/// socket, which has none
/// ([`ConnectionInfo::peer`](crate::connection::ConnectionInfo::peer)). A Unix peer is its own
/// kind, so trusting loopback proxies does not trust every local process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Peer {
    /// A TCP peer's address.
    Ip(IpAddr),
    /// A peer over a Unix socket
    /// ([`ConnectionInfo::unix_peer`](crate::connection::ConnectionInfo::unix_peer) says which
    /// process).
    Unix,
}

impl Peer {
    /// The address that stands for this peer where one is needed (a limiter's key, the client
    /// IP of an untrusted peer): its own, or loopback (`127.0.0.1`) for a Unix peer, which is a
    /// process on this host.
    pub fn ip(self) -> IpAddr {
        match self {
            Peer::Ip(ip) => ip,
            Peer::Unix => IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        }
    }
}

/// Which proxies in front of the app are believed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrustedProxies {
    /// None: the client IP is the peer address (the default).
    #[default]
    None,
    /// This many proxies, each appending to `X-Forwarded-For`: the nearest is the peer, over
    /// TCP or a Unix socket.
    Hops(usize),
    /// Proxies whose addresses lie in these networks. A peer over a Unix socket is not in any
    /// network, loopback included: name it with [`TrustedProxies::UnixAndNetworks`].
    Networks(Vec<IpNet>),
    /// A proxy on this host connecting over a Unix socket (nginx in front of the app's
    /// socket), and proxies whose addresses lie in these networks (the list may be empty).
    UnixAndNetworks(Vec<IpNet>),
}

impl FromStr for TrustedProxies {
    type Err = String;

    /// `false`/`0`/`""`: none; `true`: one hop; a number: that many hops; else a comma list of
    /// networks or addresses (`10.0.0.0/8, 192.168.1.7`), in which `unix` names a proxy on
    /// the Unix socket (`unix` alone, or `unix, 10.0.0.0/8`).
    fn from_str(value: &str) -> Result<Self, String> {
        let value = value.trim();
        match value.to_ascii_lowercase().as_str() {
            "" | "false" | "no" | "0" => return Ok(Self::None),
            "true" | "yes" => return Ok(Self::Hops(1)),
            _ => {}
        }
        if let Ok(hops) = value.parse::<usize>() {
            return Ok(Self::Hops(hops));
        }
        let mut unix = false;
        let networks = value
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .filter(|s| {
                let named = s.eq_ignore_ascii_case("unix");
                unix |= named;
                !named
            })
            .map(|s| {
                s.parse::<IpNet>()
                    .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| format!("`{s}` is not a network, an address or `unix`"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(if unix {
            Self::UnixAndNetworks(networks)
        } else {
            Self::Networks(networks)
        })
    }
}

impl TrustedProxies {
    /// True when proxy headers may be read at all.
    pub fn any(&self) -> bool {
        !matches!(self, Self::None | Self::Hops(0))
    }

    /// True when a request from `peer` comes from one of our proxies, so its proxy headers
    /// (`X-Forwarded-*`, `X-Real-Ip`, `Forwarded`) may be believed: with a hop count, any peer
    /// (the nearest hop is the peer by definition); with networks, an IP peer inside one of
    /// them; a Unix-socket peer only with [`TrustedProxies::UnixAndNetworks`].
    pub fn trusts(&self, peer: Peer) -> bool {
        match (self, peer) {
            (Self::None, _) => false,
            (Self::Hops(n), _) => *n > 0,
            (Self::UnixAndNetworks(_), Peer::Unix) => true,
            (Self::Networks(_), Peer::Unix) => false,
            (Self::Networks(nets) | Self::UnixAndNetworks(nets), Peer::Ip(ip)) => {
                nets.iter().any(|net| net.contains(&ip))
            }
        }
    }

    /// Whether `ip`, an entry of `X-Forwarded-For`, is one of our proxies.
    fn trusts_hop(&self, ip: IpAddr) -> bool {
        match self {
            Self::Networks(nets) | Self::UnixAndNetworks(nets) => {
                nets.iter().any(|net| net.contains(&ip))
            }
            _ => false,
        }
    }
}

/// The client IP for a request from `peer` with `headers`: the peer's own ([`Peer::ip`]) unless
/// the peer is a trusted proxy.
pub fn client_ip(peer: Peer, headers: &HeaderMap, trusted: &TrustedProxies) -> IpAddr {
    let trusted_peer = trusted.trusts(peer);
    let peer = peer.ip();
    if !trusted_peer {
        return peer;
    }
    let chain: Vec<&str> = headers
        .get_all(X_FORWARDED_FOR)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if chain.is_empty() {
        return headers
            .get(X_REAL_IP)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(peer);
    }
    match trusted {
        TrustedProxies::Hops(n) => {
            // The nearest proxy is the peer; each of the others appended one entry.
            let index = chain.len().saturating_sub(*n);
            chain
                .get(index)
                .and_then(|s| s.parse().ok())
                .unwrap_or(peer)
        }
        TrustedProxies::Networks(_) | TrustedProxies::UnixAndNetworks(_) => {
            let mut client = peer;
            for entry in chain.iter().rev() {
                let Ok(ip) = entry.parse::<IpAddr>() else {
                    // Garbage where an address should be: stop at the last good one.
                    break;
                };
                client = ip;
                if !trusted.trusts_hop(ip) {
                    break;
                }
            }
            client
        }
        TrustedProxies::None => peer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn xff(value: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(X_FORWARDED_FOR, HeaderValue::from_static(value));
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn tcp(s: &str) -> Peer {
        Peer::Ip(ip(s))
    }

    #[test]
    fn hops_count_from_the_right() {
        let peer = tcp("10.0.0.2");
        // The client wrote "6.6.6.6"; our one proxy appended the real client.
        let h = xff("6.6.6.6, 203.0.113.9");
        assert_eq!(
            client_ip(peer, &h, &TrustedProxies::Hops(1)),
            ip("203.0.113.9")
        );
        // Two proxies: the second appended the first's view.
        let h = xff("6.6.6.6, 203.0.113.9, 10.0.0.1");
        assert_eq!(
            client_ip(peer, &h, &TrustedProxies::Hops(2)),
            ip("203.0.113.9")
        );
        // More hops than entries: the leftmost is the best there is.
        assert_eq!(
            client_ip(peer, &xff("203.0.113.9"), &TrustedProxies::Hops(3)),
            ip("203.0.113.9")
        );
        // Not trusted: the peer, whatever the headers say.
        assert_eq!(client_ip(peer, &h, &TrustedProxies::None), peer.ip());
    }

    #[test]
    fn networks_skip_our_proxies() {
        let trusted: TrustedProxies = "10.0.0.0/8, 192.168.1.7".parse().unwrap();
        let h = xff("6.6.6.6, 203.0.113.9, 192.168.1.7, 10.1.2.3");
        assert_eq!(client_ip(tcp("10.0.0.2"), &h, &trusted), ip("203.0.113.9"));
        // A peer outside the networks is the client itself.
        assert_eq!(
            client_ip(tcp("198.51.100.1"), &h, &trusted),
            ip("198.51.100.1")
        );
        let mut real = HeaderMap::new();
        real.insert(X_REAL_IP, HeaderValue::from_static("203.0.113.5"));
        assert_eq!(
            client_ip(tcp("10.0.0.2"), &real, &trusted),
            ip("203.0.113.5")
        );
    }

    #[test]
    fn parses_settings() {
        assert_eq!("false".parse(), Ok(TrustedProxies::None));
        assert_eq!("true".parse(), Ok(TrustedProxies::Hops(1)));
        assert_eq!("2".parse(), Ok(TrustedProxies::Hops(2)));
        assert!(matches!("10.0.0.0/8".parse(), Ok(TrustedProxies::Networks(n)) if n.len() == 1));
        assert!("nonsense".parse::<TrustedProxies>().is_err());
        assert_eq!(
            "unix".parse(),
            Ok(TrustedProxies::UnixAndNetworks(Vec::new()))
        );
        assert!(matches!(
            "unix, 10.0.0.0/8".parse(),
            Ok(TrustedProxies::UnixAndNetworks(n)) if n.len() == 1
        ));
    }

    #[test]
    fn a_unix_peer_is_trusted_only_when_named() {
        let h = xff("6.6.6.6, 203.0.113.9");
        let loopback: TrustedProxies = "127.0.0.0/8".parse().unwrap();
        assert_eq!(
            client_ip(tcp("127.0.0.1"), &h, &loopback),
            ip("203.0.113.9")
        );
        assert_eq!(client_ip(Peer::Unix, &h, &loopback), ip("127.0.0.1"));
        let unix: TrustedProxies = "unix".parse().unwrap();
        assert_eq!(client_ip(Peer::Unix, &h, &unix), ip("203.0.113.9"));
        assert_eq!(client_ip(tcp("127.0.0.1"), &h, &unix), ip("127.0.0.1"));
        assert_eq!(
            client_ip(Peer::Unix, &h, &TrustedProxies::Hops(1)),
            ip("203.0.113.9")
        );
    }
}

//! [`RequestView`]: a read-only, owned view of a request, which every hook receives.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use http::{HeaderValue, Method, Uri, Version};

use crate::route::MatchedRoute;

/// What a hook sees of the request it reports on: method, URI, version, request id, peer
/// address, client IP and the route that answered.
///
/// Every hook gets this same view as its last argument (the logger's `on_log`, stats'
/// `on_stats`, the tracker's `on_track`, recover's `on_panic`, the proxy's `done`), also the
/// ones that run after the chain has returned, when a streamed body has been sent and the
/// context is gone: the view owns what it shows. Taking one costs a few reference-count
/// increments ([`Context::view`](crate::Context::view)), paid only when a hook is set.
#[derive(Clone, Debug)]
pub struct RequestView {
    pub(crate) method: Method,
    pub(crate) uri: Uri,
    pub(crate) version: Version,
    pub(crate) request_id: HeaderValue,
    pub(crate) remote_addr: SocketAddr,
    pub(crate) unix_peer: Option<crate::listener::UnixPeer>,
    pub(crate) real_ip: IpAddr,
    pub(crate) route: Option<Arc<MatchedRoute>>,
}

impl RequestView {
    /// Request method.
    pub fn method(&self) -> &Method {
        &self.method
    }
    /// Request URI as received.
    pub fn uri(&self) -> &Uri {
        &self.uri
    }
    /// Request path.
    pub fn path(&self) -> &str {
        self.uri.path()
    }
    /// HTTP version.
    pub fn version(&self) -> Version {
        self.version
    }
    /// The request id (the client's valid `X-Request-Id`, or the one made for it).
    pub fn request_id(&self) -> &str {
        self.request_id.to_str().unwrap_or("")
    }
    /// The peer's socket address ([`ConnectionInfo::remote_addr`](crate::connection::ConnectionInfo::remote_addr)).
    pub fn remote_addr(&self) -> SocketAddr {
        self.remote_addr
    }
    /// The peer process over a Unix socket ([`ConnectionInfo::unix_peer`](crate::connection::ConnectionInfo::unix_peer)).
    pub fn unix_peer(&self) -> Option<crate::listener::UnixPeer> {
        self.unix_peer
    }
    /// The real client IP ([`ClientIpExt::real_ip`](crate::client_ip::ClientIpExt::real_ip)).
    pub fn real_ip(&self) -> IpAddr {
        self.real_ip
    }
    /// The matched route pattern, e.g. `/users/:id`; `None` for a 404.
    pub fn route_pattern(&self) -> Option<&str> {
        self.route.as_deref().map(MatchedRoute::pattern)
    }
    /// The route that answered as `<METHOD> <pattern>`
    /// ([`MatchedRoute::key`](crate::context::MatchedRoute::key)(crate::context::MatchedRoute::key)).
    pub fn route_key(&self) -> Option<&str> {
        self.route.as_deref().and_then(MatchedRoute::key)
    }
}

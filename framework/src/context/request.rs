//! Reading the request: method, URI, headers, the client and the proxies in front of it, the
//! matched route and its params, the query, and the body (raw, or bound to a type).

use std::borrow::Cow;
use std::net::{IpAddr, SocketAddr};

use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, StatusCode, Uri, Version};
use serde::de::DeserializeOwned;

use super::{Context, TAKEN_REQUEST_ID};
use crate::body::{BodyDeclined, RequestBody};
use crate::error::HttpError;
use crate::route::RouteMeta;
use crate::router::decode_param;
use crate::validate::Validate;
use crate::view::RequestView;

impl Context {
    /// Request method.
    pub fn method(&self) -> &Method {
        &self.method
    }
    /// Request URI as received (origin form: path and query).
    pub fn uri(&self) -> &Uri {
        &self.uri
    }
    /// Request path.
    pub fn path(&self) -> &str {
        self.uri.path()
    }
    /// Raw query string, "" when there is none.
    pub fn raw_query(&self) -> &str {
        self.uri.query().unwrap_or("")
    }
    /// HTTP version.
    pub fn version(&self) -> Version {
        self.version
    }
    /// Request headers.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }
    /// Mutable request headers (e.g. for a proxy that rewrites them).
    pub fn headers_mut(&mut self) -> &mut HeaderMap {
        &mut self.headers
    }
    /// The request's extensions, as hyper filled them (e.g. the upgrade handle a proxy takes
    /// for a WebSocket).
    pub fn extensions(&self) -> &http::Extensions {
        &self.extensions
    }
    /// Mutable request extensions.
    pub fn extensions_mut(&mut self) -> &mut http::Extensions {
        &mut self.extensions
    }
    /// A request header as text; `None` when missing or not visible ASCII.
    pub fn header(&self, name: impl header::AsHeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    /// The request host: the `Host` header, else the URI authority.
    pub fn host(&self) -> &str {
        self.header(header::HOST)
            .or_else(|| self.uri.host())
            .unwrap_or("")
    }
    /// The peer's socket address. Over a Unix socket, which has none,
    /// [`UNIX_PEER_ADDR`](crate::listener::UNIX_PEER_ADDR) (`127.0.0.1:0`): the peer is a
    /// process on this host, and [`unix_peer`](Self::unix_peer) says which.
    pub fn remote_addr(&self) -> SocketAddr {
        self.remote_addr
    }
    /// The peer process (user, group, pid) when the request came over a Unix socket
    /// ([`framework::listener`](crate::listener)); `None` over TCP.
    pub fn unix_peer(&self) -> Option<crate::listener::UnixPeer> {
        self.conn.as_ref().and_then(|conn| conn.unix_peer)
    }
    /// Who the peer is: an IP address, or a process over a Unix socket, which has none (its
    /// [`remote_addr`](Self::remote_addr) is [`UNIX_PEER_ADDR`](crate::listener::UNIX_PEER_ADDR),
    /// which no TCP peer has: port 0).
    pub fn peer(&self) -> crate::client_ip::Peer {
        if self.remote_addr == crate::listener::UNIX_PEER_ADDR {
            crate::client_ip::Peer::Unix
        } else {
            crate::client_ip::Peer::Ip(self.remote_addr.ip())
        }
    }
    /// The real client IP: the peer address, or behind trusted proxies the client they name
    /// (counted from the right of `X-Forwarded-For`; see [`crate::client_ip`]).
    pub fn real_ip(&self) -> IpAddr {
        crate::client_ip::client_ip(self.peer(), &self.headers, &self.shared.trusted_proxies)
    }
    /// True when this request's peer is one of the proxies the app trusts
    /// ([`App::trusted_proxies`](crate::App::trusted_proxies)), so the proxy headers it sent
    /// (`X-Forwarded-*`, `X-Real-Ip`, `Forwarded`) may be believed. Decided on the peer, as
    /// [`real_ip`](Self::real_ip) is: a client outside the trusted networks is never trusted,
    /// whatever else is configured.
    pub fn trusts_proxy(&self) -> bool {
        self.shared.trusted_proxies.trusts(self.peer())
    }
    /// Whether the client reached the app over HTTPS: the server's own TLS
    /// ([`App::tls`](crate::App::tls)), or a trusted proxy in front
    /// ([`App::trusted_proxies`](crate::App::trusted_proxies)) said so with
    /// `X-Forwarded-Proto: https`. What HSTS and the access log's scheme go by.
    pub fn is_https(&self) -> bool {
        self.tls
            || self.trusts_proxy()
                && self
                    .header("x-forwarded-proto")
                    .is_some_and(|p| p.eq_ignore_ascii_case("https"))
    }
    /// The client certificate the client showed in its TLS handshake, verified against the
    /// CA bundle of [`Tls::client_auth`](crate::tls::Tls::client_auth); `None` over plain
    /// HTTP, without client authentication, or when an optional certificate was not shown.
    /// Read once per connection and shared by its requests: clone the `Arc` to keep it.
    ///
    /// A certificate a proxy in front checked (and passed on in a header) is not seen here:
    /// the connection's own handshake is the only source.
    #[cfg(feature = "tls")]
    pub fn client_cert(&self) -> Option<&std::sync::Arc<crate::tls::ClientCert>> {
        self.conn.as_ref()?.client_cert.as_ref()
    }
    /// The request id: the client's valid `X-Request-Id`, else 128 random bits as hex.
    pub fn request_id(&self) -> &str {
        // Only visible ASCII gets here (validated or generated).
        self.request_id_value().to_str().unwrap_or("")
    }
    /// The request id as a header value (cheap to clone).
    pub(crate) fn request_id_value(&self) -> &HeaderValue {
        self.request_id.as_ref().unwrap_or(&TAKEN_REQUEST_ID)
    }
    /// The matched route pattern, e.g. `/users/:id`; `None` for 404/405 answers.
    pub fn route_pattern(&self) -> Option<&str> {
        self.route.as_deref().map(RouteMeta::pattern)
    }
    /// The matched route's number: dense, from 0 to [`Context::route_count`] (exclusive), the
    /// same for every request of the route, so per-route tables (metrics) are indexed by it
    /// instead of hashing the pattern. `None` for 404 and 405 answers.
    pub fn route_index(&self) -> Option<usize> {
        self.route.as_deref().and_then(RouteMeta::index)
    }
    /// How many routes (method and pattern) the app has.
    pub fn route_count(&self) -> usize {
        self.shared.route_count
    }
    /// The route that answers, as `<METHOD> <pattern>`, e.g. `GET /users/:id`: a HEAD request
    /// that the GET route answers gives `GET /users/:id`. `None` for 404 and 405 answers.
    /// Per-route settings (limits, metrics) key on it.
    pub fn route_key(&self) -> Option<&str> {
        self.route.as_deref().and_then(RouteMeta::key)
    }
    /// A read-only view of the request that outlives the context: what hooks receive.
    pub fn view(&self) -> RequestView {
        RequestView {
            method: self.method.clone(),
            uri: self.uri.clone(),
            version: self.version,
            request_id: self.request_id_value().clone(),
            remote_addr: self.remote_addr,
            unix_peer: self.unix_peer(),
            real_ip: self.real_ip(),
            route: self.route.clone(),
        }
    }
    /// A route param, percent-decoded. A bare wildcard's value is under `*`.
    pub fn param(&self, name: &str) -> Option<Cow<'_, str>> {
        let route = self.route.as_deref()?;
        let index = route.param_names.iter().position(|n| &**n == name)?;
        self.params.raw(self.uri.path(), index).map(decode_param)
    }
    /// A route param as it appears in the path, still percent-encoded (for a component that
    /// must decode it exactly once, such as static serve's path check).
    pub fn raw_param(&self, name: &str) -> Option<&str> {
        let route = self.route.as_deref()?;
        let index = route.param_names.iter().position(|n| &**n == name)?;
        self.params.raw(self.uri.path(), index)
    }
    /// All route params as (name, decoded value) pairs.
    pub fn params(&self) -> Vec<(&str, Cow<'_, str>)> {
        let Some(route) = self.route.as_deref() else {
            return Vec::new();
        };
        route
            .param_names
            .iter()
            .enumerate()
            .filter_map(|(i, n)| {
                let raw = self.params.raw(self.uri.path(), i)?;
                Some((&**n, decode_param(raw)))
            })
            .collect()
    }
    /// The first value of a query parameter, decoded.
    pub fn query(&self, name: &str) -> Option<Cow<'_, str>> {
        form_urlencoded::parse(self.raw_query().as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }
    /// True when the request body may still hold bytes nobody read.
    pub(crate) fn raw_body_has_data(&self) -> bool {
        self.raw_body.has_data()
    }

    /// The time the request body's reads spend waiting for data from now on, when it is still
    /// arriving from the connection ([`RequestBody::watch_waits`]).
    pub(crate) fn watch_body_waits(&mut self) -> Option<std::sync::Arc<crate::body::BodyWaits>> {
        if self.raw_body.has_data() {
            self.raw_body.watch_waits()
        } else {
            None
        }
    }
    /// The request body stream, for a middleware that reads it (the body parser, a proxy).
    /// Later calls get an empty body.
    pub fn take_raw_body(&mut self) -> RequestBody {
        std::mem::take(&mut self.raw_body)
    }

    /// Deserialises `request_body` as JSON into `T` and validates it.
    ///
    /// Any failure is a 400 with category `validate`: a body that is not a JSON object (empty,
    /// malformed, an array) has code `json`; a missing field or a value of the wrong type has the field's validator name as
    /// code (or `invalid` when the field has none) and a message naming the field.
    ///
    /// The body is read by the body parser middleware. When no body parser ran for this request
    /// and the body is still unread, that is a mistake in the app, not in the request: **500**
    /// category `framework-bind`, naming the middleware to add (the 400 "body is required" the
    /// client would otherwise get would be a lie). When the parser ran but left the body unread
    /// because it is not JSON (`text/plain`, a form the parser does not decode, no
    /// `Content-Type`): **415** category `framework-body-parser`, naming the type received and
    /// the one expected; the parser adds `Accept-Post`.
    pub fn bind<T: DeserializeOwned + Validate>(&self) -> Result<T, HttpError> {
        // The mark is looked up only for a body nobody read: a parsed body costs no lookup.
        if self.request_body.is_empty()
            && self.raw_body.has_data()
            && self.data::<BodyDeclined>().is_none()
        {
            return Err(HttpError::with(
                StatusCode::INTERNAL_SERVER_ERROR,
                "framework-bind",
                "ctx.bind() found the request body unread: add the body parser \
                 (framework::middleware::body_parser::BodyParser) to the app or the route",
            )
            .with_exception(true));
        }
        if self.request_body.is_empty()
            && self.raw_body.has_data()
            && !crate::header::is_json_media_type(self.headers())
        {
            // The parser saw the request and left its body alone: a type it does not decode.
            return Err(crate::validate::unsupported_media_type(
                self.header(http::header::CONTENT_TYPE),
            ));
        }
        crate::validate::bind_json(&self.request_body)
    }
}

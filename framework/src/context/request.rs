//! Reading the request: method, URI, headers, the connection, the matched route and its
//! params, the query, and the body (raw, or bound to a type).

use std::borrow::Cow;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Uri};
use serde::de::DeserializeOwned;

use super::{ConnectionInfo, Context, TAKEN_REQUEST_ID};
use crate::body::{BodyDeclined, RequestBody};
use crate::error::Rejection;
use crate::route::MatchedRoute;
use crate::router::{Params, decode_param};
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
    pub(crate) fn raw_query(&self) -> &str {
        self.uri.query().unwrap_or("")
    }
    /// HTTP version (for users: [`Context::view`]).
    #[cfg_attr(not(feature = "websocket"), allow(dead_code))]
    pub(crate) fn version(&self) -> http::Version {
        self.version
    }
    /// Request headers.
    pub fn request_headers(&self) -> &HeaderMap {
        &self.headers
    }
    /// Mutable request headers (e.g. for a proxy that rewrites them).
    pub fn request_headers_mut(&mut self) -> &mut HeaderMap {
        &mut self.headers
    }
    /// A request header as text; `None` when missing or not visible ASCII.
    pub fn request_header(&self, name: impl header::AsHeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    /// The HTTP request's extensions: what hyper put there (the upgrade handle a proxy takes
    /// for a WebSocket) and what a tower layer in front added ([`crate::tower`]). They belong
    /// to the HTTP message; the app's own per-request values go in the data store
    /// ([`Context::insert_data`]).
    pub fn extensions_mut(&mut self) -> &mut http::Extensions {
        &mut self.extensions
    }
    /// The request's extensions, read only.
    pub(crate) fn extensions(&self) -> &http::Extensions {
        &self.extensions
    }
    /// The request host: the `Host` header, else the URI authority.
    pub(crate) fn host(&self) -> &str {
        self.request_header(header::HOST)
            .or_else(|| self.uri.host())
            .unwrap_or("")
    }
    /// The connection the request came on: the peer, the server's TLS, the client
    /// certificate ([`ConnectionInfo`]).
    pub fn connection(&self) -> &ConnectionInfo {
        &self.connection
    }
    /// The proxies the app believes ([`ClientIpExt`](crate::client_ip::ClientIpExt)).
    pub(crate) fn trusted_proxies(&self) -> &crate::client_ip::TrustedProxies {
        &self.shared.trusted_proxies
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
    /// The route that answers: its pattern, key and number ([`MatchedRoute`]); `None` for 404
    /// answers and before routing.
    pub fn route(&self) -> Option<&MatchedRoute> {
        self.route.as_deref()
    }
    /// A read-only view of the request that outlives the context: what hooks receive.
    pub fn view(&self) -> RequestView {
        RequestView {
            method: self.method.clone(),
            uri: self.uri.clone(),
            version: self.version,
            request_id: self.request_id_value().clone(),
            remote_addr: self.connection.remote_addr(),
            unix_peer: self.connection.unix_peer(),
            real_ip: crate::client_ip::ClientIpExt::real_ip(self),
            route: self.route.clone(),
        }
    }
    /// A route param, percent-decoded. A bare wildcard's value is under `*`.
    pub fn param(&self, name: &str) -> Option<Cow<'_, str>> {
        self.params().get(name)
    }
    /// All route params: by name, decoded or as they appear in the path, and in order.
    pub fn params(&self) -> PathParams<'_> {
        PathParams {
            route: self.route.as_deref(),
            params: &self.params,
            path: self.uri.path(),
        }
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
    /// The request body as the body parser left it: decoded (gzip, …) and whole, when it
    /// read it; empty otherwise ([`Context::bind`] says why).
    pub fn request_body(&self) -> &Bytes {
        &self.request_body
    }
    /// Sets the read request body (the body parser does, or a middleware that reads the body
    /// its own way).
    pub(crate) fn set_request_body(&mut self, body: Bytes) {
        self.request_body = body;
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
    /// the one expected; the parser adds `Accept-Post`. Each is a
    /// [`Rejection`] variant (`Invalid`, `BodyUnread`,
    /// `UnsupportedMediaType`) a caller can match on; `?` answers it.
    pub fn bind<T: DeserializeOwned + Validate>(&self) -> Result<T, Rejection> {
        // The mark is looked up only for a body nobody read: a parsed body costs no lookup.
        if self.request_body.is_empty()
            && self.raw_body.has_data()
            && self.data::<BodyDeclined>().is_none()
        {
            return Err(Rejection::BodyUnread {
                reader: "ctx.bind()",
                fix: "the body parser (framework::middleware::body_parser::BodyParser) to the \
                      app or the route",
            });
        }
        if self.request_body.is_empty()
            && self.raw_body.has_data()
            && !crate::header::is_json_media_type(self.request_headers())
        {
            // The parser saw the request and left its body alone: a type it does not decode.
            return Err(Rejection::UnsupportedMediaType {
                received: self
                    .request_header(http::header::CONTENT_TYPE)
                    .map(str::to_owned),
                expected: "application/json",
            });
        }
        crate::validate::bind_json(&self.request_body).map_err(Rejection::Invalid)
    }
}

/// A request's route params ([`Context::params`]): by name, decoded or as they appear in the
/// path, and in order. A bare wildcard's value is under `*`.
#[derive(Clone, Copy)]
pub struct PathParams<'a> {
    route: Option<&'a MatchedRoute>,
    params: &'a Params,
    path: &'a str,
}

impl<'a> PathParams<'a> {
    fn index(&self, name: &str) -> Option<usize> {
        self.route?.param_names.iter().position(|n| &**n == name)
    }
    /// The param `name`, percent-decoded.
    pub fn get(&self, name: &str) -> Option<Cow<'a, str>> {
        self.raw(name).map(decode_param)
    }
    /// The param `name` as it appears in the path, still percent-encoded (for a component that
    /// must decode it exactly once, such as static serve's path check).
    pub fn raw(&self, name: &str) -> Option<&'a str> {
        let index = self.index(name)?;
        self.params.raw(self.path, index)
    }
    /// Every param as (name, decoded value), in the pattern's order.
    pub fn iter(&self) -> ParamsIter<'a> {
        let names = self.route.map_or(&[][..], |route| &route.param_names[..]);
        ParamsIter {
            names: names.iter().enumerate(),
            params: self.params,
            path: self.path,
        }
    }
}

/// The route params as (name, decoded value), in the pattern's order ([`PathParams::iter`]).
pub struct ParamsIter<'a> {
    names: std::iter::Enumerate<std::slice::Iter<'a, Box<str>>>,
    params: &'a Params,
    path: &'a str,
}

impl<'a> Iterator for ParamsIter<'a> {
    type Item = (&'a str, Cow<'a, str>);
    fn next(&mut self) -> Option<Self::Item> {
        for (i, name) in self.names.by_ref() {
            if let Some(raw) = self.params.raw(self.path, i) {
                return Some((&**name, decode_param(raw)));
            }
        }
        None
    }
}

impl<'a> IntoIterator for PathParams<'a> {
    type Item = (&'a str, Cow<'a, str>);
    type IntoIter = ParamsIter<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl std::fmt::Debug for PathParams<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

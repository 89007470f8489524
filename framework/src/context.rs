//! The per-request context handlers and middleware share.
//!
//! It holds the request (method, uri, headers, route params, raw and parsed body, client ip,
//! request id) and the response being built (status, headers, `body` as any `Serialize` value,
//! `body_buffer` bytes, or a [`BodyStream`]). Nothing is written to the client until the whole
//! chain has returned, so every middleware can still change the response on its way out; a
//! stream's bytes flow only after that, as the client reads them.

use std::any::Any;
use std::borrow::Cow;
use std::mem::ManuallyDrop;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue, IntoHeaderName};
use http::{Method, StatusCode, Uri, Version};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::body::{BodyDeclined, BodyStream, RequestBody, ResponseBody};
use crate::data::TypedData;
use crate::error::{HttpError, Result};
use crate::reply::Reply;
use crate::route::{AppShared, RouteMeta};
use crate::router::{Params, decode_param};
use crate::slot::{Held, Slot};
use crate::state::State;
use crate::validate::Validate;
use crate::view::RequestView;

/// The largest header map (in entries it holds without growing) kept as a thread's spare.
/// A request's map is as large as its headers made it: room for 96 holds any request of up to
/// 96 headers (maps grow 6, 12, 24, 48, 96, 192); the map of a request with more (hyper allows
/// 100 by default, a server may be configured for more) is freed instead of kept.
const SPARE_HEADERS_MAX: usize = 96;

thread_local! {
    /// One emptied header map per thread: the map of a request that has been answered, which
    /// the next context on this thread takes as its response map (see [`recycle_headers`]).
    static SPARE_HEADERS: std::cell::Cell<Option<HeaderMap>> =
        const { std::cell::Cell::new(None) };
}

/// A response header map for a new context: this thread's spare (empty, with room), or a new
/// one (which allocates at its first header).
fn spare_headers() -> HeaderMap {
    SPARE_HEADERS
        .try_with(std::cell::Cell::take)
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Keeps `map`, emptied, as this thread's spare for the next context's response headers.
///
/// hyper hands each request's headers to the service in the map of the response it wrote
/// before on that connection, and the service makes a new map for each response: without
/// this, every request allocates a map (two allocations at its first header) and frees one.
/// With it the maps go round: a request's map, emptied, carries the next response's headers,
/// which hyper then parses the next request into. The values are dropped here; only the
/// room is kept. A map with no room, or more than [`SPARE_HEADERS_MAX`] entries of it, is
/// freed instead.
fn recycle_headers(mut map: HeaderMap) {
    if map.capacity() == 0 || map.capacity() > SPARE_HEADERS_MAX {
        return;
    }
    map.clear();
    // After thread-local destruction the map is simply dropped.
    let _ = SPARE_HEADERS.try_with(|spare| spare.set(Some(map)));
}

/// The request id once it has been taken for the response: empty.
static TAKEN_REQUEST_ID: HeaderValue = HeaderValue::from_static("");

/// A per-request value and its name ([`Context::set_value`]).
type NamedValue = (Cow<'static, str>, Box<dyn Any + Send + Sync>);

/// Everything one request carries through the chain.
pub struct Context {
    method: Method,
    uri: Uri,
    version: Version,
    /// Both header maps are dropped by hand ([`Context`]'s `Drop`): at the end of a request
    /// they are empty maps with no room, whose drop glue would still run (some 70
    /// instructions for the two, callgrind).
    headers: ManuallyDrop<HeaderMap>,
    extensions: http::Extensions,
    remote_addr: SocketAddr,
    /// Taken out (`None`) when the response is made.
    request_id: Option<HeaderValue>,
    params: Params,
    route: Option<Arc<RouteMeta>>,
    raw_body: RequestBody,
    /// Raw or parsed request body bytes, filled by the body parser.
    pub request_body: Bytes,
    status: Option<StatusCode>,
    response_headers: ManuallyDrop<HeaderMap>,
    /// The value the responder converts to bytes.
    pub body: Option<Reply>,
    /// Response bytes, set directly or by the responder.
    pub body_buffer: Option<Bytes>,
    body_stream: Option<BodyStream>,
    committed: bool,
    /// The request came over the server's own TLS.
    tls: bool,
    /// When the first middleware that measures time started the clock
    /// ([`Context::start_clock`]).
    clock: Option<std::time::Instant>,
    /// Per-request values: a handful at most, so a list searched in order beats hashing (and
    /// an empty one costs nothing to make). Dropped by hand ([`Context`]'s `Drop`), only when
    /// it has room.
    values: ManuallyDrop<Vec<NamedValue>>,
    /// Per-request data by type ([`Context::insert_data`]). Ended by hand ([`Context`]'s
    /// `Drop`, `TypedData::finish`), which leaves it owning nothing.
    data: ManuallyDrop<TypedData>,
    /// Guards and counted slots given back when the request ends ([`Context::hold`]).
    held: Held,
    shared: Arc<AppShared>,
}

impl Context {
    pub(crate) fn new(
        parts: http::request::Parts,
        raw_body: RequestBody,
        remote_addr: SocketAddr,
        shared: Arc<AppShared>,
    ) -> Self {
        // A scan of the few header names a request has costs less than hashing the name for a
        // lookup, which only a request that sends an id pays; the first `X-Request-Id` counts.
        let request_id = crate::header::has_any(&parts.headers, &[crate::header::X_REQUEST_ID])
            .then(|| parts.headers.get(crate::header::X_REQUEST_ID))
            .flatten()
            .filter(|v| crate::header::is_valid_request_id(v.as_bytes()))
            .cloned()
            .unwrap_or_else(crate::header::new_request_id);
        Self {
            method: parts.method,
            uri: parts.uri,
            version: parts.version,
            headers: ManuallyDrop::new(parts.headers),
            extensions: parts.extensions,
            remote_addr,
            request_id: Some(request_id),
            params: Params::default(),
            route: None,
            raw_body,
            request_body: Bytes::new(),
            status: None,
            response_headers: ManuallyDrop::new(spare_headers()),
            body: None,
            body_buffer: None,
            body_stream: None,
            committed: false,
            tls: false,
            clock: None,
            values: ManuallyDrop::new(Vec::new()),
            data: ManuallyDrop::new(TypedData::default()),
            held: Held::default(),
            shared,
        }
    }

    /// The request came over the server's own TLS ([`App::tls`](crate::App::tls)).
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    pub(crate) fn set_tls(&mut self) {
        self.tls = true;
    }

    pub(crate) fn set_route(&mut self, route: &Arc<RouteMeta>, params: Params) {
        self.route = Some(Arc::clone(route));
        self.params = params;
    }

    // ----- request -----

    /// Request method.
    pub fn method(&self) -> &Method {
        &self.method
    }
    /// Request URI as received (origin form: path and query).
    pub fn uri(&self) -> &Uri {
        &self.uri
    }
    /// Replaces the URI's path and query, keeping scheme and authority (trailing-slash
    /// normalisation). Must happen before the route is matched: params are offsets into the
    /// path.
    pub(crate) fn set_path_and_query(&mut self, path_and_query: &str) -> Result<(), http::Error> {
        let mut parts = self.uri.clone().into_parts();
        parts.path_and_query = Some(path_and_query.parse()?);
        self.uri = Uri::from_parts(parts)?;
        Ok(())
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
    /// The peer's socket address.
    pub fn remote_addr(&self) -> SocketAddr {
        self.remote_addr
    }
    /// The real client IP: the peer address, or behind trusted proxies the client they name
    /// (counted from the right of `X-Forwarded-For`; see [`crate::client_ip`]).
    pub fn real_ip(&self) -> IpAddr {
        crate::client_ip::client_ip(
            self.remote_addr.ip(),
            &self.headers,
            &self.shared.trusted_proxies,
        )
    }
    /// True when this request's peer is one of the proxies the app trusts
    /// ([`App::trusted_proxies`](crate::App::trusted_proxies)), so the proxy headers it sent
    /// (`X-Forwarded-*`, `X-Real-Ip`, `Forwarded`) may be believed. Decided on the peer, as
    /// [`real_ip`](Self::real_ip) is: a client outside the trusted networks is never trusted,
    /// whatever else is configured.
    pub fn trusts_proxy(&self) -> bool {
        self.shared.trusted_proxies.trusts(self.remote_addr().ip())
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
    /// The instant this request's time is measured from: read from the clock by the first
    /// call, the same instant for every later one. Middleware that measure a request's
    /// latency (stats, the logger) start it in their `before`, so they share one reading and
    /// an app that measures nothing reads no clock.
    pub fn start_clock(&mut self) -> std::time::Instant {
        *self.clock.get_or_insert_with(std::time::Instant::now)
    }
    /// The instant [`Context::start_clock`] set, if a middleware started it.
    pub fn clock_started(&self) -> Option<std::time::Instant> {
        self.clock
    }
    /// True once the server has begun a graceful shutdown and is draining
    /// ([`Service::start_draining`](crate::Service::start_draining)): still serving, but about
    /// to stop, so readiness probes should fail (the health component's `/readyz` answers 503).
    pub fn is_draining(&self) -> bool {
        self.shared
            .draining
            .load(std::sync::atomic::Ordering::Relaxed)
    }
    /// Completes when the server begins a graceful shutdown (when
    /// [`is_draining`](Self::is_draining) turns true; at once if it is already), for a handler
    /// whose answer would otherwise hold the shutdown up: a stream of events ends with
    /// `events.take_until(ctx.shutdown())`, so its client gets a complete body and reconnects
    /// elsewhere, and the server stops without waiting out its shutdown timeout. The
    /// framework's WebSockets close with 1001 at that moment. The future owns what it needs
    /// (`'static`): it may move into a stream or a task.
    pub fn shutdown(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.shared.drain.clone().cancelled_owned()
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
    /// A read-only view of the request that outlives the context: what hooks receive.
    pub fn view(&self) -> RequestView {
        RequestView {
            method: self.method.clone(),
            uri: self.uri.clone(),
            version: self.version,
            request_id: self.request_id_value().clone(),
            remote_addr: self.remote_addr,
            real_ip: self.real_ip(),
            route: self.route.clone(),
        }
    }
    /// The route that answers, as `<METHOD> <pattern>`, e.g. `GET /users/:id`: a HEAD request
    /// that the GET route answers gives `GET /users/:id`. `None` for 404 and 405 answers.
    /// Per-route settings (limits, metrics) key on it.
    pub fn route_key(&self) -> Option<&str> {
        self.route.as_deref().and_then(RouteMeta::key)
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

    // ----- response -----

    /// The response status set so far.
    pub fn status(&self) -> Option<StatusCode> {
        self.status
    }
    /// Sets the response status.
    pub fn set_status(&mut self, status: StatusCode) {
        self.status = Some(status);
    }
    /// Response headers set so far.
    pub fn response_headers(&self) -> &HeaderMap {
        &self.response_headers
    }
    /// Mutable response headers.
    pub fn response_headers_mut(&mut self) -> &mut HeaderMap {
        &mut self.response_headers
    }
    /// Sets (replaces) a response header.
    pub fn set_header(&mut self, name: impl IntoHeaderName, value: HeaderValue) {
        self.response_headers.insert(name, value);
    }
    /// A response header as text.
    pub fn response_header(&self, name: impl header::AsHeaderName) -> Option<&str> {
        self.response_headers
            .get(name)
            .and_then(|v| v.to_str().ok())
    }
    /// Sets the body from any value: see [`Reply::from_value`].
    pub fn set_body<T: Serialize + Send + Sync + 'static>(&mut self, value: T) {
        self.body = Reply::from_value(value);
    }
    /// Sends `stream` as the response body, replacing any `body` or `body_buffer`.
    ///
    /// The stream's bytes flow after the whole chain has returned, as the client reads them;
    /// a known length (exact size hint) becomes `Content-Length`, an unknown one goes chunked.
    /// Middleware that needs the whole body (etag, cache, …) leaves a stream alone. A middleware
    /// that writes `body_buffer` afterwards (the error handler) removes the stream first.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use framework::{Context, Result, body::BodyStream};
    ///
    /// async fn events(ctx: &mut Context) -> Result {
    ///     let ticks = futures_util::stream::iter(
    ///         (0..3).map(|i| Ok::<_, std::io::Error>(Bytes::from(format!("data: {i}\n\n")))),
    ///     );
    ///     ctx.set_header(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/event-stream"));
    ///     ctx.set_body_stream(BodyStream::from_stream(ticks));
    ///     Ok(())
    /// }
    /// # let _ = events;
    /// ```
    pub fn set_body_stream(&mut self, stream: BodyStream) {
        self.body = None;
        self.body_buffer = None;
        self.body_stream = Some(stream);
    }
    /// True when the response body is a stream.
    pub fn has_body_stream(&self) -> bool {
        self.body_stream.is_some()
    }
    /// The response stream, to read its size hint.
    pub fn body_stream_mut(&mut self) -> Option<&mut BodyStream> {
        self.body_stream.as_mut()
    }
    /// Keeps `guard` until the request is over: the guard is dropped with the context when the
    /// response has been made or the request was dropped (an error, a panic, the client going
    /// away), or, when the response is a stream, moved into the body and dropped once the body
    /// has been sent or the client went away. This is how a middleware ties work to the end of
    /// a request (give back a count, write a log line, release a lock) without a future of its
    /// own: take the guard in [`before`](crate::Middleware::before) and hold it here.
    ///
    /// A [`Slot`] is kept in place (no allocation for the first one); any other guard is boxed.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::AtomicU32;
    /// use framework::{Before, Context, Middleware, slot::Slot};
    ///
    /// struct InFlight(Arc<AtomicU32>);
    ///
    /// impl Middleware for InFlight {
    ///     fn before(&self, ctx: &mut Context) -> Before {
    ///         ctx.hold(Slot::take(&self.0));
    ///         Before::Pass
    ///     }
    /// }
    /// ```
    pub fn hold<G: Send + 'static>(&mut self, guard: G) {
        let mut guard = Some(guard);
        let any: &mut dyn Any = &mut guard;
        if let Some(slot) = any.downcast_mut::<Option<Slot>>().and_then(Option::take) {
            self.held.push_slot(slot);
        } else if let Some(guard) = guard {
            self.held.push_boxed(Box::new(guard));
        }
    }
    /// Takes the response stream out, e.g. to wrap it in an encoder and set it back.
    pub fn take_body_stream(&mut self) -> Option<BodyStream> {
        self.body_stream.take()
    }
    /// Status 201 with the value as body.
    pub fn created<T: Serialize + Send + Sync + 'static>(&mut self, value: T) {
        self.status = Some(StatusCode::CREATED);
        self.set_body(value);
    }
    /// Status 204 and no body.
    pub fn no_content(&mut self) {
        self.status = Some(StatusCode::NO_CONTENT);
        self.body = None;
        self.body_buffer = None;
        self.body_stream = None;
    }
    /// `Cache-Control: public, max-age=<secs>`.
    pub fn cache_max_age(&mut self, max_age: Duration) {
        self.set_cache_control(max_age, None);
    }
    /// `Cache-Control: public, max-age=<secs>, s-maxage=<secs>`.
    pub fn cache_s_max_age(&mut self, max_age: Duration, s_max_age: Duration) {
        self.set_cache_control(max_age, Some(s_max_age));
    }
    fn set_cache_control(&mut self, max_age: Duration, s_max_age: Option<Duration>) {
        let value = match s_max_age {
            Some(s) => format!(
                "public, max-age={}, s-maxage={}",
                max_age.as_secs(),
                s.as_secs()
            ),
            None => format!("public, max-age={}", max_age.as_secs()),
        };
        // Digits, commas and letters only: always a valid header value.
        if let Ok(v) = HeaderValue::try_from(value) {
            self.response_headers.insert(header::CACHE_CONTROL, v);
        }
    }
    /// True once something has taken over the response (e.g. a proxy streaming it); middleware
    /// then leaves the response alone.
    pub fn committed(&self) -> bool {
        self.committed
    }
    /// Marks the response as taken over.
    pub fn set_committed(&mut self, committed: bool) {
        self.committed = committed;
    }
    /// Clears status, headers and body: what an error or panic answer starts from.
    pub fn reset_response(&mut self) {
        self.status = None;
        self.response_headers.clear();
        self.body = None;
        self.body_buffer = None;
        self.body_stream = None;
    }

    // ----- values, data, state -----

    /// Stores a per-request value under `key`, replacing the value stored under it before.
    pub fn set_value<T: Any + Send + Sync>(&mut self, key: impl Into<Cow<'static, str>>, value: T) {
        let key = key.into();
        let value: Box<dyn Any + Send + Sync> = Box::new(value);
        match self.values.iter_mut().find(|(k, _)| *k == key) {
            Some((_, slot)) => *slot = value,
            None => self.values.push((key, value)),
        }
    }

    fn any_value(&self, key: &str) -> Option<&(dyn Any + Send + Sync)> {
        self.values
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| &**v)
    }
    /// A per-request value stored under `key`, if it has type `T`.
    pub fn value<T: Any>(&self, key: &str) -> Option<&T> {
        self.any_value(key)?.downcast_ref()
    }
    /// A per-request string value (`String` or `&'static str`).
    pub fn value_str(&self, key: &str) -> Option<&str> {
        let v = self.any_value(key)?;
        v.downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| v.downcast_ref::<&'static str>().copied())
    }
    /// Stores `value` as this request's data of type `T`, returning the value stored before.
    ///
    /// Typed per-request data is how middleware hands things to handlers and to other
    /// middleware (the session, JWT claims, a body reader's decision), the way salvo's `Depot`
    /// or axum's request extensions do: a middleware module adds an extension trait on
    /// `Context` (such as [`SessionExt`](crate::middleware::session::SessionExt)) over these
    /// calls, so its data has a name of its own. The store is a short list searched by type,
    /// whose boxes a thread recycles from one request to the next: a value usually moves into
    /// the box its type had in the last request, and a request that stores nothing costs
    /// nothing.
    pub fn insert_data<T: Any + Send + Sync>(&mut self, value: T) -> Option<T> {
        self.data.insert(value)
    }
    /// This request's data of type `T`, if a middleware stored one.
    pub fn data<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.data.get()
    }
    /// This request's data of type `T`, mutable.
    pub fn data_mut<T: Any + Send + Sync>(&mut self) -> Option<&mut T> {
        self.data.get_mut()
    }
    /// Takes this request's data of type `T` out.
    pub fn remove_data<T: Any + Send + Sync>(&mut self) -> Option<T> {
        self.data.remove()
    }
    /// Application state registered with [`crate::App::with_state`].
    pub fn state(&self) -> &State {
        &self.shared.state
    }
}

/// The end of a request: the context turns itself into the response.
impl Context {
    /// Turns the finished context into the response.
    ///
    /// An error that reached here (no error handler) becomes its status (500 for a plain
    /// error) with the error text as `text/plain`. Otherwise the status is the one set, or
    /// 200, and the body is the stream if one was set, else `body_buffer`: a `body` value that
    /// no responder converted sends nothing. HEAD answers keep `Content-Length` (a stream's
    /// when its length is known) and drop the body, which also releases whatever the stream
    /// held open. What the request holds ([`Context::hold`]) goes with a streamed body, so it
    /// is given back once the body has been sent.
    pub(crate) fn take_response(&mut self, result: Result) -> http::Response<ResponseBody> {
        let head = self.method == Method::HEAD;
        let (status, body) = match result {
            Ok(()) => {
                let status = self.status.unwrap_or(StatusCode::OK);
                match self.body_stream.take() {
                    Some(mut stream) => {
                        // A HEAD answer drops the stream below, and the guards with the context.
                        if !head && !self.held.is_empty() {
                            stream = stream.with_guard(std::mem::take(&mut self.held));
                        }
                        (status, ResponseBody::stream(stream))
                    }
                    None => (
                        status,
                        ResponseBody::full(self.body_buffer.take().unwrap_or_default()),
                    ),
                }
            }
            Err(err) => {
                self.response_headers
                    .insert(header::CONTENT_TYPE, crate::header::TEXT_UTF8);
                (err.status(), ResponseBody::full(Bytes::from(err.text())))
            }
        };
        let body = if head {
            let headers = &mut self.response_headers;
            match &body {
                ResponseBody::Full(bytes) => {
                    let len = bytes.as_ref().map_or(0, Bytes::len);
                    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
                }
                ResponseBody::Stream(_) => {
                    if let Some(len) = http_body::Body::size_hint(&body).exact()
                        && !headers.contains_key(header::CONTENT_LENGTH)
                    {
                        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
                    }
                }
            }
            ResponseBody::empty()
        } else {
            body
        };
        let mut request_id = self
            .request_id
            .take()
            .unwrap_or_else(|| TAKEN_REQUEST_ID.clone());
        // Never indexed by HTTP/2's header compression (HPACK): each answer's id is new, so
        // indexing would only churn the connection's table, and every insert first compares
        // the id with each earlier one still in it (~2 400 instructions per `/json` over
        // HTTP/2, callgrind). HTTP/1 ignores the flag.
        request_id.set_sensitive(true);
        let mut response = http::Response::new(body);
        *response.status_mut() = status;
        // Swapped, not moved: the context keeps the empty map the response came with.
        let headers = response.headers_mut();
        std::mem::swap(headers, &mut *self.response_headers);
        headers.insert(crate::header::X_REQUEST_ID, request_id);
        // While draining, an HTTP/1 client is told to take its next request elsewhere (HTTP/2
        // gets GOAWAY when the server stops).
        if self.version < Version::HTTP_2 && self.is_draining() {
            const CLOSE: HeaderValue = HeaderValue::from_static("close");
            headers.insert(header::CONNECTION, CLOSE);
        }
        // The request is over: its header map, emptied, will carry the next response's
        // headers (see `recycle_headers`).
        recycle_headers(std::mem::take(&mut *self.headers));
        response
    }
}

/// Frees what the header maps, the values and the typed data still hold. A map with no room
/// owns no memory (its entries and extra values can only be there with room), so such a map,
/// the usual one at the end of a request (the request's went back to the thread, the response
/// took the other), is left as it is; so is an empty list of values. The typed data gives its
/// boxes back to the thread (`TypedData::finish`). Each would otherwise still run its drop
/// glue, an out-of-line call per field even when empty (callgrind, `/json`: about 70
/// instructions per request for the two maps, about 50 for the values and the data; with the
/// responder's JSON block, 316 on `/json`, without which the framework would be 1.083×
/// `hyper-id`, over CI's 1.08× limit).
impl Drop for Context {
    fn drop(&mut self) {
        // The data first: its values may be guards (a lock, a counted slot) to give back.
        self.data.finish();
        if self.values.capacity() != 0 {
            drop(std::mem::take(&mut *self.values));
        }
        for map in [&mut self.headers, &mut self.response_headers] {
            if map.capacity() != 0 {
                drop(std::mem::take(&mut **map));
            }
        }
    }
}

/// Helpers for handlers that want to set a header from text.
impl Context {
    /// Sets a response header from text; an invalid value is a 500 error.
    pub fn set_header_str(&mut self, name: HeaderName, value: &str) -> Result<(), HttpError> {
        let v = HeaderValue::from_str(value).map_err(|_| {
            HttpError::with(
                StatusCode::INTERNAL_SERVER_ERROR,
                crate::error::DEFAULT_CATEGORY,
                format!("invalid value for header {name}"),
            )
            .with_exception(true)
        })?;
        self.response_headers.insert(name, v);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{SPARE_HEADERS_MAX, recycle_headers, spare_headers};
    use http::{HeaderMap, HeaderValue};

    /// A recycled map comes back empty with its room; a map with no room, or with more than
    /// the bound, is not kept; a spare is taken once.
    #[test]
    fn recycled_header_maps_come_back_empty_and_bounded() {
        let value = HeaderValue::from_static("v");
        let mut map = HeaderMap::new();
        map.insert("x-a", value.clone());
        map.append("x-a", value.clone());
        let room = map.capacity();
        recycle_headers(map);
        let spare = spare_headers();
        assert!(spare.is_empty());
        assert_eq!(spare.capacity(), room);
        assert_eq!(spare_headers().capacity(), 0, "taken once");

        recycle_headers(HeaderMap::new());
        assert_eq!(spare_headers().capacity(), 0, "no room, not kept");

        let mut at_bound = HeaderMap::with_capacity(SPARE_HEADERS_MAX);
        at_bound.insert("x-a", value.clone());
        assert_eq!(at_bound.capacity(), SPARE_HEADERS_MAX);
        recycle_headers(at_bound);
        assert_eq!(spare_headers().capacity(), SPARE_HEADERS_MAX);

        let mut over = HeaderMap::with_capacity(SPARE_HEADERS_MAX + 1);
        over.insert("x-a", value);
        assert!(over.capacity() > SPARE_HEADERS_MAX);
        recycle_headers(over);
        assert_eq!(spare_headers().capacity(), 0, "over the bound, freed");
    }

    /// A context dropped before its response was made (a panic, a dropped future) still drops
    /// both header maps with their values: the maps are freed by hand, see `Drop`.
    #[test]
    fn a_context_dropped_mid_request_drops_both_header_maps() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        struct Owned(Arc<AtomicUsize>);
        impl AsRef<[u8]> for Owned {
            fn as_ref(&self) -> &[u8] {
                b"v"
            }
        }
        impl Drop for Owned {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(AtomicUsize::new(0));
        let value = || {
            HeaderValue::from_maybe_shared(bytes::Bytes::from_owner(Owned(Arc::clone(&dropped))))
                .unwrap()
        };
        let service = crate::App::new().build().unwrap();
        let mut request = http::Request::new(crate::body::RequestBody::Empty);
        request.headers_mut().insert("x-in", value());
        let (parts, body) = request.into_parts();
        let mut ctx = service.context(parts, body, "127.0.0.1:1".parse().unwrap());
        ctx.set_header(http::header::HeaderName::from_static("x-out"), value());
        assert_eq!(dropped.load(Ordering::SeqCst), 0);
        drop(ctx);
        assert_eq!(dropped.load(Ordering::SeqCst), 2, "both values dropped");
    }

    /// A context dropped before its response was made still drops its typed data and its
    /// values, which it ends by hand (see `Drop`).
    #[test]
    fn a_context_dropped_mid_request_drops_its_data_and_values() {
        use std::sync::Arc;
        let held = Arc::new(());
        let service = crate::App::new().build().unwrap();
        let (parts, body) = http::Request::new(crate::body::RequestBody::Empty).into_parts();
        let mut ctx = service.context(parts, body, "127.0.0.1:1".parse().unwrap());
        ctx.insert_data(Arc::clone(&held));
        ctx.set_value("held", Arc::clone(&held));
        assert_eq!(Arc::strong_count(&held), 3);
        drop(ctx);
        assert_eq!(Arc::strong_count(&held), 1, "both dropped with the context");
    }
}

//! The per-request context handlers and middleware share.
//!
//! It holds the request (method, uri, headers, route params, raw and parsed body, client ip,
//! request id) and the response being built (status, headers, `body` as any `Serialize` value,
//! `body_buffer` bytes, or a [`BodyStream`]). Nothing is written to the client until the whole
//! chain has returned, so every middleware can still change the response on its way out; a
//! stream's bytes flow only after that, as the client reads them.

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue, IntoHeaderName};
use http::{Method, StatusCode, Uri, Version};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::body::{BodyStream, RequestBody};
use crate::error::{HttpError, Result};
use crate::route::{AppShared, Route};
use crate::router::{Params, decode_param};
use crate::session::Session;
use crate::state::State;
use crate::validate::Validate;

/// The response body a handler sets: converted to bytes by the responder.
pub enum Body {
    /// Text, sent as `text/plain; charset=utf-8`.
    Text(Cow<'static, str>),
    /// Raw bytes, sent as `application/octet-stream`.
    Bytes(Bytes),
    /// Any other value, marshalled by the responder (JSON by default).
    Value(Box<dyn BodyValue>),
}

/// A value the responder can marshal: JSON through the value's own (monomorphised) `Serialize`
/// impl, or any other format through `erased_serde`.
///
/// Implemented for every `Serialize + Send + Sync + 'static` type.
pub trait BodyValue: erased_serde::Serialize + Any + Send + Sync {
    /// The value as JSON, without dynamic dispatch per field.
    fn to_json(&self) -> serde_json::Result<Vec<u8>>;

    /// Appends the value as JSON to `out` (the responder's reused buffer).
    #[doc(hidden)]
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()>;

    /// Hands the value's box back once the value has been marshalled. A small value with no
    /// drop glue (see [`Body::from_value`]) keeps its box as this thread's spare, which the
    /// next value of the same type reuses instead of allocating; any other value is dropped.
    #[doc(hidden)]
    fn release(self: Box<Self>);
}

impl<T: Serialize + Send + Sync + 'static> BodyValue for T {
    fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(self)
    }

    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        serde_json::to_writer(out, self)
    }

    #[inline]
    fn release(self: Box<Self>) {
        if recyclable::<T>() {
            // Replaces (and frees) a spare of another type; after thread-local destruction
            // the box is simply dropped.
            let _ = SPARE_VALUE.try_with(|spare| spare.set(Some(self)));
        }
    }
}

/// The largest value whose box is recycled: the spare a thread keeps is at most this size.
const SPARE_VALUE_MAX: usize = 64;

/// Whether a `T`'s box is kept as the thread's spare after marshalling: `T` allocates (not
/// zero-sized), is at most [`SPARE_VALUE_MAX`] bytes and has no drop glue, so a value kept in
/// the spare until the next one replaces it holds no memory, file or lock beyond its own few
/// bytes.
const fn recyclable<T>() -> bool {
    !std::mem::needs_drop::<T>()
        && std::mem::size_of::<T>() != 0
        && std::mem::size_of::<T>() <= SPARE_VALUE_MAX
}

thread_local! {
    /// One released value box per thread ([`BodyValue::release`]). A handler returning the
    /// same plain type request after request (an API's usual answer) reuses one box instead
    /// of an allocation and a free per request.
    static SPARE_VALUE: std::cell::Cell<Option<Box<dyn BodyValue>>> =
        const { std::cell::Cell::new(None) };
}

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

/// `value` boxed as a [`Body::Value`], in the thread's spare box when that was a `T`'s.
fn box_value<T: BodyValue>(value: T) -> Box<dyn BodyValue> {
    if recyclable::<T>()
        && let Ok(Some(spare)) = SPARE_VALUE.try_with(std::cell::Cell::take)
    {
        let spare: Box<dyn Any> = spare;
        // A spare of another type is freed: the responder keeps this value's box instead.
        if let Ok(mut reused) = spare.downcast::<T>() {
            *reused = value;
            return reused;
        }
    }
    Box::new(value)
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Body::Text(t) => f.debug_tuple("Text").field(t).finish(),
            Body::Bytes(b) => f.debug_tuple("Bytes").field(b).finish(),
            Body::Value(_) => f.write_str("Value(..)"),
        }
    }
}

impl Body {
    /// Sorts a value into the right kind without specialisation: `String`, `&'static str`,
    /// `Cow<'static, str>`, `Bytes` and `Vec<u8>` are recognised by type id; `()` means no body.
    /// Any other value becomes [`Body::Value`]. Its box is allocated, except for a value of at
    /// most 64 bytes with no drop glue (plain data: numbers, `&'static str`, structs of them)
    /// when this thread's responder last marshalled a value of the same type: that value's
    /// box is reused. The responder keeps at most one such box per thread.
    pub fn from_value<T: Serialize + Send + Sync + 'static>(value: T) -> Option<Self> {
        let mut slot = Some(value);
        let any: &mut dyn Any = &mut slot;
        if TypeId::of::<T>() == TypeId::of::<()>() {
            return None;
        }
        if let Some(s) = any.downcast_mut::<Option<String>>() {
            return s.take().map(|s| Body::Text(s.into()));
        }
        if let Some(s) = any.downcast_mut::<Option<&'static str>>() {
            return s.take().map(|s| Body::Text(s.into()));
        }
        if let Some(s) = any.downcast_mut::<Option<Cow<'static, str>>>() {
            return s.take().map(Body::Text);
        }
        if let Some(b) = any.downcast_mut::<Option<Bytes>>() {
            return b.take().map(Body::Bytes);
        }
        if let Some(b) = any.downcast_mut::<Option<Vec<u8>>>() {
            return b.take().map(|b| Body::Bytes(b.into()));
        }
        slot.map(|v| Body::Value(box_value(v)))
    }
}

/// The request id once it has been taken for the response: empty.
static TAKEN_REQUEST_ID: HeaderValue = HeaderValue::from_static("");

/// Everything one request carries through the chain.
pub struct Context {
    method: Method,
    uri: Uri,
    version: Version,
    headers: HeaderMap,
    extensions: http::Extensions,
    remote_addr: SocketAddr,
    /// Taken out (`None`) when the response is made.
    request_id: Option<HeaderValue>,
    params: Params,
    route: Option<Arc<Route>>,
    raw_body: RequestBody,
    /// Raw or parsed request body bytes, filled by the body parser.
    pub request_body: Bytes,
    status: Option<StatusCode>,
    response_headers: HeaderMap,
    /// The value the responder converts to bytes.
    pub body: Option<Body>,
    /// Response bytes, set directly or by the responder.
    pub body_buffer: Option<Bytes>,
    body_stream: Option<BodyStream>,
    committed: bool,
    /// Set by the body parser for every request it sees, so [`Context::bind`] can tell a
    /// missing parser from a body the parser chose not to read.
    pub(crate) body_parser_seen: bool,
    /// Per-request values: a handful at most, so a list searched in order beats hashing (and
    /// an empty one costs nothing to make).
    values: Vec<(Cow<'static, str>, Box<dyn Any + Send + Sync>)>,
    pub(crate) session: Option<Session>,
    /// Counted slots (stats, concurrency limiters) given back when the request ends.
    held: crate::slot::HeldSlots,
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
            headers: parts.headers,
            extensions: parts.extensions,
            remote_addr,
            request_id: Some(request_id),
            params: Params::default(),
            route: None,
            raw_body,
            request_body: Bytes::new(),
            status: None,
            response_headers: spare_headers(),
            body: None,
            body_buffer: None,
            body_stream: None,
            committed: false,
            body_parser_seen: false,
            values: Vec::new(),
            session: None,
            held: crate::slot::HeldSlots::default(),
            shared,
        }
    }

    pub(crate) fn set_route(&mut self, route: Arc<Route>, params: Params) {
        self.route = Some(route);
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
    /// The request id: the client's valid `X-Request-Id`, else 128 random bits as hex.
    pub fn request_id(&self) -> &str {
        // Only visible ASCII gets here (validated or generated).
        self.request_id_value().to_str().unwrap_or("")
    }
    /// The request id as a header value (cheap to clone).
    pub(crate) fn request_id_value(&self) -> &HeaderValue {
        self.request_id.as_ref().unwrap_or(&TAKEN_REQUEST_ID)
    }
    /// Lets go of the request's headers once the response is made (see [`recycle_headers`]):
    /// from here on the context has none.
    pub(crate) fn release_request_headers(&mut self) {
        recycle_headers(std::mem::take(&mut self.headers));
    }
    /// Moves the request id out, for the response: the context is finished by then.
    pub(crate) fn take_request_id(&mut self) -> HeaderValue {
        self.request_id
            .take()
            .unwrap_or_else(|| TAKEN_REQUEST_ID.clone())
    }
    /// The matched route pattern, e.g. `/users/:id`; `None` for 404/405 answers.
    pub fn route_pattern(&self) -> Option<&str> {
        self.route.as_deref().map(|r| r.pattern.as_ref())
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
        if !self.body_parser_seen && self.request_body.is_empty() && self.raw_body.has_data() {
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
    /// Sets the body from any value: see [`Body::from_value`].
    pub fn set_body<T: Serialize + Send + Sync + 'static>(&mut self, value: T) {
        self.body = Body::from_value(value);
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
    /// Keeps `guard` until the request is really over: with a streamed body, until the body
    /// has been sent or the client went away (the guard moves into the body); otherwise it is
    /// dropped here, at once. Limiters and loggers hand over their `Drop` guards with it.
    pub fn hold_until_body_ends<G: Send + 'static>(&mut self, guard: G) {
        if let Some(stream) = self.body_stream.take() {
            self.body_stream = Some(stream.with_guard(guard));
        }
    }
    /// Keeps a counted slot until the request ends: dropped with the context, or, when the
    /// response is a stream, moved into the body when the response is made, so it is given
    /// back once the body has been sent or the client went away. For middleware that only
    /// count (stats, concurrency limiters): they take the slot in `before` and need no future.
    pub(crate) fn hold_slot(&mut self, slot: crate::slot::Slot) {
        self.held.push(slot);
    }
    /// The slots held, taken out to go with a streamed body.
    pub(crate) fn take_held_slots(&mut self) -> crate::slot::HeldSlots {
        std::mem::take(&mut self.held)
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

    // ----- values, state, session -----

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
    /// Application state registered with [`crate::App::with_state`].
    pub fn state(&self) -> &State {
        &self.shared.state
    }
    /// The session; an error (500, `framework-session`) when no session middleware ran.
    pub fn session(&mut self) -> Result<&mut Session, HttpError> {
        self.session.as_mut().ok_or_else(|| {
            HttpError::with(
                StatusCode::INTERNAL_SERVER_ERROR,
                crate::session::CATEGORY,
                "session middleware is not used on this route",
            )
            .with_exception(true)
        })
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
    use super::{Body, BodyValue, SPARE_HEADERS_MAX, SPARE_VALUE, recycle_headers, spare_headers};
    use http::{HeaderMap, HeaderValue};
    use std::any::TypeId;

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

    #[derive(serde::Serialize)]
    struct Plain {
        id: u32,
        name: &'static str,
    }

    #[derive(serde::Serialize)]
    struct Owning {
        name: String,
    }

    /// The type of the value in this thread's spare box, if there is one.
    fn spare_type() -> Option<TypeId> {
        let spare = SPARE_VALUE.take();
        let id = spare.as_ref().map(|v| (**v).type_id());
        SPARE_VALUE.set(spare);
        id
    }

    fn value(body: Option<Body>) -> Box<dyn BodyValue> {
        match body {
            Some(Body::Value(value)) => value,
            other => panic!("not a value body: {other:?}"),
        }
    }

    fn json(value: &dyn BodyValue) -> String {
        String::from_utf8(value.to_json().unwrap()).unwrap()
    }

    #[test]
    fn a_plain_value_box_is_kept_after_release_and_reused_by_the_next_value_of_its_type() {
        SPARE_VALUE.set(None);
        let first = value(Body::from_value(Plain { id: 1, name: "a" }));
        assert_eq!(spare_type(), None);
        let address = std::ptr::from_ref::<dyn BodyValue>(&*first).cast::<u8>();
        first.release();
        assert_eq!(spare_type(), Some(TypeId::of::<Plain>()));

        let second = value(Body::from_value(Plain { id: 2, name: "b" }));
        assert_eq!(spare_type(), None, "the spare was taken");
        assert_eq!(
            std::ptr::from_ref::<dyn BodyValue>(&*second).cast::<u8>(),
            address,
            "the same box"
        );
        assert_eq!(json(&*second), r#"{"id":2,"name":"b"}"#);
        second.release();
    }

    #[test]
    fn a_spare_of_another_type_is_freed_and_the_new_value_is_its_own() {
        SPARE_VALUE.set(None);
        value(Body::from_value(Plain { id: 1, name: "a" })).release();
        let other = value(Body::from_value((7u8, 9u16)));
        assert_eq!(json(&*other), "[7,9]");
        assert_eq!(spare_type(), None, "the Plain spare was taken and freed");
        other.release();
        assert_eq!(spare_type(), Some(TypeId::of::<(u8, u16)>()));
    }

    #[test]
    fn values_with_drop_glue_or_over_64_bytes_are_never_kept() {
        SPARE_VALUE.set(None);
        value(Body::from_value(Plain { id: 1, name: "a" })).release();

        let owning = value(Body::from_value(Owning { name: "x".into() }));
        owning.release();
        assert_eq!(spare_type(), Some(TypeId::of::<Plain>()), "left as it was");

        let big = value(Body::from_value(([1u64; 4], [2u64; 4], 3u8)));
        assert_eq!(std::mem::size_of_val(&*big), 72);
        assert_eq!(json(&*big), "[[1,1,1,1],[2,2,2,2],3]");
        big.release();
        assert_eq!(spare_type(), Some(TypeId::of::<Plain>()), "left as it was");

        let at_limit = value(Body::from_value(([1u64; 4], [2u64; 4])));
        assert_eq!(std::mem::size_of_val(&*at_limit), 64);
        at_limit.release();
        assert_eq!(spare_type(), Some(TypeId::of::<([u64; 4], [u64; 4])>()));
        SPARE_VALUE.set(None);
    }
}

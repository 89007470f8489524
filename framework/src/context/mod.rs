//! The per-request context handlers and middleware share.
//!
//! It holds the request (method, uri, headers, route params, raw and parsed body, client ip,
//! request id) and the response being built (status, headers, `body` as any `Serialize` value,
//! `body_buffer` bytes, or a [`BodyStream`]). Nothing is written to the client until the whole
//! chain has returned, so every middleware can still change the response on its way out; a
//! stream's bytes flow only after that, as the client reads them.
//!
//! One type, its methods in one file per concern, as salvo splits the same state into request,
//! response, depot and flow control: reading the request (`request.rs`), building the response
//! (`response.rs`), the request's life as middleware sees it (`lifecycle.rs`), per-request
//! values and data (`store.rs`), the cookie jar (`cookies.rs`), the end of a request, when the context becomes the response
//! (`finish.rs`), and the thread's spare header map (`recycle.rs`).

mod cookies;
mod finish;
mod lifecycle;
mod recycle;
mod request;
mod response;
mod store;
#[cfg(feature = "tower")]
mod tower;

use std::any::Any;
use std::borrow::Cow;
use std::mem::ManuallyDrop;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{HeaderMap, HeaderValue};
use http::{Method, StatusCode, Uri, Version};

use crate::body::{BodyStream, RequestBody};
use crate::data::TypedData;
use crate::reply::Reply;
use crate::route::{AppShared, RouteMeta};
use crate::router::Params;
use crate::slot::Held;

/// The request id once it has been taken for the response: empty.
static TAKEN_REQUEST_ID: HeaderValue = HeaderValue::from_static("");

/// A per-request value and its name ([`Context::set_value`]).
type NamedValue = (Cow<'static, str>, Box<dyn Any + Send + Sync>);

/// What a connection's requests share beyond its peer address, made once per connection
/// that has any of it (a Unix socket's peer process, a TLS client's verified certificate).
#[derive(Debug, Default)]
pub(crate) struct ConnFacts {
    /// The peer process, over a Unix socket.
    pub(crate) unix_peer: Option<crate::listener::UnixPeer>,
    /// The verified client certificate ([`Context::client_cert`]).
    #[cfg(feature = "tls")]
    pub(crate) client_cert: Option<Arc<crate::tls::ClientCert>>,
}

impl ConnFacts {
    /// `None` when there is nothing to share: the context then carries no pointer.
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) fn shared(self) -> Option<Arc<Self>> {
        #[cfg(feature = "tls")]
        let any = self.unix_peer.is_some() || self.client_cert.is_some();
        #[cfg(not(feature = "tls"))]
        let any = self.unix_peer.is_some();
        any.then(|| Arc::new(self))
    }
}

/// Everything one request carries through the chain.
pub struct Context {
    method: Method,
    uri: Uri,
    version: Version,
    /// Both header maps are dropped by hand ([`Context`]'s `Drop`), which frees a map only
    /// when it owns memory: at the end of a request both are empty maps of no capacity (see
    /// BENCHMARKS.md, "Hand-written fast paths").
    headers: ManuallyDrop<HeaderMap>,
    extensions: http::Extensions,
    remote_addr: SocketAddr,
    /// What the connection's requests share beyond the peer address (the Unix peer process,
    /// the client certificate); `None` over plain TCP. One pointer, so the context (moved
    /// into each request's future) does not grow with facts most connections lack.
    conn: Option<Arc<ConnFacts>>,
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
    /// it has capacity.
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
            .filter(|v| crate::ids::is_valid_request_id(v.as_bytes()))
            .cloned()
            .unwrap_or_else(crate::ids::new_request_id);
        Self {
            method: parts.method,
            uri: parts.uri,
            version: parts.version,
            headers: ManuallyDrop::new(parts.headers),
            extensions: parts.extensions,
            remote_addr,
            conn: None,
            request_id: Some(request_id),
            params: Params::default(),
            route: None,
            raw_body,
            request_body: Bytes::new(),
            status: None,
            response_headers: ManuallyDrop::new(recycle::spare_headers()),
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
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) fn set_tls(&mut self) {
        self.tls = true;
    }

    /// The connection's facts beyond its peer address.
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) fn set_conn(&mut self, conn: Arc<ConnFacts>) {
        self.conn = Some(conn);
    }

    pub(crate) fn set_route(&mut self, route: &Arc<RouteMeta>, params: Params) {
        self.route = Some(Arc::clone(route));
        self.params = params;
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
}

/// Frees what the header maps, the values and the typed data still hold. A map of no capacity
/// owns no memory (its entries and extra values can only be there with capacity), so such a
/// map, the usual one at the end of a request (the request's went back to the thread, the
/// response took the other), is left as it is; so is an empty list of values. The typed data
/// gives its boxes back to the thread (`TypedData::finish`). Sound because a field left as it
/// is owns nothing; it saves each field's drop glue, an out-of-line call even when empty (the
/// figures: BENCHMARKS.md, "Hand-written fast paths").
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

#[cfg(test)]
mod tests {
    use http::HeaderValue;

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

//! The per-request context handlers and middleware share.
//!
//! A [`Context`] holds the request (method, URI, headers, route params, raw and parsed body,
//! request id), the [`ConnectionInfo`] of the connection it came on, the response being built
//! (status, headers and its [`Content`]: nothing, a value, bytes or a stream), and one store
//! of per-request data by type. Nothing is written to the client until the whole chain has
//! returned, so every middleware can still change the response on its way out; a stream's
//! bytes flow only after that, as the client reads them.
//!
//! Method names say which side they touch: `request_header`, `response_headers_mut`,
//! `set_response_header`. What belongs to one feature is that feature's extension trait over
//! the data store, as salvo's `Depot` extensions are: [`CookiesExt`](crate::cookies::CookiesExt),
//! [`ClientIpExt`](crate::client_ip::ClientIpExt),
//! [`SessionExt`](crate::middleware::session::SessionExt),
//! [`LogFieldsExt`](crate::middleware::logger::LogFieldsExt), `WebSocketExt` (feature
//! `websocket`), … ([`framework::prelude`](crate::prelude) brings them all in).
//!
//! The methods are in one file per concern: reading the request (`request.rs`), building the
//! response (`response.rs`, `content.rs`), the request's life as middleware sees it
//! (`lifecycle.rs`), the data store (`store.rs`), the core's own extension traits (`ext.rs`:
//! cookies, the client IP), the end of a request, when the context
//! becomes the response (`finish.rs`), and the thread's spare header map (`recycle.rs`).

mod content;
mod ext;
mod finish;
mod lifecycle;
mod recycle;
mod request;
mod response;
mod store;
#[cfg(feature = "tower")]
mod tower;

use std::mem::ManuallyDrop;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{HeaderMap, HeaderValue};
use http::{Method, StatusCode, Uri, Version};

use crate::body::RequestBody;
use crate::data::TypedData;
use crate::route::AppShared;
use crate::router::Params;
use crate::slot::Held;

pub use crate::connection::ConnectionInfo;
pub use crate::route::MatchedRoute;
pub use content::Content;
pub use request::{ParamsIter, PathParams};

/// The request id once it has been taken for the response: empty.
static TAKEN_REQUEST_ID: HeaderValue = HeaderValue::from_static("");

/// Everything one request carries through the chain: see the [module](self).
pub struct Context {
    method: Method,
    uri: Uri,
    version: Version,
    /// Both header maps are dropped by hand ([`Context`]'s `Drop`), which frees a map only
    /// when it owns memory: at the end of a request both are empty maps of no capacity (see
    /// BENCHMARKS.md, "Hand-written fast paths").
    headers: ManuallyDrop<HeaderMap>,
    extensions: http::Extensions,
    connection: ConnectionInfo,
    /// Taken out (`None`) when the response is made.
    request_id: Option<HeaderValue>,
    params: Params,
    route: Option<Arc<MatchedRoute>>,
    raw_body: RequestBody,
    /// Raw or parsed request body bytes, filled by the body parser.
    request_body: Bytes,
    status: Option<StatusCode>,
    response_headers: ManuallyDrop<HeaderMap>,
    body: Content,
    committed: bool,
    /// When the first middleware that measures time started the clock
    /// ([`Context::start_clock`]).
    clock: Option<std::time::Instant>,
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
        connection: ConnectionInfo,
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
            connection,
            request_id: Some(request_id),
            params: Params::default(),
            route: None,
            raw_body,
            request_body: Bytes::new(),
            status: None,
            response_headers: ManuallyDrop::new(recycle::spare_headers()),
            body: Content::default(),
            committed: false,
            clock: None,
            data: ManuallyDrop::new(TypedData::default()),
            held: Held::default(),
            shared,
        }
    }

    pub(crate) fn set_route(&mut self, route: &Arc<MatchedRoute>, params: Params) {
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

/// Frees what the header maps and the typed data still hold. A map of no capacity owns no
/// memory (its entries and extra values can only be there with capacity), so such a map, the
/// usual one at the end of a request (the request's went back to the thread, the response
/// took the other), is left as it is. The typed data
/// gives its boxes back to the thread (`TypedData::finish`). Sound because a field left as it
/// is owns nothing; it saves each field's drop glue, an out-of-line call even when empty (the
/// figures: BENCHMARKS.md, "Hand-written fast paths": 133 instructions of `GET /json`, 1.077×
/// against 1.090× hyper-id, over the CI check's 1.08× without it).
impl Drop for Context {
    fn drop(&mut self) {
        // The data first: its values may be guards (a lock, a counted slot) to give back.
        self.data.finish();
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
        let mut ctx = service.test_context(request);
        ctx.set_response_header(http::header::HeaderName::from_static("x-out"), value());
        assert_eq!(dropped.load(Ordering::SeqCst), 0);
        drop(ctx);
        assert_eq!(dropped.load(Ordering::SeqCst), 2, "both values dropped");
    }

    /// A context dropped before its response was made still drops its typed data, which it
    /// ends by hand (see `Drop`).
    #[test]
    fn a_context_dropped_mid_request_drops_its_data() {
        use std::sync::Arc;
        let held = Arc::new(());
        let service = crate::App::new().build().unwrap();
        let mut ctx = service.test_context(http::Request::new(crate::body::RequestBody::Empty));
        ctx.insert_data(Arc::clone(&held));
        assert_eq!(Arc::strong_count(&held), 2);
        drop(ctx);
        assert_eq!(Arc::strong_count(&held), 1, "dropped with the context");
    }
}

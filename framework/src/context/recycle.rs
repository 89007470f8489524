//! The thread's spare header map: how a request's header map, emptied, carries the next
//! response's headers instead of each response allocating a map of its own.

use http::HeaderMap;

/// The largest header map (in entries it holds without growing) kept as a thread's spare.
/// A request's map is as large as its headers made it: a capacity of 96 holds any request of up to
/// 96 headers (maps grow 6, 12, 24, 48, 96, 192); the map of a request with more (hyper allows
/// 100 by default, a server may be configured for more) is freed instead of kept.
const SPARE_HEADERS_MAX: usize = 96;

thread_local! {
    /// One emptied header map per thread: the map of a request that has been answered, which
    /// the next context on this thread takes as its response map (see [`recycle_headers`]).
    static SPARE_HEADERS: std::cell::Cell<Option<HeaderMap>> =
        const { std::cell::Cell::new(None) };
}

/// A response header map for a new context: this thread's spare (empty, with capacity), or a new
/// one (which allocates at its first header).
pub(super) fn spare_headers() -> HeaderMap {
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
/// capacity is kept. A map of no capacity, or of a capacity over [`SPARE_HEADERS_MAX`]
/// entries, is freed instead.
pub(super) fn recycle_headers(mut map: HeaderMap) {
    if map.capacity() == 0 || map.capacity() > SPARE_HEADERS_MAX {
        return;
    }
    map.clear();
    // After thread-local destruction the map is simply dropped.
    let _ = SPARE_HEADERS.try_with(|spare| spare.set(Some(map)));
}

#[cfg(test)]
mod tests {
    use super::{SPARE_HEADERS_MAX, recycle_headers, spare_headers};
    use http::{HeaderMap, HeaderValue};

    /// A recycled map comes back empty with its capacity; a map of no capacity, or with more than
    /// the bound, is not kept; a spare is taken once.
    #[test]
    fn recycled_header_maps_come_back_empty_and_bounded() {
        let value = HeaderValue::from_static("v");
        let mut map = HeaderMap::new();
        map.insert("x-a", value.clone());
        map.append("x-a", value.clone());
        let capacity = map.capacity();
        recycle_headers(map);
        let spare = spare_headers();
        assert!(spare.is_empty());
        assert_eq!(spare.capacity(), capacity);
        assert_eq!(spare_headers().capacity(), 0, "taken once");

        recycle_headers(HeaderMap::new());
        assert_eq!(spare_headers().capacity(), 0, "no capacity, not kept");

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
}

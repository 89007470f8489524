use super::*;

const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn a_valid_traceparent_is_read() {
    let (trace, parent, flags) = parse_traceparent(VALID.as_bytes()).unwrap();
    assert_eq!(hex::encode(trace), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(hex::encode(parent), "00f067aa0ba902b7");
    assert_eq!(flags, 1);
    // A later version: the first four fields, more may follow.
    let future = "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-extra";
    assert_eq!(parse_traceparent(future.as_bytes()).unwrap().2, 9);
}

#[test]
fn invalid_traceparents_are_refused() {
    for bad in [
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        // Uppercase hex, all-zero ids, version ff, extra fields on version 00.
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
    ] {
        assert!(parse_traceparent(bad.as_bytes()).is_none(), "{bad}");
    }
}

#[test]
fn the_trace_is_joined_or_started_and_children_keep_it() {
    let mut headers = http::HeaderMap::new();
    headers.insert(TRACEPARENT, HeaderValue::from_static(VALID));
    headers.insert(TRACESTATE, HeaderValue::from_static("congo=t61rcWkgMzE"));
    let joined = TraceContext::from_headers(&headers);
    assert_eq!(joined.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(joined.parent_id().as_deref(), Some("00f067aa0ba902b7"));
    assert_ne!(joined.span_id(), "00f067aa0ba902b7");
    assert_eq!(joined.tracestate().unwrap(), "congo=t61rcWkgMzE");
    let child = joined.child();
    assert_eq!(child.trace_id(), joined.trace_id());
    assert_eq!(child.parent_id(), Some(joined.span_id()));
    assert_ne!(child.span_id(), joined.span_id());
    let header = child.traceparent();
    let (t, p, f) = parse_traceparent(header.as_bytes()).unwrap();
    assert_eq!(
        (hex::encode(t), hex::encode(p), f),
        (child.trace_id(), child.span_id(), 1)
    );

    let fresh = TraceContext::from_headers(&http::HeaderMap::new());
    assert_eq!(fresh.trace_id().len(), 32);
    assert_eq!(fresh.parent_id(), None);
    assert_eq!(fresh.flags(), 1);
    assert_ne!(fresh.trace_id(), TraceContext::new_trace().trace_id());
}

/// Ids are drawn at their first read and never change after it; a clone made before any
/// read names the same span as the original.
#[test]
fn drawn_ids_are_drawn_once_and_clones_share_them() {
    let fresh = TraceContext::new_trace();
    assert!(
        fresh.drawn.get().is_none(),
        "nothing is drawn before a read"
    );
    let copy = fresh.clone();
    assert_eq!(copy.ids(), fresh.ids());
    assert_eq!(copy, fresh);
    assert_eq!(fresh.trace_id(), fresh.trace_id());
    assert_eq!(fresh.span_id(), copy.span_id());
    assert_ne!(fresh, TraceContext::new_trace());

    let mut headers = http::HeaderMap::new();
    headers.insert(TRACEPARENT, HeaderValue::from_static(VALID));
    let joined = TraceContext::from_headers(&headers);
    assert!(joined.drawn.get().is_none());
    let copy = joined.clone();
    assert_eq!(joined.span_id(), copy.span_id());
    assert_eq!(joined.ids().0, copy.ids().0);
    assert_eq!(joined.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
    let debug = format!("{joined:?}");
    assert!(debug.contains(&joined.span_id()), "{debug}");
}

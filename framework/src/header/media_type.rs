//! Media types: the type of a `Content-Type` without its parameters, and whether a request's
//! body is JSON or a form, or its `Accept` takes JSON.

use http::header::{self, HeaderMap};

/// The media type of a `Content-Type` value without parameters, as written. Media types are
/// case-insensitive: compare with `eq_ignore_ascii_case` and the helpers below, which do not
/// allocate.
pub(crate) fn media_type(value: &str) -> &str {
    // OWS is spaces and tabs (RFC 9110 section 5.6.3); a field value holds no other
    // whitespace a byte-wise trim would take.
    value
        .split_once(';')
        .map_or(value, |(media, _)| media)
        .trim_ascii()
}

pub(crate) fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

pub(crate) fn ends_with_ignore_case(s: &str, suffix: &str) -> bool {
    s.len() >= suffix.len()
        && s.as_bytes()[s.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
}

pub(crate) fn contains_ignore_case(s: &str, needle: &str) -> bool {
    s.as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

pub(super) fn is_json(mt: &str) -> bool {
    mt.eq_ignore_ascii_case("application/json")
        || (starts_with_ignore_case(mt, "application/") && ends_with_ignore_case(mt, "+json"))
}

/// True for `application/json` and any `application/<x>+json` type.
pub(crate) fn is_json_media_type(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).is_some_and(|v| {
        // The type as nearly every client writes it, compared before the value is checked
        // for text and taken apart: the body parser asks this twice per JSON request.
        v.as_bytes() == b"application/json" || v.to_str().is_ok_and(|ct| is_json(media_type(ct)))
    })
}

/// True for `application/x-www-form-urlencoded`.
pub(crate) fn is_form_media_type(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| media_type(ct).eq_ignore_ascii_case("application/x-www-form-urlencoded"))
}

/// True when the `Accept` header asks for JSON (`application/json` or a `+json` type).
pub(crate) fn accepts_json(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(media_type)
        .any(|mt| is_json(mt) || ends_with_ignore_case(mt, "+json"))
}

//! Conditional requests (RFC 9110 section 13): validators, entity-tag comparison and the order
//! in which the preconditions are evaluated. Shared by every component that answers 304 or 412,
//! so none re-implements the rules.
//!
//! ```
//! use framework::conditional::{Precondition, evaluate};
//! use http::{HeaderMap, HeaderValue, Method};
//!
//! let mut headers = HeaderMap::new();
//! headers.insert("if-none-match", HeaderValue::from_static("W/\"1\", \"2\""));
//! let outcome = evaluate(&Method::GET, &headers, Some("\"2\""), None);
//! assert_eq!(outcome, Precondition::NotModified);
//! ```

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::Method;
use http::header::{
    HeaderMap, IF_MATCH, IF_MODIFIED_SINCE, IF_NONE_MATCH, IF_RANGE, IF_UNMODIFIED_SINCE,
};

/// A strong entity tag for a body of `size` bytes whose SHA-256 is `digest`:
/// `"<size hex>-<the digest's first 128 bits, base64url>"`. Static serve and the docs page tag
/// their files with it.
#[cfg(any(feature = "static-serve", feature = "docs-ui"))]
pub fn strong_etag(size: u64, digest: &[u8; 32]) -> http::HeaderValue {
    let mut first = [0u8; 16];
    first.copy_from_slice(&digest[..16]);
    entity_tag(size, &first)
}

/// The framework's one form of a strong entity tag: `"<size hex>-<128 bits, base64url>"`, for
/// a body of `size` bytes whose digest (SHA-256's first 128 bits, or xxh3-128) is `digest`.
#[cfg(any(feature = "static-serve", feature = "docs-ui", feature = "etag"))]
pub(crate) fn entity_tag(size: u64, digest: &[u8; 16]) -> http::HeaderValue {
    use base64::Engine;
    let tag = format!(
        "\"{size:x}-{}\"",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
    );
    // Hex digits, base64url and quotes only: always a valid header value.
    http::HeaderValue::try_from(tag).unwrap_or_else(|_| http::HeaderValue::from_static("\"\""))
}

/// What a 304 or a 206 answer stands for: the full representation's media type and length.
/// Whoever answers 304 or 206 ([`fresh`](crate::middleware::fresh), static serve) puts it in the
/// request's extensions ([`Context::extensions_mut`](crate::Context::extensions_mut)), so outer
/// middleware can send the headers the 200 would have had (RFC 9110 sections 15.3.7 and
/// 15.4.5): compress its `Vary: Accept-Encoding`, and on a 304 the `ETag` in the form the 200
/// had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Represents {
    /// The representation's `Content-Type`.
    pub content_type: Option<http::HeaderValue>,
    /// Its full length in bytes (`u64::MAX` when unknown, as for a stream of unknown length).
    pub length: u64,
}

/// What the preconditions decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    /// Go on and answer normally (a `Range` may still apply).
    Proceed,
    /// 304 Not Modified: the client's copy is current (GET and HEAD only).
    NotModified,
    /// 412 Precondition Failed.
    Failed,
}

/// Evaluates the preconditions of a request against the current validators, in the order of
/// RFC 9110 section 13.2.2: `If-Match` (else `If-Unmodified-Since`) can fail the request;
/// then `If-None-Match` (else, on GET and HEAD only, `If-Modified-Since`) can make it 304, or
/// 412 for other methods. A date header is ignored when it does not parse or when there is no
/// `last_modified` to compare with.
pub fn evaluate(
    method: &Method,
    headers: &HeaderMap,
    etag: Option<&str>,
    last_modified: Option<SystemTime>,
) -> Precondition {
    let get_or_head = method == Method::GET || method == Method::HEAD;
    if let Some(if_match) = header_str(headers, IF_MATCH) {
        if !list_matches(if_match, etag, true) {
            return Precondition::Failed;
        }
    } else if let (Some(since), Some(modified)) =
        (header_date(headers, IF_UNMODIFIED_SINCE), last_modified)
        && whole_seconds(modified) > since
    {
        return Precondition::Failed;
    }
    if let Some(if_none_match) = header_str(headers, IF_NONE_MATCH) {
        if list_matches(if_none_match, etag, false) {
            return if get_or_head {
                Precondition::NotModified
            } else {
                Precondition::Failed
            };
        }
    } else if get_or_head
        && let (Some(since), Some(modified)) =
            (header_date(headers, IF_MODIFIED_SINCE), last_modified)
        && whole_seconds(modified) <= since
    {
        return Precondition::NotModified;
    }
    Precondition::Proceed
}

/// True when a `Range` request may be answered with a part: there is no `If-Range`, or it names
/// the current representation (a strong entity-tag match, or exactly the `Last-Modified` date;
/// RFC 9110 section 13.1.5). Otherwise the whole representation is sent.
pub fn if_range_allows(
    headers: &HeaderMap,
    etag: Option<&str>,
    last_modified: Option<SystemTime>,
) -> bool {
    let Some(value) = header_str(headers, IF_RANGE) else {
        return headers.get(IF_RANGE).is_none();
    };
    let value = value.trim();
    if value.starts_with('"') || value.starts_with("W/") {
        return etag.is_some_and(|tag| strong_eq(value, tag));
    }
    match (httpdate::parse_http_date(value).ok(), last_modified) {
        (Some(date), Some(modified)) => whole_seconds(modified) == date,
        _ => false,
    }
}

/// True when an `If-Match`/`If-None-Match` list matches `etag`: `*` matches any current
/// representation, else one of the listed tags compares equal (strongly or weakly).
pub fn list_matches(list: &str, etag: Option<&str>, strong: bool) -> bool {
    let Some(etag) = etag else {
        return false;
    };
    if list.trim() == "*" {
        return true;
    }
    entity_tags(list).any(|candidate| {
        if strong {
            strong_eq(candidate, etag)
        } else {
            weak_eq(candidate, etag)
        }
    })
}

/// The entity tags of an `If-Match`/`If-None-Match` list, each with its `W/` and quotes. A
/// comma may stand inside a tag (`etagc` of RFC 9110 section 8.8.3 includes it), so the list
/// is split at the commas between quoted tags, not at every comma; an item that is not a
/// quoted tag (a sloppy client's) runs to the next comma.
fn entity_tags(list: &str) -> impl Iterator<Item = &str> {
    let mut rest = list;
    std::iter::from_fn(move || {
        rest = rest.trim_start_matches(|c: char| c == ',' || c.is_ascii_whitespace());
        if rest.is_empty() {
            return None;
        }
        let opaque = rest.strip_prefix("W/").unwrap_or(rest);
        let end = match opaque.strip_prefix('"').and_then(|inner| inner.find('"')) {
            // The closing quote, after the opening one and any `W/`.
            Some(close) => rest.len() - opaque.len() + close + 2,
            None => rest.find(',').unwrap_or(rest.len()),
        };
        let (tag, after) = rest.split_at(end);
        rest = after;
        Some(tag.trim_end())
    })
}

/// Strong comparison: both tags strong and the same opaque value.
pub fn strong_eq(a: &str, b: &str) -> bool {
    !a.starts_with("W/") && !b.starts_with("W/") && a == b
}

/// Weak comparison: the same opaque value, either or both tags may be weak.
pub fn weak_eq(a: &str, b: &str) -> bool {
    a.trim_start_matches("W/") == b.trim_start_matches("W/")
}

/// HTTP dates have one-second resolution: a file modified at 10.7 s is "10 s" to a client.
pub fn whole_seconds(time: SystemTime) -> SystemTime {
    let secs = time
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn header_str(headers: &HeaderMap, name: http::header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn header_date(headers: &HeaderMap, name: http::header::HeaderName) -> Option<SystemTime> {
    header_str(headers, name).and_then(|v| httpdate::parse_http_date(v.trim()).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    http::HeaderName::from_static(k),
                    HeaderValue::from_str(v).unwrap(),
                )
            })
            .collect()
    }

    const TAG: &str = "\"abc\"";

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn date(secs: u64) -> String {
        httpdate::fmt_http_date(at(secs))
    }

    #[test]
    fn a_comma_inside_a_tag_does_not_split_it() {
        let tags: Vec<&str> = entity_tags(r#""a,b", W/"c", "d" , e, "",W/"f,g""#).collect();
        assert_eq!(
            tags,
            [r#""a,b""#, r#"W/"c""#, r#""d""#, "e", r#""""#, r#"W/"f,g""#]
        );
        assert!(list_matches(r#""a,b", "c""#, Some(r#""a,b""#), false));
        assert!(list_matches(r#""a,b", "c""#, Some(r#""c""#), false));
        assert!(!list_matches(r#""a,b", "c""#, Some(r#""a""#), false));
        assert!(!list_matches(r#""a,b", "c""#, Some(r#""b""#), false));
        // An unclosed quote runs to the end, matching nothing it should not.
        assert!(!list_matches(r#""a, "b""#, Some(r#""b""#), false));
    }

    #[test]
    fn if_none_match_forms() {
        let get = Method::GET;
        for (value, expected) in [
            ("\"abc\"", Precondition::NotModified),
            ("W/\"abc\"", Precondition::NotModified),
            ("\"x\", W/\"abc\"", Precondition::NotModified),
            ("*", Precondition::NotModified),
            ("\"x\"", Precondition::Proceed),
        ] {
            let h = headers(&[("if-none-match", value)]);
            assert_eq!(evaluate(&get, &h, Some(TAG), None), expected, "{value}");
        }
        let h = headers(&[("if-none-match", TAG)]);
        assert_eq!(
            evaluate(&Method::POST, &h, Some(TAG), None),
            Precondition::Failed
        );
    }

    #[test]
    fn if_none_match_wins_over_if_modified_since() {
        let h = headers(&[
            ("if-none-match", "\"other\""),
            ("if-modified-since", &date(100)),
        ]);
        assert_eq!(
            evaluate(&Method::GET, &h, Some(TAG), Some(at(50))),
            Precondition::Proceed
        );
        let h = headers(&[("if-modified-since", &date(100))]);
        assert_eq!(
            evaluate(&Method::GET, &h, Some(TAG), Some(at(50))),
            Precondition::NotModified
        );
        // Sub-second modification times compare in whole seconds.
        assert_eq!(
            evaluate(
                &Method::GET,
                &h,
                Some(TAG),
                Some(at(100) + Duration::from_millis(700))
            ),
            Precondition::NotModified
        );
        assert_eq!(
            evaluate(&Method::GET, &h, Some(TAG), Some(at(101))),
            Precondition::Proceed
        );
        // Not for other methods, and not with a date that does not parse.
        assert_eq!(
            evaluate(&Method::POST, &h, Some(TAG), Some(at(50))),
            Precondition::Proceed
        );
        let h = headers(&[("if-modified-since", "yesterday")]);
        assert_eq!(
            evaluate(&Method::GET, &h, Some(TAG), Some(at(50))),
            Precondition::Proceed
        );
    }

    #[test]
    fn if_match_and_unmodified_since() {
        let h = headers(&[("if-match", "\"other\"")]);
        assert_eq!(
            evaluate(&Method::GET, &h, Some(TAG), None),
            Precondition::Failed
        );
        // If-Match uses the strong comparison: a weak tag never matches.
        let h = headers(&[("if-match", "W/\"abc\"")]);
        assert_eq!(
            evaluate(&Method::GET, &h, Some(TAG), None),
            Precondition::Failed
        );
        let h = headers(&[("if-match", "\"abc\"")]);
        assert_eq!(
            evaluate(&Method::GET, &h, Some(TAG), None),
            Precondition::Proceed
        );
        let h = headers(&[("if-unmodified-since", &date(10))]);
        assert_eq!(
            evaluate(&Method::GET, &h, Some(TAG), Some(at(20))),
            Precondition::Failed
        );
        assert_eq!(
            evaluate(&Method::GET, &h, Some(TAG), Some(at(10))),
            Precondition::Proceed
        );
        // 412 wins over 304.
        let h = headers(&[("if-match", "\"other\""), ("if-none-match", "*")]);
        assert_eq!(
            evaluate(&Method::GET, &h, Some(TAG), None),
            Precondition::Failed
        );
    }

    #[test]
    fn if_range() {
        assert!(if_range_allows(&HeaderMap::new(), Some(TAG), None));
        assert!(if_range_allows(
            &headers(&[("if-range", TAG)]),
            Some(TAG),
            None
        ));
        assert!(!if_range_allows(
            &headers(&[("if-range", "W/\"abc\"")]),
            Some("W/\"abc\""),
            None
        ));
        assert!(if_range_allows(
            &headers(&[("if-range", &date(5))]),
            Some(TAG),
            Some(at(5))
        ));
        assert!(!if_range_allows(
            &headers(&[("if-range", &date(5))]),
            Some(TAG),
            Some(at(6))
        ));
    }
}

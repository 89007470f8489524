//! Conditional requests (RFC 9110 section 13) and ranges (section 14): validators, entity-tag
//! comparison, the order in which the preconditions are evaluated, and [`Representation`],
//! which answers a GET or HEAD of a representation with all of them (304, 412, 206, 416).
//! Shared by every component that answers 304 or 412, so none re-implements the rules.
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

use bytes::{Buf, Bytes};
use http::header::{
    ACCEPT_RANGES, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_RANGE, CONTENT_TYPE, ETAG, HeaderMap,
    HeaderValue, IF_MATCH, IF_MODIFIED_SINCE, IF_NONE_MATCH, IF_RANGE, IF_UNMODIFIED_SINCE,
    LAST_MODIFIED, RANGE, X_CONTENT_TYPE_OPTIONS,
};
use http::{Method, StatusCode};
use http_range_header::{EndPosition, RangeUnsatisfiableError, StartPosition};

use crate::context::Context;
use crate::error::HttpError;

/// A strong entity tag for a body of `size` bytes whose SHA-256 is `digest`:
/// `"<size hex>-<the digest's first 128 bits, base64url>"`. Static serve and the docs page tag
/// their files with it; an app that keeps a digest of what it stores (an uploaded image) tags
/// it the same way.
///
/// ```
/// let tag = framework::conditional::strong_etag(5, &[0u8; 32]);
/// assert_eq!(tag, "\"5-AAAAAAAAAAAAAAAAAAAAAA\"");
/// ```
pub fn strong_etag(size: u64, digest: &[u8; 32]) -> http::HeaderValue {
    use base64::Engine;
    let tag = format!(
        "\"{size:x}-{}\"",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..16])
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

/// A representation answered to `GET` and `HEAD` with its validators: static serve answers
/// every file through it, and a handler that serves stored bytes (an uploaded image) does the
/// same with [`Representation::serve`].
///
/// Every answer carries `ETag`, `Last-Modified` (when known), `Cache-Control`,
/// `Accept-Ranges: bytes` and `X-Content-Type-Options: nosniff` (bytes a client uploaded are
/// never sniffed into HTML). Then, in the order of RFC 9110 section 13.2.2: `If-Match` /
/// `If-Unmodified-Since` that fail give **412**, `If-None-Match` / `If-Modified-Since` that
/// match give **304** (no body). A `GET` with one `Range` (and an `If-Range` that still names
/// this representation) gives **206** with `Content-Range` and exactly those bytes; a range
/// starting past the end (or `bytes=-0`) gives **416** with `Content-Range: bytes */<size>`;
/// several ranges, or a `Range` that does not parse, are answered with the whole (200), as RFC
/// 9110 section 14.2 allows.
///
/// ```
/// use framework::conditional::{Representation, strong_etag};
/// use framework::testing::TestClient;
/// use framework::{App, Context, Result};
/// use http::HeaderValue;
///
/// async fn logo(ctx: &mut Context) -> Result {
///     let bytes = framework::body::Bytes::from_static(b"0123456789");
///     let representation = Representation {
///         content_type: HeaderValue::from_static("image/png"),
///         size: bytes.len() as u64,
///         etag: strong_etag(bytes.len() as u64, &[7; 32]),
///         last_modified: None,
///         cache_control: HeaderValue::from_static("public, max-age=60"),
///         content_encoding: None,
///     };
///     representation.serve(ctx, bytes, "logo")?;
///     Ok(())
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let client = TestClient::new(App::new().get("/logo", logo).build().unwrap());
/// let res = client.get("/logo").header("range", "bytes=2-4").send().await;
/// assert_eq!(res.status, 206);
/// assert_eq!(res.text(), "234");
/// let etag = res.header("etag").unwrap().to_owned();
/// let res = client.get("/logo").header("if-none-match", &etag).send().await;
/// assert_eq!(res.status, 304);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Representation {
    /// Its `Content-Type`.
    pub content_type: HeaderValue,
    /// Its full length in bytes.
    pub size: u64,
    /// Its `ETag`. `If-Range` and `If-Match` only ever match a strong one.
    pub etag: HeaderValue,
    /// Its `Last-Modified`, when known (sent, and compared with the date preconditions).
    pub last_modified: Option<SystemTime>,
    /// Its `Cache-Control`.
    pub cache_control: HeaderValue,
    /// Its `Content-Encoding`, for bytes stored encoded (a precompressed file).
    pub content_encoding: Option<HeaderValue>,
}

/// The bytes of a [`Representation`] an answer carries: `start..start + len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    /// The first byte's offset.
    pub start: u64,
    /// How many bytes.
    pub len: u64,
}

impl Representation {
    /// Writes the headers and status of the answer to `ctx`'s request (see the type's doc)
    /// and says which bytes the body must be: `Ok(None)` for a 304 (no body), else the whole
    /// representation (200) or one range of it (206). A 412 or 416 is an error of `category`
    /// (the component answering).
    pub fn answer(
        &self,
        ctx: &mut Context,
        category: &'static str,
    ) -> Result<Option<ByteRange>, HttpError> {
        let headers = ctx.response_headers_mut();
        headers.insert(ETAG, self.etag.clone());
        if let Some(time) = self.last_modified
            && let Ok(value) = HeaderValue::try_from(httpdate::fmt_http_date(time))
        {
            headers.insert(LAST_MODIFIED, value);
        }
        headers.insert(CACHE_CONTROL, self.cache_control.clone());
        headers.insert(ACCEPT_RANGES, HeaderValue::from_static("bytes"));
        headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));

        let etag = self.etag.to_str().ok();
        match evaluate(ctx.method(), ctx.headers(), etag, self.last_modified) {
            Precondition::Proceed => {}
            Precondition::NotModified => {
                ctx.extensions_mut().insert(Represents {
                    content_type: Some(self.content_type.clone()),
                    length: self.size,
                });
                ctx.set_status(StatusCode::NOT_MODIFIED);
                return Ok(None);
            }
            Precondition::Failed => {
                return Err(HttpError::with(
                    StatusCode::PRECONDITION_FAILED,
                    category,
                    "precondition failed",
                ));
            }
        }

        let headers = ctx.response_headers_mut();
        headers.insert(CONTENT_TYPE, self.content_type.clone());
        if let Some(encoding) = &self.content_encoding {
            headers.insert(CONTENT_ENCODING, encoding.clone());
        }
        let whole = ByteRange {
            start: 0,
            len: self.size,
        };
        let range = ctx
            .headers()
            .get(RANGE)
            .filter(|_| *ctx.method() == Method::GET)
            .filter(|_| if_range_allows(ctx.headers(), etag, self.last_modified))
            .map(|range| single_range(range.to_str().unwrap_or(""), self.size));
        match range {
            None | Some(RangeOutcome::Whole) => {
                ctx.set_status(StatusCode::OK);
                Ok(Some(whole))
            }
            Some(RangeOutcome::Part(first, last)) => {
                ctx.extensions_mut().insert(Represents {
                    content_type: Some(self.content_type.clone()),
                    length: self.size,
                });
                let value = format!("bytes {first}-{last}/{}", self.size);
                ctx.set_header(CONTENT_RANGE, digits_value(value));
                ctx.set_status(StatusCode::PARTIAL_CONTENT);
                Ok(Some(ByteRange {
                    start: first,
                    len: last - first + 1,
                }))
            }
            Some(RangeOutcome::Unsatisfiable) => {
                let value = format!("bytes */{}", self.size);
                ctx.set_header(CONTENT_RANGE, digits_value(value));
                Err(HttpError::with(
                    StatusCode::RANGE_NOT_SATISFIABLE,
                    category,
                    "range not satisfiable",
                ))
            }
        }
    }

    /// [`Representation::answer`] with `body` as the representation's bytes (`size` must be
    /// its length): the answer's body is set to the part it asks for, a slice of `body` (no
    /// copy).
    pub fn serve(
        &self,
        ctx: &mut Context,
        body: Bytes,
        category: &'static str,
    ) -> Result<(), HttpError> {
        if let Some(ByteRange { start, len }) = self.answer(ctx, category)? {
            // `answer` keeps `start + len <= size`; a `size` larger than `body` is clamped.
            let mut body = body;
            let end = usize::try_from(start.saturating_add(len)).unwrap_or(usize::MAX);
            body.truncate(end);
            body.advance(usize::try_from(start).unwrap_or(usize::MAX).min(body.len()));
            ctx.body_buffer = Some(body);
        }
        Ok(())
    }
}

/// Digits, letters, `-`, `/`, `*` and spaces only: always a valid header value.
fn digits_value(value: String) -> HeaderValue {
    HeaderValue::try_from(value).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// How a `Range` header applies to a representation of `size` bytes.
#[derive(Debug, PartialEq, Eq)]
enum RangeOutcome {
    /// Ignore it: send the whole (several ranges, or a header that does not parse).
    Whole,
    /// Send bytes `first..=last`.
    Part(u64, u64),
    /// 416.
    Unsatisfiable,
}

/// Longer `Range` headers are ignored unparsed: no client needs hundreds of ranges, and
/// parsing them is work an attacker chooses.
const MAX_RANGE_HEADER: usize = 1024;

fn single_range(value: &str, size: u64) -> RangeOutcome {
    if value.len() > MAX_RANGE_HEADER {
        return RangeOutcome::Whole;
    }
    let parsed = match http_range_header::parse_range_header(value) {
        Ok(parsed) => parsed,
        // `bytes=-0` is well-formed but asks for nothing (RFC 9110 section 14.1.3).
        Err(RangeUnsatisfiableError::ZeroSuffix) => return RangeOutcome::Unsatisfiable,
        Err(_) => return RangeOutcome::Whole,
    };
    let [range] = parsed.ranges.as_slice() else {
        return RangeOutcome::Whole;
    };
    match (range.start, range.end) {
        (StartPosition::Index(first), end) => {
            let last = match end {
                EndPosition::Index(last) if last < first => return RangeOutcome::Whole,
                EndPosition::Index(last) => last,
                EndPosition::LastByte => u64::MAX,
            };
            if first >= size {
                return RangeOutcome::Unsatisfiable;
            }
            RangeOutcome::Part(first, last.min(size - 1))
        }
        // A suffix longer than the representation means all of it (RFC 9110 section 14.1.2).
        (StartPosition::FromLast(n), _) if size > 0 => {
            RangeOutcome::Part(size.saturating_sub(n), size - 1)
        }
        (StartPosition::FromLast(_), _) => RangeOutcome::Unsatisfiable,
    }
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
    list.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .any(|candidate| {
            if strong {
                strong_eq(candidate, etag)
            } else {
                weak_eq(candidate, etag)
            }
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
    fn ranges() {
        use RangeOutcome::*;
        for (value, expected) in [
            ("bytes=0-99", Part(0, 99)),
            ("bytes=100-", Part(100, 999)),
            ("bytes=-500", Part(500, 999)),
            ("bytes=-5000", Part(0, 999)),
            ("bytes=990-2000", Part(990, 999)),
            ("bytes=0-18446744073709551615", Part(0, 999)),
            ("bytes=999-999", Part(999, 999)),
            ("bytes=1000-", Unsatisfiable),
            ("bytes=5000-6000", Unsatisfiable),
            ("bytes=-0", Unsatisfiable),
            ("", Whole),
            ("bytes=", Whole),
            ("bytes=5-2", Whole),
            ("bytes=0-1,5-6", Whole),
            ("items=0-1", Whole),
            ("bytes=abc", Whole),
            ("bytes=0-18446744073709551616", Whole),
        ] {
            assert_eq!(single_range(value, 1000), expected, "{value}");
        }
        let many = format!("bytes={}", vec!["0-1"; 300].join(","));
        assert_eq!(single_range(&many, 1000), Whole);
        assert_eq!(single_range("bytes=0-", 0), Unsatisfiable);
        assert_eq!(single_range("bytes=-1", 0), Unsatisfiable);
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

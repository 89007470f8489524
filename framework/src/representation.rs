//! Answering a request for a representation whose size and validators are known: the
//! validators and caching headers, the preconditions (RFC 9110 section 13.2.2, through
//! [`conditional`]), `Range` and `If-Range`, and the status; a file's `Content-Type` by its
//! extension and its weak entity tag. Static serve and the file replies
//! ([`NamedFile`](crate::reply::NamedFile), [`Attachment`](crate::reply::Attachment)) answer
//! through it, so a file is answered the same way whichever sends it.

use std::borrow::Cow;
use std::time::{SystemTime, UNIX_EPOCH};

use http::header::{
    ACCEPT_RANGES, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_RANGE, CONTENT_TYPE, ETAG, HeaderValue,
    LAST_MODIFIED, RANGE, X_CONTENT_TYPE_OPTIONS,
};
use http::{Method, StatusCode};
use http_range_header::{EndPosition, RangeUnsatisfiableError, StartPosition};

use crate::conditional::{self, Precondition, Represents};
use crate::context::Context;
use crate::error::{HttpError, Result};

/// What is answered about: the whole representation, before any `Range`. A handler that
/// serves stored bytes (an uploaded image) answers with [`Representation::serve`], the way
/// static serve and the file replies answer a file.
///
/// ```
/// use framework::conditional::strong_etag;
/// use framework::representation::Representation;
/// use framework::{Context, Result};
/// use http::HeaderValue;
///
/// async fn logo(ctx: &mut Context) -> Result {
///     let bytes = bytes::Bytes::from_static(b"\x89PNG...");
///     let digest: [u8; 32] = [7; 32]; // the bytes' SHA-256, computed when they were stored
///     Representation {
///         size: bytes.len() as u64,
///         etag: strong_etag(bytes.len() as u64, &digest),
///         last_modified: None,
///         content_type: HeaderValue::from_static("image/png"),
///         encoding: None,
///         cache_control: Some(HeaderValue::from_static("public, max-age=60")),
///     }
///     .serve(ctx, bytes, "logo")
/// }
/// # let _ = logo;
/// ```
pub struct Representation {
    /// Its length in bytes.
    pub size: u64,
    /// Its entity tag: `If-Range` and `If-Match` only ever match a strong one.
    pub etag: HeaderValue,
    /// Sent as `Last-Modified` and compared with the date preconditions, when known.
    pub last_modified: Option<SystemTime>,
    /// Its media type.
    pub content_type: HeaderValue,
    /// The `Content-Encoding` of bytes stored encoded (a precompressed variant).
    pub encoding: Option<&'static str>,
    /// `Cache-Control` to set; `None` leaves the response's as it is.
    pub cache_control: Option<HeaderValue>,
}

impl Representation {
    /// [`answer`] with `body` as the representation's bytes (`size` must be its length): the
    /// response's body is the part the answer asks for, a slice of `body` (no copy), or none
    /// for a 304. A 412 or 416 is an error of `category`.
    pub fn serve(self, ctx: &mut Context, body: bytes::Bytes, category: &'static str) -> Result {
        match answer(ctx, self, category)? {
            Answer::NotModified => Ok(()),
            Answer::Bytes { start, len } => {
                let start = usize::try_from(start).unwrap_or(usize::MAX).min(body.len());
                let end = usize::try_from(len)
                    .map_or(body.len(), |len| start.saturating_add(len))
                    .min(body.len());
                let mut part = body;
                part.truncate(end);
                drop(part.split_to(start));
                ctx.body_mut().set_bytes(part);
                Ok(())
            }
        }
    }
}

/// What is left to send once [`answer`] has set the headers and the status.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// 304: no body.
    NotModified,
    /// `len` bytes from `start`: the whole representation (200) or one range of it (206).
    Bytes {
        /// The first byte's offset.
        start: u64,
        /// How many bytes.
        len: u64,
    },
}

/// Sets the representation's headers (`ETag`, `Last-Modified`, `Cache-Control`,
/// `Accept-Ranges: bytes`, `X-Content-Type-Options: nosniff`, and unless the answer is 304
/// `Content-Type` and `Content-Encoding`), evaluates the preconditions, then a `Range` on a
/// `GET` (when `If-Range` allows it), and sets the status. A failed precondition is 412 and a
/// range past the end 416 (with `Content-Range: bytes */<size>`), errors of `category`.
pub fn answer(
    ctx: &mut Context,
    representation: Representation,
    category: &'static str,
) -> Result<Answer> {
    let Representation {
        size,
        etag,
        last_modified,
        content_type,
        encoding,
        cache_control,
    } = representation;
    let headers = ctx.response_headers_mut();
    headers.insert(ETAG, etag.clone());
    if let Some(time) = last_modified
        && let Ok(value) = HeaderValue::try_from(httpdate::fmt_http_date(time))
    {
        headers.insert(LAST_MODIFIED, value);
    }
    if let Some(cache_control) = cache_control {
        headers.insert(CACHE_CONTROL, cache_control);
    }
    headers.insert(ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));

    let etag_str = etag.to_str().ok();
    match conditional::evaluate(ctx.method(), ctx.request_headers(), etag_str, last_modified) {
        Precondition::Proceed => {}
        Precondition::NotModified => {
            ctx.extensions_mut().insert(Represents {
                content_type: Some(content_type),
                length: size,
            });
            ctx.set_status(StatusCode::NOT_MODIFIED);
            return Ok(Answer::NotModified);
        }
        Precondition::Failed => {
            return Err(HttpError::with(
                StatusCode::PRECONDITION_FAILED,
                category,
                "precondition failed",
            )
            .into());
        }
    }

    let headers = ctx.response_headers_mut();
    headers.insert(CONTENT_TYPE, content_type);
    if let Some(encoding) = encoding {
        headers.insert(CONTENT_ENCODING, HeaderValue::from_static(encoding));
    }
    let mut status = StatusCode::OK;
    let (mut start, mut len) = (0, size);
    if *ctx.method() == Method::GET
        && let Some(range) = ctx.request_headers().get(RANGE)
        && conditional::if_range_allows(ctx.request_headers(), etag_str, last_modified)
    {
        match single_range(range.to_str().unwrap_or(""), size) {
            RangeOutcome::Whole => {}
            RangeOutcome::Part(first, last) => {
                status = StatusCode::PARTIAL_CONTENT;
                let content_type = ctx.response_headers().get(CONTENT_TYPE).cloned();
                ctx.extensions_mut().insert(Represents {
                    content_type,
                    length: size,
                });
                (start, len) = (first, last - first + 1);
                let value = format!("bytes {first}-{last}/{size}");
                ctx.set_response_header(CONTENT_RANGE, header_value(value));
            }
            RangeOutcome::Unsatisfiable => {
                ctx.set_response_header(CONTENT_RANGE, header_value(format!("bytes */{size}")));
                return Err(HttpError::with(
                    StatusCode::RANGE_NOT_SATISFIABLE,
                    category,
                    "range not satisfiable",
                )
                .into());
            }
        }
    }
    ctx.set_status(status);
    Ok(Answer::Bytes { start, len })
}

/// How a `Range` header applies to a file of `size` bytes.
#[derive(Debug, PartialEq, Eq)]
enum RangeOutcome {
    /// Ignore it: send the whole file (several ranges, or a header that does not parse).
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
        // A suffix longer than the file means the whole file (RFC 9110 section 14.1.2).
        (StartPosition::FromLast(n), _) if size > 0 => {
            RangeOutcome::Part(size.saturating_sub(n), size - 1)
        }
        (StartPosition::FromLast(_), _) => RangeOutcome::Unsatisfiable,
    }
}

/// Digits, letters, `-`, `/` and `*` only: always a valid header value.
pub(crate) fn header_value(value: String) -> HeaderValue {
    HeaderValue::try_from(value).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// The `Content-Type` of a file named `path`, by its extension (`mime_guess`); text types get
/// `charset=utf-8`, an unknown extension is `application/octet-stream`.
pub(crate) fn content_type(path: &str) -> HeaderValue {
    let Some(mime) = mime_guess::from_path(path).first_raw() else {
        return crate::header::OCTET_STREAM;
    };
    let text = mime.starts_with("text/") || mime.contains("javascript");
    let value: Cow<'static, str> = if text {
        Cow::Owned(format!("{mime}; charset=utf-8"))
    } else {
        Cow::Borrowed(mime)
    };
    match value {
        Cow::Borrowed(s) => HeaderValue::from_static(s),
        Cow::Owned(s) => header_value(s),
    }
}

/// The weak entity tag of a file of `size` bytes modified at `modified`:
/// `W/"<size hex>-<mtime seconds hex>"`.
pub(crate) fn weak_etag(size: u64, modified: SystemTime) -> HeaderValue {
    let secs = modified
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    header_value(format!("W/\"{size:x}-{secs:x}\""))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn content_types() {
        assert_eq!(content_type("a/b.html"), "text/html; charset=utf-8");
        assert_eq!(content_type("x.js"), "text/javascript; charset=utf-8");
        assert_eq!(content_type("x.png"), "image/png");
        assert_eq!(content_type("x.unknownext"), "application/octet-stream");
    }
}

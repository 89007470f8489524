//! The header names and values the framework sets. The parsing helpers shared by every
//! component live in the rooms of what they read (`Cache-Control` in `cache_control`, media
//! types in `media_type`; `Accept-Encoding` is [`negotiation`](crate::negotiation)'s, request
//! ids are `ids`', the compression policy is the compress middleware's); they are internal,
//! not part of the API.

use http::header::{self, HeaderMap, HeaderName, HeaderValue};

/// `X-Request-Id`.
pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
/// `X-Forwarded-For`.
pub const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
/// `X-Real-Ip`.
pub const X_REAL_IP: HeaderName = HeaderName::from_static("x-real-ip");

/// `application/json; charset=utf-8`.
pub const JSON_UTF8: HeaderValue = HeaderValue::from_static("application/json; charset=utf-8");
/// `text/plain; charset=utf-8`.
pub const TEXT_UTF8: HeaderValue = HeaderValue::from_static("text/plain; charset=utf-8");
/// `application/octet-stream`.
pub const OCTET_STREAM: HeaderValue = HeaderValue::from_static("application/octet-stream");

pub(crate) mod cache_control;
pub(crate) mod media_type;

#[cfg(feature = "static-serve")]
pub(crate) use cache_control::public_cache_control;
pub(crate) use cache_control::{cache_directive_seconds, has_cache_directive};
pub(crate) use media_type::{accepts_json, is_form_media_type, is_json_media_type, media_type};

/// Whether `headers` holds any of `names`, by one scan of its entries: a request or response
/// carries few headers, and comparing a standard name costs less than hashing it for a lookup
/// (`contains_key`), the more so when several names are asked for at once.
#[inline]
pub(crate) fn has_any(headers: &HeaderMap, names: &[HeaderName]) -> bool {
    headers.keys().any(|key| names.contains(key))
}

/// Adds `name` to the `Vary` of a response unless it is there already (any case, in any of
/// the `Vary` lines, or `*`).
pub(crate) fn add_vary(headers: &mut HeaderMap, name: &'static str) {
    let present = headers
        .get_all(http::header::VARY)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| {
            let v = v.trim();
            v == "*" || v.eq_ignore_ascii_case(name)
        });
    if !present {
        headers.append(http::header::VARY, HeaderValue::from_static(name));
    }
}

/// The value of cookie `name` in the request's `Cookie` headers (RFC 6265 section 5.4 form:
/// `a=1; b=2`), as sent (not percent-decoded), without the double quotes around it if it has
/// them. Parsed by the `cookie` crate, as the cookie jar ([`crate::cookies`]) is; this reads
/// one cookie without making a jar. The headers are scanned rather than looked up, as in
/// [`has_any`].
pub(crate) fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    for (key, value) in headers {
        if *key != header::COOKIE {
            continue;
        }
        let Ok(value) = value.to_str() else {
            continue;
        };
        for pair in ::cookie::Cookie::split_parse(value).flatten() {
            if pair.name_raw() == Some(name) {
                let value = pair.value_raw()?;
                return Some(
                    value
                        .strip_prefix('"')
                        .and_then(|v| v.strip_suffix('"'))
                        .unwrap_or(value),
                );
            }
        }
    }
    None
}

/// The content codings named in `Content-Encoding`, lowercased, outermost last.
pub(crate) fn content_encodings(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::CONTENT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|c| c.trim().to_ascii_lowercase())
        .filter(|c| !c.is_empty() && c != "identity")
        .collect()
}

#[cfg(test)]
mod tests;

//! The header names and values the framework sets. The parsing helpers beside them (media
//! types, `Accept-Encoding`, cookies, request ids) are shared by every component so none
//! re-implements header parsing; they are internal, not part of the API.

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use rand::Rng;

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

/// A client-sent request id is kept when it is 1-128 characters of letters, digits, `-`, `_`,
/// `.` or `:`; anything else is replaced, so ids are safe to log and echo.
#[doc(hidden)]
pub fn is_valid_request_id(id: &[u8]) -> bool {
    (1..=128).contains(&id.len())
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

/// 128 bits as 22 base64url characters without padding (RFC 4648 section 5): session ids and
/// ETag digests.
#[doc(hidden)]
pub fn base64url_128(bits: [u8; 16]) -> [u8; 22] {
    use base64::Engine;
    let mut out = [0u8; 22];
    // 16 bytes are exactly 22 characters: the slice always fits.
    let _ = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode_slice(bits, &mut out);
    out
}

/// 128 bits as 32 lowercase hex characters: request ids and lock tokens.
#[doc(hidden)]
pub fn hex_128(bits: [u8; 16]) -> [u8; 32] {
    let mut out = [0u8; 32];
    // 16 bytes are exactly 32 digits: the slice always fits.
    let _ = hex::encode_to_slice(bits, &mut out);
    out
}

/// How many request ids are made at once, into one shared buffer.
const IDS_PER_CHUNK: usize = 256;

thread_local! {
    /// Request ids need to be unique, not secret: a fast generator seeded from the OS per
    /// thread is enough, and costs a fraction of the cryptographic thread RNG. Ids are made
    /// [`IDS_PER_CHUNK`] at a time into one buffer that each id then shares, so a request pays
    /// neither an allocation nor a copy for its id (a chunk lives until its last id is gone:
    /// 8 KiB).
    static REQUEST_IDS: std::cell::RefCell<(rand::rngs::SmallRng, bytes::Bytes)> =
        std::cell::RefCell::new((rand::SeedableRng::from_os_rng(), bytes::Bytes::new()));
}

/// 128 random bits from this thread's id generator (a small fast generator seeded from the
/// OS, the one request ids come from): for ids that must not collide, not for secrets.
#[doc(hidden)]
pub fn random_128() -> u128 {
    REQUEST_IDS.with(|cell| cell.borrow_mut().0.random())
}

/// `N` random bytes from this thread's id generator ([`random_128`]'s), in one draw.
#[doc(hidden)]
pub fn random_bytes<const N: usize>() -> [u8; N] {
    REQUEST_IDS.with(|cell| {
        let mut bytes = [0u8; N];
        rand::RngCore::fill_bytes(&mut cell.borrow_mut().0, &mut bytes);
        bytes
    })
}

/// 128 random bits as 32 lowercase hex characters.
#[doc(hidden)]
pub fn new_request_id() -> HeaderValue {
    REQUEST_IDS.with(|cell| {
        let mut state = cell.borrow_mut();
        let (rng, chunk) = &mut *state;
        if chunk.is_empty() {
            // Each id is made on the stack and appended: zeroing the buffer first would write
            // every byte twice.
            let mut buf = Vec::with_capacity(32 * IDS_PER_CHUNK);
            for _ in 0..IDS_PER_CHUNK {
                let bits: u128 = rng.random();
                buf.extend_from_slice(&hex_128(bits.to_be_bytes()));
            }
            *chunk = bytes::Bytes::from(buf);
        }
        let id = chunk.split_to(32);
        HeaderValue::from_maybe_shared(id).unwrap_or_else(|_| HeaderValue::from_static("0"))
    })
}

/// Whether `headers` holds any of `names`, by one scan of its entries: a request or response
/// carries few headers, and comparing a standard name costs less than hashing it for a lookup
/// (`contains_key`), the more so when several names are asked for at once.
#[inline]
#[doc(hidden)]
pub fn has_any(headers: &HeaderMap, names: &[HeaderName]) -> bool {
    headers.keys().any(|key| names.contains(key))
}

/// Adds `name` to the `Vary` of a response unless it is there already (any case, in any of
/// the `Vary` lines, or `*`).
#[doc(hidden)]
pub fn add_vary(headers: &mut HeaderMap, name: &'static str) {
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

/// `Cache-Control: public, max-age=<secs>` (and `, s-maxage=<secs>` when given): what a
/// response that any cache may keep carries ([`Context::cache_max_age`](crate::Context::cache_max_age),
/// static serve).
pub(crate) fn public_cache_control(
    max_age: std::time::Duration,
    s_max_age: Option<std::time::Duration>,
) -> HeaderValue {
    let value = match s_max_age {
        Some(s) => format!(
            "public, max-age={}, s-maxage={}",
            max_age.as_secs(),
            s.as_secs()
        ),
        None => format!("public, max-age={}", max_age.as_secs()),
    };
    // Digits, commas, `=`, `-` and letters only.
    HeaderValue::try_from(value).unwrap_or_else(|_| unreachable!("always a valid header value"))
}

/// Whether the `Cache-Control` headers of `headers` carry `directive` (e.g. `no-store`), with
/// or without an argument: each value is split at commas, and names compare case-insensitively
/// (RFC 9111 section 5.2). The headers are scanned as in [`has_any`]; nothing is allocated.
#[doc(hidden)]
pub fn has_cache_directive(headers: &HeaderMap, directive: &str) -> bool {
    headers
        .iter()
        .any(|(key, value)| *key == header::CACHE_CONTROL && names_directive(value, directive))
}

/// The seconds `directive` gives in the `Cache-Control` headers of `headers` (`max-age=60`,
/// `s-maxage="5"`): the first occurrence whose argument is a number. Names compare as in
/// [`has_cache_directive`]; nothing is allocated.
pub(crate) fn cache_directive_seconds(headers: &HeaderMap, directive: &str) -> Option<u64> {
    let mut seconds = None;
    headers.iter().any(|(key, value)| {
        *key == header::CACHE_CONTROL
            && each_directive(value, directive, |argument| {
                seconds = std::str::from_utf8(argument?)
                    .ok()?
                    .trim()
                    .trim_matches('"')
                    .parse()
                    .ok();
                seconds
            })
            .is_some()
    });
    seconds
}

/// Whether one `Cache-Control` value carries `directive`; see [`has_cache_directive`].
pub(crate) fn names_directive(value: &HeaderValue, directive: &str) -> bool {
    each_directive(value, directive, |_| Some(())).is_some()
}

/// Calls `found` with the argument (the bytes after `=`, if any) of each occurrence of
/// `directive` in one `Cache-Control` value, until it gives `Some`.
fn each_directive<T>(
    value: &HeaderValue,
    directive: &str,
    mut found: impl FnMut(Option<&[u8]>) -> Option<T>,
) -> Option<T> {
    // On the bytes (a directive name is a token: ASCII, no UTF-8 to check), in a plain loop:
    // iterator adapters (flatten, split into names) cost several times more here.
    let directive = directive.as_bytes();
    // A value that is the directive alone (`no-store`): the common case, without the split.
    if value.as_bytes() == directive {
        return found(None);
    }
    for item in value.as_bytes().split(|&b| b == b',') {
        let Some((name, rest)) = item.trim_ascii_start().split_at_checked(directive.len()) else {
            continue;
        };
        // Lowercase as written nearly always: the exact comparison first.
        if !(name == directive || name.eq_ignore_ascii_case(directive)) {
            continue;
        }
        let argument = match rest.trim_ascii_start() {
            [] => None,
            [b'=', argument @ ..] => Some(argument),
            _ => continue,
        };
        if let Some(result) = found(argument) {
            return Some(result);
        }
    }
    None
}

/// The media type of a `Content-Type` value without parameters, as written. Media types are
/// case-insensitive: compare with `eq_ignore_ascii_case` and the helpers below, which do not
/// allocate.
#[doc(hidden)]
pub fn media_type(value: &str) -> &str {
    // OWS is spaces and tabs (RFC 9110 section 5.6.3); a field value holds no other
    // whitespace a byte-wise trim would take.
    value
        .split_once(';')
        .map_or(value, |(media, _)| media)
        .trim_ascii()
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

fn ends_with_ignore_case(s: &str, suffix: &str) -> bool {
    s.len() >= suffix.len()
        && s.as_bytes()[s.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
}

fn contains_ignore_case(s: &str, needle: &str) -> bool {
    s.as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

fn is_json(mt: &str) -> bool {
    mt.eq_ignore_ascii_case("application/json")
        || (starts_with_ignore_case(mt, "application/") && ends_with_ignore_case(mt, "+json"))
}

/// True for `application/json` and any `application/<x>+json` type.
#[doc(hidden)]
pub fn is_json_media_type(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).is_some_and(|v| {
        // The type as nearly every client writes it, compared before the value is checked
        // for text and taken apart: the body parser asks this twice per JSON request.
        v.as_bytes() == b"application/json" || v.to_str().is_ok_and(|ct| is_json(media_type(ct)))
    })
}

/// True for `application/x-www-form-urlencoded`.
#[doc(hidden)]
pub fn is_form_media_type(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| media_type(ct).eq_ignore_ascii_case("application/x-www-form-urlencoded"))
}

/// True when the `Accept` header asks for JSON (`application/json` or a `+json` type).
#[doc(hidden)]
pub fn accepts_json(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(media_type)
        .any(|mt| is_json(mt) || ends_with_ignore_case(mt, "+json"))
}

/// The value of cookie `name` in the request's `Cookie` headers (RFC 6265 section 5.4 form:
/// `a=1; b=2`), as sent (not percent-decoded), without the double quotes around it if it has
/// them. Parsed by the `cookie` crate, as the cookie jar ([`crate::cookies`]) is; this reads
/// one cookie without making a jar. The headers are scanned rather than looked up, as in
/// [`has_any`].
#[doc(hidden)]
pub fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
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
#[doc(hidden)]
pub fn content_encodings(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::CONTENT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|c| c.trim().to_ascii_lowercase())
        .filter(|c| !c.is_empty() && c != "identity")
        .collect()
}

/// The quality the client's `Accept-Encoding` gives `coding` (RFC 9110 section 12.5.3): its own
/// entry, else the `*` entry, else 0. No header at all also gives 0: a client that did not ask
/// gets no compressed body, whatever the RFC allows.
#[doc(hidden)]
pub fn accept_encoding_q(headers: &HeaderMap, coding: &str) -> f32 {
    let mut wildcard = None;
    for entry in headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
    {
        let mut parts = entry.split(';');
        let name = parts.next().unwrap_or("").trim();
        let q = parts
            .filter_map(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .or_else(|| p.trim().strip_prefix("Q="))
            })
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0)
            .clamp(0.0, 1.0);
        if name.eq_ignore_ascii_case(coding) {
            return q;
        }
        if name == "*" {
            wildcard = Some(q);
        }
    }
    wildcard.unwrap_or(0.0)
}

/// True for media types worth compressing: text, JavaScript, JSON, XML (SVG included), wasm
/// and fonts. Images, video, archives and the like are compressed already. gRPC
/// (`application/grpc`, `application/grpc+json`, …) never is: it compresses each message
/// itself (`grpc-encoding`), and its status travels in trailers that a whole-body encoder
/// would not carry.
#[doc(hidden)]
pub fn is_compressible(content_type: &str) -> bool {
    let mt = media_type(content_type);
    if starts_with_ignore_case(mt, "application/grpc") {
        return false;
    }
    starts_with_ignore_case(mt, "text/")
        || starts_with_ignore_case(mt, "font/")
        || contains_ignore_case(mt, "javascript")
        || contains_ignore_case(mt, "json")
        || contains_ignore_case(mt, "xml")
        || mt.eq_ignore_ascii_case("application/wasm")
        || starts_with_ignore_case(mt, "application/font-")
        || mt.eq_ignore_ascii_case("application/vnd.ms-fontobject")
}

#[cfg(test)]
mod tests;

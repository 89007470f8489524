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
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| (HeaderName::from_static(k), HeaderValue::from_static(v)))
            .collect()
    }

    #[test]
    fn base64url_128_writes_what_the_base64_crate_writes() {
        use base64::Engine;
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        use rand::{Rng, SeedableRng};
        let mut cases = vec![[0u8; 16], [0xff; 16], *b"0123456789abcdef"];
        // Every value of the last byte (its two characters) and of one byte in each 3-byte
        // group, at each of the three positions across the groups.
        cases.extend((0..=255u8).map(|b| {
            let mut bits = [0u8; 16];
            for (group, position) in [(0, 0), (1, 1), (2, 2), (3, 0), (4, 1)] {
                bits[3 * group + position] = b.rotate_left(group as u32);
            }
            bits[15] = b;
            bits
        }));
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        cases.extend((0..1000).map(|_| rng.random::<[u8; 16]>()));
        for bits in cases {
            assert_eq!(
                base64url_128(bits).as_slice(),
                URL_SAFE_NO_PAD.encode(bits).as_bytes(),
                "{bits:?}"
            );
        }
    }

    /// Every byte value at every position, and random ones, against the `hex` crate.
    #[test]
    fn hex_128_is_lowercase_hex() {
        use rand::{Rng, SeedableRng};
        let mut cases: Vec<[u8; 16]> = (0..=255u8)
            .map(|b| std::array::from_fn(|i| b.wrapping_add(i as u8)))
            .collect();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        cases.extend((0..1000).map(|_| rng.random::<[u8; 16]>()));
        for bits in cases {
            assert_eq!(hex_128(bits).as_slice(), hex::encode(bits).as_bytes());
        }
    }

    #[test]
    fn cache_directives_by_name_in_any_value() {
        let has = |values: &[&'static str], directive| {
            let mut headers = HeaderMap::new();
            for v in values {
                headers.append(header::CACHE_CONTROL, HeaderValue::from_static(v));
            }
            has_cache_directive(&headers, directive)
        };
        assert!(has(&["no-store"], "no-store"));
        assert!(has(&["private, No-Store"], "no-store"));
        assert!(has(&["max-age=60", " no-store "], "no-store"));
        assert!(has(&["public, max-age=60"], "max-age"));
        assert!(!has(&[], "no-store"));
        assert!(!has(&["no-cache"], "no-store"));
        assert!(!has(&["no-storeage"], "no-store"));
        assert!(!has(&["max-age=60"], "no-store"));
        assert!(!has(&["no-stor"], "no-store"));
        assert!(!has(&["no-store-x, public"], "no-store"));
        assert!(has(&["private=\"x\", no-store"], "no-store"));
        assert!(has(&["max-age=60,no-store"], "no-store"));
        // The directive alone, as written and in other cases.
        assert!(has(&["No-Store"], "no-store"));
        assert!(has(&["public", "no-store"], "no-store"));
        let seconds = |values: &[&'static str], directive| {
            let mut headers = HeaderMap::new();
            for v in values {
                headers.append(header::CACHE_CONTROL, HeaderValue::from_static(v));
            }
            cache_directive_seconds(&headers, directive)
        };
        assert_eq!(seconds(&["public, max-age=60"], "max-age"), Some(60));
        assert_eq!(seconds(&["s-maxage=\"5\""], "s-maxage"), Some(5));
        assert_eq!(seconds(&["Max-Age = 7"], "max-age"), Some(7));
        assert_eq!(seconds(&["max-age=x"], "max-age"), None);
        assert_eq!(seconds(&["max-age=x", "max-age=9"], "max-age"), Some(9));
        assert_eq!(seconds(&["no-store"], "max-age"), None);
        assert_eq!(seconds(&["max-age"], "max-age"), None);
        assert_eq!(seconds(&["max-age", "max-age=3"], "max-age"), Some(3));
        assert_eq!(seconds(&["s-maxage=5"], "max-age"), None);
    }

    #[test]
    fn request_ids() {
        assert!(is_valid_request_id(b"abc-123"));
        assert!(!is_valid_request_id(b""));
        assert!(!is_valid_request_id(b"a b"));
        assert!(!is_valid_request_id(&[b'a'; 129]));
        let id = new_request_id();
        assert_eq!(id.len(), 32);
        assert_ne!(id, new_request_id());
        // Across chunks: every id of several chunks is well-formed and distinct.
        let ids: std::collections::HashSet<HeaderValue> =
            (0..3 * IDS_PER_CHUNK).map(|_| new_request_id()).collect();
        assert_eq!(ids.len(), 3 * IDS_PER_CHUNK);
        assert!(ids.iter().all(|id| {
            id.len() == 32
                && id
                    .as_bytes()
                    .iter()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        }));
    }

    #[test]
    fn media_types() {
        assert!(is_json_media_type(&headers(&[(
            "content-type",
            "Application/JSON; charset=utf-8"
        )])));
        assert!(is_json_media_type(&headers(&[(
            "content-type",
            "application/problem+json"
        )])));
        assert!(!is_json_media_type(&headers(&[(
            "content-type",
            "text/json"
        )])));
        assert!(accepts_json(&headers(&[(
            "accept",
            "text/html, application/json;q=0.9"
        )])));
        assert!(!accepts_json(&headers(&[("accept", "*/*")])));
    }

    #[test]
    fn accept_encoding() {
        let h = headers(&[("accept-encoding", "gzip;q=0.5, br, *;q=0.1")]);
        assert_eq!(accept_encoding_q(&h, "br"), 1.0);
        assert_eq!(accept_encoding_q(&h, "gzip"), 0.5);
        assert_eq!(accept_encoding_q(&h, "zstd"), 0.1);
        let h = headers(&[("accept-encoding", "br;q=0, gzip")]);
        assert_eq!(accept_encoding_q(&h, "br"), 0.0);
        assert_eq!(accept_encoding_q(&HeaderMap::new(), "gzip"), 0.0);
        let h = headers(&[("accept-encoding", "GZIP; Q=0.8")]);
        assert_eq!(accept_encoding_q(&h, "gzip"), 0.8);
    }

    #[test]
    fn compressible_types() {
        for ok in [
            "text/html; charset=utf-8",
            "application/json",
            "image/svg+xml",
            "application/javascript",
            "font/woff2",
            "application/wasm",
        ] {
            assert!(is_compressible(ok), "{ok}");
        }
        for no in [
            "image/png",
            "application/zip",
            "video/mp4",
            "application/octet-stream",
            "application/grpc",
            "application/grpc+json",
            "application/grpc-web+json",
        ] {
            assert!(!is_compressible(no), "{no}");
        }
    }

    #[test]
    fn cookies() {
        let h = headers(&[("cookie", "a=1; sid=xyz; b=2")]);
        assert_eq!(cookie(&h, "sid"), Some("xyz"));
        assert_eq!(cookie(&h, "c"), None);
        assert_eq!(cookie(&headers(&[("host", "h")]), "sid"), None);
        // Several Cookie headers, other headers between them, a name that only starts like
        // the one asked for, a quoted value, `=` inside a value, stray spaces and semicolons.
        let h = headers(&[
            ("cookie", "sidx=1;;  "),
            ("host", "h"),
            ("cookie", " t=a=b ; sid=\"q\" "),
        ]);
        assert_eq!(cookie(&h, "sid"), Some("q"));
        assert_eq!(cookie(&h, "t"), Some("a=b"));
        assert_eq!(cookie(&h, "sidx"), Some("1"));
    }
}

//! `Cache-Control`: the value the framework writes, and the directives it reads.

use http::header::{self, HeaderMap, HeaderValue};

/// `Cache-Control: public, max-age=<secs>` (and `, s-maxage=<secs>` when given): what a
/// response that any cache may keep carries (static serve's).
#[cfg(feature = "static-serve")]
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
pub(crate) fn has_cache_directive(headers: &HeaderMap, directive: &str) -> bool {
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

//! Hop-by-hop headers (RFC 9110 section 7.6.1): they describe one connection and must not be
//! forwarded, in either direction.

use http::header::{
    CONNECTION, HeaderMap, HeaderName, PROXY_AUTHENTICATE, PROXY_AUTHORIZATION, TE, TRAILER,
    TRANSFER_ENCODING, UPGRADE,
};

const KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");
const PROXY_CONNECTION: HeaderName = HeaderName::from_static("proxy-connection");

/// True when `headers` ask to switch protocols: a `Connection` header naming `upgrade`
/// (compared case-insensitively, in any of the `Connection` headers) and an `Upgrade` header.
pub(crate) fn wants_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(UPGRADE)
        && connection_tokens(headers).any(|t| t.eq_ignore_ascii_case("upgrade"))
}

fn connection_tokens(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// Removes the hop-by-hop headers: those named in every `Connection` header, then the fixed
/// list. With `keep_upgrade`, `Connection: upgrade` and `Upgrade` stay (a WebSocket handshake
/// is forwarded end to end).
pub(crate) fn remove_hop_by_hop(headers: &mut HeaderMap, keep_upgrade: bool) {
    let named: Vec<HeaderName> = connection_tokens(headers)
        .filter_map(|t| HeaderName::from_bytes(t.as_bytes()).ok())
        .collect();
    for name in named {
        if keep_upgrade && name == UPGRADE {
            continue;
        }
        headers.remove(&name);
    }
    for name in [
        CONNECTION,
        KEEP_ALIVE,
        PROXY_CONNECTION,
        PROXY_AUTHENTICATE,
        PROXY_AUTHORIZATION,
        TE,
        TRAILER,
        TRANSFER_ENCODING,
        UPGRADE,
    ] {
        if keep_upgrade && (name == UPGRADE || name == CONNECTION) {
            continue;
        }
        headers.remove(name);
    }
    if keep_upgrade {
        headers.insert(CONNECTION, http::HeaderValue::from_static("upgrade"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn removes_every_connection_named_header() {
        let mut h = HeaderMap::new();
        h.append(CONNECTION, HeaderValue::from_static("keep-alive, X-A"));
        h.append(CONNECTION, HeaderValue::from_static("x-b"));
        for name in [
            "x-a",
            "x-b",
            "keep-alive",
            "te",
            "trailer",
            "proxy-authorization",
        ] {
            h.insert(HeaderName::from_static(name), HeaderValue::from_static("1"));
        }
        h.append("set-cookie", HeaderValue::from_static("a=1"));
        h.append("set-cookie", HeaderValue::from_static("b=2"));
        h.insert(TRANSFER_ENCODING, HeaderValue::from_static("chunked"));
        remove_hop_by_hop(&mut h, false);
        assert_eq!(h.len(), 2, "{h:?}");
        assert_eq!(h.get_all("set-cookie").iter().count(), 2);
    }

    #[test]
    fn upgrade_is_kept_for_websockets() {
        let mut h = HeaderMap::new();
        h.insert(CONNECTION, HeaderValue::from_static("keep-alive, Upgrade"));
        h.insert(UPGRADE, HeaderValue::from_static("websocket"));
        assert!(wants_upgrade(&h));
        remove_hop_by_hop(&mut h, true);
        assert_eq!(h.get(UPGRADE).unwrap(), "websocket");
        assert_eq!(h.get(CONNECTION).unwrap(), "upgrade");
        let mut h = HeaderMap::new();
        h.insert(UPGRADE, HeaderValue::from_static("websocket"));
        assert!(!wants_upgrade(&h));
    }
}

//! Origins (RFC 6454: scheme, host, port): which ones a component lets in ([`AllowOrigin`],
//! for CORS, CSRF and WebSocket upgrades), and whether an `Origin` header is the request's own.
//!
//! The request's scheme is `https` when [`ClientIpExt::is_https`] says so (TLS here, or a trusted
//! proxy's `X-Forwarded-Proto`), else `http`. Its host and port are those of `Host`
//! (`:authority` over HTTP/2), or of `X-Forwarded-Host` when a trusted proxy sent one
//! ([`App::trusted_proxies`](crate::App::trusted_proxies)); a missing port is the scheme's
//! default (80, 443). Hosts compare ASCII case-insensitively, as DNS names do; nothing else is
//! loosened: no suffix or subdomain matching, and `null` (a sandboxed page, a `file:` URL) is
//! never the request's own.

use std::sync::Arc;

use http::HeaderValue;

use crate::client_ip::ClientIpExt;

/// Which origins a component lets in: the pages that may read responses (CORS), or open a
/// WebSocket. Built with [`any`](Self::any), [`list`](Self::list) or
/// [`predicate`](Self::predicate); what it holds is private, so a new kind of rule is not a
/// breaking change (tower-http's `AllowOrigin` is built the same way).
#[derive(Clone)]
pub struct AllowOrigin(Rule);

#[derive(Clone)]
enum Rule {
    Any,
    List(Vec<HeaderValue>),
    Predicate(Arc<dyn Fn(&str) -> bool + Send + Sync>),
}

impl AllowOrigin {
    /// Any origin: CORS answers with `*` (credentials cannot be allowed then); a WebSocket
    /// upgrade's `Origin` is not checked.
    pub fn any() -> Self {
        AllowOrigin(Rule::Any)
    }

    /// These origins exactly (`https://app.example.com`: scheme, host and port as the browser
    /// sends them in `Origin`, compared byte for byte, so no trailing `/`). One that is not a
    /// valid header value is left out (no browser sends it).
    pub fn list<I, S>(origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        AllowOrigin(Rule::List(
            origins
                .into_iter()
                .filter_map(|o| HeaderValue::from_str(o.as_ref()).ok())
                .collect(),
        ))
    }

    /// The origins `accept` says yes to (e.g. every subdomain of one domain). It sees the
    /// `Origin` header's text, which may be `null` (a sandboxed page or a `file:` URL).
    pub fn predicate(accept: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        AllowOrigin(Rule::Predicate(Arc::new(accept)))
    }

    /// Whether this is [`AllowOrigin::any`].
    pub fn is_any(&self) -> bool {
        matches!(self.0, Rule::Any)
    }

    pub(crate) fn allows(&self, origin: &HeaderValue) -> bool {
        match &self.0 {
            Rule::Any => true,
            Rule::List(list) => list.iter().any(|allowed| allowed == origin),
            Rule::Predicate(accept) => origin.to_str().is_ok_and(|o| accept(o)),
        }
    }
}

/// No origin besides the request's own: an empty [`list`](AllowOrigin::list).
impl Default for AllowOrigin {
    fn default() -> Self {
        AllowOrigin(Rule::List(Vec::new()))
    }
}

impl std::fmt::Debug for AllowOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Rule::Any => f.write_str("AllowOrigin::any()"),
            Rule::List(list) => f.debug_tuple("AllowOrigin::list").field(list).finish(),
            Rule::Predicate(_) => f.write_str("AllowOrigin::predicate(..)"),
        }
    }
}

/// The port a scheme implies when the authority names none.
fn default_port(https: bool) -> u16 {
    if https { 443 } else { 80 }
}

/// Host and port of an authority without user information; `None` when it does not parse.
fn host_and_port(authority: &str, https: bool) -> Option<(String, u16)> {
    if authority.contains('@') {
        return None;
    }
    let authority: http::uri::Authority = authority.parse().ok()?;
    let port = authority.port_u16().unwrap_or(default_port(https));
    Some((authority.host().to_ascii_lowercase(), port))
}

/// The host (and port) the request was made to: `Host`, or a trusted proxy's
/// `X-Forwarded-Host`.
pub(crate) fn own_host(ctx: &crate::Context) -> &str {
    ctx.trusts_proxy()
        .then(|| ctx.request_header("x-forwarded-host"))
        .flatten()
        .and_then(|hosts| hosts.split(',').next())
        .map_or_else(|| ctx.host(), str::trim)
}

/// Whether `origin`, an `Origin` header's value, is the request's own origin (see the
/// [module](self)).
pub(crate) fn is_same_origin(ctx: &crate::Context, origin: &[u8]) -> bool {
    std::str::from_utf8(origin)
        .is_ok_and(|origin| same_origin(origin, ctx.is_https(), own_host(ctx)))
}

/// Whether `origin` is `http(s)://<host>[:port]` for a request made with `https` to `host`.
fn same_origin(origin: &str, https: bool, host: &str) -> bool {
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    let origin_https = if scheme.eq_ignore_ascii_case("https") {
        true
    } else if scheme.eq_ignore_ascii_case("http") {
        false
    } else {
        return false;
    };
    // An origin is scheme and authority only: a path, even `/`, makes it something else.
    if origin_https != https || authority.contains(['/', '?', '#']) {
        return false;
    }
    match (host_and_port(authority, https), host_and_port(host, https)) {
        (Some(theirs), Some(ours)) => theirs == ours,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::same_origin;

    #[test]
    fn the_same_scheme_host_and_port_only() {
        let host = "chat.example:8080";
        for same in [
            "http://chat.example:8080",
            "HTTP://Chat.Example:8080",
            "http://chat.example:08080",
        ] {
            assert!(same_origin(same, false, host), "{same}");
        }
        for other in [
            "https://chat.example:8080",
            "http://chat.example",
            "http://chat.example:8081",
            "http://evil.example:8080",
            "http://chat.example.evil.example:8080",
            "http://evil.chat.example:8080",
            "http://chat.example:8080/",
            "http://user@chat.example:8080",
            "ws://chat.example:8080",
            "null",
            "",
            "chat.example:8080",
        ] {
            assert!(!same_origin(other, false, host), "{other}");
        }
        // The scheme's default port stands for a missing one, on either side.
        assert!(same_origin("http://chat.example:80", false, "chat.example"));
        assert!(same_origin("http://chat.example", false, "chat.example:80"));
        assert!(same_origin("https://chat.example", true, "chat.example"));
        assert!(!same_origin("http://chat.example", true, "chat.example"));
        assert!(same_origin("http://[::1]:3000", false, "[::1]:3000"));
        assert!(!same_origin(
            "http://127.0.0.1.evil.example:3000",
            false,
            "127.0.0.1:3000"
        ));
        // A request without a host has no origin of its own.
        assert!(!same_origin("http://chat.example", false, ""));
    }
}

//! Force HTTPS: a request that reached the app over plain HTTP is answered with a redirect to
//! the same path and query over HTTPS, and the rest of the chain does not run for it.
//!
//! - **Which requests.** Those for which [`ClientIpExt::is_https`] is false: the server's own
//!   TLS ([`App::tls`](crate::App::tls)) makes a request HTTPS, and so does a trusted proxy
//!   ([`App::trusted_proxies`](crate::App::trusted_proxies)) saying `X-Forwarded-Proto:
//!   https`. The same header from a client the app does not trust is ignored, so a plain-HTTP
//!   client cannot talk its way past the redirect; behind a TLS-terminating proxy, name the
//!   proxy as trusted or every request loops back here.
//! - **Where to.** `https://` + the request's host (`Host`, `:authority` over HTTP/2, or a
//!   trusted proxy's `X-Forwarded-Host`) with its port replaced by
//!   [`https_port`](ForceHttps::https_port) (443 by default, then left out of the URL) + the
//!   request's path and query, byte for byte. [`host`](ForceHttps::host) fixes the host
//!   instead, so the redirect never depends on a header the client chose (a request for
//!   another name then lands on the canonical one).
//! - **Which status.** **308 Permanent Redirect** by default, as the issue and salvo's
//!   `ForceHttps` do: the client repeats the method and the body (a `POST` stays a `POST`, which
//!   301 and 302 do not promise) and may remember the move.
//!   [`temporary`](ForceHttps::temporary) answers 307 instead, for a site trying HTTPS out.
//!   Either has an empty body and a `Location`.
//! - **Bad host.** A plain-HTTP request without a host that parses as an authority (none, one
//!   with user information such as `evil@host`, or a malformed one) is answered **400**, category
//!   `framework-force-https`, rather than redirected somewhere made up. Mounted where it
//!   belongs, outside the error handler, the 400 goes out as its message in plain text.
//!
//! Mount it on the app right after the probes ([`health`](super::health)): an orchestrator's
//! plain-HTTP probe is answered, and nothing else (log line, trace, limiter budget) is spent on
//! a request that is only sent elsewhere. A route it must not redirect (an ACME HTTP-01
//! challenge) goes through [`App::use_when`](crate::App::use_when). Once the client is on HTTPS,
//! [`security_headers`](super::security_headers)' HSTS tells the browser to go there directly
//! next time.
//!
//! ```
//! use framework::middleware::force_https::ForceHttps;
//!
//! // Plain HTTP on :8080 answers every request with a redirect to :8443.
//! let app = framework::App::new().use_middleware(ForceHttps::new().https_port(8443));
//! # let _ = app;
//! ```

use http::StatusCode;
use http::uri::Authority;

use crate::IntoReply;
use crate::client_ip::ClientIpExt;
use crate::context::Context;
use crate::error::HttpError;
use crate::handler::{Before, Middleware};
use crate::middleware::ConfigError;
use crate::reply::Redirect;

/// Category of the 400 for a plain-HTTP request without a usable host.
pub const CATEGORY: &str = "framework-force-https";

/// The force-HTTPS middleware: see the [module](self).
#[derive(Clone, Debug)]
pub struct ForceHttps {
    /// `:port` after the host, empty for 443.
    port: String,
    /// The canonical host, when configured (without a port).
    host: Option<String>,
    /// 308, or 307 when temporary.
    permanent: bool,
}

impl Default for ForceHttps {
    fn default() -> Self {
        Self::new()
    }
}

impl ForceHttps {
    /// Redirects to port 443 of the request's host with 308.
    pub fn new() -> Self {
        Self {
            port: String::new(),
            host: None,
            permanent: true,
        }
    }

    /// The port HTTPS is served on; 443 (the default) is left out of the URL.
    pub fn https_port(mut self, port: u16) -> Self {
        self.port = if port == 443 {
            String::new()
        } else {
            format!(":{port}")
        };
        self
    }

    /// Redirects to this host whatever the request names: a DNS name or an IP address
    /// (`[::1]` for IPv6), without a port (that is [`https_port`](Self::https_port)). Refuses
    /// anything else.
    pub fn host(mut self, host: &str) -> Result<Self, ConfigError> {
        let parsed = parse_host(host).filter(|(_, port)| !port);
        let Some((host, _)) = parsed else {
            return Err(ConfigError::new(
                "force https",
                format!("{host:?} is not a host name or address without a port"),
            ));
        };
        self.host = Some(host.to_owned());
        Ok(self)
    }

    /// Answers 307 Temporary Redirect instead of 308: the client does not remember the move.
    pub fn temporary(mut self) -> Self {
        self.permanent = false;
        self
    }

    /// Where a plain-HTTP request is sent, or the 400 when it names no usable host.
    fn target(&self, ctx: &Context) -> Result<Redirect, HttpError> {
        let host = match &self.host {
            Some(host) => host.as_str(),
            None => parse_host(crate::origin::own_host(ctx))
                .map(|(host, _)| host)
                .ok_or_else(|| {
                    HttpError::with(
                        StatusCode::BAD_REQUEST,
                        CATEGORY,
                        "the request names no valid host to redirect to HTTPS",
                    )
                })?,
        };
        // An asterisk-form target (`OPTIONS *`) has no path to keep.
        let path = ctx
            .uri()
            .path_and_query()
            .map(http::uri::PathAndQuery::as_str)
            .filter(|p| p.starts_with('/'))
            .unwrap_or("/");
        let location = format!("https://{host}{}{path}", self.port);
        if self.permanent {
            Redirect::permanent(location)
        } else {
            Redirect::temporary(location)
        }
    }
}

/// The host part of an authority (`name`, `name:port`, `[v6]:port`) and whether it named a
/// port; `None` for one with user information, an empty one, or one that does not parse
/// (a port that is not digits included).
fn parse_host(authority: &str) -> Option<(&str, bool)> {
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let parsed: Authority = authority.parse().ok()?;
    // `Authority::host` is a prefix of the text (brackets of an IPv6 address included); what
    // follows must be `:` and digits, which `Authority` does not insist on.
    let (host, port) = authority.split_at(parsed.host().len());
    let digits = port.strip_prefix(':').unwrap_or(port);
    (port.is_empty() || port.starts_with(':') && digits.bytes().all(|b| b.is_ascii_digit()))
        .then_some((host, !port.is_empty()))
}

impl Middleware for ForceHttps {
    fn before(&self, ctx: &mut Context) -> Before {
        if ctx.is_https() {
            return Before::Pass;
        }
        match self.target(ctx) {
            Ok(redirect) => {
                redirect.into_reply(ctx);
                Before::Answer(Ok(()))
            }
            Err(error) => Before::Answer(Err(error.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_host;

    #[test]
    fn hosts_parse_to_their_host_part() {
        assert_eq!(parse_host("example.com"), Some(("example.com", false)));
        assert_eq!(parse_host("example.com:8080"), Some(("example.com", true)));
        assert_eq!(parse_host("[::1]:80"), Some(("[::1]", true)));
        assert_eq!(parse_host("127.0.0.1"), Some(("127.0.0.1", false)));
        for bad in [
            "",
            "user@example.com",
            "exa mple.com",
            "example.com:port",
            "/path",
        ] {
            assert_eq!(parse_host(bad), None, "{bad:?}");
        }
    }
}

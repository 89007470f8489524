//! Security headers with safe defaults, each set only when the rest of the chain did not set
//! it, so one route (a docs page with its own `Content-Security-Policy`) can differ.
//!
//! | header | on | default |
//! |---|---|---|
//! | `X-Content-Type-Options` | every answer, errors included | `nosniff` |
//! | `Strict-Transport-Security` | every answer to an HTTPS request ([`ClientIpExt::is_https`]): a browser that saw it over plain HTTP must ignore it, and sending it there would only mislead | `max-age=31536000; includeSubDomains` |
//! | `Content-Security-Policy` | pages | `default-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'; object-src 'none'` (no inline script or style, same origin only) |
//! | `Referrer-Policy` | pages | `no-referrer` |
//! | `X-Frame-Options` | pages | `DENY` (older browsers; `frame-ancestors` is the modern form) |
//! | `Cross-Origin-Opener-Policy` | pages | `same-origin` |
//!
//! **Pages** are answers whose `Content-Type` is HTML (`text/html`, `application/xhtml+xml`):
//! the policies govern documents, and a JSON or text answer (which `nosniff` keeps from ever
//! being read as HTML) has no scripts, frames or links for them to govern. Leaving them off API
//! answers keeps those small and cheap: each header is a map insert and ~30-100 bytes on the
//! wire (the cost of the four: BENCHMARKS.md, "Hand-written fast paths").
//! [`SecurityHeadersConfig::pages_only`] `false` puts them on every answer, as helmet does.
//!
//! Each header is a field of [`SecurityHeadersConfig`]: `None` leaves it out. The values are
//! checked once, when the middleware is made.
//!
//! ```
//! use framework::middleware::security_headers::{SecurityHeaders, SecurityHeadersConfig};
//!
//! let headers = SecurityHeaders::new(SecurityHeadersConfig::default()
//!     // Images from one CDN too.
//!     .content_security_policy(Some(
//!         "default-src 'self'; img-src 'self' https://img.example.com; frame-ancestors 'none'"
//!             .into(),
//!     )))
//! .expect("valid header values");
//! let app = framework::App::new().use_middleware(headers);
//! # let _ = app;
//! ```

use http::header::{
    CONTENT_SECURITY_POLICY, CONTENT_TYPE, HeaderName, HeaderValue, REFERRER_POLICY,
    STRICT_TRANSPORT_SECURITY, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};

use crate::client_ip::ClientIpExt;
use crate::context::Context;
use crate::error::Result;
use crate::handler::{Before, Middleware};
use crate::middleware::ConfigError;

/// `Content-Security-Policy` by default: same origin only, no inline script or style, no
/// plugins, no framing.
pub const STRICT_CSP: &str = "default-src 'self'; base-uri 'self'; form-action 'self'; \
                              frame-ancestors 'none'; object-src 'none'";

const CROSS_ORIGIN_OPENER_POLICY: HeaderName =
    HeaderName::from_static("cross-origin-opener-policy");

/// The headers and their values; `None` leaves one out. [`Default`] is the table of the
/// [module](self).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SecurityHeadersConfig {
    /// `Content-Security-Policy`.
    pub content_security_policy: Option<String>,
    /// `X-Content-Type-Options: nosniff` when true.
    pub nosniff: bool,
    /// `Referrer-Policy`.
    pub referrer_policy: Option<String>,
    /// `X-Frame-Options`.
    pub frame_options: Option<String>,
    /// `Cross-Origin-Opener-Policy`.
    pub cross_origin_opener_policy: Option<String>,
    /// `Strict-Transport-Security`, on HTTPS answers only.
    pub strict_transport_security: Option<String>,
    /// The page policies (CSP, referrer, framing, opener) on HTML answers only. Default true.
    pub pages_only: bool,
}

crate::config::setters!(SecurityHeadersConfig {
    content_security_policy: Option<String>,
    nosniff: bool,
    referrer_policy: Option<String>,
    frame_options: Option<String>,
    cross_origin_opener_policy: Option<String>,
    strict_transport_security: Option<String>,
    pages_only: bool,
});

impl Default for SecurityHeadersConfig {
    fn default() -> Self {
        Self {
            content_security_policy: Some(STRICT_CSP.to_owned()),
            nosniff: true,
            referrer_policy: Some("no-referrer".to_owned()),
            frame_options: Some("DENY".to_owned()),
            cross_origin_opener_policy: Some("same-origin".to_owned()),
            strict_transport_security: Some("max-age=31536000; includeSubDomains".to_owned()),
            pages_only: true,
        }
    }
}

/// The security headers middleware: see the [module](self).
pub struct SecurityHeaders {
    /// `nosniff`, on every answer where absent.
    nosniff: Option<HeaderValue>,
    /// The page policies, on pages (or every answer) where absent.
    page: Vec<(HeaderName, HeaderValue)>,
    pages_only: bool,
    /// Set on HTTPS answers where absent.
    hsts: Option<HeaderValue>,
}

/// Whether a `Content-Type` is an HTML document: its media type, before any parameter, is
/// `text/html` or `application/xhtml+xml` (any case). A look at the value's first bytes, as
/// this runs for every answer.
fn is_page(content_type: Option<&HeaderValue>) -> bool {
    let Some(value) = content_type else {
        return false;
    };
    let bytes = value.as_bytes();
    let is = |media: &[u8]| {
        bytes.len() >= media.len()
            && bytes[..media.len()].eq_ignore_ascii_case(media)
            && matches!(bytes.get(media.len()), None | Some(b';' | b' ' | b'\t'))
    };
    is(b"text/html") || is(b"application/xhtml+xml")
}

impl Default for SecurityHeaders {
    fn default() -> Self {
        Self::new(SecurityHeadersConfig::default()).unwrap_or_else(|_| unreachable!("valid"))
    }
}

impl SecurityHeaders {
    /// The middleware for `config`; refuses a value that cannot be a header value (a line
    /// break, a control character).
    pub fn new(config: SecurityHeadersConfig) -> std::result::Result<Self, ConfigError> {
        let value = |name: &HeaderName, text: &str| {
            HeaderValue::from_str(text).map_err(|_| {
                ConfigError::new(
                    "security headers",
                    format!("{name}: {text:?} is not a valid header value"),
                )
            })
        };
        let mut page = Vec::new();
        for (name, text) in [
            (CONTENT_SECURITY_POLICY, config.content_security_policy),
            (REFERRER_POLICY, config.referrer_policy),
            (X_FRAME_OPTIONS, config.frame_options),
            (
                CROSS_ORIGIN_OPENER_POLICY,
                config.cross_origin_opener_policy,
            ),
        ] {
            if let Some(text) = text {
                let header = value(&name, &text)?;
                page.push((name, header));
            }
        }
        let hsts = config
            .strict_transport_security
            .map(|text| value(&STRICT_TRANSPORT_SECURITY, &text))
            .transpose()?;
        Ok(Self {
            nosniff: config.nosniff.then(|| HeaderValue::from_static("nosniff")),
            page,
            pages_only: config.pages_only,
            hsts,
        })
    }
}

impl Middleware for SecurityHeaders {
    fn before(&self, ctx: &mut Context) -> Before {
        Before::continue_unless_committed(ctx)
    }

    fn after(&self, ctx: &mut Context, result: Result) -> Result {
        // One scan of the answer's few headers tells which of ours the route set itself (those
        // are kept) and its media type.
        let (mut has_nosniff, mut has_hsts, mut content_type) = (false, false, None);
        for (name, value) in ctx.response_headers() {
            if *name == X_CONTENT_TYPE_OPTIONS {
                has_nosniff = true;
            } else if *name == STRICT_TRANSPORT_SECURITY {
                has_hsts = true;
            } else if *name == CONTENT_TYPE && content_type.is_none() {
                content_type = Some(value);
            }
        }
        let page = !self.pages_only || is_page(content_type);
        let hsts = self.hsts.as_ref().filter(|_| !has_hsts && ctx.is_https());
        let headers = ctx.response_headers_mut();
        if let Some(nosniff) = self.nosniff.as_ref().filter(|_| !has_nosniff) {
            headers.append(X_CONTENT_TYPE_OPTIONS, nosniff.clone());
        }
        if let Some(hsts) = hsts {
            headers.append(STRICT_TRANSPORT_SECURITY, hsts.clone());
        }
        if page {
            // `entry`: one lookup per header, kept when the route set its own.
            for (name, value) in &self.page {
                headers.entry(name.clone()).or_insert_with(|| value.clone());
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::is_page;
    use http::HeaderValue;

    #[test]
    fn pages_are_html_by_their_media_type() {
        for page in [
            "text/html",
            "text/html; charset=utf-8",
            "TEXT/HTML",
            "application/xhtml+xml",
        ] {
            assert!(is_page(Some(&HeaderValue::from_static(page))), "{page}");
        }
        for other in [
            "application/json",
            "text/htmlx",
            "text/plain",
            "text/htm",
            "",
        ] {
            assert!(!is_page(Some(&HeaderValue::from_static(other))), "{other}");
        }
        assert!(!is_page(None));
    }
}

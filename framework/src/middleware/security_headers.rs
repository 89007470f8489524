//! Security headers with safe defaults, on every answer (errors included), each set only when
//! the rest of the chain did not set it, so one route (a docs page with its own
//! `Content-Security-Policy`) can differ:
//!
//! | header | default |
//! |---|---|
//! | `Content-Security-Policy` | `default-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'; object-src 'none'` (no inline script or style, same origin only) |
//! | `X-Content-Type-Options` | `nosniff` |
//! | `Referrer-Policy` | `no-referrer` |
//! | `X-Frame-Options` | `DENY` (older browsers; `frame-ancestors` is the modern form) |
//! | `Cross-Origin-Opener-Policy` | `same-origin` |
//! | `Strict-Transport-Security` | `max-age=31536000; includeSubDomains`, only on answers to HTTPS requests ([`Context::is_https`]): a browser that saw it over plain HTTP must ignore it, and sending it there would only mislead |
//!
//! Each is a field of [`SecurityHeadersConfig`]: `None` leaves the header out. The values are
//! checked once, when the middleware is made.
//!
//! ```
//! use framework::middleware::security_headers::{SecurityHeaders, SecurityHeadersConfig};
//!
//! let headers = SecurityHeaders::new(SecurityHeadersConfig {
//!     // Images from one CDN too.
//!     content_security_policy: Some(
//!         "default-src 'self'; img-src 'self' https://img.example.com; frame-ancestors 'none'"
//!             .into(),
//!     ),
//!     ..SecurityHeadersConfig::default()
//! })
//! .expect("valid header values");
//! let app = framework::App::new().use_middleware(headers);
//! # let _ = app;
//! ```

use http::header::{
    CONTENT_SECURITY_POLICY, HeaderName, HeaderValue, REFERRER_POLICY, STRICT_TRANSPORT_SECURITY,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};

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
}

impl Default for SecurityHeadersConfig {
    fn default() -> Self {
        Self {
            content_security_policy: Some(STRICT_CSP.to_owned()),
            nosniff: true,
            referrer_policy: Some("no-referrer".to_owned()),
            frame_options: Some("DENY".to_owned()),
            cross_origin_opener_policy: Some("same-origin".to_owned()),
            strict_transport_security: Some("max-age=31536000; includeSubDomains".to_owned()),
        }
    }
}

/// The security headers middleware: see the [module](self).
pub struct SecurityHeaders {
    /// Set on every answer where absent.
    always: Vec<(HeaderName, HeaderValue)>,
    /// Set on HTTPS answers where absent.
    hsts: Option<HeaderValue>,
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
        let mut always = Vec::new();
        for (name, text) in [
            (CONTENT_SECURITY_POLICY, config.content_security_policy),
            (
                X_CONTENT_TYPE_OPTIONS,
                config.nosniff.then(|| "nosniff".to_owned()),
            ),
            (REFERRER_POLICY, config.referrer_policy),
            (X_FRAME_OPTIONS, config.frame_options),
            (
                CROSS_ORIGIN_OPENER_POLICY,
                config.cross_origin_opener_policy,
            ),
        ] {
            if let Some(text) = text {
                let header = value(&name, &text)?;
                always.push((name, header));
            }
        }
        let hsts = config
            .strict_transport_security
            .map(|text| value(&STRICT_TRANSPORT_SECURITY, &text))
            .transpose()?;
        Ok(Self { always, hsts })
    }
}

impl Middleware for SecurityHeaders {
    fn before(&self, ctx: &mut Context) -> Before {
        Before::continue_unless_committed(ctx)
    }

    fn after(&self, ctx: &mut Context, result: Result) -> Result {
        let hsts = self.hsts.as_ref().filter(|_| ctx.is_https());
        let headers = ctx.response_headers_mut();
        for (name, value) in self
            .always
            .iter()
            .map(|(n, v)| (n, v))
            .chain(hsts.map(|v| (&STRICT_TRANSPORT_SECURITY, v)))
        {
            if !headers.contains_key(name) {
                headers.insert(name.clone(), value.clone());
            }
        }
        result
    }
}

//! Cross-site request forgery protection: a page on another site cannot make a visitor's
//! browser send this app a state-changing request that carries the visitor's cookies.
//!
//! Requests with a safe method (`GET`, `HEAD`, `OPTIONS`, `TRACE`) always pass: they must not
//! change state. Every other method (`POST`, `PUT`, `PATCH`, `DELETE`, …) is checked with the
//! tokenless scheme tower-http 0.7 and Go 1.25's `CrossOriginProtection` adopted, from the
//! headers browsers add themselves and pages cannot forge:
//!
//! | `Sec-Fetch-Site` | `Origin` | answer |
//! |---|---|---|
//! | `same-origin` | any | passes |
//! | `none` (the user typed the address, a bookmark) | any | passes: no page made the request |
//! | `same-site` (a sibling subdomain, another port) | trusted | passes |
//! | `same-site` | other or none | **403**: a sibling subdomain is another party |
//! | `cross-site` | trusted | passes |
//! | `cross-site` | other or none | **403** |
//! | absent (an older browser) | the request's own origin, or trusted | passes |
//! | absent | another origin, or `null` | **403** |
//! | absent | absent | passes: not a browser (curl, a server), or a browser too old to send either; with [`token`](CsrfConfig::token) mode the token is required instead |
//!
//! The request's own origin is its scheme, host and port ([`crate::origin`]: `Host`, or a
//! trusted proxy's `X-Forwarded-Host` and `-Proto`). Trusted origins
//! ([`CsrfConfig::trusted_origins`], default none) are other sites whose pages may post here,
//! such as a separate front end.
//!
//! **Double-submit token mode** ([`CsrfConfig::token`], off by default) covers clients that
//! send neither header. Every response to a client without the cookie sets a random 256-bit
//! token in a cookie, `__Host-csrf` over HTTPS (`Secure`, `Path=/`, no `Domain`: no subdomain
//! can set or overwrite it) and `csrf` over plain HTTP, always `SameSite=Strict` and readable
//! by the page's script (not `HttpOnly`: echoing it is the point). A request with neither
//! header must then echo the cookie's value in the `X-CSRF-Token` header or the `csrf_token`
//! form field (read when the body parser decoded a form, so mount the check after it); the two
//! are compared in constant time. Another site can make the browser send the cookie but cannot
//! read it. A handler reads the token for a form's hidden field with
//! [`CsrfExt::csrf_token`].
//!
//! A refusal is **403**, category `framework-csrf`, its message naming the check that failed.
//! Mount it inside the error handler (on the app after an explicit body parser, or on the
//! groups and routes that change state) and before the handlers' work: authentication,
//! sessions and limiters spend nothing on a forged request.
//!
//! ```
//! use framework::middleware::csrf::{AllowOrigin, Csrf, CsrfConfig};
//!
//! let csrf = Csrf::new(
//!     CsrfConfig::default().trusted_origins(AllowOrigin::list(["https://admin.example.com"])),
//! )
//! .expect("a list of origins");
//! let app = framework::App::new().use_middleware(csrf);
//! # let _ = app;
//! ```

use std::borrow::Cow;

use base64::Engine;
use http::header::{HeaderValue, ORIGIN, SET_COOKIE};
use http::{Method, StatusCode};
use subtle::ConstantTimeEq;

use crate::body::FormDecoded;
use crate::context::Context;
use crate::error::HttpError;
use crate::handler::{Before, Middleware};
use crate::middleware::ConfigError;

use crate::client_ip::ClientIpExt;
pub use crate::origin::AllowOrigin;

/// Category of refusals.
pub const CATEGORY: &str = "framework-csrf";
/// The token cookie's name over plain HTTP.
pub const TOKEN_COOKIE: &str = "csrf";
/// The token cookie's name over HTTPS: the `__Host-` prefix makes browsers refuse it unless it
/// is `Secure`, for `Path=/` and without `Domain`.
pub const TOKEN_COOKIE_HTTPS: &str = "__Host-csrf";
/// The request header that echoes the token.
pub const TOKEN_HEADER: &str = "x-csrf-token";
/// The form field that echoes the token.
pub const TOKEN_FIELD: &str = "csrf_token";

/// A token's length: 32 random bytes in unpadded base64url.
const TOKEN_LEN: usize = 43;

/// CSRF settings: [`Default`] (no trusted origin, no token mode) and the builder methods.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct CsrfConfig {
    /// Other origins whose pages may send unsafe requests here. Default none.
    pub trusted_origins: AllowOrigin,
    /// Double-submit token mode: requests with neither `Sec-Fetch-Site` nor `Origin` must echo
    /// the token cookie. Default off.
    pub token: bool,
}

impl CsrfConfig {
    /// Trusts these origins' pages.
    #[must_use]
    pub fn trusted_origins(mut self, origins: AllowOrigin) -> Self {
        self.trusted_origins = origins;
        self
    }

    /// Turns the double-submit token mode on or off.
    #[must_use]
    pub fn token(mut self, token: bool) -> Self {
        self.token = token;
        self
    }
}

/// The request's CSRF token in token mode, for a page to put in a form's hidden
/// [`TOKEN_FIELD`] or a script to send in [`TOKEN_HEADER`]: [`CsrfExt::csrf_token`].
#[derive(Clone, Debug)]
struct CsrfToken(String);

/// Reads the CSRF token of token mode from the context.
pub trait CsrfExt {
    /// The token the client holds (or has just been given) in its cookie; `None` when no
    /// [`Csrf`] in token mode ran for this request.
    fn csrf_token(&self) -> Option<&str>;
}

impl CsrfExt for Context {
    fn csrf_token(&self) -> Option<&str> {
        self.data::<CsrfToken>().map(|token| token.0.as_str())
    }
}

/// The CSRF middleware: see the [module](self).
#[derive(Clone, Debug)]
pub struct Csrf {
    config: CsrfConfig,
}

impl Csrf {
    /// The middleware for `config`; refuses [`AllowOrigin::any`] as trusted origins (it would
    /// let every site through).
    pub fn new(config: CsrfConfig) -> Result<Self, ConfigError> {
        if config.trusted_origins.is_any() {
            return Err(ConfigError::new(
                "csrf",
                "trusted_origins: any origin would let every site post here; list the origins \
                 or give a predicate",
            )
            .with_kind(super::ConfigErrorKind::Unsafe));
        }
        Ok(Self { config })
    }

    fn trusted(&self, origin: Option<&HeaderValue>) -> bool {
        origin.is_some_and(|origin| self.config.trusted_origins.allows(origin))
    }

    /// Why an unsafe request is refused, if it is.
    fn refusal(&self, ctx: &Context, cookie: Option<&str>) -> Option<Cow<'static, str>> {
        let origin = ctx
            .request_headers()
            .get(ORIGIN)
            .filter(|origin| !origin.is_empty());
        // The Fetch standard sends these four values in lower case; anything else is no
        // browser's and is judged as another site's.
        match ctx
            .request_headers()
            .get("sec-fetch-site")
            .map(HeaderValue::as_bytes)
        {
            None | Some(b"") => {}
            Some(b"same-origin" | b"none") => return None,
            Some(_) if self.trusted(origin) => return None,
            Some(site) => {
                return Some(Cow::Owned(format!(
                    "cross-site request refused: Sec-Fetch-Site is {}",
                    String::from_utf8_lossy(site)
                )));
            }
        }
        if let Some(origin) = origin {
            if crate::origin::is_same_origin(ctx, origin.as_bytes()) || self.trusted(Some(origin)) {
                return None;
            }
            return Some(Cow::Owned(format!(
                "cross-origin request refused: Origin {} is neither this site's nor a trusted one",
                String::from_utf8_lossy(origin.as_bytes())
            )));
        }
        if !self.config.token {
            return None;
        }
        let Some(cookie) = cookie else {
            return Some(Cow::Borrowed(
                "CSRF token cookie missing: load a page of this site first",
            ));
        };
        let Some(echoed) = echoed_token(ctx) else {
            return Some(Cow::Borrowed(
                "CSRF token missing: send the token cookie's value in the X-CSRF-Token header \
                 or the csrf_token form field",
            ));
        };
        let same =
            echoed.len() == cookie.len() && bool::from(echoed.as_bytes().ct_eq(cookie.as_bytes()));
        (!same).then_some(Cow::Borrowed("CSRF token does not match its cookie"))
    }
}

/// The token the request echoes: its header, else its decoded form's field.
fn echoed_token(ctx: &Context) -> Option<Cow<'_, str>> {
    if let Some(token) = ctx.request_header(TOKEN_HEADER) {
        return Some(Cow::Borrowed(token));
    }
    ctx.data::<FormDecoded>()?;
    #[derive(serde::Deserialize)]
    struct Field<'a> {
        #[serde(borrow, rename = "csrf_token")]
        token: Option<Cow<'a, str>>,
    }
    serde_json::from_slice::<Field<'_>>(ctx.request_body())
        .ok()?
        .token
}

/// A new token: 32 bytes from the OS's generator, base64url.
fn new_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the OS random number generator");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Whether a cookie's value is a token this middleware could have made.
fn well_formed(token: &str) -> bool {
    token.len() == TOKEN_LEN
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl Middleware for Csrf {
    fn role(&self) -> Option<crate::handler::Role> {
        Some(crate::handler::Role::Csrf)
    }

    /// 403 for a refused request.
    fn describe(&self, operation: &mut crate::openapi::Operation<'_>) {
        operation.error(403);
    }

    fn before(&self, ctx: &mut Context) -> Before {
        let checked = !matches!(
            *ctx.method(),
            Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
        );
        let mut cookie = None;
        if self.config.token {
            let https = ctx.is_https();
            let name = if https {
                TOKEN_COOKIE_HTTPS
            } else {
                TOKEN_COOKIE
            };
            cookie = crate::header::cookie(ctx.request_headers(), name)
                .filter(|token| well_formed(token))
                .map(str::to_owned);
            let token = match &cookie {
                Some(token) => token.clone(),
                None => {
                    let token = new_token();
                    let secure = if https { "; Secure" } else { "" };
                    let line = format!("{name}={token}; Path=/; SameSite=Strict{secure}");
                    if let Ok(value) = HeaderValue::try_from(line) {
                        ctx.response_headers_mut().append(SET_COOKIE, value);
                    }
                    token
                }
            };
            ctx.insert_data(CsrfToken(token));
        }
        if checked && let Some(message) = self.refusal(ctx, cookie.as_deref()) {
            tracing::info!(path = ctx.path(), reason = %message, "request refused as a forgery");
            return Before::Answer(Err(HttpError::with(
                StatusCode::FORBIDDEN,
                CATEGORY,
                message,
            )
            .into()));
        }
        Before::Pass
    }
}

//! Cross-origin resource sharing (the Fetch standard's CORS protocol): which other origins'
//! pages may read this app's answers.
//!
//! - **Preflight** (`OPTIONS` with `Origin` and `Access-Control-Request-Method`): answered here,
//!   **204**, without running the rest of the chain (no handler, no 405 for a path without an
//!   `OPTIONS` route): `Access-Control-Allow-Origin`, `-Allow-Methods`, `-Allow-Headers` (the
//!   configured list, or the requested headers echoed with [`AllowHeaders::Mirror`]),
//!   `-Max-Age` and `-Allow-Credentials` when set.
//! - **Other requests with an allowed `Origin`** run as usual and their answer, errors included,
//!   gets `Access-Control-Allow-Origin` (the origin itself, or `*` for [`AllowOrigin::any`]
//!   without credentials), `-Allow-Credentials` and `-Expose-Headers` when set.
//! - **A disallowed origin** gets no CORS headers, so its page cannot read the answer; the
//!   request itself runs ([`CorsConfig::refuse_disallowed`] off, the default, as tower-http's
//!   `CorsLayer` and browsers' same-origin rules expect: a form post from anywhere is not a CORS
//!   matter) or is refused with **403** category `framework-cors` (on), preflights included.
//! - **`Vary: Origin`** on every answer whose CORS headers depend on the origin (all but
//!   [`AllowOrigin::any`] without credentials), with or without an `Origin` header, so a cache
//!   never hands one origin's answer to another; preflights also vary on
//!   `Access-Control-Request-Method` and `-Headers`.
//! - **Credentials are never combined with `*`**: [`Cors::new`] refuses credentials with
//!   [`AllowOrigin::any`], and a credentialed answer always names the origin.
//!
//! Mount it on the app (it must see preflights for every path) and outside the error handler
//! or inside it: either way error answers carry the headers.
//!
//! ```
//! use std::time::Duration;
//! use framework::http::{Method, header};
//! use framework::middleware::cors::{AllowOrigin, Cors, CorsConfig};
//!
//! let cors = Cors::new(
//!     CorsConfig::new(AllowOrigin::list(["https://app.example.com"]))
//!         .methods([Method::GET, Method::POST, Method::DELETE])
//!         .headers([header::CONTENT_TYPE, header::AUTHORIZATION])
//!         .credentials(true)
//!         .max_age(Duration::from_secs(600)),
//! )
//! .expect("credentials with a list of origins");
//! let app = framework::App::new().use_middleware(cors);
//! # let _ = app;
//! ```

use std::time::Duration;

use http::header::{
    ACCESS_CONTROL_ALLOW_CREDENTIALS, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE,
    ACCESS_CONTROL_REQUEST_HEADERS, ACCESS_CONTROL_REQUEST_METHOD, HeaderName, HeaderValue, ORIGIN,
};
use http::{Method, StatusCode};

use crate::context::Context;
use crate::error::{HttpError, Result};
use crate::handler::{Before, Middleware};
use crate::middleware::ConfigError;

/// Category of refusals.
pub const CATEGORY: &str = "framework-cors";

pub use crate::origin::AllowOrigin;

/// Which request headers a preflight allows.
#[derive(Clone, Debug)]
pub enum AllowHeaders {
    /// These (beyond the CORS-safelisted ones, which need no permission).
    List(Vec<HeaderName>),
    /// Whatever the preflight asks for (`Access-Control-Request-Headers` echoed).
    Mirror,
}

/// CORS settings: build with [`CorsConfig::new`] and the builder methods.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CorsConfig {
    /// Which origins may read answers.
    pub origins: AllowOrigin,
    /// Methods a preflight allows. Default `GET, HEAD, POST`.
    pub methods: Vec<Method>,
    /// Request headers a preflight allows. Default none beyond the safelisted ones (so a JSON
    /// body's `Content-Type: application/json` needs `content-type` here).
    pub headers: AllowHeaders,
    /// Allow credentials (cookies, `Authorization`): `Access-Control-Allow-Credentials: true`.
    /// Default off; refused with [`AllowOrigin::any`].
    pub credentials: bool,
    /// How long a browser may keep a preflight's answer (`Access-Control-Max-Age`). Default
    /// unset (the browser's own default, 5 s in Chromium).
    pub max_age: Option<Duration>,
    /// Response headers a page may read beyond the safelisted ones.
    pub expose: Vec<HeaderName>,
    /// Refuse requests from a disallowed origin with 403 instead of running them without
    /// CORS headers. Default off.
    pub refuse_disallowed: bool,
}

crate::config::setters!(CorsConfig {
    origins: AllowOrigin,
});

impl CorsConfig {
    /// `origins` may read answers of `GET`, `HEAD` and `POST` requests with safelisted
    /// headers, without credentials.
    pub fn new(origins: AllowOrigin) -> Self {
        Self {
            origins,
            methods: vec![Method::GET, Method::HEAD, Method::POST],
            headers: AllowHeaders::List(Vec::new()),
            credentials: false,
            max_age: None,
            expose: Vec::new(),
            refuse_disallowed: false,
        }
    }

    /// The methods a preflight allows.
    #[must_use]
    pub fn methods(mut self, methods: impl IntoIterator<Item = Method>) -> Self {
        self.methods = methods.into_iter().collect();
        self
    }

    /// The request headers a preflight allows.
    #[must_use]
    pub fn headers(mut self, headers: impl IntoIterator<Item = HeaderName>) -> Self {
        self.headers = AllowHeaders::List(headers.into_iter().collect());
        self
    }

    /// Allow whatever request headers a preflight asks for.
    #[must_use]
    pub fn mirror_headers(mut self) -> Self {
        self.headers = AllowHeaders::Mirror;
        self
    }

    /// Allow credentials.
    #[must_use]
    pub fn credentials(mut self, credentials: bool) -> Self {
        self.credentials = credentials;
        self
    }

    /// How long a preflight's answer may be kept.
    #[must_use]
    pub fn max_age(mut self, max_age: Duration) -> Self {
        self.max_age = Some(max_age);
        self
    }

    /// Response headers pages may read.
    #[must_use]
    pub fn expose(mut self, headers: impl IntoIterator<Item = HeaderName>) -> Self {
        self.expose = headers.into_iter().collect();
        self
    }

    /// Refuse disallowed origins with 403.
    #[must_use]
    pub fn refuse_disallowed(mut self, refuse: bool) -> Self {
        self.refuse_disallowed = refuse;
        self
    }
}

/// The CORS middleware: see the [module](self).
pub struct Cors {
    config: CorsConfig,
    /// The header values, made once.
    methods: HeaderValue,
    headers: Option<HeaderValue>,
    expose: Option<HeaderValue>,
    max_age: Option<HeaderValue>,
    /// Whether answers depend on `Origin` (all but `*`).
    varies: bool,
}

/// `a, b, c` of header-value-safe names.
fn joined<T: AsRef<str>>(items: &[T]) -> Option<HeaderValue> {
    if items.is_empty() {
        return None;
    }
    let text: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    HeaderValue::from_str(&text.join(", ")).ok()
}

impl Cors {
    /// The middleware for `config`; refuses credentials combined with any origin (the Fetch
    /// standard never lets a credentialed answer say `*`), and an empty list of methods.
    pub fn new(config: CorsConfig) -> std::result::Result<Self, ConfigError> {
        if config.credentials && config.origins.is_any() {
            return Err(ConfigError::new(
                "cors",
                "credentials cannot be allowed for any origin (`*`): list the origins or give \
                 a predicate",
            )
            .with_kind(super::ConfigErrorKind::Unsafe));
        }
        if config.methods.is_empty() {
            // It used to become `GET, HEAD` without a word.
            return Err(ConfigError::new(
                "cors",
                "methods: an empty list would allow no method; list the methods a preflight \
                 allows, or leave the default (GET, HEAD, POST)",
            )
            .with_kind(super::ConfigErrorKind::Ineffective));
        }
        let methods: Vec<&str> = config.methods.iter().map(Method::as_str).collect();
        let methods = joined(&methods).unwrap_or_else(|| HeaderValue::from_static("GET, HEAD"));
        let headers = match &config.headers {
            AllowHeaders::List(list) => joined(list),
            AllowHeaders::Mirror => None,
        };
        Ok(Self {
            methods,
            headers,
            expose: joined(&config.expose),
            max_age: config.max_age.map(|age| HeaderValue::from(age.as_secs())),
            varies: config.credentials || !config.origins.is_any(),
            config,
        })
    }

    /// `Access-Control-Allow-Origin` (and `-Credentials`) for an allowed origin.
    fn allow_origin(&self, ctx: &mut Context, origin: HeaderValue) {
        let value = if self.varies {
            origin
        } else {
            HeaderValue::from_static("*")
        };
        let headers = ctx.response_headers_mut();
        headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, value);
        if self.config.credentials {
            headers.insert(
                ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
        }
    }

    fn vary(&self, ctx: &mut Context, preflight: bool) {
        if !self.varies && !preflight {
            return;
        }
        let headers = ctx.response_headers_mut();
        if self.varies {
            crate::header::add_vary(headers, "Origin");
        }
        if preflight {
            crate::header::add_vary(headers, "Access-Control-Request-Method");
            crate::header::add_vary(headers, "Access-Control-Request-Headers");
        }
    }

    fn refusal() -> Before {
        Before::Answer(Err(HttpError::with(
            StatusCode::FORBIDDEN,
            CATEGORY,
            "origin not allowed",
        )
        .into()))
    }

    /// The answer to a preflight.
    fn preflight(&self, ctx: &mut Context, origin: HeaderValue) -> Before {
        if !self.config.origins.allows(&origin) {
            if self.config.refuse_disallowed {
                return Self::refusal();
            }
            self.vary(ctx, true);
            ctx.set_status(StatusCode::NO_CONTENT);
            return Before::Answer(Ok(()));
        }
        let mirrored = match self.config.headers {
            AllowHeaders::Mirror => ctx
                .request_headers()
                .get(ACCESS_CONTROL_REQUEST_HEADERS)
                .cloned(),
            AllowHeaders::List(_) => None,
        };
        self.allow_origin(ctx, origin);
        self.vary(ctx, true);
        let headers = ctx.response_headers_mut();
        headers.insert(ACCESS_CONTROL_ALLOW_METHODS, self.methods.clone());
        if let Some(allowed) = mirrored.or_else(|| self.headers.clone()) {
            headers.insert(ACCESS_CONTROL_ALLOW_HEADERS, allowed);
        }
        if let Some(age) = &self.max_age {
            headers.insert(ACCESS_CONTROL_MAX_AGE, age.clone());
        }
        ctx.set_status(StatusCode::NO_CONTENT);
        Before::Answer(Ok(()))
    }
}

impl Middleware for Cors {
    fn before(&self, ctx: &mut Context) -> Before {
        let Some(origin) = ctx.request_headers().get(ORIGIN).cloned() else {
            // Same-origin or not from a browser: nothing to allow, but the answer still
            // depends on the origin for a cache.
            return if self.varies {
                Before::Continue
            } else {
                Before::Pass
            };
        };
        if ctx.method() == Method::OPTIONS
            && ctx
                .request_headers()
                .contains_key(ACCESS_CONTROL_REQUEST_METHOD)
        {
            return self.preflight(ctx, origin);
        }
        if self.config.refuse_disallowed && !self.config.origins.allows(&origin) {
            return Self::refusal();
        }
        Before::Continue
    }

    /// The headers go on whatever the rest answered, an error too (the error handler keeps
    /// headers already set).
    fn after(&self, ctx: &mut Context, result: Result) -> Result {
        self.vary(ctx, false);
        if let Some(origin) = ctx.request_headers().get(ORIGIN).cloned()
            && self.config.origins.allows(&origin)
        {
            self.allow_origin(ctx, origin);
            if let Some(expose) = &self.expose {
                ctx.response_headers_mut()
                    .insert(ACCESS_CONTROL_EXPOSE_HEADERS, expose.clone());
            }
        }
        result
    }

    /// 403 for a refused origin, when configured.
    fn describe(&self, operation: &mut crate::openapi::Operation<'_>) {
        if self.config.refuse_disallowed {
            operation.error(403);
        }
    }
}

//! The batteries: one middleware per module.
//!
//! | module | what it does |
//! |---|---|
//! | [`health`] | `/livez` and `/readyz` probes: backends checked under a deadline, 503 while draining |
//! | [`recover`] | a panic in the chain becomes a 500 answer |
//! | [`compress`] | brotli / gzip for bodies and streams |
//! | [`error_handler`] | returned errors become JSON or text answers |
//! | [`responder`] | the handler's value becomes the body (JSON by default) |
//! | [`body_parser`] | JSON / form request bodies, gzip, size limits |
//! | [`basic_auth`] | HTTP Basic authentication for internal tools |
//! | [`cors`] | cross-origin reads: preflights answered, allowed origins named in the answer |
//! | [`csrf`] | cross-site request forgery refused (`Sec-Fetch-Site`, `Origin`, or a double-submit token) |
//! | [`force_https`] | plain-HTTP requests redirected to HTTPS (308, path and query kept; a trusted proxy's `X-Forwarded-Proto` believed) |
//! | [`security_headers`] | CSP, `nosniff`, referrer and framing policies, HSTS over HTTPS |
//! | [`session`] | per-client sessions in memory or Redis |
//! | [`concurrent_limiter`] | one request at a time per key (IP, header, body field…) |
//! | [`timeout`] | a deadline for the handler (503 when it overruns, its guards released), an idle timeout for streamed bodies |
//! | [`logger`] | access log lines in a format of `{tags}` |
//! | [`trace`] | W3C trace context: the client's trace joined or a new one, a span per request, passed on by the proxy |
//! | [`stats`] | per-request figures (status, latency, sizes, in flight) to a hook |
//! | `metrics` | Prometheus exposition of the stats and the telemetry counters (feature `metrics`) |
//! | [`global_concurrent_limiter`] | at most N requests at once in the app |
//! | [`router_concurrent_limiter`] | at most N requests at once per route |
//! | [`cache`] | GET/HEAD answers cached in memory or Redis, hit-for-pass, coalesced misses |
//! | `etag` | strong `ETag` from the body's xxh3-128 digest (feature `etag`, default) |
//! | [`fresh`] | 304 Not Modified for a current `If-None-Match` / `If-Modified-Since` |
//! | [`json_picker`] | `?fields=a,b` keeps (or `-a,b` drops) top-level JSON fields |
//! | [`response_size_limiter`] | answers over a size limit become a 500, streams are cut at it |
//! | `renderer` | HTML pages from minijinja templates (feature `renderer`, default) |
//! | `rate_limiter` | at most N requests per period per key, in memory or Redis (feature `rate-limit`, default) |
//! | `jwt` | bearer tokens verified, claims for handlers, issuing (feature `jwt`, default) |
//! | `tracker` | submitted data with secrets masked, for audits (feature `tracker`, default) |
//! | `static_serve` | files from a directory or the binary (feature `static-serve`, default) |
//! | `proxy` | a streaming reverse proxy with WebSocket (feature `proxy`, default) |
//!
//! Reference order for an app, outermost (registered first) to innermost: health, force https, trace, recover, logger,
//! stats, security headers, cors, global and router concurrent limiters, compress, fresh,
//! cache, etag, error handler, timeout,
//! response size limiter, json picker, responder, renderer, body parser; then, on the routes
//! that need them, csrf, basic auth or jwt, rate limiter, session, concurrent limiter, tracker. The
//! [middleware chapter](crate::guide::middleware) gives the reason for each place. Static
//! serve and the proxy are endpoints on a wildcard route
//! ([`App::endpoint`](crate::App::endpoint), [`App::any`](crate::App::any)). Every component
//! is mounted with [`App::use_middleware`](crate::App::use_middleware), or
//! [`use_when`](crate::App::use_when) to skip it for some requests.
//!
//! Responses may be streams ([`Content::set_stream`](crate::context::Content::set_stream)(crate::context::Content::set_stream));
//! each module's doc says what it does with one.

pub mod basic_auth;
pub mod body_parser;
pub mod cache;
pub mod compress;
pub mod concurrent_limiter;
pub mod cors;
pub mod csrf;
pub mod defaults;
pub mod error_handler;
#[cfg(feature = "etag")]
pub mod etag;
pub mod force_https;
pub mod fresh;
pub mod global_concurrent_limiter;
pub mod health;
pub mod json_picker;
#[cfg(feature = "jwt")]
pub mod jwt;
pub mod logger;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(feature = "proxy")]
pub mod proxy;
#[cfg(feature = "rate-limit")]
pub mod rate_limiter;
pub mod recover;
#[cfg(feature = "renderer")]
pub mod renderer;
pub mod responder;
pub mod response_size_limiter;
pub mod router_concurrent_limiter;
pub mod security_headers;
pub mod session;
#[cfg(feature = "static-serve")]
pub mod static_serve;
pub mod stats;
pub mod timeout;
pub mod trace;
#[cfg(feature = "tracker")]
pub mod tracker;

/// Why a middleware's constructor refused its configuration: which component, what kind of
/// mistake ([`ConfigErrorKind`]), what is wrong in a sentence, and the error underneath when
/// there is one (a mask's regex, say) as its [`source`](std::error::Error::source). Returned
/// by every constructor that can fail
/// ([`ConcurrentLimiter::new`](concurrent_limiter::ConcurrentLimiter::new),
/// [`RouterConcurrentLimiter::new`](router_concurrent_limiter::RouterConcurrentLimiter::new),
/// `RateLimiter::new`, `Renderer::new`, `Proxy::new`, `Cors::new`, `Csrf::new`,
/// `Timeout::new`, …), so one `?` carries any of them into an app's start-up error.
///
/// ```
/// use framework::middleware::ConfigErrorKind;
/// use framework::middleware::timeout::{Timeout, TimeoutConfig};
///
/// let err = Timeout::new(TimeoutConfig::default()
///     .deadline(std::time::Duration::ZERO))
/// .err()
/// .unwrap();
/// assert_eq!((err.component(), err.kind()), ("timeout", ConfigErrorKind::Ineffective));
/// ```
#[derive(Debug, Clone)]
pub struct ConfigError {
    component: &'static str,
    kind: ConfigErrorKind,
    message: String,
    source: Option<std::sync::Arc<dyn std::error::Error + Send + Sync>>,
}

/// What kind of mistake a [`ConfigError`] is.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigErrorKind {
    /// A value that does not parse or is not valid where it is given (a header value, a host,
    /// a key form, a regex, a rewrite rule).
    Invalid,
    /// A setting that would make the component fail or do nothing for every request (a zero
    /// deadline, an empty list of methods, a "timeout" status that is a success).
    Ineffective,
    /// A setting that would open a hole (any origin trusted by CSRF, credentials for any
    /// origin in CORS).
    Unsafe,
    /// Something the component does not do (a proxy target that is not `http://`).
    Unsupported,
    /// A file the component loads could not be read or parsed (a template).
    Unreadable,
}

impl ConfigError {
    /// The refusal of `component`'s configuration, saying what is wrong; of kind
    /// [`ConfigErrorKind::Invalid`] unless [`with_kind`](Self::with_kind) says otherwise.
    pub fn new(component: &'static str, message: impl Into<String>) -> Self {
        Self {
            component,
            kind: ConfigErrorKind::Invalid,
            message: message.into(),
            source: None,
        }
    }

    /// The same refusal, of `kind`.
    #[must_use]
    pub fn with_kind(mut self, kind: ConfigErrorKind) -> Self {
        self.kind = kind;
        self
    }

    /// The same refusal, caused by `source`.
    #[must_use]
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(std::sync::Arc::new(source));
        self
    }

    /// The component that refused, e.g. `rate limiter`.
    pub fn component(&self) -> &'static str {
        self.component
    }

    /// What kind of mistake it is.
    pub fn kind(&self) -> ConfigErrorKind {
        self.kind
    }

    /// What is wrong, without the component's name.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Two refusals are equal when component, kind and message are (the source is not compared).
impl PartialEq for ConfigError {
    fn eq(&self, other: &Self) -> bool {
        (self.component, self.kind, &self.message) == (other.component, other.kind, &other.message)
    }
}

impl Eq for ConfigError {}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.component, self.message)
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

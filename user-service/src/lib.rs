//! The reference user service: register, get a one-time login token bound to the session, log
//! in with a SHA-256 proof of that token, read the current user.
//!
//! [`build`] assembles the app from its stores so tests and `main` share one construction.

pub mod avatar;
pub mod config;
pub mod controllers;
#[cfg(feature = "otlp")]
pub mod otlp;
pub mod params;
pub mod store;
pub mod throttle;
pub mod used_tokens;

use std::sync::Arc;

use framework::middleware::body_parser::BodyParser;
use framework::middleware::compress::Compress;
use framework::middleware::concurrent_limiter::{
    ConcurrentLimiter, ConcurrentLimiterConfig, Lock, MemoryLock,
};
use framework::middleware::cors::{AllowOrigin, Cors, CorsConfig};
use framework::middleware::csrf::{Csrf, CsrfConfig};
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::etag::ETag;
use framework::middleware::fresh::Fresh;
use framework::middleware::health::{Health, HealthConfig};
use framework::middleware::logger::{LOGGER_COMMON, Logger, LoggerConfig};
use framework::middleware::metrics::{Metrics, MetricsConfig};
use framework::middleware::rate_limiter::{
    MemoryRateStore, RateLimiter, RateLimiterConfig, RateQuota, RateStore,
};
use framework::middleware::recover::Recover;
use framework::middleware::responder::Responder;
use framework::middleware::security_headers::SecurityHeaders;
use framework::middleware::session::{SessionConfig, SessionMiddleware, SessionStore};
use framework::middleware::static_serve::{EmbeddedSource, StaticServe, StaticServeConfig};
use framework::middleware::timeout::{Timeout, TimeoutConfig};
use framework::middleware::trace::{Trace, TraceConfig};
use framework::{App, BuildError, Service, SharedMiddleware};

pub use config::Config;
use store::UserStore;

/// The stores the service runs on.
pub struct Stores {
    /// Users.
    pub users: Arc<dyn UserStore>,
    /// Sessions.
    pub sessions: Arc<dyn SessionStore>,
    /// Submit locks (one registration or login per account at a time): in Redis when the
    /// sessions are, so every instance sees them.
    pub locks: Arc<dyn Lock>,
    /// Failed-login counts: in Redis when the sessions are.
    pub attempts: Arc<dyn throttle::AttemptStore>,
    /// Request rate budgets (token and login per IP): in Redis when the sessions are.
    pub rates: RateBackend,
    /// Login tokens already used (each is good for one attempt, whatever the session store):
    /// in Redis when `REDIS_URL` is set.
    pub used_tokens: Arc<dyn used_tokens::UsedTokenStore>,
    /// What they are, for the start-up line (no passwords).
    pub description: String,
}

impl Stores {
    /// Everything in process memory: for tests and throwaway runs.
    pub fn in_memory() -> Self {
        Self {
            users: Arc::new(store::MemoryUserStore::new()),
            sessions: Arc::new(framework::middleware::session::MemoryStore::new()),
            locks: Arc::new(MemoryLock::new()),
            attempts: Arc::new(throttle::MemoryAttempts::default()),
            rates: RateBackend::Memory,
            used_tokens: Arc::new(used_tokens::MemoryUsedTokens::default()),
            description: "users: memory, sessions: memory".to_owned(),
        }
    }

    /// The stores `config` asks for, connected and migrated. Fails with a message naming the
    /// store (and its URL without password) when one cannot be reached.
    pub async fn connect(config: &Config) -> Result<Self, String> {
        let (users, users_desc): (Arc<dyn UserStore>, String) = if config.database_url == "memory" {
            (
                Arc::new(store::MemoryUserStore::with_limits(
                    config.memory_users,
                    config.memory_avatar_bytes,
                )),
                "memory".to_owned(),
            )
        } else {
            connect_sql(config).await?
        };
        let redis = match &config.redis_url {
            None => RedisStores {
                sessions: Arc::new(framework::middleware::session::MemoryStore::new()),
                locks: Arc::new(MemoryLock::new()),
                attempts: Arc::new(throttle::MemoryAttempts::default()),
                rates: RateBackend::Memory,
                used_tokens: Arc::new(used_tokens::MemoryUsedTokens::default()),
                description: "memory".to_owned(),
            },
            Some(url) => connect_redis(config, url).await?,
        };
        let (mut sessions, mut sessions_desc) = (redis.sessions, redis.description);
        if let Some(keys) = &config.session_cookie_keys {
            sessions = Arc::new(framework::middleware::session::CookieStore::new(
                keys.0.clone(),
            ));
            sessions_desc = "cookie".to_owned();
        }
        Ok(Self {
            users,
            sessions,
            locks: redis.locks,
            attempts: redis.attempts,
            rates: redis.rates,
            used_tokens: redis.used_tokens,
            description: format!("users: {users_desc}, sessions: {sessions_desc}"),
        })
    }
}

/// Where request rate budgets live.
#[derive(Clone, Debug)]
pub enum RateBackend {
    /// In process: each instance counts its own.
    Memory,
    /// In Redis (one connection for every limiter, keys `<session prefix>rate:<limiter>:<ip>`):
    /// instances share each budget.
    #[cfg(feature = "redis")]
    Redis(framework::middleware::rate_limiter::RedisRateStore, String),
}

impl RateBackend {
    /// A store with `quota` for the limiter called `name`.
    pub fn store(&self, quota: RateQuota, name: &str) -> Arc<dyn RateStore> {
        // Only the Redis keys carry the name (a build without Redis has no other use for it).
        #[cfg(not(feature = "redis"))]
        let _ = name;
        match self {
            Self::Memory => Arc::new(MemoryRateStore::new(quota)),
            #[cfg(feature = "redis")]
            Self::Redis(store, prefix) => Arc::new(
                store
                    .clone()
                    .with_quota(quota)
                    .with_prefix(format!("{prefix}rate:{name}:")),
            ),
        }
    }
}

/// The stores that live in Redis when `REDIS_URL` is set (else in memory), and their
/// description.
struct RedisStores {
    sessions: Arc<dyn SessionStore>,
    locks: Arc<dyn Lock>,
    attempts: Arc<dyn throttle::AttemptStore>,
    rates: RateBackend,
    used_tokens: Arc<dyn used_tokens::UsedTokenStore>,
    description: String,
}

#[cfg(feature = "sql")]
async fn connect_sql(config: &Config) -> Result<(Arc<dyn UserStore>, String), String> {
    let url = &config.database_url;
    let (keyring, key_source) = store::keys::keyring(config)?;
    let options = store::sql::PoolOptions {
        max_connections: config.database_max_connections,
        acquire_timeout: config.database_acquire_timeout,
        timeout: config.database_timeout,
    };
    let store = store::sql::SqlUserStore::connect(url, options, keyring)
        .await
        .map_err(|e| format!("user store {} is not usable: {e}", config::redact(url)))?;
    Ok((
        Arc::new(store),
        format!("{} (secrets sealed, {key_source})", config::redact(url)),
    ))
}

#[cfg(not(feature = "sql"))]
async fn connect_sql(config: &Config) -> Result<(Arc<dyn UserStore>, String), String> {
    Err(format!(
        "DATABASE_URL={} needs the `sql` feature; use DATABASE_URL=memory",
        config::redact(&config.database_url)
    ))
}

#[cfg(feature = "redis")]
async fn connect_redis(config: &Config, url: &str) -> Result<RedisStores, String> {
    use framework::redis_connection::{RedisConnection, RedisFailure, RedisPolicy};
    let prefix = &config.session_key_prefix;
    let policy = RedisPolicy {
        command_timeout: config.redis_timeout,
        connect_timeout: config.redis_timeout,
        probe_interval: config.redis_probe_interval,
    };
    // One connection, one policy and one idea of whether Redis is up, for every store.
    let redis = match RedisConnection::connect(url, policy).await {
        Ok(redis) => redis,
        // A URL that does not parse is a configuration mistake, not an outage: say so.
        Err(RedisFailure::Server(e)) => {
            return Err(format!(
                "REDIS_URL={} is malformed: {e} (expected redis://host:port/db)",
                config::redact(url)
            ));
        }
        Err(e) => {
            return Err(format!(
                "session store {} is not reachable: {e}",
                config::redact(url)
            ));
        }
    };
    let store = framework::middleware::session::RedisStore::new(redis.clone(), prefix.as_str());
    // Lock keys live beside the sessions: `<prefix>lock:<account>`.
    let locks = framework::middleware::concurrent_limiter::RedisLock::new(
        redis.clone(),
        format!("{prefix}lock:"),
    );
    let attempts = throttle::RedisAttempts::new(redis.clone(), format!("{prefix}login:"));
    let used = used_tokens::RedisUsedTokens::new(redis.clone(), format!("{prefix}used-token:"));
    // The quota is set per limiter by `RateBackend::store`.
    let any_quota = RateQuota::per_second(1).expect("valid quota");
    let rates = framework::middleware::rate_limiter::RedisRateStore::new(redis, any_quota);
    Ok(RedisStores {
        sessions: Arc::new(store),
        locks: Arc::new(locks),
        attempts: Arc::new(attempts),
        rates: RateBackend::Redis(rates, prefix.to_owned()),
        used_tokens: Arc::new(used),
        description: format!("redis {}", config::redact(url)),
    })
}

#[cfg(not(feature = "redis"))]
async fn connect_redis(_config: &Config, url: &str) -> Result<RedisStores, String> {
    Err(format!(
        "REDIS_URL={} needs the `redis` feature",
        config::redact(url)
    ))
}

/// True when the request body is a JSON object with a non-empty string `account`.
fn names_an_account(ctx: &framework::Context) -> bool {
    #[derive(serde::Deserialize)]
    struct Account<'a> {
        #[serde(borrow)]
        account: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Account<'_>>(ctx.request_body())
        .ok()
        .and_then(|a| a.account)
        .is_some_and(|a| !a.is_empty())
}

/// A middleware that only runs the rest of the chain, without a future of its own.
struct PassThrough;

impl framework::Middleware for PassThrough {
    fn before(&self, _ctx: &mut framework::Context) -> framework::Before {
        framework::Before::Pass
    }
}

/// A rate limiter per client IP with `quota` (`None`: a middleware that does nothing, so the
/// controllers' `middleware(name)` stays valid).
fn per_ip(
    rates: &RateBackend,
    quota: Option<RateQuota>,
    name: &str,
) -> Result<SharedMiddleware, BuildError> {
    let Some(quota) = quota else {
        return Ok(Arc::new(PassThrough));
    };
    RateLimiter::new(RateLimiterConfig::new([":ip"], rates.store(quota, name)))
        .map(framework::share)
        .map_err(|e| BuildError::new(format!("{name} rate limiter: {e}")))
}

/// The login page (`assets/`: HTML, script, style), compiled into the binary in every build
/// profile (rust-embed's `debug-embed`), so the binary needs no files beside it.
#[derive(rust_embed::RustEmbed)]
#[folder = "assets/"]
struct Page;

/// Strong ETags from rust-embed's build-time SHA-256 (free), revalidated on each load
/// (`no-cache`), so a new binary's page is picked up at once.
fn page_config() -> StaticServeConfig {
    StaticServeConfig::default().enable_strong_etag(true)
}

/// Builds the service: app middleware in the reference order (security headers, health
/// probes, trace context, recover, logger, stats, CORS when `CORS_ORIGINS` names origins, compress, fresh, etag, error
/// handler, request timeout, responder, body parser), the session middleware registered as `session`, CSRF protection as `csrf`, the
/// per-account submit lock as
/// `submit_once`, and the per-IP rate limits as `token_rate` and `login_rate` for the
/// controllers, every controller mounted, the login page at `/` with its files under
/// `/assets/*` (served from the binary, revalidated by strong ETag), and the OpenAPI document
/// at [`OPENAPI_PATH`] with its docs page at [`DOCS_PATH`], `/livez` and `/readyz`, and the
/// Prometheus exposition at [`METRICS_PATH`].
///
/// The logger writes `LoggerCommon` lines to `tracing` (target `framework::access`, info);
/// stats feed the metrics.
pub fn build(config: &Config, stores: Stores) -> Result<Service, BuildError> {
    app(config, stores)?.build()
}

/// The app [`build`] builds: its middleware, controllers and routes, not yet compiled.
pub fn app(config: &Config, stores: Stores) -> Result<App, BuildError> {
    let health = health(&stores);
    let metrics = Metrics::new(MetricsConfig::default());
    let session = SessionMiddleware::new(
        stores.sessions,
        SessionConfig::default().secure(config.session_secure),
    );
    // One registration or login per account at a time, across instances when the lock is in
    // Redis. The body parser runs first (app middleware), so the `account` field is there.
    // A body without an account is left to the handler, whose validation answers it first
    // (parameters are validated before any other processing).
    let submit_once = ConcurrentLimiter::new(
        ConcurrentLimiterConfig::default()
            .keys(vec!["account".to_owned()])
            .lock(stores.locks),
    )
    .map_err(|e| BuildError::new(format!("submit limiter: {e}")))?;
    let mut app = App::new()
        .server_limits(framework::ServerLimits::default().drain_delay(config.drain_delay));
    if let Some((cert, key)) = &config.tls {
        let mut tls = framework::tls::Tls::from_pem_files(cert, key)
            .map_err(|e| BuildError::new(format!("TLS: {e}")))?;
        if let Some((ca, required)) = &config.tls_client_ca {
            let auth = if *required {
                framework::tls::ClientAuth::required(ca)
            } else {
                framework::tls::ClientAuth::optional(ca)
            };
            tls = tls
                .client_auth(auth)
                .map_err(|e| BuildError::new(format!("TLS_CLIENT_CA: {e}")))?;
        }
        app = app.tls(tls);
    }
    let app = app
        .trusted_proxies(config.trust_proxy.clone())
        .with_state(stores.users)
        .with_state(throttle::LoginThrottle::new(
            stores.attempts,
            config.login_limits,
        ))
        .with_state(used_tokens::UsedTokens(stores.used_tokens))
        // Outermost, so the probes' answers and recover's 500 carry the headers too.
        .use_middleware(SecurityHeaders::default())
        .use_middleware(health)
        .use_middleware(Trace::new(
            TraceConfig::default().trust_incoming(config.trust_traces),
        ))
        .use_middleware(Recover::default())
        .use_middleware(Logger::new(
            LoggerConfig::default().format(LOGGER_COMMON.to_owned()),
        ))
        .use_middleware(metrics.stats());
    // Pages of other origins may call the API only when configured (CORS_ORIGINS).
    let app = match cors(config)? {
        Some(cors) => app.use_middleware(cors),
        None => app,
    };
    let app = app
        .use_middleware(Compress::default())
        .use_middleware(Fresh)
        .use_middleware(ETag)
        .use_middleware(ErrorHandler::default())
        // Inside the error handler, so an overrun's 503 is answered in the client's format.
        .use_middleware(request_timeout(config)?)
        .use_middleware(Responder::default())
        .use_middleware(BodyParser::default())
        .register_middleware("session", session)
        // Forged cross-site posts refused on the routes that change state (registration,
        // login); the origins allowed to call the API (`CORS_ORIGINS`) are trusted.
        .register_middleware("csrf", csrf(config)?)
        .register_middleware(
            "submit_once",
            framework::when(names_an_account, submit_once),
        )
        .register_middleware(
            "token_rate",
            per_ip(&stores.rates, config.token_rate, "token")?,
        )
        .register_middleware(
            "login_rate",
            per_ip(&stores.rates, config.login_rate, "login")?,
        )
        .endpoint(
            http::Method::GET,
            "/",
            StaticServe::new(EmbeddedSource::<Page>::new(), page_config()),
        )
        .endpoint(
            http::Method::GET,
            "/assets/*",
            StaticServe::new(EmbeddedSource::<Page>::new(), page_config()),
        )
        .endpoint(http::Method::GET, METRICS_PATH, metrics.endpoint())
        .mount_controllers()
        .openapi(OPENAPI_PATH)
        .openapi_docs(DOCS_PATH)
        .openapi_info(OPENAPI_TITLE, env!("CARGO_PKG_VERSION"));
    Ok(app)
}

/// The deadline of every request's handling ([`Config::request_timeout`]), 503 when overrun.
fn request_timeout(config: &Config) -> Result<Timeout, BuildError> {
    Timeout::new(TimeoutConfig::default().deadline(config.request_timeout))
        .map_err(|e| BuildError::new(format!("REQUEST_TIMEOUT: {e}")))
}

/// `/livez` and `/readyz`: ready when the user store and the session store answer a read
/// within a second (a lookup of an account and of a session id that do not exist: the same
/// queries the service makes, so the same connections, pools and timeouts are tested), and
/// not while draining ([`Config::drain_delay`]).
fn health(stores: &Stores) -> Health {
    let users = Arc::clone(&stores.users);
    let sessions = Arc::clone(&stores.sessions);
    Health::new(HealthConfig::default())
        .check("users", move || {
            let users = Arc::clone(&users);
            async move { users.find("readiness-probe").await.map(drop) }
        })
        .check("sessions", move || {
            let sessions = Arc::clone(&sessions);
            async move { sessions.load("readiness-probe").await.map(drop) }
        })
}

/// CSRF protection for the POST routes: `Sec-Fetch-Site`, else `Origin`, must name this
/// site or an origin of `CORS_ORIGINS`, whose pages may call the API with the session cookie.
fn csrf(config: &Config) -> Result<Csrf, BuildError> {
    Csrf::new(CsrfConfig::default().trusted_origins(AllowOrigin::list(&config.cors_origins)))
        .map_err(|e| BuildError::new(format!("csrf: {e}")))
}

/// CORS for the origins of `CORS_ORIGINS`, with the session cookie (credentials): the API's
/// methods (GET, POST, and PUT for the avatar), a JSON body's `Content-Type`, preflights kept
/// for 10 minutes. `None` without origins: cross-origin pages then cannot read any answer.
fn cors(config: &Config) -> Result<Option<Cors>, BuildError> {
    if config.cors_origins.is_empty() {
        return Ok(None);
    }
    Cors::new(
        CorsConfig::new(AllowOrigin::list(&config.cors_origins))
            .methods([http::Method::GET, http::Method::POST, http::Method::PUT])
            .headers([http::header::CONTENT_TYPE])
            .credentials(true)
            .max_age(std::time::Duration::from_secs(600)),
    )
    .map(Some)
    .map_err(|e| BuildError::new(e.to_string()))
}

/// Where the service serves its Prometheus metrics (see the README's Operations section).
pub const METRICS_PATH: &str = "/metrics";
/// Where the service serves its OpenAPI document.
pub const OPENAPI_PATH: &str = "/openapi.json";
/// Where the service serves the interactive docs page for it (Swagger UI, compiled in), with
/// its files under `/docs/`. The login page links to it.
pub const DOCS_PATH: &str = "/docs";
const OPENAPI_TITLE: &str = "user-service";

/// The OpenAPI document the service serves at [`OPENAPI_PATH`] with `config`, made without
/// connecting to any store (the app is assembled on memory stores, which describe themselves
/// as the real ones do).
pub fn openapi_document(config: &Config) -> Result<Vec<u8>, BuildError> {
    Ok(app(config, Stores::in_memory())?.openapi_document())
}

//! Configuration from the environment, with defaults that run out of the box.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use framework::middleware::rate_limiter::RateQuota;

/// The keys of cookie sessions (`SESSION_KEY`): never shown, equal when they hold the same
/// keys in the same order.
#[derive(Clone)]
pub struct SessionCookieKeys(pub framework::cookies::CookieKeys);

impl std::fmt::Debug for SessionCookieKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl PartialEq for SessionCookieKeys {
    fn eq(&self, other: &Self) -> bool {
        let masters = |k: &Self| {
            k.0.all()
                .iter()
                .map(|k| k.master().to_vec())
                .collect::<Vec<_>>()
        };
        masters(self) == masters(other)
    }
}

impl Eq for SessionCookieKeys {}

/// Service settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `BIND`: where to listen. Default `127.0.0.1:3000`. `unix:/run/user-service/http.sock`
    /// serves on a Unix-domain socket (mode `0o660`, removed on shutdown); `fd:0` on the first
    /// socket systemd (or `systemfd`) passes, for socket activation
    /// ([`framework::listener`]).
    pub bind: framework::listener::ListenAddr,
    /// `RUST_LOG`: tracing filter. Default `info`.
    pub log: String,
    /// `TRUST_PROXY`: the proxies in front of the service whose `X-Forwarded-For` is believed:
    /// `false` (default), `true` (one), a hop count, or their networks (`10.0.0.0/8,…`).
    pub trust_proxy: framework::client_ip::TrustedProxies,
    /// `SESSION_SECURE`: mark the session cookie `Secure` (`1`/`true`). Default on when the
    /// service serves HTTPS itself (`TLS_CERT`), else off.
    pub session_secure: bool,
    /// `TLS_CERT` and `TLS_KEY`: PEM files of the certificate chain and its key; both set, the
    /// service serves HTTPS on `BIND` (HTTP/2 and HTTP/1.1), reloading them on `SIGHUP` and
    /// when they change. Default unset: plain HTTP.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// `TLS_CLIENT_CA` (with `TLS_CERT`): a PEM bundle of the CAs whose client certificates
    /// the service accepts (mutual TLS), reloaded with the certificate; `TLS_CLIENT_AUTH`
    /// says whether a client must show one (`required`, the default) or may (`optional`).
    /// Default unset: no client certificates asked for. Here the path and whether required.
    pub tls_client_ca: Option<(PathBuf, bool)>,
    /// `CORS_ORIGINS`: other origins whose pages may call the API with the session cookie
    /// (`https://app.example.com,https://admin.example.com`, scheme, host and port exactly as
    /// a browser sends them). Default none: only the service's own pages.
    pub cors_origins: Vec<String>,
    /// Failed-login limits (defaults: 5 per account and 50 per IP in 15 minutes).
    pub login_limits: crate::throttle::LoginLimits,
    /// `TOKEN_RATE_LIMIT`: login tokens (`GET /users/v1/login`, each a new session for a
    /// client without one) per client IP, as `<burst>/<period>` (`60/1m`, `10/s`, `1000/1h`) or
    /// `off`. Default 60 per minute: a person needs one per login attempt; a flood of
    /// anonymous sessions does not get far.
    pub token_rate: Option<RateQuota>,
    /// `LOGIN_RATE_LIMIT`: login attempts (`POST /users/v1/login`) per client IP, right or
    /// wrong, same form. Default 60 per minute, on top of the failed-login limits.
    pub login_rate: Option<RateQuota>,
    /// `DATABASE_URL`: the user store. `sqlite://…` or `postgres://…`, or `memory` for a store
    /// that forgets on restart. Default `sqlite://users.db?mode=rwc` (a file in the working
    /// directory, created when missing).
    pub database_url: String,
    /// `DATABASE_MAX_CONNECTIONS`: pool size. Default 10.
    pub database_max_connections: u32,
    /// `MEMORY_USERS`: with `DATABASE_URL=memory`, how many accounts the store holds at most;
    /// a registration past it gets 507. Default [`crate::store::DEFAULT_MEMORY_USERS`].
    pub memory_users: usize,
    /// `MEMORY_AVATAR_BYTES`: with `DATABASE_URL=memory`, how many bytes of avatars the store
    /// holds at most; an upload past it gets 507. Default
    /// [`crate::store::DEFAULT_MEMORY_AVATAR_BYTES`] (64 MiB).
    pub memory_avatar_bytes: usize,
    /// `USER_STORE_KEY`: the key that seals stored login secrets in the SQL store (64 hex
    /// digits or base64 of 32 bytes; `openssl rand -hex 32` makes one). Every instance on one
    /// database needs the same key. Required with PostgreSQL; with SQLite the default is a key
    /// file beside the database, created on first start.
    pub store_key: Option<crate::store::secret::StoreKey>,
    /// `USER_STORE_KEY_FILE`: a file holding that key instead (read once at start-up).
    pub store_key_file: Option<PathBuf>,
    /// `USER_STORE_PREVIOUS_KEYS`: earlier keys, comma-separated, after a rotation: rows they
    /// sealed are re-sealed under the current key at start-up.
    pub store_previous_keys: Vec<crate::store::secret::StoreKey>,
    /// `REDIS_URL`: sessions in Redis (`redis://host:6379/0`); unset keeps them in memory.
    pub redis_url: Option<String>,
    /// `SESSION_KEY_PREFIX`: prefix of session keys in Redis. Default `session:`.
    pub session_key_prefix: String,
    /// `SESSION_STORE=cookie` with `SESSION_KEY`: sessions sealed whole in an encrypted cookie
    /// (no server state) under these keys: base64, 64 random bytes (or 32, from which a key is
    /// derived), newest first and comma-separated during a rotation. `None` (`SESSION_STORE`
    /// unset or `server`): sessions in Redis with `REDIS_URL`, else in memory.
    pub session_cookie_keys: Option<SessionCookieKeys>,
    /// `REDIS_TIMEOUT`: the deadline of every Redis command and connection attempt (`1s`,
    /// `500ms`). Default 1 s. See [`framework::redis_connection`].
    pub redis_timeout: Duration,
    /// `REDIS_PROBE_INTERVAL`: how often a Redis that counts as down is probed. Default 1 s.
    pub redis_probe_interval: Duration,
    /// `DATABASE_TIMEOUT`: the deadline of every user store call, and PostgreSQL's
    /// `statement_timeout`. Default 5 s.
    pub database_timeout: Duration,
    /// `DATABASE_ACQUIRE_TIMEOUT`: how long a call waits for a pooled connection. Default 2 s.
    pub database_acquire_timeout: Duration,
    /// `REQUEST_TIMEOUT`: the deadline of a request's handling (its middleware and handler),
    /// answered 503 when overrun. Default 20 s: above the 14 s a login can spend on the
    /// backends' own deadlines in a row with the defaults (two database calls of 5 s, four
    /// Redis commands of 1 s), so it fires only when something without a deadline of its own
    /// hangs, and below the 30 s graceful shutdown grace.
    pub request_timeout: Duration,
    /// `DRAIN_DELAY`: on SIGTERM, how long the service goes on serving while `/readyz` says
    /// 503, before it stops accepting (`0`, `5s`). Default 0: set it to the load balancer's
    /// probe period times its failure threshold (e.g. `5s` behind Kubernetes).
    pub drain_delay: Duration,
    /// `TRUST_TRACES`: join the trace a client names in `traceparent` (`true`, the default,
    /// behind a proxy or inside a mesh); `false` starts a new trace for every request (a
    /// public edge that does not let clients pick trace ids).
    pub trust_traces: bool,
}

/// The default user store: an SQLite file next to the process.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://users.db?mode=rwc";

impl Default for Config {
    fn default() -> Self {
        Self {
            bind: framework::listener::ListenAddr::Tcp(SocketAddr::from(([127, 0, 0, 1], 3000))),
            log: "info".to_owned(),
            trust_proxy: framework::client_ip::TrustedProxies::None,
            session_secure: false,
            tls: None,
            tls_client_ca: None,
            cors_origins: Vec::new(),
            login_limits: crate::throttle::LoginLimits::default(),
            token_rate: RateQuota::per_minute(60),
            login_rate: RateQuota::per_minute(60),
            database_url: DEFAULT_DATABASE_URL.to_owned(),
            database_max_connections: 10,
            memory_users: crate::store::DEFAULT_MEMORY_USERS,
            memory_avatar_bytes: crate::store::DEFAULT_MEMORY_AVATAR_BYTES,
            store_key: None,
            store_key_file: None,
            store_previous_keys: Vec::new(),
            redis_url: None,
            session_key_prefix: "session:".to_owned(),
            session_cookie_keys: None,
            redis_timeout: Duration::from_secs(1),
            redis_probe_interval: Duration::from_secs(1),
            database_timeout: Duration::from_secs(5),
            database_acquire_timeout: Duration::from_secs(2),
            request_timeout: Duration::from_secs(20),
            drain_delay: Duration::ZERO,
            trust_traces: true,
        }
    }
}

fn flag(value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" | "" => Ok(false),
        other => Err(format!("expected true or false, got `{other}`")),
    }
}

/// A rate as `<burst>/<period>`: the period is a number (default 1) and a unit `s`, `m` or `h`
/// (`60/1m`, `10/s`, `500/30s`); `off` (or `0`) turns the limit off.
pub fn parse_rate(value: &str) -> Result<Option<RateQuota>, String> {
    let value = value.trim();
    if value.eq_ignore_ascii_case("off") || value == "0" {
        return Ok(None);
    }
    let invalid = || format!("`{value}` is not a rate like 60/1m, 10/s or off");
    let (burst, period) = value.split_once('/').ok_or_else(invalid)?;
    let burst: u32 = burst.trim().parse().map_err(|_| invalid())?;
    let period = period.trim();
    let unit_at = period.len().saturating_sub(1);
    let (count, unit) = period.split_at(unit_at);
    let count: u64 = if count.is_empty() {
        1
    } else {
        count.parse().map_err(|_| invalid())?
    };
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => return Err(invalid()),
    };
    let period = Duration::from_secs(count.checked_mul(seconds).ok_or_else(invalid)?);
    RateQuota::new(burst, period).map(Some).ok_or_else(invalid)
}

/// A positive duration as a whole number and a unit: `ms`, `s` or `m` (`500ms`, `1s`, `2m`).
pub fn parse_duration(value: &str) -> Result<Duration, String> {
    let value = value.trim();
    let invalid = || format!("`{value}` is not a duration like 500ms, 1s or 2m");
    let split = value
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(invalid)?;
    let (count, unit) = value.split_at(split);
    let count: u64 = count.parse().map_err(|_| invalid())?;
    let duration = match unit {
        "ms" => Duration::from_millis(count),
        "s" => Duration::from_secs(count),
        "m" => Duration::from_secs(count.checked_mul(60).ok_or_else(invalid)?),
        _ => return Err(invalid()),
    };
    if duration.is_zero() {
        return Err(invalid());
    }
    Ok(duration)
}

impl Config {
    /// Reads the settings from `lookup` (the environment in production, a map in tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let mut config = Self::default();
        if let Some(bind) = lookup("BIND") {
            config.bind = bind.parse().map_err(|e| format!("BIND: {e}"))?;
        }
        if let Some(log) = lookup("RUST_LOG") {
            config.log = log;
        }
        if let Some(v) = lookup("TRUST_PROXY") {
            config.trust_proxy = v.parse().map_err(|e| format!("TRUST_PROXY: {e}"))?;
        }
        match (
            lookup("TLS_CERT").filter(|v| !v.is_empty()),
            lookup("TLS_KEY").filter(|v| !v.is_empty()),
        ) {
            (Some(cert), Some(key)) => config.tls = Some((cert.into(), key.into())),
            (None, None) => {}
            _ => return Err("TLS_CERT and TLS_KEY go together: set both, or neither".into()),
        }
        let required = match lookup("TLS_CLIENT_AUTH").as_deref() {
            None | Some("required") => true,
            Some("optional") => false,
            Some(other) => {
                return Err(format!(
                    "TLS_CLIENT_AUTH: expected required or optional, got `{other}`"
                ));
            }
        };
        match lookup("TLS_CLIENT_CA").filter(|v| !v.is_empty()) {
            Some(_) if config.tls.is_none() => {
                return Err("TLS_CLIENT_CA needs TLS_CERT and TLS_KEY".into());
            }
            Some(ca) => config.tls_client_ca = Some((ca.into(), required)),
            None if lookup("TLS_CLIENT_AUTH").is_some() => {
                return Err("TLS_CLIENT_AUTH needs TLS_CLIENT_CA".into());
            }
            None => {}
        }
        // Over HTTPS the session cookie is `Secure` unless said otherwise.
        config.session_secure = config.tls.is_some();
        if let Some(v) = lookup("SESSION_SECURE") {
            config.session_secure = flag(&v).map_err(|e| format!("SESSION_SECURE: {e}"))?;
        }
        if let Some(v) = lookup("CORS_ORIGINS") {
            config.cors_origins = v
                .split(',')
                .map(str::trim)
                .filter(|o| !o.is_empty())
                .map(|o| {
                    if o == "*" || o.ends_with('/') || !o.contains("://") {
                        Err(format!(
                            "CORS_ORIGINS: `{o}` is not an origin like https://app.example.com \
                             (no `*`: the session cookie is a credential)"
                        ))
                    } else {
                        Ok(o.to_owned())
                    }
                })
                .collect::<Result<_, _>>()?;
        }
        if let Some(url) = lookup("DATABASE_URL").filter(|u| !u.is_empty()) {
            config.database_url = url;
        }
        if let Some(n) = lookup("DATABASE_MAX_CONNECTIONS") {
            config.database_max_connections =
                n.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                    format!("DATABASE_MAX_CONNECTIONS=`{n}` is not a positive number")
                })?;
        }
        if let Some(n) = lookup("MEMORY_USERS") {
            config.memory_users = n
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("MEMORY_USERS=`{n}` is not a positive number"))?;
        }
        if let Some(n) = lookup("MEMORY_AVATAR_BYTES") {
            config.memory_avatar_bytes = n
                .parse()
                .ok()
                .ok_or_else(|| format!("MEMORY_AVATAR_BYTES=`{n}` is not a number of bytes"))?;
        }
        if let Some(v) = lookup("TOKEN_RATE_LIMIT") {
            config.token_rate = parse_rate(&v).map_err(|e| format!("TOKEN_RATE_LIMIT: {e}"))?;
        }
        if let Some(v) = lookup("LOGIN_RATE_LIMIT") {
            config.login_rate = parse_rate(&v).map_err(|e| format!("LOGIN_RATE_LIMIT: {e}"))?;
        }
        if let Some(v) = lookup("USER_STORE_KEY").filter(|v| !v.is_empty()) {
            config.store_key = Some(v.parse().map_err(|e| format!("USER_STORE_KEY: {e}"))?);
        }
        config.store_key_file = lookup("USER_STORE_KEY_FILE")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        if let Some(v) = lookup("USER_STORE_PREVIOUS_KEYS") {
            config.store_previous_keys = v
                .split(',')
                .filter(|k| !k.trim().is_empty())
                .map(str::parse)
                .collect::<Result<_, _>>()
                .map_err(|e| format!("USER_STORE_PREVIOUS_KEYS: {e}"))?;
        }
        config.redis_url = lookup("REDIS_URL").filter(|u| !u.is_empty());
        if let Some(prefix) = lookup("SESSION_KEY_PREFIX") {
            config.session_key_prefix = prefix;
        }
        match lookup("SESSION_STORE").as_deref().map(str::trim) {
            None | Some("" | "server") => {}
            Some("cookie") => {
                let keys = lookup("SESSION_KEY")
                    .ok_or("SESSION_STORE=cookie needs SESSION_KEY (base64, 64 random bytes)")?;
                let keys = framework::cookies::CookieKeys::from_base64(&keys)
                    .map_err(|e| format!("SESSION_KEY: {e}"))?;
                config.session_cookie_keys = Some(SessionCookieKeys(keys));
            }
            Some(other) => {
                return Err(format!(
                    "SESSION_STORE: `{other}` is neither `server` nor `cookie`"
                ));
            }
        }
        for (name, field) in [
            ("REDIS_TIMEOUT", &mut config.redis_timeout),
            ("REDIS_PROBE_INTERVAL", &mut config.redis_probe_interval),
            ("DATABASE_TIMEOUT", &mut config.database_timeout),
            (
                "DATABASE_ACQUIRE_TIMEOUT",
                &mut config.database_acquire_timeout,
            ),
            ("REQUEST_TIMEOUT", &mut config.request_timeout),
        ] {
            if let Some(v) = lookup(name) {
                *field = parse_duration(&v).map_err(|e| format!("{name}: {e}"))?;
            }
        }
        if let Some(v) = lookup("TRUST_TRACES") {
            config.trust_traces = flag(&v).map_err(|e| format!("TRUST_TRACES: {e}"))?;
        }
        if let Some(v) = lookup("DRAIN_DELAY") {
            config.drain_delay = if v.trim() == "0" {
                Duration::ZERO
            } else {
                parse_duration(&v).map_err(|e| format!("DRAIN_DELAY: {e}"))?
            };
        }
        Ok(config)
    }

    /// Reads the settings from the process environment.
    pub fn from_env() -> Result<Self, String> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }
}

/// `url` with any password replaced by `***`, fit for a log line.
pub fn redact(url: &str) -> String {
    // A Redis Cluster's nodes: each URL on its own.
    if url.contains(',') {
        return url.split(',').map(redact).collect::<Vec<_>>().join(",");
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        assert_eq!(Config::from_lookup(|_| None).unwrap(), Config::default());
        let c = Config::from_lookup(|k| match k {
            "BIND" => Some("0.0.0.0:8080".into()),
            "TRUST_PROXY" => Some("true".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            c.bind,
            framework::listener::ListenAddr::Tcp(SocketAddr::from(([0, 0, 0, 0], 8080)))
        );
        let unix = Config::from_lookup(|k| (k == "BIND").then(|| "unix:/run/u.sock".into()));
        assert_eq!(
            unix.unwrap().bind,
            framework::listener::ListenAddr::Unix("/run/u.sock".into())
        );
        let fd = Config::from_lookup(|k| (k == "BIND").then(|| "fd:0".into()));
        assert_eq!(
            fd.unwrap().bind,
            framework::listener::ListenAddr::Inherited(0)
        );
        assert!(Config::from_lookup(|k| (k == "BIND").then(|| "unix:".into())).is_err());
        assert!(Config::from_lookup(|k| (k == "BIND").then(|| "fd:x".into())).is_err());
        assert_eq!(c.trust_proxy, framework::client_ip::TrustedProxies::Hops(1));
        let c = Config::from_lookup(|k| (k == "TRUST_PROXY").then(|| "2".into())).unwrap();
        assert_eq!(c.trust_proxy, framework::client_ip::TrustedProxies::Hops(2));
        assert!(Config::from_lookup(|k| (k == "BIND").then(|| "nope".into())).is_err());
        assert!(Config::from_lookup(|k| (k == "TRUST_PROXY").then(|| "maybe".into())).is_err());
        assert!(
            Config::from_lookup(|k| (k == "DATABASE_MAX_CONNECTIONS").then(|| "0".into())).is_err()
        );
        let c = Config::from_lookup(|k| (k == "MEMORY_AVATAR_BYTES").then(|| "1000".into()));
        assert_eq!(c.unwrap().memory_avatar_bytes, 1000);
        let err = Config::from_lookup(|k| (k == "MEMORY_AVATAR_BYTES").then(|| "1MB".into()))
            .unwrap_err();
        assert!(err.starts_with("MEMORY_AVATAR_BYTES="), "{err}");
    }

    #[test]
    fn tls_files_go_together_and_make_the_cookie_secure() {
        let tls = |pairs: &[(&str, &str)]| {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            Config::from_lookup(move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
        };
        let c = tls(&[("TLS_CERT", "c.pem"), ("TLS_KEY", "k.pem")]).unwrap();
        assert_eq!(c.tls, Some(("c.pem".into(), "k.pem".into())));
        assert!(c.session_secure);
        let c = tls(&[
            ("TLS_CERT", "c.pem"),
            ("TLS_KEY", "k.pem"),
            ("SESSION_SECURE", "false"),
        ])
        .unwrap();
        assert!(!c.session_secure, "an explicit setting wins");
        assert!(!tls(&[]).unwrap().session_secure);
        let err = tls(&[("TLS_CERT", "c.pem")]).unwrap_err();
        assert!(err.contains("TLS_CERT and TLS_KEY"), "{err}");

        let files = [("TLS_CERT", "c.pem"), ("TLS_KEY", "k.pem")];
        let with = |more: &[(&'static str, &'static str)]| tls(&[&files[..], more].concat());
        assert_eq!(with(&[]).unwrap().tls_client_ca, None);
        let c = with(&[("TLS_CLIENT_CA", "ca.pem")]).unwrap();
        assert_eq!(c.tls_client_ca, Some(("ca.pem".into(), true)));
        let c = with(&[("TLS_CLIENT_CA", "ca.pem"), ("TLS_CLIENT_AUTH", "optional")]).unwrap();
        assert_eq!(c.tls_client_ca, Some(("ca.pem".into(), false)));
        let err = with(&[("TLS_CLIENT_CA", "ca.pem"), ("TLS_CLIENT_AUTH", "maybe")]).unwrap_err();
        assert!(err.starts_with("TLS_CLIENT_AUTH: expected"), "{err}");
        let err = with(&[("TLS_CLIENT_AUTH", "optional")]).unwrap_err();
        assert_eq!(err, "TLS_CLIENT_AUTH needs TLS_CLIENT_CA");
        let err = tls(&[("TLS_CLIENT_CA", "ca.pem")]).unwrap_err();
        assert_eq!(err, "TLS_CLIENT_CA needs TLS_CERT and TLS_KEY");
    }

    #[test]
    fn cors_origins() {
        let origins = |v: &str| {
            Config::from_lookup(|k| (k == "CORS_ORIGINS").then(|| v.to_owned()))
                .map(|c| c.cors_origins)
        };
        assert_eq!(
            origins(" https://a.example.com, http://127.0.0.1:8080 ,"),
            Ok(vec![
                "https://a.example.com".to_owned(),
                "http://127.0.0.1:8080".to_owned()
            ])
        );
        assert_eq!(origins(""), Ok(Vec::new()));
        // `*` would hand the session cookie to any site; a path or a bare host is no origin.
        for bad in ["*", "https://a.example.com/", "a.example.com"] {
            let err = origins(bad).unwrap_err();
            assert!(err.starts_with("CORS_ORIGINS:"), "{err}");
        }
    }

    #[test]
    fn rates() {
        let q = |burst, secs| RateQuota::new(burst, Duration::from_secs(secs));
        assert_eq!(parse_rate("60/1m"), Ok(q(60, 60)));
        assert_eq!(parse_rate("10/s"), Ok(q(10, 1)));
        assert_eq!(parse_rate(" 500/30s "), Ok(q(500, 30)));
        assert_eq!(parse_rate("1000/2h"), Ok(q(1000, 7200)));
        assert_eq!(parse_rate("off"), Ok(None));
        assert_eq!(parse_rate("0"), Ok(None));
        for bad in [
            "",
            "60",
            "60/",
            "60/1x",
            "x/1m",
            "0/1m",
            "60/0s",
            "-1/1m",
            "60/99999999999999999999h",
        ] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
        let c = Config::from_lookup(|k| match k {
            "TOKEN_RATE_LIMIT" => Some("off".into()),
            "LOGIN_RATE_LIMIT" => Some("5/1m".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(c.token_rate, None);
        assert_eq!(c.login_rate, q(5, 60));
        assert!(Config::from_lookup(|k| (k == "LOGIN_RATE_LIMIT").then(|| "fast".into())).is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration(" 1s "), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        for bad in [
            "",
            "1",
            "s",
            "0s",
            "1h",
            "-1s",
            "1.5s",
            "99999999999999999999m",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        let c = Config::from_lookup(|k| match k {
            "REDIS_TIMEOUT" => Some("250ms".into()),
            "DATABASE_TIMEOUT" => Some("3s".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(c.redis_timeout, Duration::from_millis(250));
        assert_eq!(c.redis_probe_interval, Duration::from_secs(1));
        assert_eq!(c.database_timeout, Duration::from_secs(3));
        assert_eq!(c.database_acquire_timeout, Duration::from_secs(2));
        let err = Config::from_lookup(|k| (k == "DATABASE_ACQUIRE_TIMEOUT").then(|| "0s".into()));
        assert!(err.unwrap_err().starts_with("DATABASE_ACQUIRE_TIMEOUT: "));
        // The drain delay may be zero (the default).
        assert_eq!(c.drain_delay, Duration::ZERO);
        let drain = |v: &str| {
            let v = v.to_owned();
            Config::from_lookup(move |k| (k == "DRAIN_DELAY").then(|| v.clone()))
        };
        assert_eq!(drain("0").unwrap().drain_delay, Duration::ZERO);
        assert_eq!(drain("5s").unwrap().drain_delay, Duration::from_secs(5));
        assert!(drain("soon").unwrap_err().starts_with("DRAIN_DELAY: "));
    }

    #[test]
    fn trust_traces() {
        assert!(Config::default().trust_traces);
        let off = Config::from_lookup(|k| (k == "TRUST_TRACES").then(|| "false".into()));
        assert!(!off.unwrap().trust_traces);
        let bad = Config::from_lookup(|k| (k == "TRUST_TRACES").then(|| "maybe".into()));
        assert!(bad.unwrap_err().starts_with("TRUST_TRACES: "));
    }

    #[test]
    fn store_keys() {
        let hex_key = "ab".repeat(32);
        let c = Config::from_lookup(|k| match k {
            "USER_STORE_KEY" => Some(hex_key.clone()),
            "USER_STORE_PREVIOUS_KEYS" => Some(format!("{},{}", "01".repeat(32), "02".repeat(32))),
            "USER_STORE_KEY_FILE" => Some("/run/secrets/users.key".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(c.store_key.as_ref().map(|k| k.0), Some([0xab; 32]));
        assert_eq!(c.store_previous_keys.len(), 2);
        assert_eq!(
            c.store_key_file,
            Some(PathBuf::from("/run/secrets/users.key"))
        );
        assert!(
            !format!("{c:?}").contains(&hex_key),
            "Debug never shows a key"
        );
        let err = Config::from_lookup(|k| (k == "USER_STORE_KEY").then(|| "short".into()));
        assert!(err.unwrap_err().starts_with("USER_STORE_KEY: "));
    }

    #[test]
    fn redacts_passwords_only() {
        assert_eq!(
            redact("postgres://app:s3cret@db:5432/users?sslmode=disable"),
            "postgres://app:***@db:5432/users?sslmode=disable"
        );
        assert_eq!(
            redact("redis://:pw@cache:6379/0"),
            "redis://:***@cache:6379/0"
        );
        assert_eq!(redact("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(
            redact("redis://:a@n1:7000,redis://:b@n2:7000"),
            "redis://:***@n1:7000,redis://:***@n2:7000"
        );
        assert_eq!(
            redact("sqlite://users.db?mode=rwc"),
            "sqlite://users.db?mode=rwc"
        );
        assert_eq!(redact("postgres://app@db/x"), "postgres://app@db/x");
    }
}

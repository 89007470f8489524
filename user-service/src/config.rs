//! Configuration from the environment, with defaults that run out of the box.

use std::net::SocketAddr;

/// Service settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `BIND`: address to listen on. Default `127.0.0.1:3000`.
    pub bind: SocketAddr,
    /// `RUST_LOG`: tracing filter. Default `info`.
    pub log: String,
    /// `TRUST_PROXY`: believe `X-Forwarded-For`/`X-Real-Ip` (`1`/`true`). Default off.
    pub trust_proxy: bool,
    /// `SESSION_SECURE`: mark the session cookie `Secure` (`1`/`true`). Default off.
    pub session_secure: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 3000)),
            log: "info".to_owned(),
            trust_proxy: false,
            session_secure: false,
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

impl Config {
    /// Reads the settings from `lookup` (the environment in production, a map in tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let mut config = Self::default();
        if let Some(bind) = lookup("BIND") {
            config.bind = bind
                .parse()
                .map_err(|e| format!("BIND=`{bind}` is not an address like 127.0.0.1:3000: {e}"))?;
        }
        if let Some(log) = lookup("RUST_LOG") {
            config.log = log;
        }
        if let Some(v) = lookup("TRUST_PROXY") {
            config.trust_proxy = flag(&v).map_err(|e| format!("TRUST_PROXY: {e}"))?;
        }
        if let Some(v) = lookup("SESSION_SECURE") {
            config.session_secure = flag(&v).map_err(|e| format!("SESSION_SECURE: {e}"))?;
        }
        Ok(config)
    }

    /// Reads the settings from the process environment.
    pub fn from_env() -> Result<Self, String> {
        Self::from_lookup(|k| std::env::var(k).ok())
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
        assert_eq!(c.bind.port(), 8080);
        assert!(c.trust_proxy);
        assert!(Config::from_lookup(|k| (k == "BIND").then(|| "nope".into())).is_err());
        assert!(Config::from_lookup(|k| (k == "TRUST_PROXY").then(|| "maybe".into())).is_err());
    }
}

//! Sessions kept whole in the client's cookie, encrypted and authenticated: no server state.
//!
//! The session's id, values and expiry are sealed (AES-256-GCM under the first of the store's
//! [`CookieKeys`], the cookie's name as associated data) into the session cookie as a private
//! cookie ([`crate::cookies`]). Any instance holding the keys reads it; a cookie that was
//! changed, made under none of the keys or past its expiry reads as no session, whatever the
//! browser kept. Keys rotate as the cookie jar's do: a new key first, old ones after it until
//! the sessions they sealed have expired.
//!
//! What it cannot do, unlike the memory and Redis stores: revoke a session on the server (a
//! copied cookie stays valid until its expiry, even after the user logged out), log a user out
//! everywhere, or count and list sessions; and the whole session travels with every request,
//! so it must stay small: a session whose cookie would pass 4096 bytes fails the response
//! (500, `framework-session`, code `session_too_large`, and an error line in the log) rather
//! than being dropped by the browser without a word.
//!
//! ```
//! use std::sync::Arc;
//! use framework::cookies::CookieKeys;
//! use framework::middleware::session::{CookieStore, SessionConfig, SessionMiddleware};
//!
//! let store = CookieStore::new(CookieKeys::generate());
//! let sessions = SessionMiddleware::new(Arc::new(store), SessionConfig::default());
//! let app = framework::App::new().register_middleware("session", sessions);
//! # let _ = app;
//! ```

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::{SessionData, SessionStore};
use crate::cookies::CookieKeys;
use crate::error::Result;

/// A [`SessionStore`] that keeps each session whole in the client's cookie, encrypted and
/// authenticated under [`CookieKeys`] (the first seals, all open): no server state. An
/// expired, changed or foreign cookie is no session; a session whose cookie would pass 4096
/// bytes fails the response (500, `framework-session`, code `session_too_large`). It cannot
/// revoke a session on the server nor log a user out everywhere; see the sessions chapter of
/// the [guide](crate::guide::sessions).
///
/// ```
/// use std::sync::Arc;
/// use framework::cookies::CookieKeys;
/// use framework::middleware::session::{CookieStore, SessionConfig, SessionMiddleware};
///
/// let store = CookieStore::new(CookieKeys::generate());
/// let sessions = SessionMiddleware::new(Arc::new(store), SessionConfig::default());
/// # let _ = sessions;
/// ```
#[derive(Debug, Clone)]
pub struct CookieStore {
    keys: CookieKeys,
}

impl CookieStore {
    /// Sessions sealed under `keys` (the first seals, all open).
    pub fn new(keys: CookieKeys) -> Self {
        Self { keys }
    }

    /// The keys sessions are sealed under.
    pub fn keys(&self) -> &CookieKeys {
        &self.keys
    }
}

/// What the cookie holds, before sealing.
#[derive(Serialize, Deserialize)]
pub(super) struct Sealed {
    /// The session's id (22 characters), kept so that `Session::id` and `regenerate` work as
    /// with the other stores.
    pub(super) id: String,
    /// Expiry, in seconds since the Unix epoch.
    pub(super) exp: u64,
    pub(super) data: SessionData,
}

impl Sealed {
    /// The sealed text of a session that lives `ttl` from now.
    pub(super) fn seal(id: &str, data: &SessionData, ttl: Duration) -> serde_json::Result<String> {
        #[derive(Serialize)]
        struct Borrowed<'a> {
            id: &'a str,
            exp: u64,
            data: &'a SessionData,
        }
        serde_json::to_string(&Borrowed {
            id,
            exp: expiry(since_epoch(), ttl),
            data,
        })
    }

    /// The session in an opened cookie: `None` when it does not parse or has expired.
    pub(super) fn open(text: &str) -> Option<Self> {
        let sealed: Self = serde_json::from_str(text).ok()?;
        (sealed.exp > now_secs()).then_some(sealed)
    }
}

fn now_secs() -> u64 {
    since_epoch().as_secs()
}

fn since_epoch() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// The whole second a session made at `now` (since the epoch) that lives `ttl` expires at:
/// `now + ttl` rounded up, so it lives at least `ttl` and less than a second more. (Rounded
/// down, a 1 s session written late in a second expired at the next one, a few milliseconds
/// later.)
fn expiry(now: Duration, ttl: Duration) -> u64 {
    let end = now.saturating_add(ttl);
    end.as_secs()
        .saturating_add(u64::from(end.subsec_nanos() > 0))
}

/// The middleware never calls these for this store: it opens and seals the cookie itself
/// ([`SessionStore::in_cookie`]). Called directly, they answer as a store that keeps nothing
/// by id would: no record under any id, and nothing to delete.
#[async_trait]
impl SessionStore for CookieStore {
    /// `None`: no session is kept on the server (a readiness probe finds this store ready).
    async fn load(&self, _id: &str) -> Result<Option<Bytes>> {
        Ok(None)
    }

    /// An error: a session is sealed into the response's cookie, which takes the request's
    /// context; only the session middleware has it.
    async fn save(&self, _id: &str, _data: &[u8], _ttl: Duration) -> Result {
        Err(crate::Error::msg(
            "the cookie session store keeps sessions in the client's cookie: only the session \
             middleware saves them",
        ))
    }

    /// Nothing to delete: the session lives in the client's cookie.
    async fn destroy(&self, _id: &str) -> Result {
        Ok(())
    }

    fn in_cookie(&self) -> Option<&CookieStore> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_lives_at_least_its_ttl_and_less_than_a_second_more() {
        let ttl = Duration::from_secs(1);
        // Made late in second 100: expires at 102, not at 101 a few milliseconds later.
        assert_eq!(expiry(Duration::from_millis(100_990), ttl), 102);
        assert_eq!(expiry(Duration::from_millis(100_000), ttl), 101);
        assert_eq!(expiry(Duration::from_millis(100_001), ttl), 102);
        // A session kept "for ever" does not overflow.
        assert_eq!(expiry(Duration::from_secs(100), Duration::MAX), u64::MAX);
    }
}

//! Sessions: a per-client key/value store, loaded before the chain and saved after it.
//!
//! The client carries only the session id: in a cookie (default: `sid`, `Path=/`, `HttpOnly`,
//! `SameSite=Lax`, `Secure` when configured) or, for non-browser clients, in the
//! `X-Session-Id` header. Ids are 128 bits from the OS random generator, base64url (22
//! characters); anything else a client sends is ignored and a new session starts.
//!
//! The session is saved after the chain only when it was modified and no error occurred (or the
//! handler asked for it with [`Session::save_on_error`]); saving
//! refreshes the TTL (24 h by default) in the store and the cookie. [`Session::regenerate`]
//! gives the session a new id and drops the old record (do it on login against session
//! fixation). A store failure is a 500 with category `framework-session`.
//!
//! Stores: [`MemoryStore`] (this process), `RedisStore` (feature `session-redis`,
//! shared by instances), or [`CookieStore`], which keeps the whole session in an encrypted
//! cookie instead of an id (no server state, and so no server-side revocation).
//!
//! Streams: the session is saved and its cookie set when the chain returns, before a streamed
//! body starts to flow, so a streaming handler's session changes are kept like any other.
//!
//! ```
//! use std::sync::Arc;
//! use framework::middleware::session::{MemoryStore, SessionConfig, SessionMiddleware};
//!
//! let sessions = SessionMiddleware::new(Arc::new(MemoryStore::new()), SessionConfig::default());
//! let app = framework::App::new().register_middleware("session", sessions);
//! # let _ = app;
//! ```

mod cookie;
mod data;
mod handle;
mod memory;
#[cfg(feature = "session-redis")]
mod redis;
mod store;

use std::sync::Arc;
use std::time::Duration;

use compact_str::CompactString;
use http::StatusCode;
use http::header::{HeaderName, HeaderValue};

pub use self::cookie::CookieStore;
pub use self::data::{SessionData, SessionValue};
pub use self::handle::Session;
use self::handle::save_id;
pub use self::memory::{DEFAULT_MEMORY_CAPACITY, MemoryStore};
#[cfg(feature = "session-redis")]
pub use self::redis::RedisStore;
pub use self::store::{ImmediateSessionStore, SessionStore};

use self::cookie::Sealed;
use crate::context::Context;
use crate::cookies::CookiesExt;
use crate::cookies::{Cookie, CookieError, MAX_COOKIE_SIZE, SameSite};
use crate::error::{HttpError, Result};
use crate::handler::{Before, BoxFuture, Middleware, Next};

/// Category of session errors.
pub const CATEGORY: &str = "framework-session";

/// The session of a request, for handlers: `ctx.session()` once this trait is in scope.
///
/// The session middleware keeps the request's [`Session`] in the context's typed data
/// ([`Context::insert_data`]); this trait gives it its name and the error a handler wants when
/// the middleware is missing.
///
/// ```
/// use framework::middleware::session::SessionExt;
/// use framework::{Context, Result};
///
/// async fn visits(ctx: &mut Context) -> Result<u64> {
///     let session = ctx.session()?;
///     let visits = session.get::<u64>("visits").unwrap_or(0) + 1;
///     session.set("visits", visits)?;
///     Ok(visits)
/// }
/// # let _ = visits;
/// ```
pub trait SessionExt {
    /// The session; an error (500, `framework-session`) when no session middleware ran.
    fn session(&mut self) -> Result<&mut Session, HttpError>;
}

/// A controller method may take `session: &mut Session` (see [`crate::extract`]).
impl crate::extract::FromContext for Session {
    #[inline]
    fn from_context(ctx: &mut Context) -> Result<&mut Self, HttpError> {
        ctx.session()
    }
}

impl SessionExt for Context {
    #[inline]
    fn session(&mut self) -> Result<&mut Session, HttpError> {
        self.data_mut::<Session>().ok_or_else(|| {
            HttpError::with(
                StatusCode::INTERNAL_SERVER_ERROR,
                CATEGORY,
                "session middleware is not used on this route",
            )
            .with_exception(true)
        })
    }
}

/// `X-Session-Id`, the header of header mode.
pub const X_SESSION_ID: HeaderName = HeaderName::from_static("x-session-id");

/// Where the client keeps the session id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionMode {
    /// A cookie with this name.
    Cookie(String),
    /// A header with this name, sent by the client and echoed when a session is saved.
    Header(HeaderName),
}

/// Session settings.
#[derive(Clone)]
#[non_exhaustive]
pub struct SessionConfig {
    /// Cookie (default `sid`) or header mode.
    pub mode: SessionMode,
    /// Lifetime in the store and of the cookie, refreshed on every save. Default 24 h.
    pub ttl: Duration,
    /// Adds `Secure` to the cookie (set it when served over https).
    pub secure: bool,
}

crate::config::setters!(SessionConfig {
    mode: SessionMode,
    ttl: Duration,
    secure: bool,
});

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            mode: SessionMode::Cookie("sid".to_owned()),
            ttl: Duration::from_secs(24 * 60 * 60),
            secure: false,
        }
    }
}

/// The session middleware.
pub struct SessionMiddleware {
    store: Arc<dyn SessionStore>,
    config: SessionConfig,
}

/// A 500 exception in the session category, with the cause as its message.
fn internal_error(err: impl std::fmt::Display) -> HttpError {
    HttpError::with(StatusCode::INTERNAL_SERVER_ERROR, CATEGORY, err.to_string())
        .with_exception(true)
}

fn store_error(err: &crate::Error) -> HttpError {
    tracing::error!(error = %err, "session store failed");
    crate::telemetry::counters().store_error(CATEGORY);
    HttpError::with(
        StatusCode::INTERNAL_SERVER_ERROR,
        CATEGORY,
        "session store is unavailable",
    )
    .with_exception(true)
}

/// A new id: 128 bits from the OS generator, base64url without padding.
fn new_id() -> Result<CompactString, HttpError> {
    let mut bits = [0u8; 16];
    getrandom::fill(&mut bits).map_err(internal_error)?;
    // 22 characters: kept inline, no allocation.
    let text = crate::ids::base64url_128(bits);
    let text = std::str::from_utf8(&text).map_err(internal_error)?;
    Ok(CompactString::new(text))
}

fn is_valid_id(id: &str) -> bool {
    id.len() == 22
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl SessionMiddleware {
    /// Sessions kept in `store`.
    pub fn new(store: Arc<dyn SessionStore>, config: SessionConfig) -> Self {
        Self { store, config }
    }

    fn client_id<'c>(&self, ctx: &'c Context) -> Option<&'c str> {
        let id = match &self.config.mode {
            SessionMode::Cookie(name) => crate::header::cookie(ctx.request_headers(), name),
            SessionMode::Header(name) => ctx.request_header(name),
        }?;
        is_valid_id(id).then_some(id)
    }

    async fn load(&self, ctx: &Context) -> Result<Session, HttpError> {
        let Some(id) = self.client_id(ctx) else {
            return Ok(Session::default());
        };
        let record = self.store.load(id).await.map_err(|e| store_error(&e))?;
        Ok(Session::from_record(id, record))
    }

    async fn save(&self, ctx: &mut Context, session: &Session) -> Result<(), HttpError> {
        let (id, old) = save_id(session)?;
        if let Some(old) = old {
            self.store.destroy(old).await.map_err(|e| store_error(&e))?;
        }
        let (record, ttl) = self.record(session)?;
        self.store
            .save(&id, &record, ttl)
            .await
            .map_err(|e| store_error(&e))?;
        self.send_id(ctx, &id, ttl)
    }

    /// Saves into a store of values: the session's data moves into the store as it is (the
    /// session was taken out of the context: the request is over for it).
    fn save_now(
        &self,
        store: &dyn ImmediateSessionStore,
        ctx: &mut Context,
        session: &mut Session,
        result: &Result,
    ) -> Result<(), HttpError> {
        if !session.modified || (result.is_err() && !session.save_on_error) {
            return Ok(());
        }
        let (id, old) = save_id(session)?;
        if let Some(old) = old {
            store.destroy_now(old).map_err(|e| store_error(&e))?;
        }
        let ttl = self.ttl(session);
        store
            .save_now(&id, std::mem::take(&mut session.data), ttl)
            .map_err(|e| store_error(&e))?;
        self.send_id(ctx, &id, ttl)
    }

    /// The session sealed in the request's cookie ([`CookieStore`]): a new one when there is
    /// none, or it does not open, or it has expired.
    fn open_cookie(&self, store: &CookieStore, ctx: &mut Context) -> Result<Session, HttpError> {
        let name = self.cookie_name()?;
        let opened = ctx.cookies().private_with(store.keys()).get(name);
        Ok(
            match opened.and_then(|cookie| Sealed::open(cookie.value())) {
                Some(sealed) if is_valid_id(&sealed.id) => {
                    Session::from_data(&sealed.id, Some(sealed.data))
                }
                _ => Session::default(),
            },
        )
    }

    /// Seals a modified session into the response's cookie; a session too large for a cookie
    /// fails the response (500, code `session_too_large`) and is logged.
    fn seal_cookie(
        &self,
        store: &CookieStore,
        ctx: &mut Context,
        session: &Session,
        result: &Result,
    ) -> Result<(), HttpError> {
        if !session.modified || (result.is_err() && !session.save_on_error) {
            return Ok(());
        }
        let name = self.cookie_name()?;
        // A regenerated session gets a new id; there is no old record to delete.
        let (id, _) = save_id(session)?;
        let ttl = self.ttl(session);
        let sealed = Sealed::seal(&id, &session.data, ttl).map_err(internal_error)?;
        let cookie = session_cookie(name, sealed, ttl, self.config.secure);
        match ctx.cookies().private_with(store.keys()).add(cookie) {
            Ok(()) => Ok(()),
            Err(CookieError::TooLarge { size, .. }) => {
                tracing::error!(
                    size,
                    limit = MAX_COOKIE_SIZE,
                    "session too large for its cookie: not saved"
                );
                Err(HttpError::with(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    CATEGORY,
                    format!(
                        "the session's cookie would be {size} bytes, over the {MAX_COOKIE_SIZE} \
                         a browser keeps: keep less in the session, or use a server-side store"
                    ),
                )
                .with_code("session_too_large")
                .with_exception(true))
            }
            Err(err) => Err(internal_error(err)),
        }
    }

    /// The session cookie's name: the cookie store needs cookie mode.
    fn cookie_name(&self) -> Result<&str, HttpError> {
        match &self.config.mode {
            SessionMode::Cookie(name) => Ok(name),
            SessionMode::Header(_) => Err(internal_error(
                "the cookie session store needs SessionMode::Cookie, not header mode",
            )),
        }
    }

    /// How long `session` lives from this save on.
    fn ttl(&self, session: &Session) -> Duration {
        session.ttl.unwrap_or(self.config.ttl)
    }

    /// The stored form of `session` (a JSON object) and how long it lives.
    fn record(&self, session: &Session) -> Result<(Vec<u8>, Duration), HttpError> {
        let record = serde_json::to_vec(&session.data).map_err(|e| store_error(&e.into()))?;
        Ok((record, self.ttl(session)))
    }

    /// Tells the client its session id: the cookie (through the cookie jar), or the header.
    fn send_id(&self, ctx: &mut Context, id: &str, ttl: Duration) -> Result<(), HttpError> {
        match &self.config.mode {
            SessionMode::Cookie(name) => {
                let cookie = session_cookie(name, id.to_owned(), ttl, self.config.secure);
                ctx.cookies().add(cookie).map_err(internal_error)?;
            }
            SessionMode::Header(name) => {
                if let Ok(v) = HeaderValue::try_from(id) {
                    ctx.response_headers_mut().insert(name.clone(), v);
                }
            }
        }
        Ok(())
    }
}

/// The session cookie: `<name>=<value>; HttpOnly; SameSite=Lax[; Secure]; Path=/;
/// Max-Age=<ttl>`.
fn session_cookie(name: &str, value: String, ttl: Duration, secure: bool) -> Cookie<'static> {
    Cookie::build((name.to_owned(), value))
        .path("/")
        .max_age(cookie_duration(ttl))
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(secure)
        .build()
}

/// `ttl` as the cookie crate's duration (saturating: a TTL past its range is forever anyway).
fn cookie_duration(ttl: Duration) -> crate::cookies::time::Duration {
    crate::cookies::time::Duration::try_from(ttl).unwrap_or(crate::cookies::time::Duration::MAX)
}

/// With a store that answers at once ([`SessionStore::immediate`], the memory store) the session
/// is loaded in `before` and saved in `after`, without a future; with any other store (Redis)
/// `handle` awaits it around the rest of the chain. Both do the same.
impl Middleware for SessionMiddleware {
    fn role(&self) -> Option<crate::handler::Role> {
        Some(crate::handler::Role::Session)
    }

    /// The session id, in its cookie or header, as an optional `apiKey` scheme named
    /// `session`: a request without one is served and gets one.
    fn describe(&self, operation: &mut crate::openapi::Operation<'_>) {
        let (location, name) = match &self.config.mode {
            SessionMode::Cookie(name) => ("cookie", name.as_str()),
            SessionMode::Header(name) => ("header", name.as_str()),
        };
        operation.security(
            "session",
            serde_json::json!({"type": "apiKey", "in": location, "name": name}),
            false,
        );
    }

    fn before(&self, ctx: &mut Context) -> Before {
        if ctx.is_committed() {
            return Before::Pass;
        }
        if let Some(store) = self.store.in_cookie() {
            return match self.open_cookie(store, ctx) {
                Ok(session) => {
                    ctx.insert_data(session);
                    Before::Continue
                }
                Err(err) => Before::Answer(Err(err.into())),
            };
        }
        let Some(store) = self.store.immediate() else {
            return Before::Handle;
        };
        let session = match self.client_id(ctx) {
            None => Session::default(),
            Some(id) => match store.load_now(id) {
                Ok(data) => Session::from_data(id, data),
                Err(err) => return Before::Answer(Err(store_error(&err).into())),
            },
        };
        ctx.insert_data(session);
        Before::Continue
    }

    fn after(&self, ctx: &mut Context, result: Result) -> Result {
        if let Some(store) = self.store.in_cookie() {
            if let Some(session) = ctx.remove_data::<Session>() {
                self.seal_cookie(store, ctx, &session, &result)?;
            }
            return result;
        }
        // Only after `before` said `Continue`, so the store is an immediate one.
        if let Some(store) = self.store.immediate()
            && let Some(mut session) = ctx.remove_data::<Session>()
        {
            self.save_now(store, ctx, &mut session, &result)?;
        }
        result
    }

    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        Box::pin(async move {
            if ctx.is_committed() {
                return next.run(ctx).await;
            }
            let session = self.load(ctx).await?;
            ctx.insert_data(session);
            let result = next.run(ctx).await;
            let session = ctx.remove_data::<Session>();
            if let Some(session) = session
                && session.modified
                && (result.is_ok() || session.save_on_error)
            {
                self.save(ctx, &session).await?;
            }
            result
        })
    }
}

#[cfg(test)]
mod tests;

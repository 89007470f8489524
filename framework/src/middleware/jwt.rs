//! JSON Web Tokens: verifies a bearer token and hands its claims to the handlers.
//!
//! The token comes from `Authorization: Bearer <token>` (scheme in any case) or, when
//! [`JwtConfig::cookie`] is set, from that cookie; never from the query string, since URLs end
//! up in logs. The algorithm is pinned by the configuration (HS256 by default; RS256 or ES256
//! with a PEM key): a token whose header names `none` or any other algorithm is refused. `exp`
//! is required and checked, `nbf` is checked when present, both with [`JwtConfig::leeway`]
//! (default 0): a token is refused from the second of its `exp` on (RFC 7519 section 4.1.4:
//! `exp` equal to now is expired), plus the leeway. A header with `crit` is refused (RFC 7515
//! section 4.1.11: no extension is understood here). A claim of the wrong JSON type (an `exp` given as a string) is refused
//! (jsonwebtoken 10.3 or later).
//!
//! Every failure is **401** with category `framework-jwt` and a message that never echoes the
//! token: `token is missing`, `token has expired`, `token is not valid yet`, `token is
//! invalid`; with the challenge of RFC 6750 section 3: `WWW-Authenticate: Bearer` when the
//! request carried no token (no error code, section 3.1), `Bearer error="invalid_token",
//! error_description="<the message>"` when it carried one that was refused. With `passthrough`, a request without any token goes on anonymously (a token that
//! is present but bad is still refused). The claims — any `Deserialize` type — are read with
//! [`claims`]; [`JwtIssuer`] signs tokens and renews those close to expiry.
//!
//! ```
//! use framework::middleware::jwt::{Jwt, JwtConfig, JwtIssuer, claims};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct User { sub: String }
//!
//! let secret = b"a long random secret, from the environment";
//! let jwt = Jwt::<User>::new(JwtConfig::hs256(secret));
//! let issuer = JwtIssuer::hs256(secret, std::time::Duration::from_secs(3600));
//! let token = issuer.issue(&User { sub: "alice".into() }).unwrap();
//!
//! async fn me(ctx: &mut framework::Context) -> framework::Result<String> {
//!     Ok(claims::<User>(ctx).map(|c| c.sub.clone()).unwrap_or_default())
//! }
//! let app = framework::App::new()
//!     .group(framework::Group::new("/api").use_middleware(jwt).get("/me", me));
//! # let _ = (app, token);
//! ```

use std::marker::PhantomData;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::StatusCode;
use http::header::{AUTHORIZATION, HeaderValue, WWW_AUTHENTICATE};
use jsonwebtoken::errors::ErrorKind;
/// The `jsonwebtoken` types the settings take, re-exported so an app names them through this
/// module, at the version and with the features (PEM keys, RSA, ECDSA, EdDSA) the framework
/// was built with, without a dependency of its own: e.g.
/// `JwtConfig::new(Algorithm::RS256, DecodingKey::from_rsa_pem(pem)?)`.
pub use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use jsonwebtoken::{Header, Validation};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::context::Context;
use crate::error::{HttpError, Result};
use crate::handler::{BoxFuture, Middleware, Next};

/// Category of rejections.
pub const CATEGORY: &str = "framework-jwt";

/// Verification settings.
#[derive(Clone)]
#[non_exhaustive]
pub struct JwtConfig {
    /// The one accepted algorithm.
    pub algorithm: Algorithm,
    /// The key tokens are verified with.
    pub key: DecodingKey,
    /// Also read the token from this cookie.
    pub cookie: Option<String>,
    /// Clock skew allowed on `exp` and `nbf`. Default 0.
    pub leeway: Duration,
    /// Let requests without a token through, without claims.
    pub passthrough: bool,
}

crate::config::setters!(JwtConfig {
    algorithm: Algorithm,
    key: DecodingKey,
});

impl JwtConfig {
    /// HS256 with a shared secret.
    pub fn hs256(secret: &[u8]) -> Self {
        Self::new(Algorithm::HS256, DecodingKey::from_secret(secret))
    }

    /// Any algorithm with its key, e.g. `Algorithm::RS256` and
    /// `DecodingKey::from_rsa_pem(public_pem)?`.
    pub fn new(algorithm: Algorithm, key: DecodingKey) -> Self {
        Self {
            algorithm,
            key,
            cookie: None,
            leeway: Duration::ZERO,
            passthrough: false,
        }
    }

    /// Also reads the token from the cookie `name` (after the `Authorization` header).
    #[must_use]
    pub fn cookie(mut self, name: impl Into<String>) -> Self {
        self.cookie = Some(name.into());
        self
    }

    /// Allows `leeway` of clock skew on `exp` and `nbf` (whole seconds count).
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// Lets requests without a token through, without claims (a token that is there must
    /// still verify).
    #[must_use]
    pub fn passthrough(mut self, passthrough: bool) -> Self {
        self.passthrough = passthrough;
        self
    }
}

/// Verified claims with their expiry.
#[derive(Debug, Clone, Deserialize)]
pub struct Verified<C> {
    /// The claims as the application defines them.
    #[serde(flatten)]
    pub claims: C,
    /// Expiry, seconds since the epoch.
    pub exp: u64,
}

/// A controller method may take `token: Verified<C>` (see [`crate::extract`]): the claims of
/// the request's verified token, cloned. Without one (the middleware is not on the route, or
/// let a request without a token pass) the answer is a **401**; take `Option<Verified<C>>` on
/// a route where the token is optional.
impl<C: Clone + Send + Sync + 'static> crate::extract::FromRequest for Verified<C> {
    type Rejection = HttpError;

    fn from_request(ctx: &mut Context) -> Result<Self, HttpError> {
        if let Some(verified) = ctx.data::<Self>() {
            return Ok(verified.clone());
        }
        Err(missing(ctx))
    }
}

impl<C: Clone + Send + Sync + 'static> crate::extract::FromRequest for Option<Verified<C>> {
    type Rejection = std::convert::Infallible;

    fn from_request(ctx: &mut Context) -> Result<Self, std::convert::Infallible> {
        Ok(ctx.data::<Verified<C>>().cloned())
    }
}

/// The claims of the request's verified token, if any.
pub fn claims<C: Send + Sync + 'static>(ctx: &Context) -> Option<&C> {
    ctx.data::<Verified<C>>().map(|v| &v.claims)
}

/// The verified token's claims and expiry, e.g. to renew it with [`JwtIssuer::renew`].
pub fn verified<C: Send + Sync + 'static>(ctx: &Context) -> Option<&Verified<C>> {
    ctx.data::<Verified<C>>()
}

/// The jwt middleware for claims of type `C`.
pub struct Jwt<C> {
    config: JwtConfig,
    validation: Validation,
    claims: PhantomData<fn() -> C>,
}

fn unauthorized(message: &'static str) -> HttpError {
    HttpError::with(StatusCode::UNAUTHORIZED, CATEGORY, message)
}

/// The 401 for a request with no token, with its challenge (RFC 6750 section 3.1: no error
/// code when no credentials were sent).
fn missing(ctx: &mut Context) -> HttpError {
    ctx.set_response_header(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    unauthorized("token is missing")
}

/// The 401 for a token that was refused, with its challenge: `invalid_token` and why.
fn refused(ctx: &mut Context, why: &'static str) -> HttpError {
    let challenge = format!(r#"Bearer error="invalid_token", error_description="{why}""#);
    // The reasons are fixed ASCII texts: always a valid header value.
    if let Ok(value) = HeaderValue::try_from(challenge) {
        ctx.set_response_header(WWW_AUTHENTICATE, value);
    }
    unauthorized(why)
}

impl<C: DeserializeOwned + Send + Sync + 'static> Jwt<C> {
    /// A verifier with `config`.
    pub fn new(config: JwtConfig) -> Self {
        let mut validation = Validation::new(config.algorithm);
        validation.algorithms = vec![config.algorithm];
        validation.leeway = config.leeway.as_secs();
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp"]);
        Self {
            config,
            validation,
            claims: PhantomData,
        }
    }

    fn token<'c>(&self, ctx: &'c Context) -> Option<&'c str> {
        if let Some(value) = ctx.request_header(AUTHORIZATION) {
            let (scheme, token) = value.trim().split_once(' ').unwrap_or((value, ""));
            if scheme.eq_ignore_ascii_case("bearer") {
                return Some(token.trim());
            }
            // Another scheme: not ours; fall back to the cookie.
        }
        self.config
            .cookie
            .as_deref()
            .and_then(|name| crate::header::cookie(ctx.request_headers(), name))
    }

    /// Verifies `token`: the claims, or the 401 to answer.
    pub fn verify(&self, token: &str) -> Result<Verified<C>> {
        Ok(self.check(token).map_err(unauthorized)?)
    }

    /// The claims of `token`, or why it is refused.
    fn check(&self, token: &str) -> std::result::Result<Verified<C>, &'static str> {
        if token.is_empty() {
            return Err("token is missing");
        }
        let data = jsonwebtoken::decode::<Verified<C>>(token, &self.config.key, &self.validation)
            .map_err(|err| match err.kind() {
            ErrorKind::ExpiredSignature => "token has expired",
            ErrorKind::ImmatureSignature => "token is not valid yet",
            _ => "token is invalid",
        })?;
        // RFC 7515 section 4.1.11: extensions listed in `crit` must be understood, and this
        // verifier understands none.
        if data.header.crit.is_some() {
            return Err("token is invalid");
        }
        // RFC 7519 section 4.1.4: the token must not be accepted on or after `exp` (the
        // library only refuses after it).
        if data.claims.exp.saturating_add(self.validation.leeway) <= now_secs() {
            return Err("token has expired");
        }
        Ok(data.claims)
    }
}

impl<C: DeserializeOwned + Send + Sync + 'static> Middleware for Jwt<C> {
    /// A bearer JWT (scheme `bearer`), required unless the middleware passes requests without
    /// one through; 401 for a missing or refused token.
    fn describe(&self, operation: &mut crate::openapi::Operation<'_>) {
        operation.security(
            "bearer",
            serde_json::json!({"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}),
            !self.config.passthrough,
        );
        operation.error(401);
    }

    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        Box::pin(async move {
            if ctx.is_committed() {
                return next.run(ctx).await;
            }
            let checked = match self.token(ctx) {
                None if self.config.passthrough => return next.run(ctx).await,
                None => return Err(missing(ctx).into()),
                Some(token) => self.check(token),
            };
            let verified = checked.map_err(|why| refused(ctx, why))?;
            ctx.insert_data(verified);
            next.run(ctx).await
        })
    }
}

/// Signs tokens: the claims plus `iat` and `exp` (now + `ttl`).
#[derive(Clone)]
pub struct JwtIssuer {
    algorithm: Algorithm,
    key: EncodingKey,
    ttl: Duration,
    renew_within: Duration,
}

#[derive(Serialize)]
struct Timed<'a, C> {
    #[serde(flatten)]
    claims: &'a C,
    iat: u64,
    exp: u64,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl JwtIssuer {
    /// HS256 tokens valid for `ttl`, renewed by [`JwtIssuer::renew`] in the last quarter of it.
    pub fn hs256(secret: &[u8], ttl: Duration) -> Self {
        Self::new(Algorithm::HS256, EncodingKey::from_secret(secret), ttl)
    }

    /// Tokens of `algorithm` signed with `key` (e.g. `EncodingKey::from_rsa_pem`).
    pub fn new(algorithm: Algorithm, key: EncodingKey, ttl: Duration) -> Self {
        Self {
            algorithm,
            key,
            ttl,
            renew_within: ttl / 4,
        }
    }

    /// Renew tokens with less than `within` left (default: a quarter of the TTL).
    #[must_use]
    pub fn renew_within(mut self, within: Duration) -> Self {
        self.renew_within = within;
        self
    }

    /// A signed token for `claims` (which should not carry their own `iat`/`exp`).
    pub fn issue<C: Serialize>(&self, claims: &C) -> Result<String> {
        let iat = now_secs();
        let timed = Timed {
            claims,
            iat,
            exp: iat + self.ttl.as_secs(),
        };
        jsonwebtoken::encode(&Header::new(self.algorithm), &timed, &self.key).map_err(|e| {
            HttpError::with(
                StatusCode::INTERNAL_SERVER_ERROR,
                CATEGORY,
                format!("signing failed: {e}"),
            )
            .with_exception(true)
            .into()
        })
    }

    /// A new token when `verified` expires within the renewal window, else `None`.
    pub fn renew<C: Serialize>(&self, verified: &Verified<C>) -> Result<Option<String>> {
        let left = verified.exp.saturating_sub(now_secs());
        if Duration::from_secs(left) > self.renew_within {
            return Ok(None);
        }
        self.issue(&verified.claims).map(Some)
    }
}

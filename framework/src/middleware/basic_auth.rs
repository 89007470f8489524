//! HTTP Basic authentication (RFC 7617), meant for internal management tools.
//!
//! The `Authorization` header must use exactly the `Basic` scheme (any case; `BasicX` is
//! refused) with base64 `account:password`, split at the first `:` (a password may contain
//! colons). Missing or malformed credentials (bad base64, no colon, not UTF-8) and a
//! `validate` that answers `false` get **401** `unauthorized` with
//! `WWW-Authenticate: Basic realm="<realm>"` (realm default `basic auth`, quoted and escaped),
//! category `framework-basic-auth`; never a 500. A `validate` error is passed through when it
//! is an [`HttpError`], else it becomes a 400. `OPTIONS` requests pass without credentials, so
//! CORS preflights work.
//!
//! `validate` should compare in constant time, or a client can learn a password byte by byte
//! from response times: hash both sides, then compare the digests with `subtle`:
//!
//! ```
//! use framework::middleware::basic_auth::{BasicAuth, BasicAuthConfig};
//! use sha2::{Digest, Sha256};
//! use subtle::ConstantTimeEq;
//!
//! let expected = Sha256::digest(b"admin:s3cret");
//! let auth = BasicAuth::new(BasicAuthConfig::from_fn(move |account, password, _ctx| {
//!         let given = Sha256::digest(format!("{account}:{password}").as_bytes());
//!         Ok(bool::from(given.ct_eq(&expected)))
//!     })
//!     .realm("admin"));
//! let app = framework::App::new().register_middleware("admin-auth", auth);
//! # let _ = app;
//! ```

use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::header::{AUTHORIZATION, HeaderValue, WWW_AUTHENTICATE};
use http::{Method, StatusCode};

use crate::context::Context;
use crate::error::{HttpError, Result};
use crate::handler::{BoxFuture, Middleware, Next};

/// Category of rejections.
pub const CATEGORY: &str = "framework-basic-auth";

/// Decides whether an account and password may pass.
#[async_trait]
pub trait Validator: Send + Sync + 'static {
    /// `Ok(true)` lets the request through; `Ok(false)` is a 401; an error is passed on.
    async fn validate(&self, account: &str, password: &str, ctx: &Context) -> Result<bool>;
}

struct FnValidator<F>(F);

#[async_trait]
impl<F> Validator for FnValidator<F>
where
    F: Fn(&str, &str, &Context) -> Result<bool> + Send + Sync + 'static,
{
    async fn validate(&self, account: &str, password: &str, ctx: &Context) -> Result<bool> {
        (self.0)(account, password, ctx)
    }
}

/// Basic auth settings.
#[derive(Clone)]
#[non_exhaustive]
pub struct BasicAuthConfig {
    /// The realm named in `WWW-Authenticate`. Default `basic auth`.
    pub realm: String,
    /// Checks the credentials.
    pub validate: Arc<dyn Validator>,
}

crate::config::setters!(BasicAuthConfig {
    validate: Arc<dyn Validator>,
});

impl BasicAuthConfig {
    /// Settings with a synchronous `validate(account, password, ctx)`.
    pub fn from_fn<F>(validate: F) -> Self
    where
        F: Fn(&str, &str, &Context) -> Result<bool> + Send + Sync + 'static,
    {
        Self::new(FnValidator(validate))
    }

    /// Settings with any [`Validator`] (e.g. one that looks accounts up in a database).
    pub fn new(validate: impl Validator) -> Self {
        Self {
            realm: "basic auth".into(),
            validate: Arc::new(validate),
        }
    }

    /// Names `realm` in the `WWW-Authenticate` challenge.
    #[must_use]
    pub fn realm(mut self, realm: impl Into<String>) -> Self {
        self.realm = realm.into();
        self
    }
}

/// The basic auth middleware.
pub struct BasicAuth {
    config: BasicAuthConfig,
    challenge: HeaderValue,
}

/// `Basic realm="<realm>"`, the realm as a quoted-string (RFC 9110 section 5.6.4): `"` and `\`
/// escaped; control characters, which no header may carry, dropped.
fn challenge(realm: &str) -> HeaderValue {
    let mut value = String::with_capacity(realm.len() + 16);
    value.push_str("Basic realm=\"");
    for c in realm.chars().filter(|c| !c.is_control()) {
        if c == '"' || c == '\\' {
            value.push('\\');
        }
        value.push(c);
    }
    value.push('"');
    HeaderValue::try_from(value).unwrap_or_else(|_| HeaderValue::from_static("Basic"))
}

/// The account and password of a `Basic` `Authorization` value.
fn credentials(header: &[u8]) -> Option<(String, String)> {
    let header = std::str::from_utf8(header).ok()?;
    let (scheme, encoded) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = STANDARD.decode(encoded.trim()).ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (account, password) = decoded.split_once(':')?;
    Some((account.to_owned(), password.to_owned()))
}

impl BasicAuth {
    /// A basic auth middleware with `config`.
    pub fn new(config: BasicAuthConfig) -> Self {
        let challenge = challenge(&config.realm);
        Self { config, challenge }
    }

    fn unauthorized(&self, ctx: &mut Context) -> crate::Error {
        ctx.set_response_header(WWW_AUTHENTICATE, self.challenge.clone());
        HttpError::with(StatusCode::UNAUTHORIZED, CATEGORY, "unauthorized").into()
    }
}

/// The account basic auth let in, for the rest of the request: a controller method may take
/// `user: BasicUser` (see [`crate::extract`]); without basic auth on the route, a **401**.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BasicUser {
    /// The account name the client sent.
    pub account: String,
}

impl crate::extract::FromRequest for BasicUser {
    type Rejection = HttpError;

    fn from_request(ctx: &mut Context) -> Result<Self, HttpError> {
        ctx.data::<Self>().cloned().ok_or_else(|| {
            HttpError::with(
                StatusCode::UNAUTHORIZED,
                CATEGORY,
                "no basic auth on this route",
            )
        })
    }
}

impl Middleware for BasicAuth {
    /// HTTP basic credentials (scheme `basic`), required: 401 without them or when they are
    /// refused, 400 for a malformed `Authorization` header.
    fn describe(&self, operation: &mut crate::openapi::Operation<'_>) {
        operation.security(
            "basic",
            serde_json::json!({"type": "http", "scheme": "basic"}),
            true,
        );
        operation.error(400);
        operation.error(401);
    }

    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        Box::pin(async move {
            if ctx.is_committed() || ctx.method() == Method::OPTIONS {
                return next.run(ctx).await;
            }
            let Some((account, password)) = ctx
                .request_headers()
                .get(AUTHORIZATION)
                .and_then(|v| credentials(v.as_bytes()))
            else {
                return Err(self.unauthorized(ctx));
            };
            match self
                .config
                .validate
                .validate(&account, &password, ctx)
                .await
            {
                Ok(true) => {
                    ctx.insert_data(BasicUser { account });
                    next.run(ctx).await
                }
                Ok(false) => Err(self.unauthorized(ctx)),
                Err(err) if err.as_http().is_some() => Err(err),
                Err(err) => {
                    Err(HttpError::with(StatusCode::BAD_REQUEST, CATEGORY, err.text()).into())
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(raw: &str) -> String {
        format!("Basic {}", STANDARD.encode(raw))
    }

    #[test]
    fn parses_credentials() {
        assert_eq!(
            credentials(basic("tree:pass:word").as_bytes()),
            Some(("tree".into(), "pass:word".into()))
        );
        assert_eq!(
            credentials(format!("bAsIc {}", STANDARD.encode("a:b")).as_bytes()),
            Some(("a".into(), "b".into()))
        );
        assert_eq!(credentials(basic("nocolon").as_bytes()), None);
        assert_eq!(credentials(b"Basic !!!notbase64"), None);
        assert_eq!(
            credentials(format!("BasicX {}", STANDARD.encode("a:b")).as_bytes()),
            None
        );
        assert_eq!(
            credentials(format!("Bearer {}", STANDARD.encode("a:b")).as_bytes()),
            None
        );
        assert_eq!(credentials(b"Basic"), None);
        assert_eq!(credentials(&[0xff, 0xfe]), None);
    }

    #[test]
    fn realm_is_escaped() {
        assert_eq!(challenge("basic auth"), "Basic realm=\"basic auth\"");
        assert_eq!(challenge("a\"b\\c\n"), "Basic realm=\"a\\\"b\\\\c\"");
    }
}

//! `/users`: register, login challenge, login, current user.

use std::sync::Arc;

use framework::extract::Json;
use framework::middleware::session::{SessionExt, SessionValue};
use framework::reply::Created;
use framework::{Context, Error, FromState, HttpError, Result, controller};
use http::StatusCode;
use serde::Serialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::params::UserParams;
use crate::store::{CATEGORY, User, UserStore};
use crate::throttle::LoginThrottle;

/// Session key of the login token. The session keeps the token's 128 bits as 22 base64url
/// characters (see [`Token::from_session_form`]): short enough to be kept inline in the
/// session, so storing, loading and dropping it allocates nothing (as 32 hex characters it
/// would be a heap string). The client only ever sees the hex form.
pub const SESSION_TOKEN: &str = "token";
/// Session key of the logged-in account.
pub const SESSION_ACCOUNT: &str = "account";
/// How long a session lives while it holds no account (only a login token, or nothing after a
/// failed attempt): anonymous clients cannot park day-long records. The session middleware's
/// full TTL starts at login.
pub const ANONYMOUS_SESSION_TTL: std::time::Duration = std::time::Duration::from_secs(10 * 60);

/// Answer of GET me.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Me {
    /// The logged-in account, `""` when nobody is logged in.
    pub name: String,
}

/// Answer of GET login.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct LoginToken {
    /// The one-time token to build the proof from.
    pub token: Token,
}

/// A login token: 32 lowercase hex characters, kept inline. Nothing on the heap, so the answer
/// that carries it is a small plain value, whose box the responder reuses for the next one.
/// Word-aligned, so [`Token::as_str`]'s UTF-8 check runs a word at a time.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(align(8))]
pub struct Token([u8; 32]);

/// A token's form in the session: its bits as 22 base64url characters (see [`SESSION_TOKEN`]).
#[repr(align(8))]
struct SessionForm([u8; 22]);

impl SessionForm {
    fn as_str(&self) -> &str {
        // Base64url characters only: the fallback is never taken.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl Token {
    /// The token of these bits.
    fn from_bits(bits: [u8; 16]) -> Self {
        Token(framework::header::hex_128(bits))
    }

    /// The token's text.
    pub fn as_str(&self) -> &str {
        // Hex digits only (see `from_bits`): the fallback is never taken.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// The token whose session form is `form`; `None` when `form` is not one (tampered with
    /// in the store). The 32 hex characters earlier versions kept are taken too, so a token
    /// handed out by one of them (sessions shared through Redis during an upgrade) still
    /// works.
    pub fn from_session_form(form: &str) -> Option<Self> {
        use base64::Engine;
        if let Ok(hex) = <[u8; 32]>::try_from(form.as_bytes())
            && hex.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return Some(Token(hex));
        }
        let mut bits = [0u8; 18];
        let len = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode_slice(form, &mut bits)
            .ok()?;
        let bits: [u8; 16] = bits.get(..len)?.try_into().ok()?;
        Some(Self::from_bits(bits))
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Token").field(&self.as_str()).finish()
    }
}

/// 32 lowercase hex digits.
impl schemars::JsonSchema for Token {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Token".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^[0-9a-f]{32}$",
            "minLength": 32,
            "maxLength": 32,
        })
    }
}

impl Serialize for Token {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The single answer to every failed login, so accounts cannot be probed.
fn wrong_credentials() -> Error {
    HttpError::with(
        StatusCode::BAD_REQUEST,
        CATEGORY,
        "account or password is wrong",
    )
    .into()
}

/// `Cache-Control: no-store`: tokens and the current user are per-session answers that no
/// cache (browser or shared) may keep.
fn no_store(ctx: &mut Context) {
    ctx.set_header(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-store"),
    );
}

/// The expected proof: lowercase hex `sha256(stored digest + token)`.
pub fn login_proof(stored_digest: &str, token: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(stored_digest.as_bytes());
    hasher.update(token.as_bytes());
    hex::encode(hasher.finalize())
}

/// A new login token: 128 bits from the OS generator as 32 lowercase hex characters, and its
/// session form.
fn new_token() -> Result<(Token, SessionForm)> {
    let mut bits = [0u8; 16];
    getrandom::fill(&mut bits).map_err(|e| Error::msg(format!("random source failed: {e}")))?;
    Ok((
        Token::from_bits(bits),
        SessionForm(framework::header::base64url_128(bits)),
    ))
}

/// User endpoints; shares the user store and the login throttle, taken from the app state.
#[derive(FromState)]
pub struct UserController {
    store: Arc<dyn UserStore>,
    throttle: LoginThrottle,
}

#[controller(prefix = "/users", middleware(session))]
impl UserController {
    /// The current session's account as `name` (`""` when not logged in).
    #[get("/v1/me")]
    pub async fn me(&self, ctx: &mut Context) -> Result<Me> {
        no_store(ctx);
        let name = ctx.session()?.get_str(SESSION_ACCOUNT).unwrap_or("");
        Ok(Me {
            name: name.to_owned(),
        })
    }

    /// Registration: 201 with the user record; 409 when the account exists (ignoring case);
    /// 507 when the memory store is full (`MEMORY_USERS`).
    /// The digest is stored lowercase, so the client's hex case never matters.
    #[post("/v1/me", middleware(submit_once), errors(409, 507))]
    pub async fn register(&self, params: Json<UserParams>) -> Result<Created<User>> {
        let digest = params.password.to_ascii_lowercase();
        let user = self.store.create(&params.account, &digest).await?;
        Ok(Created(user))
    }

    /// A new login token, bound to the session (it replaces any earlier one). Rate-limited per
    /// client IP (`token_rate`, see [`Config::token_rate`](crate::Config::token_rate)).
    #[get("/v1/login", middleware(token_rate))]
    pub async fn login_token(&self, ctx: &mut Context) -> Result<LoginToken> {
        no_store(ctx);
        let (token, form) = new_token()?;
        let session = ctx.session()?;
        session.set_str(SESSION_TOKEN, form.as_str());
        if session.get_str(SESSION_ACCOUNT).is_none() {
            session.set_ttl(Some(ANONYMOUS_SESSION_TTL));
        }
        Ok(LoginToken { token })
    }

    /// Login with the proof. Any attempt with valid parameters consumes the token, right or
    /// wrong, so each guess needs a new token. Success regenerates the session id and stores
    /// the account; every failure gets the same 400. Rate-limited per client IP (`login_rate`)
    /// before the failed-login limits are looked at.
    #[post("/v1/login", middleware(login_rate, submit_once), errors(429))]
    pub async fn login(&self, params: Json<UserParams>, ctx: &mut Context) -> Result<User> {
        no_store(ctx);
        let ip = ctx.real_ip();
        if let Some(wait) = self.throttle.check(&params.account, ip).await? {
            ctx.set_header(http::header::RETRY_AFTER, http::HeaderValue::from(wait));
            return Err(LoginThrottle::refusal().into());
        }
        let outcome = self.check_proof(ctx, &params).await;
        match &outcome {
            Ok(_) => self.throttle.succeeded(&params.account).await?,
            Err(err)
                if err.as_http().is_some_and(|e| {
                    e.category() == crate::store::CATEGORY && e.status() == StatusCode::BAD_REQUEST
                }) =>
            {
                self.throttle.failed(&params.account, ip).await?;
            }
            Err(_) => {}
        }
        outcome
    }

    /// Listing users is for administrators: not registered on any route, always refused.
    pub async fn list(&self, _ctx: &mut Context) -> Result {
        Err(Error::msg("only administrators may access it"))
    }
}

impl UserController {
    /// Checks the proof against the session's token and logs in.
    async fn check_proof(&self, ctx: &mut Context, params: &UserParams) -> Result<User> {
        let user = self.store.find(&params.account).await?;
        let session = ctx.session()?;
        let token = session.remove(SESSION_TOKEN);
        let token = token.as_ref().and_then(SessionValue::as_str);
        // The token is gone whatever the outcome: saved even when the attempt fails, still
        // with the short life of a session that holds no account.
        session.save_on_error();
        if session.get_str(SESSION_ACCOUNT).is_none() {
            session.set_ttl(Some(ANONYMOUS_SESSION_TTL));
        }
        let (Some(user), Some(token)) = (user, token.and_then(Token::from_session_form)) else {
            return Err(wrong_credentials());
        };
        let expected = login_proof(&user.password, token.as_str());
        let submitted = params.password.to_ascii_lowercase();
        if !bool::from(expected.as_bytes().ct_eq(submitted.as_bytes())) {
            return Err(wrong_credentials());
        }
        session.regenerate();
        session.set_str(SESSION_ACCOUNT, &user.account);
        // Logged in: the full TTL starts now.
        session.set_ttl(None);
        Ok(user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proof_is_lowercase_hex_of_digest_and_token() {
        // sha256("ab") = fb8e20fc...; "a" + "b" concatenated.
        assert_eq!(
            login_proof("a", "b"),
            "fb8e20fc2e4c3f248c60c39bd652f3c1347298bb977b8b4d5903b85055620603"
        );
    }

    #[test]
    fn tokens_are_32_hex_and_fresh() {
        let (a, form) = new_token().unwrap();
        // The session form is 22 base64url characters, inline in the session, and gives the
        // token back; anything else gives none.
        assert_eq!(form.as_str().len(), 22);
        assert_eq!(Token::from_session_form(form.as_str()), Some(a));
        let inline = SessionValue::from(form.as_str());
        assert!(matches!(&inline, SessionValue::Text(t) if !t.is_heap_allocated()));
        // The hex form of earlier versions is taken too; upper case is not.
        assert_eq!(Token::from_session_form(a.as_str()), Some(a));
        for bad in [
            "",
            "G".repeat(32).as_str(),
            "AB".repeat(16).as_str(),
            &a.as_str()[..31],
            &form.as_str()[..21],
            "!!!!!!!!!!!!!!!!!!!!!!",
            "AAAAAAAAAAAAAAAAAAAAAAAA",
        ] {
            assert_eq!(Token::from_session_form(bad), None, "{bad:?}");
        }
        assert_eq!(a.as_str().len(), 32);
        assert!(
            a.as_str()
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_ne!(a, new_token().unwrap().0);
        // It goes out as a JSON string, and its Debug shows the text.
        let json = serde_json::to_string(&LoginToken { token: a }).unwrap();
        assert_eq!(json, format!(r#"{{"token":"{}"}}"#, a.as_str()));
        assert_eq!(format!("{a:?}"), format!("Token({:?})", a.as_str()));
    }
}

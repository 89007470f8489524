//! `/users`: register, login challenge, login, current user.

use std::sync::Arc;

use framework::client_ip::ClientIpExt;
use framework::extract::Json;
use framework::middleware::session::{SessionExt, SessionValue};
use framework::reply::Created;
use framework::{Context, Error, FromState, HttpError, Result, controller};
use http::StatusCode;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
pub use user_api::{LoginToken, Me, Token, User, UserApi};

use crate::params::UserParams;
use crate::store::{self, CATEGORY, UserStore};
use crate::throttle::LoginThrottle;
use crate::used_tokens::{TOKEN_LIFETIME, UsedTokens};

/// Session key of the login token, kept as the client sees it: 32 lowercase hex characters.
pub const SESSION_TOKEN: &str = "token";
/// Session key of when the login token was issued, in seconds since the Unix epoch: a token is
/// good for [`TOKEN_LIFETIME`] after it.
pub const SESSION_TOKEN_ISSUED: &str = "token_issued";
/// Session key of the logged-in account.
pub const SESSION_ACCOUNT: &str = "account";
/// How long a session lives while it holds no account (only a login token, or nothing after a
/// failed attempt): anonymous clients cannot park day-long records. The session middleware's
/// full TTL starts at login.
pub const ANONYMOUS_SESSION_TTL: std::time::Duration = std::time::Duration::from_secs(10 * 60);

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
pub(crate) fn no_store(ctx: &mut Context) {
    ctx.set_response_header(
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

/// A new login token.
fn new_token() -> Result<Token> {
    let mut bits = [0u8; 16];
    getrandom::fill(&mut bits).map_err(|e| Error::msg(format!("random source failed: {e}")))?;
    Ok(Token::from_bits(bits))
}

/// User endpoints; shares the user store and the login throttle, taken from the app state.
#[derive(FromState)]
pub struct UserController {
    store: Arc<dyn UserStore>,
    throttle: LoginThrottle,
    used_tokens: UsedTokens,
}

/// The routes of [`UserApi`], their paths, middleware and documentation declared there.
// No controller-wide `session`: each route of the trait names it after `csrf` and its rate
// limit, so a forged or over-limit request costs no session load.
#[controller]
impl UserApi for UserController {
    async fn me(&self, ctx: &mut Context) -> Result<Me> {
        no_store(ctx);
        let name = ctx.session()?.get_str(SESSION_ACCOUNT).unwrap_or("");
        Ok(Me {
            name: name.to_owned(),
        })
    }

    /// The digest is stored lowercase, so the client's hex case never matters.
    async fn register(&self, params: Json<UserParams>) -> Result<Created<User>> {
        let digest = params.password.to_ascii_lowercase();
        let user = self.store.create(&params.account, &digest).await?;
        Ok(Created(user.into()))
    }

    async fn login_token(&self, ctx: &mut Context) -> Result<LoginToken> {
        no_store(ctx);
        let token = new_token()?;
        let session = ctx.session()?;
        session.set_str(SESSION_TOKEN, token.as_str());
        session.set_str(SESSION_TOKEN_ISSUED, &unix_seconds().to_string());
        if session.get_str(SESSION_ACCOUNT).is_none() {
            session.set_ttl(Some(ANONYMOUS_SESSION_TTL));
        }
        Ok(LoginToken { token })
    }

    /// Any attempt with valid parameters consumes the token, right or wrong, so each guess
    /// needs a new token. The client IP's rate (`login_rate`) is checked before the
    /// failed-login limits are looked at.
    async fn login(&self, params: Json<UserParams>, ctx: &mut Context) -> Result<User> {
        no_store(ctx);
        let ip = ctx.real_ip();
        if let Some(wait) = self.throttle.check(&params.account, ip).await? {
            ctx.set_response_header(http::header::RETRY_AFTER, http::HeaderValue::from(wait));
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
        outcome.map(User::from)
    }
}

impl UserController {
    /// Listing users is for administrators: not registered on any route, always refused.
    pub async fn list(&self, _ctx: &mut Context) -> Result {
        Err(Error::msg("only administrators may access it"))
    }

    /// Checks the proof against the session's token and logs in.
    async fn check_proof(&self, ctx: &mut Context, params: &UserParams) -> Result<store::User> {
        let user = self.store.find(&params.account).await?;
        let session = ctx.session()?;
        let token = session.remove(SESSION_TOKEN);
        let token = token.as_ref().and_then(SessionValue::as_str);
        let issued = session.remove(SESSION_TOKEN_ISSUED);
        let fresh = is_fresh(
            issued.as_ref().and_then(SessionValue::as_str),
            unix_seconds(),
        );
        // The token is gone whatever the outcome: saved even when the attempt fails, still
        // with the short life of a session that holds no account.
        session.save_on_error();
        if session.get_str(SESSION_ACCOUNT).is_none() {
            session.set_ttl(Some(ANONYMOUS_SESSION_TTL));
        }
        let Some(token) = token.and_then(Token::from_session).filter(|_| fresh) else {
            return Err(wrong_credentials());
        };
        // A cookie session brings its token back when the client replays the cookie it had
        // before this attempt: the record says whether an attempt used it already.
        if !self.used_tokens.first_use(token.as_str()).await? {
            return Err(wrong_credentials());
        }
        let Some(user) = user else {
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

/// Whether a token issued at `issued` (seconds since the Unix epoch, as the session keeps it)
/// is still good at `now`: for [`TOKEN_LIFETIME`]. A session without the time (made before
/// tokens had one) holds no good token.
fn is_fresh(issued: Option<&str>, now: u64) -> bool {
    issued
        .and_then(|at| at.parse::<u64>().ok())
        .is_some_and(|at| now.saturating_sub(at) < TOKEN_LIFETIME.as_secs())
}

/// Seconds since the Unix epoch.
fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_good_for_its_lifetime_after_it_was_issued() {
        let life = TOKEN_LIFETIME.as_secs();
        assert!(is_fresh(Some("1000"), 1000));
        assert!(is_fresh(Some("1000"), 1000 + life - 1));
        assert!(!is_fresh(Some("1000"), 1000 + life));
        assert!(!is_fresh(None, 1000));
        assert!(!is_fresh(Some("soon"), 1000));
    }

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
        let a = new_token().unwrap();
        assert_eq!(a.as_str().len(), 32);
        assert!(
            a.as_str()
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_ne!(a, new_token().unwrap());
        // The session gives it back; anything else gives none.
        assert_eq!(Token::from_session(a.as_str()), Some(a.clone()));
        for bad in [
            "",
            "G".repeat(32).as_str(),
            "AB".repeat(16).as_str(),
            &a.as_str()[..31],
            "AAAAAAAAAAAAAAAAAAAAAA",
        ] {
            assert_eq!(Token::from_session(bad), None, "{bad:?}");
        }
        // It goes out as a JSON string.
        let json = serde_json::to_string(&LoginToken { token: a.clone() }).unwrap();
        assert_eq!(json, format!(r#"{{"token":"{}"}}"#, a.as_str()));
    }
}

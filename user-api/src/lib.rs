//! The user service's API: its routes declared once on the [`UserApi`] trait, with the
//! parameter and answer types they take and give.
//!
//! The crate builds on `framework` without its server (hyper's `server` feature is not in
//! its tree), and without the user service's stores: the service implements the trait
//! (`#[controller] impl UserApi for UserController`), and a client
//! depends on this crate alone.

use std::borrow::Cow;

use framework::extract::Json;
use framework::reply::Created;
use framework::validate::rules;
use framework::{Context, Result, Validate, api};
use serde::{Deserialize, Serialize};

/// The user service's routes under `/users`.
///
/// The route middleware named here (`csrf`, `session`, `submit_once`, `token_rate`,
/// `login_rate`) are registered by the service that implements the trait. Each route names
/// `session` itself, after `csrf` and the rate limits, so a forged or over-limit request is
/// refused before its session is loaded.
#[api(prefix = "/users")]
pub trait UserApi {
    /// The current session's account as `name` (`""` when not logged in).
    #[get("/v1/me", middleware(session))]
    async fn me(&self, ctx: &mut Context) -> Result<Me>;

    /// Registration: 201 with the user record; 409 when the account exists (ignoring case);
    /// 507 when the memory store is full (`MEMORY_USERS`).
    /// The digest is stored lowercase, so the client's hex case never matters.
    #[post("/v1/me", middleware(csrf, session, submit_once), errors(409, 507))]
    async fn register(&self, params: Json<UserParams>) -> Result<Created<User>>;

    /// A new login token, bound to the session (it replaces any earlier one). Rate-limited per
    /// client IP (`token_rate`, see [`Config::token_rate`](crate::Config::token_rate)).
    // The text is the operation's description in the OpenAPI document, as the service wrote
    // it: the link names the service's configuration, which this crate does not have.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[get("/v1/login", middleware(token_rate, session))]
    async fn login_token(&self, ctx: &mut Context) -> Result<LoginToken>;

    /// Login with the proof. Any attempt with valid parameters consumes the token, right or
    /// wrong, so each guess needs a new token. Success regenerates the session id and stores
    /// the account; every failure gets the same 400. Rate-limited per client IP (`login_rate`)
    /// before the failed-login limits are looked at.
    #[post(
        "/v1/login",
        middleware(csrf, login_rate, session, submit_once),
        errors(429)
    )]
    async fn login(&self, params: Json<UserParams>, ctx: &mut Context) -> Result<User>;
}

/// Body of registration and login: `{account, password}`.
#[derive(Debug, Clone, Deserialize, Serialize, Validate, schemars::JsonSchema)]
pub struct UserParams {
    /// Login name.
    #[validate(xUserAccount)]
    pub account: String,
    /// Registration: `sha256(password)` in hex. Login: the proof
    /// `sha256(stored digest + token)` in hex.
    #[validate(xUserPassword)]
    pub password: String,
}

/// A user record, as the service answers with it (never its password digest).
// The document's description is the one the service's stored record has always had.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[schemars(
    description = "A user record.\n\n`password` is the SHA-256 digest (lowercase hex) \
    the client registered with; the SQL store\nkeeps it sealed ([`secret`]) and hands it out \
    opened. It is never serialised, so no response\ncan carry it."
)]
pub struct User {
    /// Unique login name.
    pub account: String,
}

/// Answer of GET me.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
pub struct Me {
    /// The logged-in account, `""` when nobody is logged in.
    pub name: String,
}

/// Answer of GET login.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
pub struct LoginToken {
    /// The one-time token to build the proof from.
    pub token: Token,
}

/// A login token: 128 bits from the OS generator as 32 lowercase hex characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Token(#[serde(deserialize_with = "token_text")] String);

impl Token {
    /// The token's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The token of these 128 bits.
    pub fn from_bits(bits: [u8; 16]) -> Self {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let text = bits
            .iter()
            .flat_map(|b| [HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]])
            .map(char::from)
            .collect();
        Token(text)
    }

    /// The token written as `value` (kept in a session, or received); `None` when it is not
    /// one (32 lowercase hex characters).
    pub fn from_session(value: &str) -> Option<Self> {
        let hex = value.len() == 32
            && value
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        hex.then(|| Token(value.to_owned()))
    }
}

/// A token's text, refused unless it is one.
fn token_text<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let text = String::deserialize(deserializer)?;
    match Token::from_session(&text) {
        Some(Token(text)) => Ok(text),
        None => Err(serde::de::Error::custom(
            "a login token is 32 lowercase hex characters",
        )),
    }
}

/// 32 lowercase hex digits.
impl schemars::JsonSchema for Token {
    fn schema_name() -> Cow<'static, str> {
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

/// `xUserAccount`: 2-20 characters, ASCII letters, digits or `_`.
#[framework::validator(min_length = 2, max_length = 20, pattern = "^[A-Za-z0-9_]*$")]
pub fn xUserAccount(value: &str) -> Result<(), Cow<'static, str>> {
    let ok = (2..=20).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err("must be 2-20 letters, digits or _".into())
    }
}

/// An account name in a path (`/users/v1/avatar/{account}`), checked by [`xUserAccount`]:
/// anything else is a 400 naming the parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountName(String);

impl AccountName {
    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for AccountName {
    type Err = Cow<'static, str>;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        xUserAccount(value).map(|()| Self(value.to_owned()))
    }
}

/// 2-20 ASCII letters, digits or `_`, as [`xUserAccount`] checks.
impl schemars::JsonSchema for AccountName {
    fn schema_name() -> Cow<'static, str> {
        "AccountName".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^[A-Za-z0-9_]{2,20}$",
            "minLength": 2,
            "maxLength": 20,
        })
    }
}

/// `xUserPassword`: exactly 64 hexadecimal characters (a SHA-256 digest).
#[framework::validator(min_length = 64, max_length = 64, pattern = "^[0-9A-Fa-f]*$")]
pub fn xUserPassword(value: &str) -> Result<(), Cow<'static, str>> {
    rules::length(value, 64, 64)
        .and_then(|()| rules::hex(value))
        .map_err(|_| "must be 64 hexadecimal characters (a SHA-256 digest)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_rule() {
        for ok in ["ab", "a_1", &"x".repeat(20)] {
            assert!(xUserAccount(ok).is_ok(), "{ok}");
        }
        for bad in ["a", &"x".repeat(21), "a b", "é1", "a-b", ""] {
            assert!(xUserAccount(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn password_rule() {
        assert!(xUserPassword(&"a".repeat(64)).is_ok());
        assert!(xUserPassword(&"A0".repeat(32)).is_ok());
        assert!(xUserPassword(&"a".repeat(63)).is_err());
        assert!(xUserPassword(&"a".repeat(65)).is_err());
        assert!(xUserPassword(&"g".repeat(64)).is_err());
    }

    #[test]
    fn tokens_are_lowercase_hex_both_ways() {
        let token = Token::from_bits([0xab; 16]);
        assert_eq!(token.as_str(), "ab".repeat(16));
        let json = serde_json::to_string(&LoginToken {
            token: token.clone(),
        })
        .unwrap();
        assert_eq!(json, format!(r#"{{"token":"{}"}}"#, "ab".repeat(16)));
        let back: LoginToken = serde_json::from_str(&json).unwrap();
        assert_eq!(back.token, token);
        for bad in ["", "AB", &"AB".repeat(16), &"g".repeat(32)] {
            let json = format!(r#"{{"token":"{bad}"}}"#);
            assert!(serde_json::from_str::<LoginToken>(&json).is_err(), "{bad}");
        }
    }
}

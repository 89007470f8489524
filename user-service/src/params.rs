//! Request parameters and their validators.

use std::borrow::Cow;

use framework::Validate;
use framework::validate::rules;
use serde::Deserialize;

/// Body of registration and login: `{account, password}`.
#[derive(Debug, Clone, Deserialize, Validate, schemars::JsonSchema)]
pub struct UserParams {
    /// Login name.
    #[validate(xUserAccount)]
    pub account: String,
    /// Registration: `sha256(password)` in hex. Login: the proof
    /// `sha256(stored digest + token)` in hex.
    #[validate(xUserPassword)]
    pub password: String,
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
}

//! Parameter validation: the runtime side of `#[derive(Validate)]`.
//!
//! A field attribute names validators: `#[validate(xUserAccount)]` calls the function
//! `xUserAccount(&field)` in scope, so a misspelled name is a compile error at the name. A
//! validator is any function taking a reference to the field and returning
//! `Result<(), impl Display>`; the error text says what the rule is. The built-in rules in
//! [`rules`] are written as `length(min = 2, max = 20)`, `range(min = 1, max = 9)`, `non_empty`,
//! `hex`, `ascii`, `charset("abc")` and `one_of("a", "b")`.
//!
//! A failure is a 400 with category `validate`, the validator's name as code (the rule's name
//! for built-in rules) and a message `<field>: <rule text>`. `Option` fields are validated only
//! when present.
//!
//! ```
//! use framework::Validate;
//!
//! #[allow(non_snake_case)]
//! fn xNickname(v: &str) -> Result<(), &'static str> {
//!     if v.starts_with('_') { Err("must not start with _") } else { Ok(()) }
//! }
//!
//! #[derive(Validate)]
//! struct Params {
//!     #[validate(length(min = 2, max = 20), xNickname)]
//!     nickname: String,
//!     #[validate(range(min = 1, max = 120))]
//!     age: Option<u8>,
//! }
//!
//! let err = Params { nickname: "_x".into(), age: Some(3) }.validate().unwrap_err();
//! assert_eq!(err.code(), "xNickname");
//! assert_eq!(err.message(), "nickname: must not start with _");
//! assert_eq!(err.category(), "validate");
//! ```

use std::fmt::Display;

use http::StatusCode;
use serde::de::DeserializeOwned;

use crate::error::HttpError;

/// The category of validation errors.
pub const CATEGORY: &str = "validate";

/// A type whose values can be checked; derive it with `#[derive(Validate)]`.
pub trait Validate {
    /// Checks every field; the first failure is returned.
    fn validate(&self) -> Result<(), HttpError>;

    /// Writes the rules into the type's JSON Schema (an object schema with `properties`), for
    /// the OpenAPI document: `length` as `minLength`/`maxLength`, `range` as
    /// `minimum`/`maximum`, `non_empty` as `minLength: 1`, `hex`, `ascii` and `charset` as a
    /// `pattern`, `one_of` as `enum`, and a named validator made with
    /// [`validator`](crate::validator) as the keywords it declares ([`ValidatorSchema`]).
    fn describe_rules(schema: &mut serde_json::Value)
    where
        Self: Sized,
    {
        let _ = schema;
    }
}

/// Sets `key` of the property `field` of an object schema (used by the derive): see
/// [`constrain_property`].
#[doc(hidden)]
pub fn constrain(schema: &mut serde_json::Value, field: &str, key: &str, value: serde_json::Value) {
    if let Some(property) = schema
        .get_mut("properties")
        .and_then(|p| p.get_mut(field))
        .and_then(serde_json::Value::as_object_mut)
    {
        constrain_property(property, key, value);
    }
}

/// Sets the schema keyword `key` of a property, so that every rule written on a field holds:
/// a second, different `pattern` joins the first through `allOf`; of two lower bounds (`minLength`,
/// `minimum`) the larger is kept, of two upper bounds the smaller.
#[doc(hidden)]
pub fn constrain_property(property: &mut JsonMap, key: &str, value: serde_json::Value) {
    if key == "pattern" && property.contains_key("pattern") {
        let written = |p: &JsonMap| p.get("pattern") == Some(&value);
        let joined = property
            .get("allOf")
            .and_then(serde_json::Value::as_array)
            .is_some_and(|all| all.iter().filter_map(|a| a.as_object()).any(written));
        if written(property) || joined {
            // Already there (the same type described for a second route): nothing to add.
            return;
        }
        let all = property
            .entry("allOf")
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let Some(all) = all.as_array_mut() {
            all.push(serde_json::json!({ "pattern": value }));
        }
        return;
    }
    let tighter = match (
        property.get(key).and_then(serde_json::Value::as_f64),
        value.as_f64(),
    ) {
        (Some(old), Some(new)) => match key {
            "minLength" | "minimum" => new > old,
            "maxLength" | "maximum" => new < old,
            _ => true,
        },
        _ => true,
    };
    if tighter {
        property.insert(key.to_owned(), value);
    }
}

/// A JSON object: a schema or one of its properties.
#[doc(hidden)]
pub type JsonMap = serde_json::Map<String, serde_json::Value>;

/// The JSON Schema keywords a named validator declares for the field it checks, so the
/// OpenAPI document states the rule. Written by the [`validator`](crate::validator)
/// attribute: `#[validator(min_length = 2, max_length = 20, pattern = "^[a-z_]+$")]` on a
/// function turns it into a value of the same name that is still called as the function was
/// (`xUserAccount("ab")`) and implements this trait. A validator written as a plain function
/// declares nothing, and its field's schema carries only the other rules.
pub trait ValidatorSchema {
    /// Writes the keywords into the field's property schema.
    fn describe(&self, property: &mut JsonMap);
}

/// A validator named in `#[validate(..)]`, for the derive to ask for its schema
/// (autoref specialisation: [`ViaValidatorSchema`] for a [`ValidatorSchema`], else
/// [`ViaPlainFunction`], which adds nothing).
#[doc(hidden)]
pub struct NamedValidator<'a, V>(pub &'a V);

/// [`NamedValidator`] of a validator that declares its schema.
#[doc(hidden)]
pub trait ViaValidatorSchema {
    /// Writes the validator's keywords into the property `field` of `schema`.
    fn describe_field(&self, schema: &mut serde_json::Value, field: &str);
}

impl<V: ValidatorSchema> ViaValidatorSchema for NamedValidator<'_, V> {
    fn describe_field(&self, schema: &mut serde_json::Value, field: &str) {
        if let Some(property) = schema
            .get_mut("properties")
            .and_then(|p| p.get_mut(field))
            .and_then(serde_json::Value::as_object_mut)
        {
            self.0.describe(property);
        }
    }
}

/// [`NamedValidator`] of a plain function.
#[doc(hidden)]
pub trait ViaPlainFunction {
    /// Nothing to write.
    fn describe_field(&self, schema: &mut serde_json::Value, field: &str);
}

impl<V> ViaPlainFunction for &NamedValidator<'_, V> {
    fn describe_field(&self, _schema: &mut serde_json::Value, _field: &str) {}
}

/// A regular expression class of the characters of `set`, for `charset` (used by the derive).
#[doc(hidden)]
pub fn charset_pattern(set: &str) -> String {
    let mut class = String::from("^[");
    for c in set.chars() {
        if matches!(c, '\\' | ']' | '[' | '^' | '-') {
            class.push('\\');
        }
        class.push(c);
    }
    class.push_str("]*$");
    class
}

/// The error for a failed rule. Used by the derive.
pub fn failure(field: &str, code: &'static str, reason: impl Display) -> HttpError {
    HttpError::with(
        StatusCode::BAD_REQUEST,
        CATEGORY,
        format!("{field}: {reason}"),
    )
    .with_code(code)
}

/// The **415** for a body in a type the body parser does not decode (`text/plain`, a form on a
/// JSON-only parser, no `Content-Type` at all): category `framework-body-parser`, naming the type
/// received and the one expected. The body parser adds `Accept-Post` (or `Accept-Patch`) with
/// the types it reads.
pub fn unsupported_media_type(received: Option<&str>) -> HttpError {
    unsupported_media_type_expecting(received, "application/json")
}

/// [`unsupported_media_type`] for a reader that expects another type (a form).
pub(crate) fn unsupported_media_type_expecting(
    received: Option<&str>,
    expected: &str,
) -> HttpError {
    let received = received
        .and_then(|v| v.split(';').next())
        .map(str::trim)
        .filter(|v| !v.is_empty() && v.len() <= 100 && v.bytes().all(|b| b.is_ascii_graphic()));
    let message = match received {
        Some(received) => format!("unsupported media type {received}: expected {expected}"),
        None => format!("unsupported media type: expected {expected}"),
    };
    HttpError::with(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "framework-body-parser",
        message,
    )
}

/// Deserialises a JSON object body into `T` and validates it. See [`crate::Context::bind`].
pub fn bind_json<T: DeserializeOwned + Validate>(body: &[u8]) -> Result<T, HttpError> {
    if body.is_empty() {
        return Err(HttpError::with(
            StatusCode::BAD_REQUEST,
            CATEGORY,
            "request body is required",
        )
        .with_code("json"));
    }
    // serde's derived structs also accept a JSON array (fields by position): not what a client
    // of a parameter object means, so anything but an object is refused up front.
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(HttpError::with(
            StatusCode::BAD_REQUEST,
            CATEGORY,
            "request body must be a JSON object",
        )
        .with_code("json"));
    }
    // The common case pays for plain serde only; the path of a failure is worked out by a
    // second, path-tracking pass over the (small) body.
    let Ok(value) = serde_json::from_slice::<T>(body) else {
        let mut de = serde_json::Deserializer::from_slice(body);
        return Err(match serde_path_to_error::deserialize::<_, T>(&mut de) {
            Err(e) => deserialize_failure(&e),
            // The document parsed, so what serde refused was trailing data.
            Ok(_) => invalid_json(),
        });
    };
    value.validate()?;
    Ok(value)
}

fn invalid_json() -> HttpError {
    HttpError::with(StatusCode::BAD_REQUEST, CATEGORY, "invalid json").with_code("json")
}

fn deserialize_failure(err: &serde_path_to_error::Error<serde_json::Error>) -> HttpError {
    let inner = err.inner();
    // serde_json appends " at line L column C"; the client needs the reason, not the position.
    let reason = inner.to_string();
    let reason = reason
        .rsplit_once(" at line ")
        .map_or(reason.as_str(), |(r, _)| r);
    if inner.is_syntax() || inner.is_eof() {
        return invalid_json();
    }
    field_failure(&err.path().to_string(), reason).unwrap_or_else(|| {
        HttpError::with(StatusCode::BAD_REQUEST, CATEGORY, reason.to_owned()).with_code("json")
    })
}

/// The 400 naming the field a deserialiser refused, when the failure has a field: the serde
/// path's first segment ("." is the root, "?" an unknown position), or for a missing field, its
/// name from serde's message. Its code says what happened, whatever the field's rules: `required`
/// for a missing field, `invalid` for a value that does not parse as the field's type (a rule's
/// code, such as `range`, is for a value that parsed and broke the rule).
pub(crate) fn field_failure(path: &str, reason: &str) -> Option<HttpError> {
    let first = path.split(['.', '[']).next().unwrap_or("");
    let field = if first.is_empty() || first == "?" {
        reason
            .strip_prefix("missing field `")
            .and_then(|r| r.strip_suffix('`'))?
    } else {
        first
    };
    if reason.starts_with("missing field") {
        return Some(failure(field, "required", "is required"));
    }
    Some(failure(field, "invalid", reason))
}

/// The built-in rules. Each returns `Err(text)` describing the rule when the value breaks it.
pub mod rules {
    use std::borrow::Cow;
    use std::fmt::Display;

    /// Between `min` and `max` characters (not bytes).
    pub fn length(value: &str, min: usize, max: usize) -> Result<(), Cow<'static, str>> {
        // An ASCII string (the usual account, token or hex digest) has as many characters as
        // bytes, and telling that is a word-at-a-time scan, cheaper than counting.
        let n = if value.is_ascii() {
            value.len()
        } else {
            value.chars().count()
        };
        if (min..=max).contains(&n) {
            Ok(())
        } else if min == max {
            Err(format!("length must be {min}").into())
        } else {
            Err(format!("length must be between {min} and {max}").into())
        }
    }

    /// Between `min` and `max` inclusive.
    pub fn range<T: PartialOrd + Display>(
        value: &T,
        min: &T,
        max: &T,
    ) -> Result<(), Cow<'static, str>> {
        if value >= min && value <= max {
            Ok(())
        } else {
            Err(format!("must be between {min} and {max}").into())
        }
    }

    /// Not empty.
    pub fn non_empty(value: &str) -> Result<(), Cow<'static, str>> {
        if value.is_empty() {
            Err("must not be empty".into())
        } else {
            Ok(())
        }
    }

    /// Hexadecimal digits only (either case), at least one.
    pub fn hex(value: &str) -> Result<(), Cow<'static, str>> {
        if !value.is_empty() && value.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(())
        } else {
            Err("must be hexadecimal".into())
        }
    }

    /// ASCII only.
    pub fn ascii(value: &str) -> Result<(), Cow<'static, str>> {
        if value.is_ascii() {
            Ok(())
        } else {
            Err("must be ASCII".into())
        }
    }

    /// Every character is one of `allowed`. This builds the set on each call; the derive's
    /// `charset("…")` builds it once, as a constant ([`Charset`]).
    pub fn charset(value: &str, allowed: &str) -> Result<(), Cow<'static, str>> {
        Charset::new(allowed).check(value)
    }

    /// The characters a [`charset`] rule allows, made once: its ASCII members as a 128-bit
    /// table (a shift and a test per byte of the value), any others looked up in the string.
    /// `const`, so `#[derive(Validate)]` makes each `charset("…")` a constant: a value's check
    /// then costs no search of the set per character (a set of 63 characters, searched for each
    /// of ten, was some 850 instructions per request on the benchmarks' `POST /echo`).
    #[derive(Debug, Clone, Copy)]
    pub struct Charset<'a> {
        ascii: u128,
        /// Whether `allowed` has characters beyond ASCII.
        others: bool,
        allowed: &'a str,
    }

    impl<'a> Charset<'a> {
        /// The set of the characters of `allowed`.
        pub const fn new(allowed: &'a str) -> Self {
            let bytes = allowed.as_bytes();
            let mut ascii = 0u128;
            let mut others = false;
            let mut i = 0;
            while i < bytes.len() {
                if bytes[i] < 128 {
                    ascii |= 1 << bytes[i];
                } else {
                    others = true;
                }
                i += 1;
            }
            Self {
                ascii,
                others,
                allowed,
            }
        }

        fn has_ascii(&self, b: u8) -> bool {
            b < 128 && self.ascii & (1 << b) != 0
        }

        /// `Ok` when every character of `value` is in the set.
        pub fn check(&self, value: &str) -> Result<(), Cow<'static, str>> {
            let ok = value.bytes().all(|b| self.has_ascii(b))
                || (self.others
                    && value.chars().all(|c| {
                        if c.is_ascii() {
                            self.has_ascii(c as u8)
                        } else {
                            self.allowed.contains(c)
                        }
                    }));
            if ok {
                Ok(())
            } else {
                Err(format!("must only contain characters from \"{}\"", self.allowed).into())
            }
        }
    }

    /// Equal to one of `options`.
    pub fn one_of(value: &str, options: &[&str]) -> Result<(), Cow<'static, str>> {
        if options.contains(&value) {
            Ok(())
        } else {
            Err(format!("must be one of {}", options.join(", ")).into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::rules::*;

    #[test]
    fn rules_accept_and_refuse() {
        assert!(length("ab", 2, 3).is_ok());
        assert_eq!(
            length("a", 2, 3).unwrap_err(),
            "length must be between 2 and 3"
        );
        assert_eq!(length("abc", 2, 2).unwrap_err(), "length must be 2");
        assert!(length("éé", 2, 2).is_ok());
        assert!(range(&5, &1, &9).is_ok());
        assert!(range(&10, &1, &9).is_err());
        assert!(non_empty("").is_err());
        assert!(hex("0aF9").is_ok());
        assert!(hex("0g").is_err());
        assert!(hex("").is_err());
        // Every byte value, alone and at each place of a long value (the check goes by blocks).
        let digits = b"0123456789abcdefABCDEF";
        for b in 0..=255u8 {
            let Ok(one) = std::str::from_utf8(std::slice::from_ref(&b)) else {
                continue;
            };
            assert_eq!(hex(one).is_ok(), digits.contains(&b), "{b:#x}");
        }
        for at in [0, 15, 16, 63, 64, 65, 127, 129] {
            let mut long = "aF09".repeat(33).into_bytes();
            assert!(hex(std::str::from_utf8(&long).unwrap()).is_ok());
            for bad in [b'g', b'G', b'/', b':', b'@', b'`', b' '] {
                long[at] = bad;
                assert!(
                    hex(std::str::from_utf8(&long).unwrap()).is_err(),
                    "{at} {bad}"
                );
            }
        }
        assert!(hex("ñ").is_err());
        assert!(ascii("é").is_err());
        assert!(charset("abba", "ab").is_ok());
        assert!(charset("abc", "ab").is_err());
        assert!(charset("", "ab").is_ok());
        // Beyond ASCII: looked up in the string, whichever side the character is on.
        assert!(charset("añb", "abñ").is_ok());
        assert!(charset("añb", "ab").is_err());
        assert!(charset("aéb", "abñ").is_err());
        // Bytes of 128 and over never match the table: a multi-byte character is not its
        // bytes.
        assert!(charset("é", "\u{c3}\u{a9}").is_err());
        assert_eq!(
            charset("a-b", "ab").unwrap_err(),
            "must only contain characters from \"ab\""
        );
        const SET: Charset<'static> = Charset::new("_0123456789");
        assert!(SET.check("0_9").is_ok());
        assert!(SET.check("0_a").is_err());
        assert!(one_of("b", &["a", "b"]).is_ok());
        assert!(one_of("c", &["a", "b"]).is_err());
    }
}

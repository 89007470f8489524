//! Per-request keys built from parts of the request, for limiters: `:ip` (the real client IP),
//! `h:<name>` (a header), `q:<name>` (a query parameter), `p:<name>` (a route param), and any
//! other name, a top-level field of the JSON body (which the body parser has read).

use std::borrow::Cow;

use http::HeaderName;

use crate::client_ip::ClientIpExt;
use crate::context::Context;

/// One part of a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyPart {
    /// The real client IP.
    Ip,
    /// A request header.
    Header(HeaderName),
    /// A query parameter.
    Query(String),
    /// A route param.
    Param(String),
    /// A top-level field of the JSON body.
    Body(String),
}

impl KeyPart {
    /// Parses one key form; an invalid header name is an error.
    pub fn parse(form: &str) -> Result<Self, String> {
        if form == ":ip" {
            return Ok(Self::Ip);
        }
        let named = |rest: &str| {
            if rest.is_empty() {
                Err(format!("key `{form}` names nothing"))
            } else {
                Ok(rest.to_owned())
            }
        };
        if let Some(name) = form.strip_prefix("h:") {
            return HeaderName::from_bytes(name.as_bytes())
                .map(Self::Header)
                .map_err(|_| format!("key `{form}`: not a header name"));
        }
        if let Some(name) = form.strip_prefix("q:") {
            return named(name).map(Self::Query);
        }
        if let Some(name) = form.strip_prefix("p:") {
            return named(name).map(Self::Param);
        }
        named(form).map(Self::Body)
    }
}

/// The parts of a key, parsed once.
#[derive(Debug, Clone)]
pub struct RequestKey {
    forms: Vec<String>,
    parts: Vec<KeyPart>,
}

/// A part of the key had no value in the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingKey(pub String);

impl RequestKey {
    /// Parses the key forms.
    pub fn new(forms: &[impl AsRef<str>]) -> Result<Self, String> {
        let parts = forms
            .iter()
            .map(|f| KeyPart::parse(f.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            forms: forms.iter().map(|f| f.as_ref().to_owned()).collect(),
            parts,
        })
    }

    /// Parses the key forms of a limiter; no forms at all is an error too.
    pub fn for_limiter(forms: &[impl AsRef<str>]) -> Result<Self, String> {
        if forms.is_empty() {
            return Err("no keys".to_owned());
        }
        Self::new(forms)
    }

    /// [`value`](Self::value), with a missing part as the limiters' **400** `<key> is required`
    /// in `category`.
    pub fn require(
        &self,
        ctx: &Context,
        allow_empty: bool,
        category: &'static str,
    ) -> Result<String, crate::error::HttpError> {
        self.value(ctx, allow_empty).map_err(|missing| {
            crate::error::HttpError::with(
                http::StatusCode::BAD_REQUEST,
                category,
                format!("{} is required", missing.0),
            )
        })
    }

    /// The values joined with `,`. A part without a value is an error naming its key form,
    /// unless `allow_empty` (it then counts as "").
    pub fn value(&self, ctx: &Context, allow_empty: bool) -> Result<String, MissingKey> {
        let body = self
            .parts
            .iter()
            .any(|p| matches!(p, KeyPart::Body(_)))
            .then(|| serde_json::from_slice::<serde_json::Value>(ctx.request_body()).ok())
            .flatten();
        let mut key = String::new();
        for (i, (part, form)) in self.parts.iter().zip(&self.forms).enumerate() {
            let value: Option<Cow<'_, str>> = match part {
                KeyPart::Ip => Some(Cow::Owned(ctx.real_ip().to_string())),
                KeyPart::Header(name) => ctx.request_header(name).map(Cow::Borrowed),
                KeyPart::Query(name) => ctx.query(name),
                KeyPart::Param(name) => ctx.param(name),
                KeyPart::Body(name) => {
                    body.as_ref()
                        .and_then(|b| b.get(name))
                        .and_then(|v| match v {
                            serde_json::Value::String(s) => Some(Cow::Owned(s.clone())),
                            serde_json::Value::Null => None,
                            other => Some(Cow::Owned(other.to_string())),
                        })
                }
            };
            let value = value.filter(|v| !v.is_empty());
            if value.is_none() && !allow_empty {
                return Err(MissingKey(form.clone()));
            }
            if i > 0 {
                key.push(',');
            }
            key.push_str(value.as_deref().unwrap_or(""));
        }
        Ok(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_forms() {
        assert_eq!(KeyPart::parse(":ip"), Ok(KeyPart::Ip));
        assert_eq!(
            KeyPart::parse("h:X-Token"),
            Ok(KeyPart::Header(HeaderName::from_static("x-token")))
        );
        assert_eq!(KeyPart::parse("q:id"), Ok(KeyPart::Query("id".into())));
        assert_eq!(KeyPart::parse("p:id"), Ok(KeyPart::Param("id".into())));
        assert_eq!(
            KeyPart::parse("account"),
            Ok(KeyPart::Body("account".into()))
        );
        assert!(KeyPart::parse("h:bad header").is_err());
        assert!(KeyPart::parse("q:").is_err());
        assert!(KeyPart::parse("").is_err());
    }
}

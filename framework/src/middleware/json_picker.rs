//! Lets a client ask for only some fields of a JSON answer: `?fields=a,b` keeps the top-level
//! keys `a` and `b`, `?fields=-a,b` drops them. An array of objects is filtered item by item;
//! other values (numbers, strings, nested objects' insides) are left as they are.
//!
//! Only 2xx answers whose body is buffered JSON (`application/json` or a `+json` type) are
//! touched; a body that does not parse is left alone. A field that does not exist is simply
//! absent. Empty items are ignored, never an error: `fields=,a` is `fields=a`, and `fields=` or
//! `fields=-` pick nothing and leave the answer whole (the Go reference panics on a leading
//! comma).
//!
//! The body changes, so a `Content-Length` set by the handler is removed (the server counts the
//! new bytes) and an `ETag` already on the answer is recomputed (with the `etag` feature; removed
//! without it). It works on the bytes the responder made, so register it before the responder
//! (outside it), and inside etag and cache, so their tag and stored entry are of the picked
//! answer: etag, error handler, json picker, responder.
//!
//! ```
//! use framework::middleware::json_picker::{JsonPicker, JsonPickerConfig};
//!
//! let picker = JsonPicker::new(JsonPickerConfig::default()
//!     .field("only"));
//! let app = framework::App::new().use_middleware(picker);
//! # let _ = app;
//! ```

use std::collections::HashSet;

use http::header::{CONTENT_LENGTH, CONTENT_TYPE, ETAG};
use serde_json::{Map, Value};

use crate::context::Context;
use crate::error::Result;
use crate::handler::{BoxFuture, Middleware, Next};

/// The json picker's settings.
#[derive(Clone)]
#[non_exhaustive]
pub struct JsonPickerConfig {
    /// The query parameter that lists the fields. Default `fields`.
    pub field: String,
}

crate::config::setters!(JsonPickerConfig {
    field => String,
});

impl Default for JsonPickerConfig {
    fn default() -> Self {
        Self {
            field: "fields".into(),
        }
    }
}

/// The json picker.
#[derive(Clone, Default)]
pub struct JsonPicker {
    config: JsonPickerConfig,
}

/// Which keys to keep or drop.
#[derive(Debug, PartialEq, Eq)]
struct Pick<'a> {
    drop: bool,
    keys: HashSet<&'a str>,
}

impl<'a> Pick<'a> {
    /// `a,b` keeps, `-a,b` drops; empty items are ignored. `None` when nothing is named.
    fn parse(list: &'a str) -> Option<Self> {
        let (drop, rest) = match list.trim_start().strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, list),
        };
        let keys: HashSet<&str> = rest
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .collect();
        (!keys.is_empty()).then_some(Self { drop, keys })
    }

    fn object(&self, object: &mut Map<String, Value>) {
        object.retain(|k, _| self.keys.contains(k.as_str()) != self.drop);
    }

    fn apply(&self, value: &mut Value) {
        match value {
            Value::Object(object) => self.object(object),
            Value::Array(items) => {
                for item in items {
                    if let Value::Object(object) = item {
                        self.object(object);
                    }
                }
            }
            _ => {}
        }
    }
}

fn is_json(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

impl JsonPicker {
    /// A json picker with these settings.
    pub fn new(config: JsonPickerConfig) -> Self {
        Self { config }
    }

    fn apply(&self, ctx: &mut Context) {
        let Some(list) = ctx.query(&self.config.field) else {
            return;
        };
        let Some(pick) = Pick::parse(&list) else {
            return;
        };
        if !ctx.status().unwrap_or(http::StatusCode::OK).is_success()
            || !ctx.response_header(CONTENT_TYPE).is_some_and(is_json)
        {
            return;
        }
        let Some(body) = ctx.body().bytes() else {
            return;
        };
        let Ok(mut value) = serde_json::from_slice::<Value>(body) else {
            return;
        };
        pick.apply(&mut value);
        let Ok(picked) = serde_json::to_vec(&value) else {
            return;
        };
        let picked = bytes::Bytes::from(picked);
        let headers = ctx.response_headers_mut();
        headers.remove(CONTENT_LENGTH);
        if headers.contains_key(ETAG) {
            #[cfg(feature = "etag")]
            headers.insert(ETAG, super::etag::strong_etag(&picked));
            #[cfg(not(feature = "etag"))]
            headers.remove(ETAG);
        }
        ctx.body_mut().set_bytes(picked);
    }
}

impl Middleware for JsonPicker {
    fn role(&self) -> Option<crate::handler::Role> {
        Some(crate::handler::Role::JsonPicker)
    }

    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        Box::pin(async move {
            next.run(ctx).await?;
            if !ctx.is_committed() && !ctx.body().is_stream() {
                self.apply(ctx);
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn picked(list: &str, mut value: Value) -> Value {
        if let Some(pick) = Pick::parse(list) {
            pick.apply(&mut value);
        }
        value
    }

    #[test]
    fn keep_drop_arrays_and_odd_lists() {
        let v = json!({"a": 1, "b": {"x": 2}, "c": 3});
        assert_eq!(picked("a,b", v.clone()), json!({"a": 1, "b": {"x": 2}}));
        assert_eq!(picked("-a,b", v.clone()), json!({"c": 3}));
        assert_eq!(picked("a,nope", v.clone()), json!({"a": 1}));
        assert_eq!(picked(",a", v.clone()), json!({"a": 1}));
        assert_eq!(picked("a,,", v.clone()), json!({"a": 1}));
        assert_eq!(picked(" a , c ", v.clone()), json!({"a": 1, "c": 3}));
        for nothing in ["", "-", ",", "-,", " , "] {
            assert_eq!(picked(nothing, v.clone()), v, "{nothing:?}");
        }
        let list = json!([{"a": 1, "b": 2}, {"b": 3}, 4, "s"]);
        assert_eq!(
            picked("b", list.clone()),
            json!([{"b": 2}, {"b": 3}, 4, "s"])
        );
        assert_eq!(picked("-b", list), json!([{"a": 1}, {}, 4, "s"]));
        assert_eq!(picked("a", json!(5)), json!(5));
    }

    #[test]
    fn json_types() {
        assert!(is_json("application/json"));
        assert!(is_json("application/json; charset=utf-8"));
        assert!(is_json("application/problem+json"));
        assert!(is_json("Application/JSON"));
        assert!(!is_json("text/plain"));
        assert!(!is_json("application/jsonp"));
    }
}

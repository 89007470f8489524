//! Converts the handler's `body` value into response bytes and sets `Content-Type`.
//!
//! Text goes out as `text/plain; charset=utf-8`, bytes as `application/octet-stream`, any
//! other value through the configured marshaller (JSON by default, as
//! `application/json; charset=utf-8`). A `Content-Type` the handler set is kept, and a
//! `body_buffer` the handler set is left alone. A handler that set neither a status nor a body
//! gets 500 `invalid response` (category `framework-responder`): it almost certainly forgot
//! to answer. A streamed body ([`Context::set_body_stream`]) is left alone: it is the answer.
//! Plugging in another format is a matter of `marshal` and `content_type`:
//!
//! ```
//! use std::sync::Arc;
//! use framework::middleware::responder::{Responder, ResponderConfig};
//!
//! // A "pretty JSON" responder; XML or MessagePack plug in the same way.
//! let responder = Responder::new(ResponderConfig {
//!     marshal: Some(Arc::new(|value| Ok(serde_json::to_vec_pretty(value)?))),
//!     content_type: http::HeaderValue::from_static("application/json"),
//!     ..ResponderConfig::default()
//! });
//! # let _ = responder;
//! ```

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use http::StatusCode;
use http::header::{CONTENT_TYPE, HeaderValue};

use crate::context::{Body, Context};
use crate::error::{HttpError, Result};
use crate::handler::{Before, Middleware, SharedMiddleware, Skipper};
use crate::header::{JSON_UTF8, OCTET_STREAM, TEXT_UTF8};

/// Category of responder errors.
pub const CATEGORY: &str = "framework-responder";

/// The value to serialise, as the marshaller receives it.
pub type Value<'a> = &'a (dyn erased_serde::Serialize + Send + Sync);

/// Turns a value into bytes.
pub type Marshal = Arc<dyn Fn(Value<'_>) -> Result<Vec<u8>> + Send + Sync>;

/// Responder settings.
#[derive(Clone)]
pub struct ResponderConfig {
    /// Serialises values. `None` (the default) is JSON through each value's own `Serialize`
    /// impl, with no dynamic dispatch per field; a custom marshaller sees the value through
    /// `erased_serde`.
    pub marshal: Option<Marshal>,
    /// Content type of marshalled values. Default: `application/json; charset=utf-8`.
    pub content_type: HeaderValue,
    /// Skips the middleware for some requests.
    pub skipper: Option<Skipper>,
}

impl Default for ResponderConfig {
    fn default() -> Self {
        Self {
            marshal: None,
            content_type: JSON_UTF8,
            skipper: None,
        }
    }
}

/// The responder middleware.
#[derive(Clone, Default)]
pub struct Responder {
    config: ResponderConfig,
}

impl Responder {
    /// A responder with `config`.
    pub fn new(config: ResponderConfig) -> Self {
        Self { config }
    }

    /// Shares it for use in a chain.
    pub fn into_shared(self) -> SharedMiddleware {
        Arc::new(self)
    }

    fn respond(&self, ctx: &mut Context) -> Result {
        if ctx.body_buffer.is_some() || ctx.has_body_stream() {
            return Ok(());
        }
        let (bytes, content_type) = match ctx.body.take() {
            None if ctx.status().is_some() => return Ok(()),
            None => {
                return Err(HttpError::with(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    CATEGORY,
                    "invalid response",
                )
                .with_exception(true)
                .into());
            }
            // A static text is sent from where it lies: no copy, no allocation.
            Some(Body::Text(Cow::Borrowed(text))) => {
                (Bytes::from_static(text.as_bytes()), TEXT_UTF8)
            }
            Some(Body::Text(Cow::Owned(text))) => (Bytes::from(text), TEXT_UTF8),
            Some(Body::Bytes(bytes)) => (bytes, OCTET_STREAM),
            Some(Body::Value(value)) => {
                let bytes = match &self.config.marshal {
                    None => value.to_json().map_err(crate::Error::from),
                    Some(marshal) => marshal(&*value),
                }
                .map_err(|e| {
                    HttpError::with(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        CATEGORY,
                        format!("marshal failed: {e}"),
                    )
                    .with_exception(true)
                })?;
                value.release();
                (Bytes::from(bytes), self.config.content_type.clone())
            }
        };
        if !crate::header::has_any(ctx.response_headers(), &[CONTENT_TYPE]) {
            ctx.set_header(CONTENT_TYPE, content_type);
        }
        ctx.body_buffer = Some(bytes);
        Ok(())
    }
}

impl Middleware for Responder {
    fn before(&self, ctx: &mut Context) -> Before {
        Before::continue_unless_skipped(ctx, self.config.skipper.as_ref())
    }

    fn after(&self, ctx: &mut Context, result: Result) -> Result {
        result?;
        if ctx.committed() {
            return Ok(());
        }
        self.respond(ctx)
    }
}

//! Converts the handler's `body` value into response bytes and sets `Content-Type`.
//!
//! Text goes out as `text/plain; charset=utf-8`, bytes as `application/octet-stream`, any
//! other value through the configured marshaller (JSON by default, as
//! `application/json; charset=utf-8`). A `Content-Type` the handler set is kept, and a
//! `body_buffer` the handler set is left alone. A handler that set neither a status nor a body
//! gets 500 `invalid response` (category `framework-responder`): it almost certainly forgot
//! to answer. A streamed body ([`Content::set_stream`](crate::context::Content::set_stream)) is left alone: it is the answer.
//!
//! **More than one format** ([`ResponderConfig::formats`]): a value goes out in the format the
//! client's `Accept` prefers among JSON (or the configured marshaller, first) and the formats
//! added, by [proactive negotiation](crate::negotiation), with `Vary: Accept`; an `Accept` that
//! rules every format out gets **406** `not acceptable` (category `framework-responder`)
//! naming them, and the OpenAPI document lists each format under the route's answers. With
//! no format added (the default) nothing is negotiated: a value is JSON whatever `Accept`
//! says, as before, and no `Vary` is sent.
//!
//! ```
//! use framework::middleware::responder::{Format, Responder, ResponderConfig};
//!
//! // JSON first; `text/csv` for a client that asks for it.
//! let responder = Responder::new(ResponderConfig::default()
//!     .formats(vec![Format::new("text/csv; charset=utf-8", |value| {
//!         let json = serde_json::to_value(value)?;
//!         Ok(format!("value\n{json}\n").into_bytes())
//!     })]));
//! # let _ = responder;
//! ```
//!
//! Plugging in another format is a matter of `marshal` and `content_type`:
//!
//! ```
//! use std::sync::Arc;
//! use framework::middleware::responder::{Responder, ResponderConfig};
//!
//! // A "pretty JSON" responder; XML or MessagePack plug in the same way.
//! let responder = Responder::new(ResponderConfig::default()
//!     .marshal(Some(Arc::new(|value| Ok(serde_json::to_vec_pretty(value)?))))
//!     .content_type(http::HeaderValue::from_static("application/json")));
//! # let _ = responder;
//! ```

use std::borrow::Cow;
use std::cell::Cell;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::StatusCode;
use http::header::{CONTENT_TYPE, HeaderValue};

use crate::context::Context;
use crate::error::{HttpError, Result};
use crate::handler::{Before, Middleware};
use crate::header::{JSON_UTF8, OCTET_STREAM, TEXT_UTF8};
use crate::reply::{Reply, ReplyValue};

/// Category of responder errors.
pub const CATEGORY: &str = "framework-responder";

/// The value to serialise, as the marshaller receives it.
pub type Value<'a> = &'a (dyn erased_serde::Serialize + Send + Sync);

/// Turns a value into bytes.
pub type Marshal = Arc<dyn Fn(Value<'_>) -> Result<Vec<u8>> + Send + Sync>;

/// Responder settings.
#[derive(Clone)]
#[non_exhaustive]
pub struct ResponderConfig {
    /// Serialises values. `None` (the default) is JSON through each value's own `Serialize`
    /// impl, with no dynamic dispatch per field; a custom marshaller sees the value through
    /// `erased_serde`.
    pub marshal: Option<Marshal>,
    /// Content type of marshalled values. Default: `application/json; charset=utf-8`.
    pub content_type: HeaderValue,
    /// Further formats a value can go out in, chosen by the request's `Accept` (see the
    /// [module](self)); the marshaller above stays the first choice. Default none: no
    /// negotiation.
    pub formats: Vec<Format>,
}

crate::config::setters!(ResponderConfig {
    marshal: Option<Marshal>,
    content_type: HeaderValue,
    formats: Vec<Format>,
});

impl Default for ResponderConfig {
    fn default() -> Self {
        Self {
            marshal: None,
            content_type: JSON_UTF8,
            formats: Vec::new(),
        }
    }
}

/// A format a value can go out in besides the first: its media type and its marshaller.
#[derive(Clone)]
pub struct Format {
    media_type: HeaderValue,
    marshal: Marshal,
}

impl Format {
    /// Values as `media_type` (`text/csv; charset=utf-8`), written by `marshal`.
    ///
    /// # Panics
    /// When `media_type` is not a valid header value (a constant of the app's).
    pub fn new(
        media_type: &'static str,
        marshal: impl Fn(Value<'_>) -> Result<Vec<u8>> + Send + Sync + 'static,
    ) -> Self {
        Self {
            media_type: HeaderValue::from_static(media_type),
            marshal: Arc::new(marshal),
        }
    }

    /// The media type.
    pub fn media_type(&self) -> &HeaderValue {
        &self.media_type
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

    fn respond(&self, ctx: &mut Context) -> Result {
        let (bytes, content_type) = match ctx.body_mut().take_value() {
            // Bytes or a stream: the answer as it is.
            None if !ctx.body().is_empty() => return Ok(()),
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
            Some(Reply::Text(Cow::Borrowed(text))) => {
                (Bytes::from_static(text.as_bytes()), TEXT_UTF8)
            }
            Some(Reply::Text(Cow::Owned(text))) => (Bytes::from(text), TEXT_UTF8),
            Some(Reply::Bytes(bytes)) => (bytes, OCTET_STREAM),
            Some(Reply::Value(value)) => {
                // Looked at here, so a responder without added formats (nearly all) pays no
                // call for the negotiation it does not do.
                let format = if self.config.formats.is_empty() {
                    None
                } else {
                    self.negotiate(ctx)?
                };
                let bytes = match (format, &self.config.marshal) {
                    (Some(format), _) => (format.marshal)(&*value).map(Bytes::from),
                    (None, None) => json_bytes(&*value).map_err(crate::Error::from),
                    (None, Some(marshal)) => marshal(&*value).map(Bytes::from),
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
                let content_type = format.map_or(&self.config.content_type, Format::media_type);
                (bytes, content_type.clone())
            }
        };
        if !crate::header::has_any(ctx.response_headers(), &[CONTENT_TYPE]) {
            ctx.set_response_header(CONTENT_TYPE, content_type);
        }
        ctx.body_mut().set_bytes(bytes);
        Ok(())
    }
}

impl Responder {
    /// The added format the request's `Accept` prefers, `None` for the first; 406 when
    /// `Accept` rules every format out. Sets `Vary: Accept`, whatever the outcome. Called
    /// only when formats were added.
    #[cold]
    fn negotiate(&self, ctx: &mut Context) -> Result<Option<&Format>> {
        crate::header::add_vary(ctx.response_headers_mut(), "accept");
        let offered: Vec<&str> = std::iter::once(&self.config.content_type)
            .chain(self.config.formats.iter().map(Format::media_type))
            .map(|media| media.to_str().unwrap_or_default())
            .collect();
        match crate::negotiation::preferred(ctx.request_headers(), &offered) {
            Some(0) => Ok(None),
            Some(index) => Ok(self.config.formats.get(index - 1)),
            None => Err(HttpError::with(
                StatusCode::NOT_ACCEPTABLE,
                CATEGORY,
                format!("not acceptable: this route answers {}", offered.join(", ")),
            )
            .into()),
        }
    }
}

/// Bodies up to this size are cut from the thread's JSON block; a larger one takes the
/// buffer it was written into with it (copying it would cost more than the allocation saved).
const JSON_COPY_MAX: usize = 4096;

/// The room a thread's JSON buffer starts with (serde_json's own `to_vec` starts at 128).
const JSON_BUFFER_START: usize = 256;

/// The room a thread's JSON block is made with: many small bodies are cut from one.
const JSON_BLOCK: usize = 8 * 1024;

thread_local! {
    /// The buffer values are serialised into, reused from one response to the next on a
    /// thread. It is kept only after a body of at most [`JSON_COPY_MAX`] bytes, so its room
    /// is less than twice that (a vector grows to at most twice its room, or to what it
    /// needs): 8 KiB.
    static JSON_BUFFER: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
    /// The block small bodies are copied into and cut from, shared by those bodies: one
    /// allocation serves many responses, and it is freed once its last body has been sent.
    static JSON_BLOCK_BUF: Cell<BytesMut> = Cell::new(BytesMut::new());
}

/// `value` as JSON bytes of exactly its length.
///
/// The value is serialised by serde_json into this thread's buffer. A small body is then copied
/// to the end of the thread's block and split off it (a reference count, no allocation); the
/// block keeps the room after it for the next body. When the room runs out, a block whose
/// bodies have all been sent is taken again from its start, and one that a body still holds is
/// left to that body and a new one is made.
/// That skips an exact allocation per body and its free once the response was sent (what it
/// buys: BENCHMARKS.md, "Hand-written fast paths"). A body kept past its response (a clone a
/// handler holds on to)
/// keeps its block alive: at most [`JSON_BLOCK`] bytes. A larger body takes the buffer it was
/// written into.
fn json_bytes(value: &dyn ReplyValue) -> serde_json::Result<Bytes> {
    let mut buffer = JSON_BUFFER.try_with(Cell::take).unwrap_or_default();
    buffer.clear();
    if buffer.capacity() == 0 {
        buffer.reserve(JSON_BUFFER_START);
    }
    value.write_json(&mut buffer)?;
    if buffer.len() > JSON_COPY_MAX {
        return Ok(Bytes::from(buffer));
    }
    let mut block = JSON_BLOCK_BUF.try_with(Cell::take).unwrap_or_default();
    if block.capacity() < buffer.len() {
        block.reserve(JSON_BLOCK);
    }
    block.extend_from_slice(&buffer);
    let bytes = block.split().freeze();
    // After thread-local destruction the buffer and the block are simply dropped.
    let _ = JSON_BUFFER.try_with(|kept| kept.set(buffer));
    let _ = JSON_BLOCK_BUF.try_with(|kept| kept.set(block));
    Ok(bytes)
}

impl Middleware for Responder {
    fn role(&self) -> Option<crate::handler::Role> {
        Some(crate::handler::Role::Responder)
    }

    /// The added formats are answers of the route too, and their 406.
    fn describe(&self, operation: &mut crate::openapi::Operation<'_>) {
        if self.config.formats.is_empty() {
            return;
        }
        for format in &self.config.formats {
            operation.also_media(format.media_type().to_str().unwrap_or_default());
        }
        operation.error(StatusCode::NOT_ACCEPTABLE.as_u16());
    }

    fn before(&self, ctx: &mut Context) -> Before {
        Before::continue_unless_committed(ctx)
    }

    fn after(&self, ctx: &mut Context, result: Result) -> Result {
        result?;
        if ctx.is_committed() {
            return Ok(());
        }
        self.respond(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::{JSON_BLOCK, JSON_BLOCK_BUF, JSON_BUFFER, JSON_COPY_MAX, json_bytes};
    use crate::reply::ReplyValue;

    fn buffer_room() -> usize {
        let buffer = JSON_BUFFER.take();
        let room = buffer.capacity();
        JSON_BUFFER.set(buffer);
        room
    }

    fn block_room() -> usize {
        let block = JSON_BLOCK_BUF.take();
        let room = block.capacity();
        JSON_BLOCK_BUF.set(block);
        room
    }

    /// Bodies up to the copy limit come out exact, cut from the thread's block, and stay
    /// intact while later ones are cut from it (more than a block's worth in flight); a larger
    /// one takes the buffer with it; what the thread keeps is bounded; a failed value leaves
    /// no trace in the next body.
    #[test]
    fn json_bodies_are_exact_and_what_the_thread_keeps_is_bounded() {
        let text = |len: usize| "x".repeat(len - 2);
        let bodies: Vec<_> = (0..2 * JSON_BLOCK / 16)
            .map(|i| json_bytes(&format!("body {i:08}") as &dyn ReplyValue).unwrap())
            .collect();
        for (i, body) in bodies.iter().enumerate() {
            assert_eq!(*body, format!("\"body {i:08}\""));
        }
        assert!(block_room() <= JSON_BLOCK, "{}", block_room());
        drop(bodies);
        for len in [2, 3, JSON_COPY_MAX - 1, JSON_COPY_MAX] {
            let value: &dyn ReplyValue = &text(len);
            let bytes = json_bytes(value).unwrap();
            assert_eq!(bytes.len(), len);
            assert_eq!(bytes, format!("\"{}\"", text(len)));
            assert!(buffer_room() >= len, "kept");
            assert!(block_room() <= JSON_BLOCK, "{}", block_room());
        }
        let big: &dyn ReplyValue = &text(JSON_COPY_MAX + 1);
        assert_eq!(json_bytes(big).unwrap().len(), JSON_COPY_MAX + 1);
        assert_eq!(buffer_room(), 0, "handed over with the body");
        assert_eq!(json_bytes(&1u8 as &dyn ReplyValue).unwrap(), "1");
        // The most room a kept buffer can have: grown in one step from just under the limit.
        let grown: &dyn ReplyValue =
            &vec![text(JSON_COPY_MAX / 2 + 1), text(JSON_COPY_MAX / 2 - 4)];
        assert_eq!(json_bytes(grown).unwrap().len(), JSON_COPY_MAX);
        assert!(buffer_room() < 2 * JSON_COPY_MAX, "{}", buffer_room());

        // A map with a non-string key fails half-way; the next body is whole and alone.
        let bad: std::collections::BTreeMap<Vec<u8>, u8> = [(vec![1], 1)].into();
        assert!(json_bytes(&bad as &dyn ReplyValue).is_err());
        assert_eq!(json_bytes(&"ok" as &dyn ReplyValue).unwrap(), "\"ok\"");
    }
}

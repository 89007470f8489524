//! What a handler may return, and how its value becomes the response.

use serde::Serialize;

use crate::body::BodyStream;
use crate::context::Context;
use crate::error::Result;

/// What a handler may return: its value becomes the answer.
///
/// | the handler returns | the answer |
/// |---|---|
/// | `String`, `&'static str`, `Cow<'static, str>` | the text, `text/plain; charset=utf-8` |
/// | `Bytes`, `Vec<u8>` | the bytes, `application/octet-stream` |
/// | any other `Serialize` value (a struct, `serde_json::Value`, a tuple…) | marshalled by the responder, JSON by default |
/// | `()` | whatever the handler put in the context (status, body, stream) |
/// | [`BodyStream`] | the stream, sent as the client reads it |
/// | [`Sse`](crate::reply::Sse), [`JsonLines`](crate::reply::JsonLines) | server-sent events, NDJSON, as they come |
/// | [`Redirect`](crate::reply::Redirect) | 303, 307 or 308 with its `Location` |
/// | `NamedFile`, `Attachment` (`framework::reply`, feature `static-serve`) | a file or bytes, with ranges, conditional requests and `Content-Disposition` |
/// | [`Created<T>`](crate::reply::Created), [`NoContent`](crate::reply::NoContent) | 201 with the value, 204 |
/// | [`RenderData`](crate::middleware::renderer::RenderData) (feature `renderer`) | the page the renderer makes of it |
///
/// Each may come in a [`Result`]: `Ok(value)` is the answer above, an error goes
/// to the error handler. A controller method's `Result<T, E>` may carry the app's own error
/// type, any `E: Into<framework::Error>` (see [errors](crate::guide::errors)). A value type of
/// your own implements `Serialize`; the responder's
/// marshaller decides its format.
#[diagnostic::on_unimplemented(
    message = "a handler cannot return `{Self}`",
    label = "not a reply",
    note = "a handler returns a value that implements `serde::Serialize` (text, bytes and \
            JSON values), a `framework::body::BodyStream`, `()`, or `framework::Result` of \
            one of them (or an `Option` of one: `None` is a 404)"
)]
pub trait IntoReply: Send + 'static {
    /// Whether the value is left in the context for a responder to turn into the body (a
    /// `Serialize` value) rather than being the answer already (a stream, `NoContent`, a
    /// WebSocket's 101): what [`App::build`](crate::App::build) checks a route's chain for.
    #[doc(hidden)]
    const LEAVES_VALUE: bool = true;
    /// The success status the OpenAPI document gives a route answering with this type when
    /// the type does not describe its replies itself
    /// ([`DescribeReply`](crate::openapi::DescribeReply)): 200, [`Created`](crate::reply::Created)'s 201.
    #[doc(hidden)]
    const STATUS: u16 = 200;
    /// Puts the value into the context as its answer.
    fn into_reply(self, ctx: &mut Context);

    /// Puts the value into the context as its answer, or refuses the request with an error
    /// (which goes to the error handler as a handler's error would): what a handler's returned
    /// value goes through. By default [`into_reply`](Self::into_reply), which cannot fail. A
    /// reply that answers by the request's own headers overrides it: a file answers a `Range`
    /// it cannot satisfy with **416** and a failed `If-Match` with **412**.
    fn try_into_reply(self, ctx: &mut Context) -> Result
    where
        Self: Sized,
    {
        self.into_reply(ctx);
        Ok(())
    }
}

impl<T: Serialize + Send + Sync + 'static> IntoReply for T {
    #[inline]
    fn into_reply(self, ctx: &mut Context) {
        if let Some(body) = crate::reply::Reply::from_value(self) {
            ctx.body_mut().set_reply(body);
        }
    }
}

/// `201 Created` with the value as the body ; the OpenAPI document
/// lists the route's success as 201.
///
/// ```
/// use framework::reply::Created;
/// use framework::{Context, Result};
///
/// async fn register(_ctx: &mut Context) -> Result<Created<String>> {
///     Ok(Created("ada".to_owned()))
/// }
/// # let _ = register;
/// ```
impl<T: Serialize + Send + Sync + 'static> IntoReply for crate::reply::Created<T> {
    const STATUS: u16 = 201;
    fn into_reply(self, ctx: &mut Context) {
        ctx.set_status(http::StatusCode::CREATED);
        ctx.body_mut().set_value(self.0);
    }
}

/// A stream is sent as the body: [`Content::set_stream`](crate::context::Content::set_stream).
impl IntoReply for BodyStream {
    const LEAVES_VALUE: bool = false;
    fn into_reply(self, ctx: &mut Context) {
        ctx.body_mut().set_stream(self);
    }
}

/// Documented as a 200 `application/octet-stream` the handler streams itself.
impl crate::openapi::DescribeReply for BodyStream {
    fn describe_reply(operation: &mut crate::openapi::Operation<'_>) {
        operation.reply(200, Some("application/octet-stream"), None);
        operation.streamed();
    }
}

/// Text, documented as `text/plain`; bytes as `application/octet-stream`; `()` (the handler
/// answered through the context) with no body. What the OpenAPI document says of a route that
/// answers with one: told by the type, so an alias of one is documented as it is.
macro_rules! describe_plain {
    ($($ty:ty => $media:expr, $schema:expr;)*) => {$(
        impl crate::openapi::DescribeReply for $ty {
            fn describe_reply(operation: &mut crate::openapi::Operation<'_>) {
                operation.reply(200, $media, $schema);
            }
        }
    )*};
}
describe_plain! {
    String => Some("text/plain; charset=utf-8"), Some(crate::openapi::string_schema());
    &'static str => Some("text/plain; charset=utf-8"), Some(crate::openapi::string_schema());
    std::borrow::Cow<'static, str> => Some("text/plain; charset=utf-8"), Some(crate::openapi::string_schema());
    bytes::Bytes => Some("application/octet-stream"), None;
    Vec<u8> => Some("application/octet-stream"), None;
    () => None, None;
}

/// Puts a handler's returned value into the context ([`IntoReply`]; `()` leaves the body as the
/// handler set it). The error may be any type that converts into the framework's
/// [`Error`](crate::Error): an app's own error enum (see [errors](crate::guide::errors));
/// for the framework's own, the conversion is the identity. What the macros and
/// [`handler_fn`](super::handler_fn) call; not part of the API.
#[doc(hidden)]
pub fn finish<T: IntoReply, E: Into<crate::Error>>(
    out: std::result::Result<T, E>,
    ctx: &mut Context,
) -> Result {
    finish_value(out.map_err(Into::into)?, ctx)
}

/// [`finish`] for a controller handler that returns a plain value or `()` instead of a
/// `Result`.
#[doc(hidden)]
pub fn finish_value<T: IntoReply>(out: T, ctx: &mut Context) -> Result {
    out.try_into_reply(ctx)
}

/// [`finish`] for a controller handler that returns `Result<Option<T>>`: `None` is **404**
/// `not found` (category `framework-router`, as for a path no route has), not a `null` body.
#[doc(hidden)]
pub fn finish_found<T: IntoReply, E: Into<crate::Error>>(
    out: std::result::Result<Option<T>, E>,
    ctx: &mut Context,
) -> Result {
    finish_found_value(out.map_err(Into::into)?, ctx)
}

/// [`finish_found`] for a controller handler that returns `Option<T>`.
#[doc(hidden)]
pub fn finish_found_value<T: IntoReply>(out: Option<T>, ctx: &mut Context) -> Result {
    match out {
        Some(value) => value.try_into_reply(ctx),
        None => Err(crate::HttpError::with(
            http::StatusCode::NOT_FOUND,
            crate::route::ROUTER_CATEGORY,
            "not found",
        )
        .into()),
    }
}

/// `204 No Content`, no body.
/// Documented as a 204 without a body.
impl crate::openapi::DescribeReply for crate::reply::NoContent {
    fn describe_reply(operation: &mut crate::openapi::Operation<'_>) {
        operation.reply(204, None, None);
    }
}

impl IntoReply for crate::reply::NoContent {
    const LEAVES_VALUE: bool = false;
    const STATUS: u16 = 204;
    fn into_reply(self, ctx: &mut Context) {
        ctx.set_status(http::StatusCode::NO_CONTENT);
        ctx.body_mut().clear();
    }
}

//! Refuses to send answers larger than `max_size` bytes: a handler that builds a huge answer by
//! mistake (an unbounded query, a runaway list) fails loudly instead of pushing it out.
//!
//! - A buffered body over the limit: **500** `response body is too large`, category
//!   `framework-response-size-limiter`; the oversized body is dropped, never sent.
//! - A stream whose length is known (an exact size hint, e.g. a file) over the limit: the same
//!   500, and the stream is dropped unread.
//! - A stream of unknown length: it flows until it would pass the limit; the chunk that would
//!   cross it is not sent and the body fails, so the server cuts the connection (the status
//!   is already out): the client sees a failed transfer, never a truncated success, and never
//!   more than `max_size` bytes of body.
//!
//! The limit counts the bytes the chain above hands to the middleware: put it inside
//! [`compress`](super::compress) to limit the uncompressed size, and inside the error handler
//! so the 500 is answered in the client's format (it must also sit outside the responder, which
//! turns values into bytes): recover, logger, compress, error handler, **response size
//! limiter**, responder, body parser.
//!
//! ```
//! use framework::middleware::response_size_limiter::{ResponseSizeLimiter, ResponseSizeLimiterConfig};
//!
//! let limiter = ResponseSizeLimiter::new(ResponseSizeLimiterConfig::default()
//!     .max_size(256 * 1024));
//! let app = framework::App::new().use_middleware(limiter);
//! # let _ = app;
//! ```

use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use http::StatusCode;
use http_body::{Body, Frame, SizeHint};

use crate::body::{BodyStream, BoxError, DynBody};
use crate::context::Context;
use crate::error::{HttpError, Result};
use crate::handler::{BoxFuture, Middleware, Next};

/// Category of rejections.
pub const CATEGORY: &str = "framework-response-size-limiter";

/// Default limit: 1 MiB.
pub const DEFAULT_MAX_SIZE: usize = 1024 * 1024;

/// The response size limiter's settings.
#[derive(Clone)]
#[non_exhaustive]
pub struct ResponseSizeLimiterConfig {
    /// The largest body sent, in bytes. Default 1 MiB.
    pub max_size: usize,
}

crate::config::setters!(ResponseSizeLimiterConfig { max_size: usize });

impl Default for ResponseSizeLimiterConfig {
    fn default() -> Self {
        Self {
            max_size: DEFAULT_MAX_SIZE,
        }
    }
}

/// The response size limiter.
#[derive(Clone, Default)]
pub struct ResponseSizeLimiter {
    config: ResponseSizeLimiterConfig,
}

fn too_large() -> HttpError {
    HttpError::with(
        StatusCode::INTERNAL_SERVER_ERROR,
        CATEGORY,
        "response body is too large",
    )
}

/// A stream that fails instead of sending its byte number `max + 1`.
struct Capped {
    inner: DynBody,
    remaining: usize,
}

/// The error a capped stream ends with.
#[derive(Debug)]
struct TooLarge(usize);

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "response body is too large: over {} bytes", self.0)
    }
}

impl std::error::Error for TooLarge {}

impl Body for Capped {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, BoxError>>> {
        let frame = match self.inner.as_mut().poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            other => return other,
        };
        if let Some(data) = frame.data_ref() {
            if data.len() > self.remaining {
                tracing::warn!(
                    limit = self.remaining,
                    "streamed response over the size limit: the connection is cut"
                );
                self.remaining = 0;
                return Poll::Ready(Some(Err(Box::new(TooLarge(data.len())))));
            }
            self.remaining -= data.len();
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl ResponseSizeLimiter {
    /// A limiter with these settings.
    pub fn new(config: ResponseSizeLimiterConfig) -> Self {
        Self { config }
    }

    fn apply(&self, ctx: &mut Context) -> Result {
        let max = self.config.max_size;
        if let Some(body) = ctx.body().bytes() {
            if body.len() > max {
                ctx.body_mut().clear();
                return Err(too_large().into());
            }
            return Ok(());
        }
        let Some(hint) = ctx.body_mut().stream_mut().map(|s| s.size_hint()) else {
            return Ok(());
        };
        if let Some(len) = hint.exact() {
            if usize::try_from(len).map_or(true, |len| len > max) {
                drop(ctx.body_mut().take_stream());
                return Err(too_large().into());
            }
            return Ok(());
        }
        if let Some(stream) = ctx.body_mut().take_stream() {
            ctx.body_mut().set_stream(BodyStream::new(Capped {
                inner: stream.into_inner(),
                remaining: max,
            }));
        }
        Ok(())
    }
}

impl Middleware for ResponseSizeLimiter {
    fn role(&self) -> Option<crate::handler::Role> {
        Some(crate::handler::Role::ResponseSizeLimiter)
    }

    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        Box::pin(async move {
            next.run(ctx).await?;
            if ctx.is_committed() {
                return Ok(());
            }
            self.apply(ctx)
        })
    }
}

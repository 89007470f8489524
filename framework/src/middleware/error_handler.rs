//! Converts a returned error into a response: JSON when the client accepts it, else text.
//!
//! JSON (`Accept` naming `application/json` or a `+json` type, or [`ErrorHandlerConfig::json`]
//! set) is the error object with members `statusCode, code, category, title, message,
//! exception, extra`, empty ones omitted. Text is `statusCode=<n>, category=<c>, message=<m>`.
//! A plain error (not an [`HttpError`]) is answered 500 with category `framework-error` and
//! `exception: true`, and is logged. Headers already set (e.g. `Allow` on a 405) are kept.
//!
//! Streams: an error returned before the stream starts (any error the chain returns) replaces
//! a stream that was set, which is dropped unread. Once the chain has returned and the stream
//! flows, a failing stream cannot become an error answer any more (the status is sent): the
//! server cuts the connection, so the client sees a failed body, never a truncated success.
//!
//! ```
//! use framework::middleware::error_handler::ErrorHandler;
//!
//! let app = framework::App::new().use_middleware(ErrorHandler::default());
//! # let _ = app;
//! ```

use http::header::CONTENT_TYPE;

use crate::context::Context;
use crate::error::{HttpError, Result};
use crate::handler::{Before, Middleware};
use crate::header::{JSON_UTF8, TEXT_UTF8, accepts_json};

/// Error handler settings.
#[derive(Clone, Default)]
pub struct ErrorHandlerConfig {
    /// Always answer JSON, whatever `Accept` says.
    pub json: bool,
}

/// The error handler middleware.
#[derive(Clone, Default)]
pub struct ErrorHandler {
    config: ErrorHandlerConfig,
}

impl ErrorHandler {
    /// An error handler with `config`.
    pub fn new(config: ErrorHandlerConfig) -> Self {
        Self { config }
    }
}

/// Writes `err` as the response, JSON or text by the request's `Accept` (or `force_json`).
/// The recover middleware uses it too, so both answer alike.
pub fn write_error(ctx: &mut Context, err: &HttpError, force_json: bool) {
    let json = force_json || accepts_json(ctx.headers());
    ctx.body = None;
    ctx.take_body_stream();
    ctx.set_status(err.status());
    let (body, content_type) = if json {
        (err.to_json(), JSON_UTF8)
    } else {
        (err.to_string().into_bytes(), TEXT_UTF8)
    };
    ctx.body_buffer = Some(body.into());
    ctx.set_header(CONTENT_TYPE, content_type);
}

impl Middleware for ErrorHandler {
    fn role(&self) -> Option<crate::handler::Role> {
        Some(crate::handler::Role::ErrorHandler)
    }

    /// Errors are the error object as JSON, or text when the client does not accept JSON
    /// (JSON only when [`ErrorHandlerConfig::json`] is set).
    fn describe(&self, operation: &mut crate::openapi::Operation<'_>) {
        operation.error_media(if self.config.json {
            &["application/json"]
        } else {
            &["application/json", "text/plain"]
        });
    }

    fn before(&self, ctx: &mut Context) -> Before {
        Before::continue_unless_committed(ctx)
    }

    fn after(&self, ctx: &mut Context, result: Result) -> Result {
        let Err(err) = result else {
            return Ok(());
        };
        if ctx.committed() {
            return Err(err);
        }
        let err = err.into_http();
        if err.is_exception() {
            tracing::error!(
                request_id = ctx.request_id(),
                status = err.status().as_u16(),
                category = err.category(),
                message = err.message(),
                "request failed"
            );
        }
        write_error(ctx, &err, self.config.json);
        Ok(())
    }
}

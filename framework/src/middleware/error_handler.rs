//! Converts a returned error into a response: JSON when the client accepts it, else text.
//!
//! JSON (`Accept` naming `application/json` or a `+json` type, or [`ErrorHandlerConfig::json`]
//! set) is the error object with members `statusCode, code, category, title, message,
//! exception, extra`, empty ones omitted. Text is `statusCode=<n>, category=<c>, message=<m>`.
//! A plain error (not an [`HttpError`]) is answered 500 with category `framework-error` and
//! `exception: true`, and is logged. Headers already set (e.g. `Allow` on a 405) are kept.
//!
//! **Problem details** (RFC 9457, [`ErrorHandlerConfig::problem`]): a JSON error can go out
//! as `application/problem+json` instead, with the members `type` (`about:blank`), `title`
//! (the status's reason phrase, as RFC 9457 section 4.2.1 asks with `about:blank`), `status`,
//! `detail` (the message) and `instance` (the request's path, never its query), and the
//! framework's `category`, `code`, `errorTitle` (the error's own title), `exception` and
//! `extra` as extension members, empty ones omitted.
//! [`Problem::WhenAccepted`] answers so when the client's `Accept` prefers
//! `application/problem+json` to `application/json`, [`Problem::Always`] for every JSON
//! error answer; the default, [`Problem::Off`], keeps the error object above.
//!
//! ```
//! use framework::middleware::error_handler::{ErrorHandler, ErrorHandlerConfig, Problem};
//!
//! let errors = ErrorHandler::new(ErrorHandlerConfig::default()
//!     .problem(Problem::WhenAccepted));
//! # let _ = errors;
//! ```
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

use http::header::{CONTENT_TYPE, HeaderValue};

use crate::context::Context;
use crate::error::{HttpError, Result};
use crate::handler::{Before, Middleware};
use crate::header::{JSON_UTF8, TEXT_UTF8, accepts_json};

/// Error handler settings.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct ErrorHandlerConfig {
    /// Always answer JSON, whatever `Accept` says.
    pub json: bool,
    /// When a JSON error is an RFC 9457 problem details object (see the [module](self)).
    /// Default [`Problem::Off`].
    pub problem: Problem,
}

crate::config::setters!(ErrorHandlerConfig {
    json: bool,
    problem: Problem,
});

/// When a JSON error answer is an RFC 9457 `application/problem+json` object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// Never: the framework's error object (the default).
    #[default]
    Off,
    /// When the request's `Accept` prefers `application/problem+json` to `application/json`.
    WhenAccepted,
    /// Every JSON error answer.
    Always,
}

/// The media type of a problem details object.
const PROBLEM_JSON: HeaderValue = HeaderValue::from_static("application/problem+json");

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
    let json = force_json || accepts_json(ctx.request_headers());
    ctx.set_status(err.status());
    let (body, content_type) = if json {
        (err.to_json(), JSON_UTF8)
    } else {
        (err.to_string().into_bytes(), TEXT_UTF8)
    };
    ctx.body_mut().set_bytes(body);
    ctx.set_response_header(CONTENT_TYPE, content_type);
}

/// Writes `err` as [`write_error`] does, or as a problem details object when `config` and the
/// request's `Accept` say so.
fn write_configured(ctx: &mut Context, err: &HttpError, config: &ErrorHandlerConfig) {
    let problem = match config.problem {
        Problem::Off => false,
        Problem::Always => config.json || accepts_json(ctx.request_headers()),
        Problem::WhenAccepted => {
            let offered = ["application/json", "application/problem+json"];
            crate::negotiation::preferred(ctx.request_headers(), &offered) == Some(1)
        }
    };
    if !problem {
        return write_error(ctx, err, config.json);
    }
    ctx.set_status(err.status());
    let problem = problem_details(err, ctx.path());
    ctx.body_mut().set_bytes(problem);
    ctx.set_response_header(CONTENT_TYPE, PROBLEM_JSON);
}

/// `err` as an RFC 9457 problem details object, `instance` the request's path.
fn problem_details(err: &HttpError, instance: &str) -> Vec<u8> {
    let status = err.status();
    // With `about:blank` the title is the status's reason phrase (RFC 9457 section 4.2.1);
    // the error's own title goes with the extension members.
    let mut problem = serde_json::json!({
        "type": "about:blank",
        "title": status.canonical_reason().unwrap_or("Error"),
        "status": status.as_u16(),
        "detail": err.message(),
        "instance": instance,
        "category": err.category(),
    });
    if !err.code().is_empty() {
        problem["code"] = err.code().into();
    }
    if !err.title().is_empty() {
        problem["errorTitle"] = err.title().into();
    }
    if err.is_exception() {
        problem["exception"] = true.into();
    }
    if let Some(extra) = err.extra() {
        problem["extra"] = extra.clone();
    }
    serde_json::to_vec(&problem).unwrap_or_default()
}

impl Middleware for ErrorHandler {
    fn role(&self) -> Option<crate::handler::Role> {
        Some(crate::handler::Role::ErrorHandler)
    }

    /// Errors are the error object as JSON, or text when the client does not accept JSON
    /// (JSON only when [`ErrorHandlerConfig::json`] is set).
    fn describe(&self, operation: &mut crate::openapi::Operation<'_>) {
        operation.error_media(match (self.config.problem, self.config.json) {
            (Problem::Always, true) => &["application/problem+json"],
            (Problem::Always, false) => &["application/problem+json", "text/plain"],
            (Problem::WhenAccepted, true) => &["application/json", "application/problem+json"],
            (Problem::WhenAccepted, false) => {
                &["application/json", "application/problem+json", "text/plain"]
            }
            (_, true) => &["application/json"],
            (_, false) => &["application/json", "text/plain"],
        });
    }

    fn before(&self, ctx: &mut Context) -> Before {
        Before::continue_unless_committed(ctx)
    }

    fn after(&self, ctx: &mut Context, result: Result) -> Result {
        let Err(err) = result else {
            return Ok(());
        };
        if ctx.is_committed() {
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
        write_configured(ctx, &err, &self.config);
        Ok(())
    }
}

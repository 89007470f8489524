//! Answers 304 Not Modified when the client's copy is still current, so it is not sent again.
//!
//! Applies to GET and HEAD answers with a 2xx status and a body (bytes or a stream), and follows
//! RFC 9110 section 13.2.2 through [`crate::conditional::evaluate`]:
//! - `If-None-Match` (a list of tags or `*`, compared weakly) is checked against the answer's
//!   `ETag`;
//! - only without `If-None-Match`, `If-Modified-Since` (an HTTP date, `httpdate`) is checked
//!   against the answer's `Last-Modified` (whole seconds);
//! - a request with `Cache-Control: no-cache` is never fresh: the client asked for the full
//!   answer.
//!
//! Fresh: status 304 and no body (a stream is dropped unread). The headers that describe the
//! representation (`Content-Type`, `Content-Length`, `Content-Encoding`, `Content-Language`,
//! `Content-Range`, `Transfer-Encoding`) are removed; `ETag`, `Cache-Control`, `Vary`,
//! `Last-Modified`, `Expires`, `Content-Location` and `Date` stay, as RFC 9110 section 15.4.5
//! asks. Other headers stay too: dropping a `Set-Cookie` would lose a session update, and
//! `X-Request-Id` still names the request. What the 304 stands for (the type and length of the
//! answer it replaced) goes into the request's extensions as a [`Represents`], so compress can
//! still send the `Vary` the 200 had.
//!
//! Put it outside [`etag`](super::etag) (reference order: compress, fresh, etag, error handler,
//! responder), so the tag exists when fresh looks.
//!
//! ```
//! use framework::middleware::fresh::Fresh;
//!
//! let app = framework::App::new().use_middleware(Fresh);
//! # let _ = app;
//! ```

use std::time::SystemTime;

use http::header::{
    CACHE_CONTROL, CONTENT_ENCODING, CONTENT_LANGUAGE, CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE,
    ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED, TRANSFER_ENCODING,
};
use http::{Method, StatusCode};

use crate::conditional::{Precondition, Represents, evaluate};
use crate::context::Context;
use crate::error::Result;
use crate::handler::{Before, Middleware};

/// The fresh middleware.
/// It has no settings: mount it as `Fresh`, and limit it to some requests with
/// [`App::use_when`](crate::App::use_when).
#[derive(Clone, Copy, Debug, Default)]
pub struct Fresh;

/// True when the request's `Cache-Control` has `no-cache`.
fn no_cache_requested(ctx: &Context) -> bool {
    ctx.request_headers()
        .get_all(CACHE_CONTROL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|d| d.trim().eq_ignore_ascii_case("no-cache"))
}

/// True when the client's copy is current.
fn is_fresh(ctx: &Context) -> bool {
    let method = ctx.method();
    if *method != Method::GET && *method != Method::HEAD {
        return false;
    }
    // Without a condition there is nothing to evaluate: the common case, settled before the
    // response headers are looked at.
    let request = ctx.request_headers();
    if !crate::header::has_any(request, &[IF_NONE_MATCH, IF_MODIFIED_SINCE]) {
        return false;
    }
    if !ctx.status().unwrap_or(StatusCode::OK).is_success() {
        return false;
    }
    let has_body = ctx.body().is_stream() || ctx.body().bytes().is_some_and(|b| !b.is_empty());
    if !has_body || no_cache_requested(ctx) {
        return false;
    }
    let etag = ctx.response_header(ETAG);
    let last_modified: Option<SystemTime> = ctx
        .response_header(LAST_MODIFIED)
        .and_then(|v| httpdate::parse_http_date(v).ok());
    if etag.is_none() && last_modified.is_none() {
        return false;
    }
    evaluate(method, ctx.request_headers(), etag, last_modified) == Precondition::NotModified
}

fn not_modified(ctx: &mut Context) {
    let length = match ctx.body().bytes() {
        Some(buffer) => buffer.len() as u64,
        None => ctx
            .body_mut()
            .stream_mut()
            .map_or(0, |stream| stream.size_hint().exact().unwrap_or(u64::MAX)),
    };
    let represents = Represents {
        content_type: ctx.response_headers().get(CONTENT_TYPE).cloned(),
        length,
    };
    ctx.extensions_mut().insert(represents);
    ctx.set_status(StatusCode::NOT_MODIFIED);
    ctx.body_mut().clear();
    let headers = ctx.response_headers_mut();
    for name in [
        CONTENT_TYPE,
        CONTENT_LENGTH,
        CONTENT_ENCODING,
        CONTENT_LANGUAGE,
        CONTENT_RANGE,
        TRANSFER_ENCODING,
    ] {
        headers.remove(name);
    }
}

impl Middleware for Fresh {
    fn before(&self, _ctx: &mut Context) -> Before {
        Before::Continue
    }

    fn after(&self, ctx: &mut Context, result: Result) -> Result {
        result?;
        if !ctx.is_committed() && is_fresh(ctx) {
            not_modified(ctx);
        }
        Ok(())
    }
}

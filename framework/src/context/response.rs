//! Building the response: status, headers and the body (a value, bytes or a stream).

use std::time::Duration;

use http::StatusCode;
use http::header::{self, HeaderMap, HeaderName, HeaderValue, IntoHeaderName};
use serde::Serialize;

use super::Context;
use crate::body::BodyStream;
use crate::error::{HttpError, Result};
use crate::reply::Reply;

impl Context {
    /// The response status set so far.
    pub fn status(&self) -> Option<StatusCode> {
        self.status
    }
    /// Sets the response status.
    pub fn set_status(&mut self, status: StatusCode) {
        self.status = Some(status);
    }
    /// Response headers set so far.
    pub fn response_headers(&self) -> &HeaderMap {
        &self.response_headers
    }
    /// Mutable response headers.
    pub fn response_headers_mut(&mut self) -> &mut HeaderMap {
        &mut self.response_headers
    }
    /// Sets (replaces) a response header.
    pub fn set_header(&mut self, name: impl IntoHeaderName, value: HeaderValue) {
        self.response_headers.insert(name, value);
    }
    /// A response header as text.
    pub fn response_header(&self, name: impl header::AsHeaderName) -> Option<&str> {
        self.response_headers
            .get(name)
            .and_then(|v| v.to_str().ok())
    }
    /// Sets the body from any value: see [`Reply::from_value`].
    pub fn set_body<T: Serialize + Send + Sync + 'static>(&mut self, value: T) {
        self.body = Reply::from_value(value);
    }
    /// Sends `stream` as the response body, replacing any `body` or `body_buffer`.
    ///
    /// The stream's bytes flow after the whole chain has returned, as the client reads them;
    /// a known length (exact size hint) becomes `Content-Length`, an unknown one goes chunked.
    /// Middleware that needs the whole body (etag, cache, …) leaves a stream alone. A middleware
    /// that writes `body_buffer` afterwards (the error handler) removes the stream first.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use framework::{Context, Result, body::BodyStream};
    ///
    /// async fn events(ctx: &mut Context) -> Result {
    ///     let ticks = futures_util::stream::iter(
    ///         (0..3).map(|i| Ok::<_, std::io::Error>(Bytes::from(format!("data: {i}\n\n")))),
    ///     );
    ///     ctx.set_header(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/event-stream"));
    ///     ctx.set_body_stream(BodyStream::from_stream(ticks));
    ///     Ok(())
    /// }
    /// # let _ = events;
    /// ```
    pub fn set_body_stream(&mut self, stream: BodyStream) {
        self.body = None;
        self.body_buffer = None;
        self.body_stream = Some(stream);
    }
    /// True when the response body is a stream.
    pub fn has_body_stream(&self) -> bool {
        self.body_stream.is_some()
    }
    /// The response stream, to read its size hint.
    pub fn body_stream_mut(&mut self) -> Option<&mut BodyStream> {
        self.body_stream.as_mut()
    }
    /// Takes the response stream out, e.g. to wrap it in an encoder and set it back.
    pub fn take_body_stream(&mut self) -> Option<BodyStream> {
        self.body_stream.take()
    }
    /// Status 201 with the value as body.
    pub fn created<T: Serialize + Send + Sync + 'static>(&mut self, value: T) {
        self.status = Some(StatusCode::CREATED);
        self.set_body(value);
    }
    /// Status 204 and no body.
    pub fn no_content(&mut self) {
        self.status = Some(StatusCode::NO_CONTENT);
        self.body = None;
        self.body_buffer = None;
        self.body_stream = None;
    }
    /// `Cache-Control: public, max-age=<secs>`.
    pub fn cache_max_age(&mut self, max_age: Duration) {
        self.set_cache_control(max_age, None);
    }
    /// `Cache-Control: public, max-age=<secs>, s-maxage=<secs>`.
    pub fn cache_s_max_age(&mut self, max_age: Duration, s_max_age: Duration) {
        self.set_cache_control(max_age, Some(s_max_age));
    }
    fn set_cache_control(&mut self, max_age: Duration, s_max_age: Option<Duration>) {
        let value = crate::header::public_cache_control(max_age, s_max_age);
        self.response_headers.insert(header::CACHE_CONTROL, value);
    }
    /// Clears status, headers and body: what an error or panic answer starts from.
    pub fn reset_response(&mut self) {
        self.status = None;
        self.response_headers.clear();
        self.body = None;
        self.body_buffer = None;
        self.body_stream = None;
    }
    /// Sets a response header from text; an invalid value is a 500 error.
    pub fn set_header_str(&mut self, name: HeaderName, value: &str) -> Result<(), HttpError> {
        let v = HeaderValue::from_str(value).map_err(|_| {
            HttpError::with(
                StatusCode::INTERNAL_SERVER_ERROR,
                crate::error::DEFAULT_CATEGORY,
                format!("invalid value for header {name}"),
            )
            .with_exception(true)
        })?;
        self.response_headers.insert(name, v);
        Ok(())
    }
}

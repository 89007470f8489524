//! Building the response: status, headers and the content (a value, bytes or a stream).

use http::StatusCode;
use http::header::{HeaderMap, HeaderValue, IntoHeaderName};

use super::{Content, Context};

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
    pub fn set_response_header(&mut self, name: impl IntoHeaderName, value: HeaderValue) {
        self.response_headers.insert(name, value);
    }
    /// The response's content so far ([`Content`]).
    pub fn body(&self) -> &Content {
        &self.body
    }
    /// The response's content, to set bytes or a stream, or to take what is there.
    pub fn body_mut(&mut self) -> &mut Content {
        &mut self.body
    }
    /// A response header as text (for the middleware that read one).
    pub(crate) fn response_header(&self, name: impl http::header::AsHeaderName) -> Option<&str> {
        self.response_headers
            .get(name)
            .and_then(|v| v.to_str().ok())
    }
    /// Clears status, headers and content, and the commit: what the answer to a handler that
    /// panicked or timed out starts from (nothing of the answer it was making has been sent).
    pub(crate) fn reset_response(&mut self) {
        self.committed = false;
        self.status = None;
        self.response_headers.clear();
        self.body.clear();
    }
}

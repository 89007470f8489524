//! The end of a request: the context turns itself into the response.

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, StatusCode, Version};

use super::recycle::recycle_headers;
use super::{Context, TAKEN_REQUEST_ID};
use crate::body::ResponseBody;
use crate::error::Result;

impl Context {
    /// Turns the finished context into the response.
    ///
    /// An error that reached here (no error handler) becomes its status (500 for a plain
    /// error) with the error text as `text/plain`. Otherwise the status is the one set, or
    /// 200, and the body is the content's stream or bytes: a value that no responder converted
    /// sends nothing. HEAD answers keep `Content-Length` (a stream's
    /// when its length is known) and drop the body, which also releases whatever the stream
    /// held open. What the request holds ([`Context::hold`]) goes with a streamed body, so it
    /// is given back once the body has been sent.
    pub(crate) fn take_response(&mut self, result: Result) -> http::Response<ResponseBody> {
        let head = self.method == Method::HEAD;
        self.write_cookies();
        let (status, body) = match result {
            Ok(()) => {
                let status = self.status.unwrap_or(StatusCode::OK);
                match self.body.take_sent() {
                    Ok(mut stream) => {
                        // A HEAD answer drops the stream below, and the guards with the context.
                        if !head && !self.held.is_empty() {
                            stream = stream.with_guard(std::mem::take(&mut self.held));
                        }
                        (status, ResponseBody::stream(stream))
                    }
                    Err(bytes) => (status, ResponseBody::full(bytes)),
                }
            }
            Err(err) => {
                self.response_headers
                    .insert(header::CONTENT_TYPE, crate::header::TEXT_UTF8);
                (err.status(), ResponseBody::full(Bytes::from(err.text())))
            }
        };
        let body = if head {
            let headers = &mut self.response_headers;
            match &body {
                ResponseBody::Full(bytes) => {
                    let len = bytes.as_ref().map_or(0, Bytes::len);
                    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
                }
                ResponseBody::Stream(_) => {
                    if let Some(len) = http_body::Body::size_hint(&body).exact()
                        && !headers.contains_key(header::CONTENT_LENGTH)
                    {
                        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
                    }
                }
            }
            ResponseBody::empty()
        } else {
            body
        };
        let mut request_id = self
            .request_id
            .take()
            .unwrap_or_else(|| TAKEN_REQUEST_ID.clone());
        // Never indexed by HTTP/2's header compression (HPACK): each response's id is new, so
        // indexing would only churn the connection's table, and every insert first compares
        // the id with each earlier one still in it (BENCHMARKS.md, "Hand-written fast paths").
        // HTTP/1 ignores the flag.
        request_id.set_sensitive(true);
        let mut response = http::Response::new(body);
        *response.status_mut() = status;
        // Swapped, not moved: the context keeps the empty map the response came with.
        let headers = response.headers_mut();
        std::mem::swap(headers, &mut *self.response_headers);
        headers.insert(crate::header::X_REQUEST_ID, request_id);
        // While draining, an HTTP/1 client is told to take its next request elsewhere (HTTP/2
        // gets GOAWAY when the server stops).
        if self.version < Version::HTTP_2 && self.is_draining() {
            const CLOSE: HeaderValue = HeaderValue::from_static("close");
            headers.insert(header::CONNECTION, CLOSE);
        }
        // The request is over: its header map, emptied, will carry the next response's
        // headers (see `recycle_headers`).
        recycle_headers(std::mem::take(&mut *self.headers));
        response
    }
}

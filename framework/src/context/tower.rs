//! The context as a tower request and back (feature `tower`): what [`crate::tower`] hands a
//! layer or a service, and what it puts back when they answer.

use bytes::Bytes;
use http_body::Body;

use super::Context;
use crate::body::{BodyStream, BoxError, RequestBody, ResponseBody};
use crate::error::{Error, Result};
use crate::router::Params;

/// On a response made from a chain's error: the error waits in the adapter, and comes back as
/// the chain's result if the response returns with this mark (the layer did not replace it).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChainErrorMark;

/// On a response made while the handler's value (`Context::body`'s value) was still waiting for the
/// responder outside: its body is empty, and an empty body coming back leaves the value in
/// place.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PendingReplyMark;

impl Context {
    /// The request as an `http::Request`: headers, extensions and the raw body move out of
    /// the context; method and URI are copied (the URI stays to tell whether a layer rewrote
    /// the path).
    pub(crate) fn take_http_request(&mut self) -> http::Request<RequestBody> {
        let mut request = http::Request::new(std::mem::take(&mut self.raw_body));
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.uri.clone();
        *request.version_mut() = self.version;
        *request.headers_mut() = std::mem::take(&mut *self.headers);
        *request.extensions_mut() = std::mem::take(&mut self.extensions);
        request
    }

    /// Puts a request (as a layer changed it) back into the context. Route params are offsets
    /// into the path the route matched: a layer that rewrote the path leaves the request with
    /// no params (the route is not matched again).
    pub(crate) fn put_http_request<B>(&mut self, request: http::Request<B>)
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let (parts, body) = request.into_parts();
        if parts.uri.path() != self.uri.path() {
            self.params = Params::default();
        }
        self.method = parts.method;
        self.uri = parts.uri;
        self.version = parts.version;
        *self.headers = parts.headers;
        self.extensions = parts.extensions;
        self.raw_body = RequestBody::from_body(body);
    }

    /// The response the chain made, as an `http::Response`, and the error it ended with (to be
    /// given back if the response comes back marked). An error becomes a response of its
    /// status with the headers set so far and no body; a value the responder outside has not
    /// turned into bytes yet stays in the context, and the response has no body.
    pub(crate) fn take_http_response(
        &mut self,
        result: Result,
    ) -> (http::Response<ResponseBody>, Option<Error>) {
        let mut response = http::Response::new(ResponseBody::empty());
        *response.headers_mut() = std::mem::take(&mut *self.response_headers);
        let error = match result {
            Ok(()) => {
                *response.status_mut() = self.status.unwrap_or_default();
                if let Some(stream) = self.body.take_stream() {
                    *response.body_mut() = ResponseBody::stream(stream);
                } else if let Some(bytes) = self.body.take_bytes() {
                    *response.body_mut() = ResponseBody::full(bytes);
                } else if self.body.value().is_some() {
                    response.extensions_mut().insert(PendingReplyMark);
                }
                None
            }
            Err(error) => {
                *response.status_mut() = error.status();
                response.extensions_mut().insert(ChainErrorMark);
                Some(error)
            }
        };
        (response, error)
    }

    /// Puts a response (as a layer changed it, or as a service made it) into the context:
    /// its status, headers and body. Returns `error` when the response is the one
    /// [`take_http_response`](Self::take_http_response) made from it (still marked), so the
    /// error handler outside answers it with the headers the layer added.
    pub(crate) fn put_http_response(
        &mut self,
        response: http::Response<ResponseBody>,
        error: Option<Error>,
    ) -> Result {
        let (parts, body) = response.into_parts();
        *self.response_headers = parts.headers;
        if let Some(error) = error
            && parts.extensions.get::<ChainErrorMark>().is_some()
        {
            return Err(error);
        }
        self.status = Some(parts.status);
        let pending = parts.extensions.get::<PendingReplyMark>().is_some();
        if pending && http_body::Body::size_hint(&body).exact() == Some(0) {
            // The handler's value is still to be turned into bytes, outside.
            return Ok(());
        }
        match body {
            ResponseBody::Full(Some(bytes)) => self.body.set_bytes(bytes),
            ResponseBody::Full(None) => self.body.clear(),
            ResponseBody::Stream(stream) => self.body.set_stream(BodyStream::from_dyn(stream)),
        }
        Ok(())
    }

    /// Marks the request as having come over TLS: what a host that serves the app as a tower
    /// service says through [`ConnectInfo`](crate::tower::ConnectInfo).
    pub(crate) fn set_remote(&mut self, remote_addr: std::net::SocketAddr, tls: bool) {
        let connection = super::ConnectionInfo::new(remote_addr);
        self.connection = if tls {
            connection.with_tls(None)
        } else {
            connection
        };
    }
}

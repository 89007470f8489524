//! Request and response bodies.
//!
//! A request body is either hyper's stream or bytes already in memory (the in-process test
//! client). It is read at most once, with a size limit, by whoever needs it.
//!
//! A response body is either whole bytes (the fast path: no box, no extra allocation) or a
//! [`BodyStream`]: any [`http_body::Body`] of [`Bytes`] frames, boxed, with its size hint. A
//! stream whose length is known goes out with `Content-Length`; one whose length is unknown goes
//! chunked on HTTP/1.1 and as DATA frames on HTTP/2. Each frame is written as soon as the stream
//! yields it, so server-sent events arrive live.

/// The bytes of every body, re-exported: a handler that streams needs no `bytes` dependency of
/// its own.
pub use bytes::Bytes;

mod waits;
/// What [`BodyStream::from_stream`] takes and the helpers to make one (`stream::iter`,
/// `stream::unfold`, `StreamExt::map`…), re-exported from `futures-util`: a handler that
/// streams needs no `futures` dependency of its own.
pub use futures_util::stream::{self, Stream, StreamExt};
pub(crate) use waits::BodyWaits;

/// The error type of streamed bodies.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

mod request;
mod response;

pub use request::{BodyDeclined, BodyError, FormDecoded, IncomingBody, ReadError, RequestBody};
#[cfg(any(test, feature = "static-serve"))]
pub(crate) use response::READ_CHUNK;
pub use response::{BodyStream, DynBody, ResponseBody, StaticBody};

#[cfg(test)]
mod tests;

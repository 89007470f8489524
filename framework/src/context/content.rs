//! The response's content ([`Content`]): nothing yet, a value for the responder, bytes, or a
//! stream. One of them at a time.

use bytes::Bytes;
use serde::Serialize;

use crate::body::BodyStream;
use crate::reply::Reply;

/// What the response will carry: nothing yet, a value the responder turns into bytes, bytes,
/// or a stream. Read with [`Context::body`](crate::Context::body), changed with
/// [`Context::body_mut`](crate::Context::body_mut).
///
/// The last thing set is the content: setting bytes replaces a value or a stream, setting a
/// value replaces bytes. A value reaches the client only through the responder
/// ([`Responder`](crate::middleware::responder::Responder), in [`App::new`](crate::App::new)),
/// which replaces it with its bytes: without one (on [`App::bare`](crate::App::bare)) a value
/// sends nothing. A stream's bytes flow after the whole chain has returned, as the client
/// reads them; a known length (exact size hint) becomes `Content-Length`, an unknown one goes
/// chunked, and middleware that needs the whole body (etag, cache, …) leaves a stream alone.
///
/// ```
/// use bytes::Bytes;
/// use framework::{Context, Result, body::BodyStream};
///
/// async fn events(ctx: &mut Context) -> Result {
///     let ticks = futures_util::stream::iter(
///         (0..3).map(|i| Ok::<_, std::io::Error>(Bytes::from(format!("data: {i}\n\n")))),
///     );
///     ctx.set_response_header(
///         http::header::CONTENT_TYPE,
///         http::HeaderValue::from_static("text/event-stream"),
///     );
///     ctx.body_mut().set_stream(BodyStream::from_stream(ticks));
///     assert!(ctx.body().is_stream());
///     Ok(())
/// }
/// # let _ = events;
/// ```
#[derive(Default)]
pub struct Content(Kind);

#[derive(Default)]
enum Kind {
    #[default]
    Empty,
    Value(Reply),
    Bytes(Bytes),
    Stream(BodyStream),
}

impl Content {
    /// True when nothing has been set (or it was taken or cleared).
    pub fn is_empty(&self) -> bool {
        matches!(self.0, Kind::Empty)
    }
    /// The value waiting for the responder, if the content is one.
    pub fn value(&self) -> Option<&Reply> {
        match &self.0 {
            Kind::Value(reply) => Some(reply),
            _ => None,
        }
    }
    /// The bytes, if the content is bytes.
    pub fn bytes(&self) -> Option<&Bytes> {
        match &self.0 {
            Kind::Bytes(bytes) => Some(bytes),
            _ => None,
        }
    }
    /// True when the content is a stream.
    pub fn is_stream(&self) -> bool {
        matches!(self.0, Kind::Stream(_))
    }
    /// The stream, if the content is one (to read its size hint).
    pub fn stream_mut(&mut self) -> Option<&mut BodyStream> {
        match &mut self.0 {
            Kind::Stream(stream) => Some(stream),
            _ => None,
        }
    }
    /// Sets the content to any value: a text or bytes as they are, anything else serialised by
    /// the responder (see [`Reply::from_value`]); `()` clears it.
    pub fn set_value<T: Serialize + Send + Sync + 'static>(&mut self, value: T) {
        self.0 = Reply::from_value(value).map_or(Kind::Empty, Kind::Value);
    }
    /// Sets the content to a value already sorted into its kind.
    pub fn set_reply(&mut self, reply: Reply) {
        self.set(Kind::Value(reply));
    }
    /// Sets the content to `bytes`, sent as they are.
    pub fn set_bytes(&mut self, bytes: impl Into<Bytes>) {
        self.set(Kind::Bytes(bytes.into()));
    }
    /// Sets the content to `stream`.
    pub fn set_stream(&mut self, stream: BodyStream) {
        self.0 = Kind::Stream(stream);
    }
    /// Takes the value out, if the content is one (it is then empty); other content stays.
    pub fn take_value(&mut self) -> Option<Reply> {
        if !matches!(self.0, Kind::Value(_)) {
            return None;
        }
        match std::mem::take(&mut self.0) {
            Kind::Value(reply) => Some(reply),
            _ => None,
        }
    }
    /// Takes the bytes out, if the content is bytes (it is then empty); other content stays.
    pub fn take_bytes(&mut self) -> Option<Bytes> {
        if !matches!(self.0, Kind::Bytes(_)) {
            return None;
        }
        match std::mem::take(&mut self.0) {
            Kind::Bytes(bytes) => Some(bytes),
            _ => None,
        }
    }
    /// Takes the stream out, if the content is one (it is then empty), e.g. to wrap it in an
    /// encoder and set it back; other content stays.
    pub fn take_stream(&mut self) -> Option<BodyStream> {
        if !matches!(self.0, Kind::Stream(_)) {
            return None;
        }
        match std::mem::take(&mut self.0) {
            Kind::Stream(stream) => Some(stream),
            _ => None,
        }
    }
    /// Puts `kind` in place. Content that is empty owns nothing, so it is forgotten rather
    /// than dropped: the usual case (a handler's value into an empty content, the responder's
    /// bytes where it took the value) then calls no drop glue, which for this enum is an
    /// out-of-line call: 37 instructions of `GET /json`'s 11 417, which the CI check's 1.08×
    /// hyper-id needs (BENCHMARKS.md, "Hand-written fast paths").
    #[inline]
    fn set(&mut self, kind: Kind) {
        if matches!(self.0, Kind::Empty) {
            std::mem::forget(std::mem::replace(&mut self.0, kind));
        } else {
            self.0 = kind;
        }
    }
    /// Empties the content (a stream is dropped, releasing what it held open).
    pub fn clear(&mut self) {
        self.0 = Kind::Empty;
    }

    /// What is sent: the stream, or the bytes (a value no responder converted, or nothing, is
    /// no bytes). Leaves the content empty.
    pub(crate) fn take_sent(&mut self) -> Result<BodyStream, Bytes> {
        match std::mem::take(&mut self.0) {
            Kind::Stream(stream) => Ok(stream),
            Kind::Bytes(bytes) => Err(bytes),
            Kind::Value(_) | Kind::Empty => Err(Bytes::new()),
        }
    }
}

impl std::fmt::Debug for Content {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Kind::Empty => f.write_str("Content::Empty"),
            Kind::Value(_) => f.write_str("Content::Value(..)"),
            Kind::Bytes(bytes) => write!(f, "Content::Bytes({} bytes)", bytes.len()),
            Kind::Stream(_) => f.write_str("Content::Stream(..)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Content;
    use crate::body::BodyStream;
    use bytes::Bytes;

    /// One kind at a time: the last set wins, a take of another kind leaves it in place.
    #[test]
    fn the_last_content_set_is_the_content() {
        let mut content = Content::default();
        assert!(content.is_empty());
        content.set_value(7u32);
        assert!(content.value().is_some());
        content.set_bytes("x");
        assert!(content.value().is_none());
        assert_eq!(content.bytes(), Some(&Bytes::from("x")));
        assert!(content.take_value().is_none(), "bytes are not a value");
        assert!(content.take_stream().is_none());
        assert_eq!(content.bytes(), Some(&Bytes::from("x")), "still there");
        content.set_stream(BodyStream::from_stream(futures_util::stream::empty::<
            Result<Bytes, std::io::Error>,
        >()));
        assert!(content.is_stream() && content.bytes().is_none());
        assert!(content.take_stream().is_some());
        assert!(content.is_empty());
        content.set_value("text");
        content.set_value(());
        assert!(content.is_empty(), "() clears");
        content.set_bytes("y");
        assert_eq!(content.take_bytes(), Some(Bytes::from("y")));
        assert!(content.is_empty());
        content.set_value(1u8);
        content.clear();
        assert!(content.is_empty());
    }
}

//! The response body: whole bytes, or a boxed [`BodyStream`] with its size hint; and the
//! [`StaticBody`] mark of bytes that are the same for every request.

use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use sync_wrapper::SyncWrapper;

use super::BoxError;

/// Marks a response body as static: the same bytes for every request that carries a mark
/// with the same digest, such as a file compiled into the binary or a static file whose digest
/// is known. [`Compress`](crate::middleware::compress::Compress) then compresses it once per
/// encoding, at the compressor's static level, and keeps the result
/// ([`CompressConfig::static_cache_bytes`](crate::middleware::compress::CompressConfig::static_cache_bytes)),
/// instead of compressing it for every request.
///
/// The mark holds the very bytes it was made for (a reference, nothing copied) and applies
/// only while they are the body: a middleware that changes the body afterwards (a JSON
/// picker, a template) leaves a body the mark does not match, which is then compressed as any
/// other. Put it in the request's extensions beside the body; static serve does so for every
/// file it sends whole from memory whose digest it knows (embedded files, strong ETags):
///
/// ```
/// use framework::body::{Bytes, StaticBody};
///
/// # fn handler(ctx: &mut framework::Context) {
/// const LOGO: &[u8] = b"<svg>...</svg>";
/// // Any digest of the bytes alone, of 128 bits or more: here SHA-256, computed once.
/// # let digest = [7u8; 32];
/// let body = Bytes::from_static(LOGO);
/// ctx.extensions_mut().insert(StaticBody::new(&digest, &body));
/// ctx.body_mut().set_bytes(body);
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct StaticBody {
    key: u128,
    body: Bytes,
}

impl StaticBody {
    /// The mark of `body`, whose digest (SHA-256, or any hash of the bytes alone of 128 bits
    /// or more) is `digest`; its first 16 bytes are kept. Two bodies with the same digest must
    /// be the same bytes.
    pub fn new(digest: &[u8], body: &Bytes) -> Self {
        let mut key = [0u8; 16];
        let n = digest.len().min(16);
        key[..n].copy_from_slice(&digest[..n]);
        Self {
            key: u128::from_be_bytes(key),
            body: body.clone(),
        }
    }

    /// The digest's first 128 bits: what the compressed forms are kept under.
    pub(crate) fn key(&self) -> u128 {
        self.key
    }

    /// Whether `body` is the bytes this mark was made for. The mark holds them, so their memory
    /// cannot have been reused for other bytes: the same place and length is the same bytes.
    pub(crate) fn marks(&self, body: &Bytes) -> bool {
        body.as_ptr() == self.body.as_ptr() && body.len() == self.body.len()
    }
}

/// A boxed response body of unknown type.
pub type DynBody = Pin<Box<dyn Body<Data = Bytes, Error = BoxError> + Send>>;

/// A streamed response body: any `http_body::Body` of `Bytes`, boxed.
///
/// The box is `Send` but need not be `Sync` (a stream built on a channel receiver or an
/// `async` block rarely is); the context stays `Sync` because the stream is only ever reached
/// through `&mut`.
pub struct BodyStream(pub(super) SyncWrapper<DynBody>);

impl BodyStream {
    /// Boxes `body`. Its size hint is kept: an exact one becomes `Content-Length`.
    pub fn new<B>(body: B) -> Self
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        Self(SyncWrapper::new(Box::pin(body.map_err(Into::into))))
    }

    /// An already boxed body, kept in its box.
    #[cfg(feature = "tower")]
    pub(crate) fn from_dyn(body: DynBody) -> Self {
        Self(SyncWrapper::new(body))
    }

    /// A body of unknown length from a stream of byte chunks, e.g. server-sent events.
    pub fn from_stream<S, E>(stream: S) -> Self
    where
        S: futures_util::Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: Into<BoxError> + 'static,
    {
        use futures_util::TryStreamExt;
        Self::new(http_body_util::StreamBody::new(stream.map_ok(Frame::data)))
    }

    /// A body of exactly `len` bytes read from `reader` in chunks of 64 KiB: what static files
    /// are sent with. The length is announced as `Content-Length`; a reader that ends early
    /// fails the body (the client sees the connection cut, never a short success).
    pub fn from_reader<R>(reader: R, len: u64) -> Self
    where
        R: tokio::io::AsyncRead + Send + 'static,
    {
        use futures_util::TryStreamExt;
        use tokio::io::AsyncReadExt;
        let chunks = tokio_util::io::ReaderStream::with_capacity(reader.take(len), READ_CHUNK);
        let inner: DynBody = Box::pin(BodyExt::map_err(
            http_body_util::StreamBody::new(chunks.map_ok(Frame::data)),
            BoxError::from,
        ));
        Self::new(ExactSize {
            inner,
            remaining: len,
        })
    }

    /// Keeps `guard` alive until the body has been sent or dropped (the client went away):
    /// how a limiter's permit or a logger's record outlives the chain for a streamed response.
    pub fn with_guard<G: Send + 'static>(self, guard: G) -> Self {
        Self::new(Guarded {
            inner: self.into_inner(),
            _guard: guard,
        })
    }

    /// The stream's size hint; `exact()` is its length when known.
    pub fn size_hint(&mut self) -> SizeHint {
        self.0.get_mut().size_hint()
    }

    /// The boxed body, for a middleware that wraps it (e.g. in an encoder).
    pub fn into_inner(self) -> DynBody {
        self.0.into_inner()
    }
}

impl std::fmt::Debug for BodyStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BodyStream(..)")
    }
}

/// Chunk size for bodies read from files.
pub(crate) const READ_CHUNK: usize = 64 * 1024;

/// A body that knows its length and fails when the source ends before it.
struct ExactSize {
    inner: DynBody,
    remaining: u64,
}

impl Body for ExactSize {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let polled = self.inner.as_mut().poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                let n = frame.data_ref().map_or(0, |d| d.len() as u64);
                self.remaining = self.remaining.saturating_sub(n);
            }
            Poll::Ready(None) if self.remaining > 0 => {
                return Poll::Ready(Some(Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "body source ended before its announced length",
                )
                .into())));
            }
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

/// A body that holds a value until it is dropped.
struct Guarded<G> {
    inner: DynBody,
    _guard: G,
}

impl<G> Body for Guarded<G> {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.inner.as_mut().poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

// `Guarded` is `Unpin` whatever `G` is: `inner` is a `Pin<Box<_>>` and the guard is never
// pinned, only dropped.
impl<G> Unpin for Guarded<G> {}

/// The response body the server sends: whole bytes, or a stream.
pub enum ResponseBody {
    /// Bytes in memory, sent as one frame (`None` once sent).
    Full(Option<Bytes>),
    /// A stream.
    Stream(DynBody),
}

impl ResponseBody {
    /// A body of whole bytes.
    pub fn full(bytes: Bytes) -> Self {
        ResponseBody::Full((!bytes.is_empty()).then_some(bytes))
    }

    /// A streamed body.
    pub fn stream(stream: BodyStream) -> Self {
        ResponseBody::Stream(stream.into_inner())
    }

    /// An empty body.
    pub fn empty() -> Self {
        ResponseBody::Full(None)
    }
}

impl Default for ResponseBody {
    fn default() -> Self {
        Self::empty()
    }
}

impl std::fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResponseBody::Full(b) => f.debug_tuple("Full").field(b).finish(),
            ResponseBody::Stream(body) => f.debug_tuple("Stream").field(&body.size_hint()).finish(),
        }
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            ResponseBody::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            ResponseBody::Stream(body) => body.as_mut().poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ResponseBody::Full(bytes) => bytes.is_none(),
            ResponseBody::Stream(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ResponseBody::Full(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            ResponseBody::Stream(body) => body.size_hint(),
        }
    }
}

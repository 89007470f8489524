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

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use tokio::time::Instant;

/// The bytes of every body, re-exported: a handler that streams needs no `bytes` dependency of
/// its own.
pub use bytes::Bytes;

mod waits;
/// What [`BodyStream::from_stream`] takes and the helpers to make one (`stream::iter`,
/// `stream::unfold`, `StreamExt::map`…), re-exported from `futures-util`: a handler that
/// streams needs no `futures` dependency of its own.
pub use futures_util::stream::{self, Stream, StreamExt};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use sync_wrapper::SyncWrapper;
pub(crate) use waits::BodyWaits;

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
/// ctx.body_buffer = Some(body);
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

/// The error type of streamed bodies.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The request body as received.
#[derive(Debug, Default)]
pub enum RequestBody {
    /// No body, or already taken.
    #[default]
    Empty,
    /// Bytes already in memory.
    Full(Bytes),
    /// hyper's stream from the connection, with the wait for each chunk bounded. Boxed: a
    /// request without a body (most of them) is [`RequestBody::Empty`] and pays nothing for it,
    /// and the context every request carries stays small.
    Incoming(Box<IncomingBody>),
    /// Any other body of `Bytes`, boxed: what a tower layer hands on after it wrapped the body
    /// (a decompressing or size-limiting body, `framework::tower`), or a body that reached the
    /// app as a tower service. Its errors are [`BodyError`]s that carry the original error as
    /// their source.
    Stream(BodyStream),
}

/// A mark a body reader leaves in the request's data
/// ([`Context::insert_data`](crate::Context::insert_data)) when it saw a request body and chose
/// not to read it (the body parser, for a media type it does not decode). It lets
/// [`Context::bind`](crate::Context::bind) answer **415** (the client sent a type nobody here
/// reads) instead of **500** (the app has no body reader where `bind` needs one). A body reader
/// of your own leaves it the same way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BodyDeclined;

/// A mark the body parser's form decoder leaves in the request's data when it turned an
/// `application/x-www-form-urlencoded` body into the JSON object in `request_body`: a
/// [`Form`](crate::extract::Form) argument takes such a body, a [`Json`](crate::extract::Json)
/// argument refuses it (415), without parsing the `Content-Type` again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FormDecoded;

/// hyper's request body stream, failing with a timeout [`BodyError`] when the next chunk does not
/// come within the server's `body_read_timeout`, or when the body arrives slower than
/// `body_min_rate` (a trickle). Only the time a read waits for data counts: a handler that is busy
/// between reads is not the client being slow. The timer exists only while a read waits, so a
/// body that arrives at once costs nothing extra (no clock read either).
#[derive(Debug)]
pub struct IncomingBody {
    inner: hyper::body::Incoming,
    timeout: Duration,
    min_rate: Option<crate::limits::MinDataRate>,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    /// When the current wait began.
    wait_started: Option<Instant>,
    /// Time spent waiting for data before the current wait.
    waited: Duration,
    /// Data bytes received so far.
    received: u64,
    /// Where each wait is also recorded, when someone watches ([`RequestBody::watch_waits`]).
    watched: Option<std::sync::Arc<BodyWaits>>,
}

impl IncomingBody {
    /// How long the current wait may last: the chunk timeout, or less when the minimum rate
    /// would be broken first (after the grace period, `received` must keep up with
    /// `rate × waited`).
    fn allowed_wait(&self) -> Duration {
        let Some(rate) = self.min_rate else {
            return self.timeout;
        };
        let earned =
            Duration::from_secs_f64(self.received as f64 / f64::from(rate.bytes_per_second.max(1)));
        let budget = rate.grace.max(earned).saturating_sub(self.waited);
        self.timeout.min(budget)
    }
}

/// Why reading a request body from the connection failed: the connection failed, or the next
/// chunk did not arrive within the server's `body_read_timeout`. Turned into a
/// [`crate::Error`] by `?`: a timeout becomes **408**.
#[derive(Debug)]
pub struct BodyError(BodyErrorKind);

#[derive(Debug)]
enum BodyErrorKind {
    Connection(hyper::Error),
    TimedOut,
    /// A wrapped body's own error ([`RequestBody::Stream`]).
    Other(BoxError),
}

impl BodyError {
    /// The next chunk did not arrive in time.
    pub fn is_timeout(&self) -> bool {
        matches!(self.0, BodyErrorKind::TimedOut)
    }
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            BodyErrorKind::Connection(e) => write!(f, "reading the request body failed: {e}"),
            BodyErrorKind::TimedOut => f.write_str("request body read timed out"),
            BodyErrorKind::Other(e) => write!(f, "reading the request body failed: {e}"),
        }
    }
}

impl std::error::Error for BodyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0 {
            BodyErrorKind::Connection(e) => Some(e),
            BodyErrorKind::TimedOut => None,
            BodyErrorKind::Other(e) => Some(&**e),
        }
    }
}

impl Body for IncomingBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                if let Some(started) = this.wait_started.take() {
                    // The chunk came after a wait: had it been too slow, the timer would have
                    // fired first unless this task was not polled in time; check once more.
                    let waited = started.elapsed();
                    if let Some(watched) = &this.watched {
                        watched.ended(waited);
                    }
                    if waited > this.allowed_wait() {
                        return Poll::Ready(Some(Err(BodyError(BodyErrorKind::TimedOut))));
                    }
                    this.waited += waited;
                }
                if let Some(Ok(data)) = frame.as_ref().map(|f| f.as_ref().map(Frame::data_ref)) {
                    this.received += data.map_or(0, |d| d.len() as u64);
                }
                Poll::Ready(frame.map(|f| f.map_err(|e| BodyError(BodyErrorKind::Connection(e)))))
            }
            Poll::Pending => {
                if this.wait_started.is_none() {
                    let now = Instant::now();
                    this.wait_started = Some(now);
                    if let Some(watched) = &this.watched {
                        watched.started(now);
                    }
                    let deadline = now + this.allowed_wait();
                    match &mut this.sleep {
                        Some(sleep) => sleep.as_mut().reset(deadline),
                        None => this.sleep = Some(Box::pin(tokio::time::sleep_until(deadline))),
                    }
                }
                let Some(sleep) = this.sleep.as_mut() else {
                    return Poll::Pending;
                };
                match sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        // The wait is over, as a failure: the watcher counts it as ended.
                        if let (Some(watched), Some(started)) =
                            (&this.watched, this.wait_started.take())
                        {
                            watched.ended(started.elapsed());
                        }
                        Poll::Ready(Some(Err(BodyError(BodyErrorKind::TimedOut))))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Why a body could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// More than the limit arrived.
    TooLarge,
    /// The next chunk did not arrive within the server's body read timeout.
    TimedOut,
    /// The connection failed while reading.
    Io(BoxError),
}

impl RequestBody {
    /// hyper's body from a connection, each chunk awaited at most `timeout`, and the whole
    /// arriving at least at `min_rate` (see [`crate::ServerLimits::body_min_rate`]). A body
    /// that has already ended (a request without one) is [`RequestBody::Empty`].
    pub fn incoming(
        inner: hyper::body::Incoming,
        timeout: Duration,
        min_rate: Option<crate::limits::MinDataRate>,
    ) -> Self {
        if hyper::body::Body::is_end_stream(&inner) {
            return RequestBody::Empty;
        }
        RequestBody::Incoming(Box::new(IncomingBody {
            inner,
            timeout,
            min_rate,
            sleep: None,
            wait_started: None,
            waited: Duration::ZERO,
            received: 0,
            watched: None,
        }))
    }

    /// The time this body's reads spend waiting for data, from now on: recorded by the body as
    /// it is read, wherever it goes (a body parser, a multipart reader, a proxy). `None` for a
    /// body that is in memory already, or one a layer wrapped, whose waits are not seen.
    /// Watched already (a timeout inside another), the same record is shared.
    pub(crate) fn watch_waits(&mut self) -> Option<std::sync::Arc<BodyWaits>> {
        let RequestBody::Incoming(incoming) = self else {
            return None;
        };
        let timeout = incoming.timeout;
        let waits = incoming
            .watched
            .get_or_insert_with(|| std::sync::Arc::new(BodyWaits::new(timeout)));
        Some(std::sync::Arc::clone(waits))
    }

    /// True when the body may still hold bytes nobody read.
    pub fn has_data(&self) -> bool {
        match self {
            RequestBody::Empty => false,
            RequestBody::Full(bytes) => !bytes.is_empty(),
            RequestBody::Incoming(incoming) => !incoming.is_end_stream(),
            // Made only from a body that had not ended (`RequestBody::from_body`).
            RequestBody::Stream(_) => true,
        }
    }

    /// Any body of `Bytes` as a request body: a `RequestBody` as it is, a body that has
    /// already ended as [`RequestBody::Empty`], any other boxed as [`RequestBody::Stream`].
    pub fn from_body<B>(body: B) -> Self
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        match crate::downcast::try_downcast::<RequestBody, B>(body) {
            Ok(same) => same,
            Err(body) if body.is_end_stream() => RequestBody::Empty,
            Err(body) => RequestBody::Stream(BodyStream::new(body)),
        }
    }

    /// Reads the whole body, failing as soon as more than `limit` bytes have arrived.
    pub async fn read_limited(self, limit: usize) -> Result<Bytes, ReadError> {
        match self {
            RequestBody::Empty => Ok(Bytes::new()),
            RequestBody::Full(b) if b.len() > limit => Err(ReadError::TooLarge),
            RequestBody::Full(b) => Ok(b),
            RequestBody::Incoming(mut incoming) => {
                read_whole(Pin::new(&mut *incoming), limit, |e| {
                    if e.is_timeout() {
                        ReadError::TimedOut
                    } else {
                        ReadError::Io(Box::new(e))
                    }
                })
                .await
            }
            RequestBody::Stream(stream) => {
                let mut body = stream.into_inner();
                read_whole(body.as_mut(), limit, |e| {
                    // A wrapping layer's own limit (tower-http's `RequestBodyLimit`) is too
                    // large too.
                    if is_length_limit(&*e) {
                        ReadError::TooLarge
                    } else {
                        ReadError::Io(e)
                    }
                })
                .await
            }
        }
    }
}

/// Reads `body` whole, failing as soon as more than `limit` bytes have arrived; trailers are
/// left out. A body that comes as one data frame (how hyper hands over a small request body)
/// is that frame's bytes as they are: no copy, and no list of frames, which
/// `http_body_util`'s `collect` allocates for every body (a `VecDeque`, about 270
/// instructions per `POST /echo` with its free). A second frame starts one buffer, sized to
/// what the body says is left. Reading stops once the body says it has ended, without asking
/// for the end once more.
async fn read_whole<B>(
    mut body: Pin<&mut B>,
    limit: usize,
    failed: impl Fn(B::Error) -> ReadError,
) -> Result<Bytes, ReadError>
where
    B: Body<Data = Bytes> + ?Sized,
{
    let mut first = Bytes::new();
    let mut joined: Option<bytes::BytesMut> = None;
    let mut read = 0usize;
    while !body.is_end_stream() {
        let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await else {
            break;
        };
        let Ok(data) = frame.map_err(&failed)?.into_data() else {
            continue;
        };
        if data.is_empty() {
            continue;
        }
        read += data.len();
        if read > limit {
            return Err(ReadError::TooLarge);
        }
        if let Some(joined) = joined.as_mut() {
            joined.extend_from_slice(&data);
        } else if first.is_empty() {
            first = data;
        } else {
            let left = usize::try_from(body.size_hint().lower()).unwrap_or(usize::MAX);
            let mut buffer = bytes::BytesMut::with_capacity(read.saturating_add(left).min(limit));
            buffer.extend_from_slice(&first);
            buffer.extend_from_slice(&data);
            joined = Some(buffer);
        }
    }
    Ok(joined.map_or(first, bytes::BytesMut::freeze))
}

/// True when `error` or one of its sources is `http_body_util`'s length limit.
fn is_length_limit(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        next = e.source();
    }
    false
}

/// The request body is itself a body, so a proxy can forward it as a stream.
impl Body for RequestBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        match this {
            RequestBody::Empty => Poll::Ready(None),
            RequestBody::Full(_) => match std::mem::take(this) {
                RequestBody::Full(b) if !b.is_empty() => Poll::Ready(Some(Ok(Frame::data(b)))),
                _ => Poll::Ready(None),
            },
            RequestBody::Incoming(incoming) => Pin::new(&mut **incoming).poll_frame(cx),
            RequestBody::Stream(stream) => stream
                .0
                .get_mut()
                .as_mut()
                .poll_frame(cx)
                .map_err(|e| BodyError(BodyErrorKind::Other(e))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RequestBody::Empty => true,
            RequestBody::Full(b) => b.is_empty(),
            RequestBody::Incoming(incoming) => incoming.is_end_stream(),
            // Only reachable through `&mut`: no look inside from here.
            RequestBody::Stream(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RequestBody::Empty => SizeHint::with_exact(0),
            RequestBody::Full(b) => SizeHint::with_exact(b.len() as u64),
            RequestBody::Incoming(incoming) => incoming.size_hint(),
            RequestBody::Stream(_) => SizeHint::default(),
        }
    }
}

/// A boxed response body of unknown type.
pub type DynBody = Pin<Box<dyn Body<Data = Bytes, Error = BoxError> + Send>>;

/// A streamed response body: any `http_body::Body` of `Bytes`, boxed.
///
/// The box is `Send` but need not be `Sync` (a stream built on a channel receiver or an
/// `async` block rarely is); the context stays `Sync` because the stream is only ever reached
/// through `&mut`.
pub struct BodyStream(SyncWrapper<DynBody>);

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

#[cfg(test)]
mod tests {
    use super::*;

    /// A file body comes in chunks of at most 64 KiB, never whole: a 200 000-byte reader gives
    /// four frames, of 64 KiB but the last, and exactly its bytes.
    #[tokio::test]
    async fn a_reader_body_comes_in_chunks_of_64_kib() {
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut body =
            BodyStream::from_reader(std::io::Cursor::new(bytes.clone()), 200_000).into_inner();
        let mut sizes = Vec::new();
        let mut all = Vec::new();
        while let Some(frame) = http_body_util::BodyExt::frame(&mut body).await {
            let data = frame.unwrap().into_data().unwrap();
            sizes.push(data.len());
            all.extend_from_slice(&data);
        }
        assert_eq!(
            sizes,
            [READ_CHUNK, READ_CHUNK, READ_CHUNK, 200_000 - 3 * READ_CHUNK]
        );
        assert_eq!(READ_CHUNK, 64 * 1024);
        assert_eq!(all, bytes);
    }

    fn chunked(chunks: &'static [&'static [u8]]) -> RequestBody {
        let stream = futures_util::stream::iter(
            chunks
                .iter()
                .map(|c| Ok::<_, std::io::Error>(Bytes::from_static(c))),
        );
        RequestBody::from_body(http_body_util::StreamBody::new(
            futures_util::TryStreamExt::map_ok(stream, Frame::data),
        ))
    }

    /// A wrapped body is read up to its limit exactly; one byte more is too large.
    #[tokio::test]
    async fn a_wrapped_body_is_read_up_to_its_limit_and_no_further() {
        let body = chunked(&[b"0123", b"4567"]);
        assert!(matches!(body, RequestBody::Stream(_)));
        assert!(body.has_data());
        let read = body
            .read_limited(8)
            .await
            .expect("8 bytes fit a limit of 8");
        assert_eq!(read, Bytes::from_static(b"01234567"));
        let over = chunked(&[b"0123", b"45678"]).read_limited(8).await;
        assert!(matches!(over, Err(ReadError::TooLarge)), "{over:?}");
    }

    /// A body in one frame is that frame's bytes, not a copy; frames after it are joined in
    /// order, with empty frames and trailers left out.
    #[tokio::test]
    async fn one_frame_is_kept_as_it_came_and_more_are_joined() {
        static ONE: &[u8] = b"{\"a\":1}";
        static FRAMES: &[&[u8]] = &[ONE];
        let read = chunked(FRAMES).read_limited(100).await.expect("fits");
        assert_eq!(read.as_ptr(), ONE.as_ptr(), "the frame itself, not a copy");
        let joined = chunked(&[b"", b"ab", b"", b"cd", b"e"])
            .read_limited(5)
            .await
            .expect("5 bytes fit a limit of 5");
        assert_eq!(joined, Bytes::from_static(b"abcde"));
        let frames = futures_util::stream::iter([
            Ok::<_, std::io::Error>(Frame::data(Bytes::from_static(b"xy"))),
            Ok(Frame::trailers(http::HeaderMap::new())),
        ]);
        let with_trailers = RequestBody::from_body(http_body_util::StreamBody::new(frames))
            .read_limited(2)
            .await
            .expect("trailers are not bytes of the body");
        assert_eq!(with_trailers, Bytes::from_static(b"xy"));
    }

    /// A wrapping body's own length limit (tower-http's `RequestBodyLimit` wraps the body in
    /// `Limited`) is too large, not an i/o failure.
    #[tokio::test]
    async fn a_wrapping_limit_is_too_large() {
        let limited =
            http_body_util::Limited::new(RequestBody::Full(Bytes::from_static(b"12345")), 4);
        let read = RequestBody::from_body(limited).read_limited(100).await;
        assert!(matches!(read, Err(ReadError::TooLarge)), "{read:?}");
    }

    /// A request body stays one as it is; an ended body of another type is empty.
    #[test]
    fn from_body_keeps_a_request_body_and_empties_an_ended_one() {
        let same = RequestBody::from_body(RequestBody::Full(Bytes::from_static(b"x")));
        assert!(matches!(same, RequestBody::Full(b) if b == "x"));
        let ended = RequestBody::from_body(http_body_util::Empty::<Bytes>::new());
        assert!(matches!(ended, RequestBody::Empty));
    }
}

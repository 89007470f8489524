//! The request body: hyper's stream or bytes in memory, read once with a size limit and a
//! read timeout, and the marks the body parser leaves on it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::time::Instant;

use super::{BodyStream, BodyWaits, BoxError};

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

/// What a handler that reads the body itself ([`RequestBody::read_limited`]) answers when the
/// read fails: **413** past the limit, **408** when the client stalls, **400** when the
/// connection fails (its error is logged at debug, not sent). Category `framework-body`; the
/// body parser answers with these in its own category.
impl From<ReadError> for crate::HttpError {
    fn from(err: ReadError) -> Self {
        let (status, message) = match err {
            ReadError::TooLarge => (
                http::StatusCode::PAYLOAD_TOO_LARGE,
                "request body is too large",
            ),
            ReadError::TimedOut => (
                http::StatusCode::REQUEST_TIMEOUT,
                "request body read timed out",
            ),
            ReadError::Io(e) => {
                tracing::debug!(error = %e, "reading the request body failed");
                (http::StatusCode::BAD_REQUEST, "failed to read request body")
            }
        };
        crate::HttpError::with(status, "framework-body", message)
    }
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

//! Server-sent events: [`Sse`], a reply that sends a stream of [`Event`]s as
//! `text/event-stream`, framed as the HTML standard's event stream format says (section
//! 9.2.6, "Interpreting an event stream"), with a keep-alive comment while the stream is
//! quiet; [`LastEventId`], the id a reconnecting client resumes from.
//!
//! ```
//! use std::time::Duration;
//! use framework::body::{StreamExt, stream};
//! use framework::reply::{Event, LastEventId, Sse};
//! use framework::{Context, HttpError, Result};
//!
//! async fn ticks(ctx: &mut Context) -> Result<Sse> {
//!     // A client that reconnects says where it was; start after it.
//!     let from = LastEventId::of(ctx).parse::<u64>().map_or(0, |last| last + 1);
//!     let events = stream::iter(from..from + 3).map(|i| -> Result<Event, HttpError> {
//!         Ok(Event::new().event("tick")?.id(i.to_string())?.data(format!("tick {i}\nof 3")))
//!     });
//!     // Ends when the server begins a graceful shutdown.
//!     let events = events.take_until(ctx.shutdown());
//!     Ok(Sse::from_try_stream(events).keep_alive(Duration::from_secs(20)))
//! }
//! # let _ = ticks;
//! ```

use std::fmt::Write as _;
use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::{Stream, StreamExt};
use http::StatusCode;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};

use crate::body::{BodyStream, BoxError};
use crate::context::Context;
use crate::error::HttpError;

/// Category of the errors an [`Event`] refuses a field with.
pub const CATEGORY: &str = "framework-sse";

/// The media type of an event stream.
pub(crate) const EVENT_STREAM: &str = "text/event-stream";

/// One server-sent event: a message with `data`, optionally an `event` type, an `id` and a
/// `retry` time, and comments.
///
/// Line breaks are handled as the format needs them: `data` and comments are split at each
/// `\n`, `\r\n` or `\r` into one field line per line, so the client receives the text as it
/// was (its lines joined with `\n`); an `event` type or `id` cannot hold a line break (it
/// would start another field: `id: 1\nevent: admin`) and is refused with an error, as is an
/// `id` holding NUL, which clients ignore. Setting a field again replaces it.
///
/// ```
/// use std::time::Duration;
/// use framework::reply::Event;
///
/// let event = Event::new()
///     .event("update")?
///     .id("42")?
///     .retry(Duration::from_millis(2500))
///     .comment("for the dashboard")
///     .data("line one\r\nline two");
/// assert_eq!(
///     event.to_bytes(),
///     ": for the dashboard\nevent: update\nid: 42\nretry: 2500\ndata: line one\ndata: line two\n\n"
/// );
/// assert!(Event::new().id("1\nevent: admin").is_err());
/// # Ok::<(), framework::HttpError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct Event {
    /// Comment lines, each written with its `:` and line feed.
    comments: String,
    event: Option<String>,
    id: Option<String>,
    retry: Option<Duration>,
    data: Option<String>,
}

impl Event {
    /// An event with no fields yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The event's data (`data:` lines): the text the client's `message` event carries. A
    /// line break (`\n`, `\r\n` or `\r`) starts another `data:` line; the client joins them
    /// with `\n`. An event without data is not dispatched by the client (its `id` and `retry`
    /// still apply).
    pub fn data(mut self, data: impl Into<String>) -> Self {
        self.data = Some(data.into());
        self
    }

    /// The event's data as a value in JSON (one line: JSON text has no raw line breaks). A
    /// value serde_json cannot write (a map with keys that are not strings) is a 500 error.
    pub fn json_data<T: serde::Serialize + ?Sized>(self, value: &T) -> Result<Self, HttpError> {
        let json = serde_json::to_string(value)
            .map_err(|e| refused(format!("an event's data could not be written as JSON: {e}")))?;
        Ok(self.data(json))
    }

    /// The event's type (`event:`), what the client listens for with
    /// `addEventListener(type, ..)`; without one it is a `message`. A type holding a line
    /// break is refused (500, category `framework-sse`).
    pub fn event(mut self, event: impl Into<String>) -> Result<Self, HttpError> {
        let event = event.into();
        if has_line_break(&event) {
            return Err(refused(
                "an event's type cannot hold a line break (CR or LF)".into(),
            ));
        }
        self.event = Some(event);
        Ok(self)
    }

    /// The event's id (`id:`): the client sends the last one it received as `Last-Event-ID`
    /// when it reconnects ([`LastEventId`]). An id holding a line break or NUL is refused
    /// (500, category `framework-sse`).
    pub fn id(mut self, id: impl Into<String>) -> Result<Self, HttpError> {
        let id = id.into();
        if has_line_break(&id) || id.contains('\0') {
            return Err(refused(
                "an event's id cannot hold a line break (CR or LF) or NUL".into(),
            ));
        }
        self.id = Some(id);
        Ok(self)
    }

    /// How long the client waits before it reconnects after the connection is lost
    /// (`retry:`, in whole milliseconds).
    pub fn retry(mut self, retry: Duration) -> Self {
        self.retry = Some(retry);
        self
    }

    /// Adds a comment (`: text`), which clients ignore; a line break starts another comment
    /// line. Each call adds one.
    pub fn comment(mut self, comment: impl AsRef<str>) -> Self {
        for line in lines(comment.as_ref()) {
            self.comments.push(':');
            if !line.is_empty() {
                self.comments.push(' ');
                self.comments.push_str(line);
            }
            self.comments.push('\n');
        }
        self
    }

    /// The event as it goes on the wire, ending with the blank line that dispatches it.
    pub fn to_bytes(&self) -> Bytes {
        let data_len = self.data.as_ref().map_or(0, |d| d.len() + 8);
        let mut out = BytesMut::with_capacity(self.comments.len() + data_len + 64);
        out.put_slice(self.comments.as_bytes());
        // A space after the colon: the client strips exactly one, so a value's own leading
        // space survives.
        for (name, value) in [("event", &self.event), ("id", &self.id)] {
            if let Some(value) = value {
                out.put_slice(name.as_bytes());
                out.put_slice(b": ");
                out.put_slice(value.as_bytes());
                out.put_u8(b'\n');
            }
        }
        if let Some(retry) = self.retry {
            let _ = writeln!(Writer(&mut out), "retry: {}", retry.as_millis());
        }
        if let Some(data) = &self.data {
            for line in lines(data) {
                out.put_slice(b"data: ");
                out.put_slice(line.as_bytes());
                out.put_u8(b'\n');
            }
        }
        out.put_u8(b'\n');
        out.freeze()
    }
}

/// `fmt::Write` into a `BytesMut`.
struct Writer<'a>(&'a mut BytesMut);

impl std::fmt::Write for Writer<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.put_slice(s.as_bytes());
        Ok(())
    }
}

fn has_line_break(text: &str) -> bool {
    text.contains(['\r', '\n'])
}

/// The lines of `text` as the event stream format reads them: split at each `\r\n`, `\n` or
/// `\r`. A text ending with a line break has an empty last line, so it comes back to the
/// client as it was; an empty text is one empty line.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let current = rest?;
        match current.find(['\r', '\n']) {
            Some(at) => {
                let after = if current[at..].starts_with("\r\n") {
                    at + 2
                } else {
                    at + 1
                };
                rest = Some(&current[after..]);
                Some(&current[..at])
            }
            None => {
                rest = None;
                Some(current)
            }
        }
    })
}

fn refused(message: String) -> HttpError {
    HttpError::with(StatusCode::INTERNAL_SERVER_ERROR, CATEGORY, message).with_exception(true)
}

/// A boxed stream of events.
type Events = Pin<Box<dyn Stream<Item = Result<Event, BoxError>> + Send>>;

/// A reply of server-sent events: `200`, `Content-Type: text/event-stream`,
/// `Cache-Control: no-cache`, and each [`Event`] written as soon as the stream yields it.
///
/// While the stream yields nothing, a keep-alive comment (`:` and a blank line, which
/// clients ignore) is sent every [`DEFAULT_KEEP_ALIVE`](Self::DEFAULT_KEEP_ALIVE) (15 s), so
/// proxies and load balancers that close idle connections (nginx after 60 s) keep this one;
/// [`keep_alive`](Self::keep_alive) changes the interval. The comment is produced only when
/// the connection asks for more (a client that stops reading is sent nothing more).
///
/// The stream ends the response when it ends. An endless one should end at graceful
/// shutdown, or it holds the shutdown up for its whole timeout:
/// `events.take_until(ctx.shutdown())` ([`Context::shutdown`]). A stream of `Result`s
/// ([`from_try_stream`](Self::from_try_stream)) that yields an error ends the response there
/// and the error is logged; the status has been sent, so the client sees the connection cut
/// and reconnects.
///
/// The type is not generic (the stream is boxed), so a controller method can name it in its
/// signature: `Result<Sse>`; the OpenAPI document lists the route's success as
/// `text/event-stream`.
pub struct Sse {
    events: Events,
    keep_alive: Duration,
}

impl Sse {
    /// How long a quiet stream waits before it sends a keep-alive comment, unless
    /// [`keep_alive`](Self::keep_alive) says otherwise: 15 s, as axum's `KeepAlive` and
    /// under the idle timeouts of common proxies (nginx 60 s, AWS ALB 60 s).
    pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

    /// The events of `events`.
    pub fn new<S>(events: S) -> Self
    where
        S: Stream<Item = Event> + Send + 'static,
    {
        Self::boxed(Box::pin(events.map(Ok)))
    }

    /// The events of a stream that may fail: an error ends the response (see the type's
    /// doc). Events built with `?` (an [`Event::event`] or [`Event::id`] that may be
    /// refused) come as a stream of `Result<Event, HttpError>`.
    pub fn from_try_stream<S, E>(events: S) -> Self
    where
        S: Stream<Item = Result<Event, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        Self::boxed(Box::pin(events.map(|event| event.map_err(Into::into))))
    }

    fn boxed(events: Events) -> Self {
        Self {
            events,
            keep_alive: Self::DEFAULT_KEEP_ALIVE,
        }
    }

    /// Sends a keep-alive comment whenever the stream has yielded nothing for `interval`;
    /// `Duration::ZERO` sends none.
    pub fn keep_alive(mut self, interval: Duration) -> Self {
        self.keep_alive = interval;
        self
    }

    /// The stream as a body of bytes, keep-alive comments included.
    fn into_body(self) -> BodyStream {
        let keep_alive = (!self.keep_alive.is_zero()).then(|| {
            (
                self.keep_alive,
                Box::pin(tokio::time::sleep(self.keep_alive)),
            )
        });
        BodyStream::from_stream(SseBody {
            events: self.events,
            keep_alive,
        })
    }
}

impl std::fmt::Debug for Sse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sse")
            .field("keep_alive", &self.keep_alive)
            .finish_non_exhaustive()
    }
}

/// What the keep-alive sends: an empty comment and the blank line that ends it.
const KEEP_ALIVE_COMMENT: &[u8] = b":\n\n";

/// The events as bytes, with a keep-alive comment after each quiet interval.
struct SseBody {
    events: Events,
    keep_alive: Option<(Duration, Pin<Box<tokio::time::Sleep>>)>,
}

impl SseBody {
    fn restart_keep_alive(&mut self) {
        if let Some((interval, sleep)) = &mut self.keep_alive {
            sleep
                .as_mut()
                .reset(tokio::time::Instant::now() + *interval);
        }
    }
}

impl Stream for SseBody {
    type Item = Result<Bytes, BoxError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        match this.events.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(event))) => {
                this.restart_keep_alive();
                Poll::Ready(Some(Ok(event.to_bytes())))
            }
            Poll::Ready(Some(Err(err))) => {
                tracing::warn!(error = %err, "the event stream failed: its response ends here");
                Poll::Ready(Some(Err(err)))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                let Some((_, sleep)) = &mut this.keep_alive else {
                    return Poll::Pending;
                };
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                this.restart_keep_alive();
                Poll::Ready(Some(Ok(Bytes::from_static(KEEP_ALIVE_COMMENT))))
            }
        }
    }
}

impl crate::IntoReply for Sse {
    const LEAVES_VALUE: bool = false;
    fn into_reply(self, ctx: &mut Context) {
        ctx.set_response_header(CONTENT_TYPE, HeaderValue::from_static(EVENT_STREAM));
        ctx.set_response_header(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        ctx.body_mut().set_stream(self.into_body());
    }
}

/// `200` as `text/event-stream`, a stream the reply writes itself.
impl crate::openapi::DescribeReply for Sse {
    fn describe_reply(operation: &mut crate::openapi::Operation<'_>) {
        let text = schemars::json_schema!({"type": "string"});
        operation.reply(200, Some(EVENT_STREAM), Some(text));
        operation.streamed();
    }
}

/// The id of the last event a reconnecting client received: its `Last-Event-ID` request
/// header, which browsers' `EventSource` sends by itself. Empty when the client sent none
/// (its first connection). A controller method takes it as an argument
/// (`last: LastEventId`); any handler reads it with [`LastEventId::of`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LastEventId(pub String);

impl LastEventId {
    /// The request's `Last-Event-ID`, empty when it has none or one that is not UTF-8.
    pub fn of(ctx: &Context) -> Self {
        LastEventId(
            ctx.request_header("last-event-id")
                .unwrap_or_default()
                .to_owned(),
        )
    }

    /// Whether the client sent no id (or an empty one): a first connection.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The id as a number (or any `FromStr`), for ids that count.
    pub fn parse<T: std::str::FromStr>(&self) -> Result<T, T::Err> {
        self.0.parse()
    }
}

impl std::ops::Deref for LastEventId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl crate::extract::FromRequest for LastEventId {
    type Rejection = std::convert::Infallible;

    fn from_request(ctx: &mut Context) -> Result<Self, std::convert::Infallible> {
        Ok(Self::of(ctx))
    }
}

#[cfg(test)]
mod tests;

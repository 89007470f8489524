//! Access logs: one line per request, in a format of `{tags}`.
//!
//! Every tag of the seed is supported: `host`, `method`, `path`, `proto`, `query`, `remote`
//! (`unix:pid=812,uid=33` for a peer on a [Unix socket](crate::listener)),
//! `real-ip`, `client-ip` (the real IP when it is a public address, else `-`), `scheme`, `uri`
//! (and its alias `url`), `referer`, `userAgent`, the times `when` (RFC 1123 with zone),
//! `when-iso`, `when-utc-iso`, `when-unix`, `when-iso-ms`, `when-utc-iso-ms`, `size`,
//! `size-human` (`512B`, `1.50KB`, `3.00MB`), `status`, `latency` (e.g. `1.234ms`),
//! `latency-ms`, `payload-size`, `payload-size-human`, `~cookie`, `>request-header`,
//! `<response-header`, `:key` (a text a handler or middleware gave the line with
//! [`LogFieldsExt::log_field`]), `$ENV`,
//! plus `request-id`, and `trace-id` and `span-id` (from the [trace](super::trace)
//! middleware, mounted before the logger; its trace id is also a field of the default event).
//! An unknown tag or a missing value renders `-`. The predefined formats are
//! [`LOGGER_COMBINED`], [`LOGGER_COMMON`], [`LOGGER_SHORT`] and [`LOGGER_TINY`].
//!
//! The format is compiled once, at construction (`$ENV` values are read then); each line is
//! written into one reused per-thread buffer, with no `String` per tag.
//!
//! The line is written from a guard's `Drop`, when the request is over: when the chain has
//! returned, or for a streamed body once the body has been sent (then `latency` covers the
//! whole response), or when the request was dropped because the client went away (status 499,
//! as nginx logs it) or a panic unwound through the logger (status 500). Because the context
//! may be gone by then, `on_log` receives the line and a [`LogRecord`] (request id, method,
//! URI, status, latency, …) rather than the context. The default `on_log` emits a `tracing`
//! event at info level, target `framework::access`; when the subscriber does not want that
//! target at info (`RUST_LOG=warn`), the logger passes requests straight on and costs nothing.
//!
//! ```
//! use framework::middleware::logger::{LOGGER_COMMON, Logger, LoggerConfig};
//!
//! let logger = Logger::new(LoggerConfig::default()
//!     .format(LOGGER_COMMON.to_owned()));
//! let app = framework::App::new().use_middleware(logger);
//! # let _ = app;
//! ```

mod format;

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The time types of [`Clock`] and [`LogRecord::when`], re-exported from `chrono` so an app
/// needs no dependency of its own to write a clock.
pub use chrono::{DateTime, FixedOffset};
use chrono::{Local, Offset, TimeZone, Utc};
use http::{HeaderValue, Method, StatusCode, Uri, header};

use crate::client_ip::ClientIpExt;
use crate::context::Context;
use crate::error::Result;
use crate::handler::{Before, BoxFuture, Middleware, Next};
use crate::middleware::trace::{TraceContext, TraceExt};
use crate::view::RequestView;

use format::{Capture, Format};
pub use format::{LOGGER_COMBINED, LOGGER_COMMON, LOGGER_SHORT, LOGGER_TINY};

/// Texts a request gives its access-log line, read by the format's `{:key}` tags: what
/// [`Context`] gains from the logger.
///
/// ```
/// use framework::middleware::logger::LogFieldsExt;
/// use framework::{Context, Result};
///
/// async fn me(ctx: &mut Context) -> Result<&'static str> {
///     // Printed where the format says `{:user}`.
///     ctx.log_field("user", "alice");
///     Ok("hello")
/// }
/// # let _ = me;
/// ```
pub trait LogFieldsExt {
    /// Gives the line `value` for the tag `{:key}`, replacing what was given for `key`
    /// before.
    fn log_field(&mut self, key: impl Into<Cow<'static, str>>, value: impl Into<String>);
}

impl LogFieldsExt for Context {
    fn log_field(&mut self, key: impl Into<Cow<'static, str>>, value: impl Into<String>) {
        let (key, value) = (key.into(), value.into());
        if self.data::<LogFields>().is_none() {
            self.insert_data(LogFields::default());
        }
        if let Some(fields) = self.data_mut::<LogFields>() {
            match fields.0.iter_mut().find(|(k, _)| *k == key) {
                Some((_, slot)) => *slot = value,
                None => fields.0.push((key, value)),
            }
        }
    }
}

/// The texts given with [`LogFieldsExt::log_field`]: a handful at most, searched in order.
#[derive(Debug, Default)]
struct LogFields(Vec<(Cow<'static, str>, String)>);

impl LogFields {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Receives each line, the request's record and the request's view (the same view as
/// [`LogRecord::request`]; every hook's last argument is a [`RequestView`]).
pub type OnLog = Arc<dyn Fn(&str, &LogRecord, &RequestView) + Send + Sync>;

/// A wall clock, for tests that need a fixed time (latency is then measured on it too).
pub type Clock = Arc<dyn Fn() -> DateTime<FixedOffset> + Send + Sync>;

/// Logger settings.
#[derive(Clone)]
#[non_exhaustive]
pub struct LoggerConfig {
    /// The line format. Default [`LOGGER_COMMON`].
    pub format: String,
    /// Receives each line; default: a `tracing` info event.
    pub on_log: Option<OnLog>,
    /// The wall clock; default: local time.
    pub clock: Option<Clock>,
}

crate::config::setters!(LoggerConfig {
    format => String,
    on_log: Option<OnLog>,
    clock: Option<Clock>,
});

impl Default for LoggerConfig {
    fn default() -> Self {
        Self {
            format: LOGGER_COMMON.to_owned(),
            on_log: None,
            clock: None,
        }
    }
}

/// What is known of a request when its line is written.
#[derive(Debug, Clone)]
pub struct LogRecord {
    request: RequestView,
    https: bool,
    host: Option<HeaderValue>,
    referer: Option<HeaderValue>,
    user_agent: Option<HeaderValue>,
    status: StatusCode,
    size: Option<u64>,
    payload_size: usize,
    latency: Duration,
    /// When the line was written; `None` when the format shows no time.
    when: Option<DateTime<FixedOffset>>,
    captured: Vec<Option<String>>,
    /// The request's trace, when the trace middleware ran before the logger's start or end.
    trace: Option<TraceContext>,
}

/// Everything a format tag can show, read-only.
impl LogRecord {
    /// The request: method, URI, version, request id, peer, client IP, route.
    pub fn request(&self) -> &RequestView {
        &self.request
    }
    /// The request id.
    pub fn request_id(&self) -> &str {
        self.request.request_id()
    }
    /// The request's trace ([`trace`](crate::middleware::trace)), when it was traced.
    pub fn trace(&self) -> Option<&TraceContext> {
        self.trace.as_ref()
    }
    /// Request method.
    pub fn method(&self) -> &Method {
        self.request.method()
    }
    /// Request URI.
    pub fn uri(&self) -> &Uri {
        self.request.uri()
    }
    /// True when a trusted proxy said the client used HTTPS (`X-Forwarded-Proto`).
    pub fn https(&self) -> bool {
        self.https
    }
    /// The `Host` header.
    pub fn host(&self) -> Option<&str> {
        self.host.as_ref().and_then(|h| h.to_str().ok())
    }
    /// The `Referer` header.
    pub fn referer(&self) -> Option<&str> {
        self.referer.as_ref().and_then(|h| h.to_str().ok())
    }
    /// The `User-Agent` header.
    pub fn user_agent(&self) -> Option<&str> {
        self.user_agent.as_ref().and_then(|h| h.to_str().ok())
    }
    /// Response status; 499 when the client went away, 500 after a panic.
    pub fn status(&self) -> StatusCode {
        self.status
    }
    /// Response body bytes: the buffer's length, a stream's when known.
    pub fn size(&self) -> Option<u64> {
        self.size
    }
    /// Request body bytes read (0 when nothing read it).
    pub fn payload_size(&self) -> usize {
        self.payload_size
    }
    /// Time from the request entering the logger to the end of its response.
    pub fn latency(&self) -> Duration {
        self.latency
    }
    /// When the line was written; `None` when the format shows no time.
    pub fn when(&self) -> Option<DateTime<FixedOffset>> {
        self.when
    }
}

struct Shared {
    format: Format,
    on_log: Option<OnLog>,
    clock: Option<Clock>,
}

/// Local time. The zone's offset is looked up at most once a second per thread: the lookup
/// (time zone rules) costs more than the rest of a line.
fn local_now() -> DateTime<FixedOffset> {
    thread_local! {
        static OFFSET: std::cell::Cell<(i64, i32)> = const { std::cell::Cell::new((i64::MIN, 0)) };
    }
    let utc = Utc::now();
    let second = utc.timestamp();
    let offset_secs = OFFSET.with(|cached| {
        let (at, secs) = cached.get();
        if at == second {
            return secs;
        }
        let secs = Local
            .offset_from_utc_datetime(&utc.naive_utc())
            .fix()
            .local_minus_utc();
        cached.set((second, secs));
        secs
    });
    let offset = FixedOffset::east_opt(offset_secs).unwrap_or(Utc.fix());
    utc.with_timezone(&offset)
}

impl Shared {
    fn now(&self) -> DateTime<FixedOffset> {
        match &self.clock {
            Some(clock) => clock(),
            None => local_now(),
        }
    }

    /// Whether a line would go anywhere: always with an `on_log` hook; for the default
    /// `tracing` event, only when the subscriber wants `framework::access` at info level. When
    /// it does not (e.g. `RUST_LOG=warn`), the request costs no clock reading, record or line.
    fn wanted(&self) -> bool {
        self.on_log.is_some()
            || tracing::enabled!(target: "framework::access", tracing::Level::INFO)
    }

    fn emit(&self, record: &LogRecord) {
        thread_local! {
            static LINE: RefCell<String> = RefCell::new(String::with_capacity(256));
        }
        LINE.with(|cell| match cell.try_borrow_mut() {
            Ok(mut line) => {
                line.clear();
                self.format.render(record, &mut line);
                self.deliver(&line, record);
            }
            // Only if `on_log` itself logs through a logger on this thread.
            Err(_) => {
                let mut line = String::new();
                self.format.render(record, &mut line);
                self.deliver(&line, record);
            }
        });
    }

    fn deliver(&self, line: &str, record: &LogRecord) {
        match &self.on_log {
            Some(hook) => hook(line, record, &record.request),
            None => {
                let request_id = record.request_id();
                let trace_id = record.trace.as_ref().map(TraceContext::trace_id);
                tracing::info!(target: "framework::access", request_id, trace_id, "{line}");
            }
        }
    }
}

/// The request being logged; writes the line when dropped.
struct Pending {
    shared: Arc<Shared>,
    record: LogRecord,
    started: Instant,
    /// The injected clock's reading at the start, to measure latency on it.
    started_on_clock: Option<DateTime<FixedOffset>>,
    finished: bool,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.finished {
            self.record.status = if std::thread::panicking() {
                StatusCode::INTERNAL_SERVER_ERROR
            } else {
                // nginx's "client closed request".
                StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST)
            };
        }
        let now = (self.shared.format.uses_time || self.started_on_clock.is_some())
            .then(|| self.shared.now());
        self.record.latency = match (self.started_on_clock, now) {
            (Some(start), Some(now)) => (now - start).to_std().unwrap_or_default(),
            _ => self.started.elapsed(),
        };
        self.record.when = now;
        self.shared.emit(&self.record);
    }
}

/// The logger middleware.
pub struct Logger {
    shared: Arc<Shared>,
}

impl Logger {
    /// A logger with `config`; the format is compiled here.
    pub fn new(config: LoggerConfig) -> Self {
        Self {
            shared: Arc::new(Shared {
                format: Format::compile(&config.format),
                on_log: config.on_log,
                clock: config.clock,
            }),
        }
    }

    fn start(&self, ctx: &mut Context) -> Pending {
        let started = ctx.start_clock();
        let headers = ctx.request_headers();
        let captured = self
            .shared
            .format
            .captures
            .iter()
            .map(|c| match c {
                Capture::Cookie(name) => crate::header::cookie(headers, name).map(str::to_owned),
                Capture::RequestHeader(name) => ctx.request_header(name).map(str::to_owned),
                Capture::ResponseHeader(_) | Capture::Value(_) => None,
            })
            .collect();
        let https = ctx.is_https();
        Pending {
            shared: Arc::clone(&self.shared),
            record: LogRecord {
                request: ctx.view(),
                https,
                host: headers.get(header::HOST).cloned(),
                referer: headers.get(header::REFERER).cloned(),
                user_agent: headers.get(header::USER_AGENT).cloned(),
                status: StatusCode::OK,
                size: None,
                payload_size: 0,
                latency: Duration::ZERO,
                when: None,
                captured,
                trace: ctx.trace().cloned(),
            },
            started,
            started_on_clock: self.shared.clock.as_ref().map(|clock| clock()),
            finished: false,
        }
    }

    /// Nothing to log for this request: skipped, or nobody would read the line.
    fn passes(&self, ctx: &Context) -> bool {
        ctx.is_committed() || !self.shared.wanted()
    }
}

impl Middleware for Logger {
    /// With nothing to log, the request passes through without a future of its own.
    fn before(&self, ctx: &mut Context) -> Before {
        if self.passes(ctx) {
            Before::Pass
        } else {
            Before::Handle
        }
    }

    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        Box::pin(async move {
            if self.passes(ctx) {
                return next.run(ctx).await;
            }
            let mut pending = self.start(ctx);
            let result = next.run(ctx).await;
            let record = &mut pending.record;
            record.status = match &result {
                Ok(()) => ctx.status().unwrap_or(StatusCode::OK),
                Err(err) => err.status(),
            };
            record.size = match ctx.body_mut().stream_mut() {
                Some(stream) => stream.size_hint().exact(),
                None => Some(ctx.body().bytes().map_or(0, |b| b.len() as u64)),
            };
            record.payload_size = ctx.request_body().len();
            if record.trace.is_none() {
                record.trace = ctx.trace().cloned();
            }
            for (slot, capture) in record.captured.iter_mut().zip(&self.shared.format.captures) {
                match capture {
                    Capture::ResponseHeader(name) => {
                        *slot = ctx
                            .response_headers()
                            .get(name)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_owned);
                    }
                    Capture::Value(key) => {
                        *slot = ctx
                            .data::<LogFields>()
                            .and_then(|fields| fields.get(key))
                            .map(str::to_owned);
                    }
                    Capture::Cookie(_) | Capture::RequestHeader(_) => {}
                }
            }
            pending.finished = true;
            // A streamed body: the line waits for its end (the context holds the record until
            // the body has been sent). Otherwise the request is over: written now, without
            // boxing the record for the context.
            if ctx.body().is_stream() {
                ctx.hold(pending);
            }
            result
        })
    }
}

#[cfg(test)]
mod log_field_tests {
    use super::{LogFields, LogFieldsExt};

    /// A field given again replaces the first; others stay.
    #[test]
    fn a_log_field_given_again_replaces_the_first() {
        let service = crate::App::new().build().unwrap();
        let mut ctx = service.test_context(http::Request::new(crate::body::RequestBody::Empty));
        ctx.log_field("a", "1");
        ctx.log_field("b", String::from("x"));
        ctx.log_field(String::from("a"), "2");
        let fields = ctx.data::<LogFields>().unwrap();
        assert_eq!(fields.get("a"), Some("2"));
        assert_eq!(fields.get("b"), Some("x"));
        assert_eq!(fields.get("c"), None);
        assert_eq!(fields.0.len(), 2);
    }
}

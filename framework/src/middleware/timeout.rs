//! A deadline for the rest of the chain: a handler (or a middleware inside this one) that has
//! not returned within [`deadline`](TimeoutConfig::deadline) is abandoned and the request is
//! answered **503** (or the configured [`status`](TimeoutConfig::status), e.g. 504 behind a
//! gateway or 408), category `framework-timeout`, message `the request took longer than <n>
//! ms`.
//!
//! - **The rest's future is dropped** at the deadline, so whatever it holds is released then:
//!   a [`concurrent_limiter`](super::concurrent_limiter) lock, a `tokio` mutex guard, a
//!   database connection taken from a pool, a session not yet saved (it is not saved). Guards
//!   handed to [`Context::hold`](crate::Context::hold) (the global and per-route limiters'
//!   slots, stats) are the request's, not the future's: they are released when the 503 has
//!   been sent, as for any answer. Whatever the handler had already set on the response
//!   (status, headers, body) is cleared before the error goes out.
//! - **A streamed response body** is outside the deadline (the chain returned in time; the
//!   bytes flow afterwards, as the client reads them). It gets an **idle timeout** instead,
//!   [`stream_idle`](TimeoutConfig::stream_idle): when the stream has not produced its next
//!   chunk for that long, the body ends with an error and the server closes the connection
//!   (the status is already out, so the client sees a failed transfer, never a truncated
//!   success). Only time spent waiting on the stream counts, not time spent waiting on a slow
//!   client. A server-sent events stream with its default 15 s keep-alive comment never idles
//!   past the default 30 s.
//!
//! - **Time spent waiting for the request body is not counted.** A handler that reads an
//!   upload arriving slowly but steadily (above the server's
//!   [`body_min_rate`](crate::ServerLimits::body_min_rate), which the body enforces with its
//!   408, as it does the time between two chunks) is not hanging: the deadline moves on by the
//!   time its reads waited for data. Time spent on anything else counts, so a handler that
//!   hangs before or after reading the body still gets its 503.
//!
//! Defaults ([`TimeoutConfig::default`]): a 30 s deadline, 503, a 30 s stream idle timeout.
//! Mount it where its error is answered: inside the error handler, on a group or a route (or
//! on the app after an explicit [`ErrorHandler`](super::error_handler::ErrorHandler); a
//! timeout outside every error handler is answered as plain text). Nested timeouts each keep
//! their own deadline, so a route may have a shorter one than its app.
//!
//! ```
//! use std::time::Duration;
//! use framework::middleware::error_handler::ErrorHandler;
//! use framework::middleware::timeout::{Timeout, TimeoutConfig};
//! use framework::Group;
//!
//! let app = framework::App::new()
//!     .use_middleware(ErrorHandler::default())
//!     .use_middleware(Timeout::new(TimeoutConfig::default()).expect("valid"))
//!     .group(
//!         Group::new("/reports").use_middleware(
//!             Timeout::new(TimeoutConfig::default()
//!                 .deadline(Duration::from_secs(5))
//!                 .status(http::StatusCode::GATEWAY_TIMEOUT))
//!             .expect("valid"),
//!         ),
//!     );
//! # let _ = app;
//! ```

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use crate::body::{BodyStream, BoxError, DynBody};
use crate::context::Context;
use crate::error::{HttpError, Result};
use crate::handler::{BoxFuture, Middleware, Next};
use crate::middleware::ConfigError;

/// Category of the deadline's errors.
pub const CATEGORY: &str = "framework-timeout";

/// The default deadline for the rest of the chain: 30 s, the graceful shutdown's default
/// grace too, so a request that shutdown would wait for is one the deadline lets finish.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(30);

/// The default idle timeout of a streamed body: 30 s, twice a server-sent events stream's
/// default keep-alive interval.
pub const DEFAULT_STREAM_IDLE: Duration = Duration::from_secs(30);

/// The timeout's settings.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TimeoutConfig {
    /// How long the rest of the chain may run. Default [`DEFAULT_DEADLINE`] (30 s).
    pub deadline: Duration,
    /// The status of the answer when it overruns: a client or server error status. Default
    /// 503 Service Unavailable.
    pub status: StatusCode,
    /// How long a streamed response body may go without producing a chunk; `None` lets a
    /// stream wait forever. Default [`DEFAULT_STREAM_IDLE`] (30 s).
    pub stream_idle: Option<Duration>,
}

crate::config::setters!(TimeoutConfig {
    deadline: Duration,
    status: StatusCode,
    stream_idle: Option<Duration>,
});

impl Default for TimeoutConfig {
    fn default() -> Self {
        Self {
            deadline: DEFAULT_DEADLINE,
            status: StatusCode::SERVICE_UNAVAILABLE,
            stream_idle: Some(DEFAULT_STREAM_IDLE),
        }
    }
}

/// The timeout middleware: see the [module](self).
#[derive(Clone, Debug)]
pub struct Timeout {
    config: TimeoutConfig,
}

impl Timeout {
    /// The middleware for `config`; refuses a zero deadline or idle timeout (every request
    /// would fail) and a status that is not an error (a 2xx "timeout" would look like success).
    pub fn new(config: TimeoutConfig) -> std::result::Result<Self, ConfigError> {
        if config.deadline.is_zero() {
            return Err(ConfigError::new(
                "timeout",
                "deadline: zero would fail every request; give a duration such as 30 s",
            )
            .with_kind(super::ConfigErrorKind::Ineffective));
        }
        if config.stream_idle.is_some_and(|idle| idle.is_zero()) {
            return Err(ConfigError::new(
                "timeout",
                "stream_idle: zero would fail every stream; give a duration, or None for no \
                 idle timeout",
            )
            .with_kind(super::ConfigErrorKind::Ineffective));
        }
        if !(config.status.is_client_error() || config.status.is_server_error()) {
            return Err(ConfigError::new(
                "timeout",
                format!(
                    "status: {} is not an error status; use 503, 504 or 408",
                    config.status
                ),
            )
            .with_kind(super::ConfigErrorKind::Ineffective));
        }
        Ok(Self { config })
    }

    fn overrun(&self) -> HttpError {
        HttpError::with(
            self.config.status,
            CATEGORY,
            format!(
                "the request took longer than {} ms",
                self.config.deadline.as_millis()
            ),
        )
    }
}

impl Middleware for Timeout {
    fn describe(&self, operation: &mut crate::openapi::Operation<'_>) {
        operation.error(self.config.status.as_u16());
    }

    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        Box::pin(async move {
            if ctx.is_committed() {
                return next.run(ctx).await;
            }
            // Time the rest spends waiting for the request body to arrive is not counted: the
            // body's own limits (the time between chunks, the minimum data rate) catch a
            // client that stalls, and an upload that arrives steadily is not a hang.
            let waits = ctx.watch_body_waits();
            // Dropping the rest's future at the deadline drops everything it holds.
            let Some(result) = within(self.config.deadline, waits.as_deref(), next.run(ctx)).await
            else {
                tracing::warn!(
                    deadline_ms = self.config.deadline.as_millis() as u64,
                    path = ctx.path(),
                    "the request overran its deadline and was abandoned"
                );
                ctx.reset_response();
                return Err(self.overrun().into());
            };
            if let Some(idle) = self.config.stream_idle
                && let Some(stream) = ctx.body_mut().take_stream()
            {
                ctx.body_mut()
                    .set_stream(BodyStream::new(IdleTimeout::new(stream.into_inner(), idle)));
            }
            result
        })
    }
}

/// `run`'s output, or `None` when it has not finished within `deadline`, counted from now
/// and without the time `waits` records (the request body's reads waiting for data).
async fn within<F: Future>(
    deadline: Duration,
    waits: Option<&crate::body::BodyWaits>,
    run: F,
) -> Option<F::Output> {
    let Some(waits) = waits else {
        return tokio::time::timeout(deadline, run).await.ok();
    };
    let start = Instant::now();
    let mut run = std::pin::pin!(run);
    let mut sleep = std::pin::pin!(tokio::time::sleep_until(start + deadline));
    std::future::poll_fn(|cx| {
        if let Poll::Ready(output) = run.as_mut().poll(cx) {
            return Poll::Ready(Some(output));
        }
        // The deadline came: moved on by the time spent waiting for the body meanwhile.
        while sleep.as_mut().poll(cx).is_ready() {
            let now = Instant::now();
            let due = start + deadline + waits.total(now);
            if due <= now {
                return Poll::Ready(None);
            }
            sleep.as_mut().reset(due);
        }
        Poll::Pending
    })
    .await
}

/// A streamed body that fails when its inner stream keeps it waiting for `idle`.
struct IdleTimeout {
    inner: DynBody,
    idle: Duration,
    /// Armed while a poll waits on the inner stream; made on the first wait.
    sleep: Option<Pin<Box<Sleep>>>,
    waiting: bool,
    /// The error was returned: the body is over.
    failed: bool,
}

impl IdleTimeout {
    fn new(inner: DynBody, idle: Duration) -> Self {
        Self {
            inner,
            idle,
            sleep: None,
            waiting: false,
            failed: false,
        }
    }
}

/// The error an idle stream ends with.
#[derive(Debug)]
struct StreamIdle(Duration);

impl std::fmt::Display for StreamIdle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the response stream produced nothing for {} ms",
            self.0.as_millis()
        )
    }
}

impl std::error::Error for StreamIdle {}

impl Body for IdleTimeout {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if this.failed {
            return Poll::Ready(None);
        }
        match this.inner.as_mut().poll_frame(cx) {
            Poll::Ready(frame) => {
                this.waiting = false;
                Poll::Ready(frame)
            }
            Poll::Pending => {
                // The clock starts when the stream first keeps us waiting, not when the
                // client last read: a slow client is the server limits' business.
                if !this.waiting {
                    this.waiting = true;
                    let deadline = Instant::now() + this.idle;
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
                        tracing::warn!(
                            idle_ms = this.idle.as_millis() as u64,
                            "a streamed response went idle: the connection is closed"
                        );
                        this.failed = true;
                        Poll::Ready(Some(Err(Box::new(StreamIdle(this.idle)))))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.failed || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

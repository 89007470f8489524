//! Per-request statistics for a metrics store: `on_stats(&StatsInfo, &RequestView)` (and the
//! view-less `recorder(&StatsInfo)`, which [`metrics`](super::metrics) uses) after each request.
//!
//! [`StatsInfo`] carries the request id, client IP, method, route pattern, URI, status, status
//! class (`status / 100`), latency, request body size (read after the chain, so the body
//! parser's count), response size, and the number of requests in flight. The in-flight count is
//! one atomic, raised when a request enters and lowered by a guard's `Drop` when it ends in any
//! way (a panic or a client that goes away included; with a streamed body, when the body has
//! been sent); the figure reported counts the request itself. The slot is held by the context,
//! so it counts the request until the whole request ends (the middleware outside stats
//! included). Stats is two hooks and no future of its own: with nobody listening it is only
//! that count; otherwise it also starts the request's clock
//! (one reading shared with the logger)
//! and reports when the chain returns. An error returned by the chain is reported with its
//! status; a request that ends in a panic or a client that left is not reported (the logger
//! logs those). The default hook emits a `tracing` event at debug level.
//!
//! ```
//! use std::sync::Arc;
//! use framework::middleware::stats::{Stats, StatsConfig};
//!
//! let stats = Stats::new(StatsConfig::default()
//!     .on_stats(Some(Arc::new(|info, _request| {
//!         // e.g. record info.latency in a histogram keyed by info.route
//!         let _ = (info.status, info.latency);
//!     }))));
//! let app = framework::App::new().use_middleware(stats);
//! # let _ = app;
//! ```

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use http::{Method, StatusCode, Uri};

use crate::client_ip::ClientIpExt;
use crate::context::Context;
use crate::error::Result;
use crate::handler::{Before, Middleware};
use crate::slot::Slot;
use crate::view::RequestView;

/// What one request did.
#[derive(Debug, Clone)]
pub struct StatsInfo<'a> {
    /// The request id.
    pub request_id: &'a str,
    /// The real client IP.
    pub ip: IpAddr,
    /// Request method.
    pub method: &'a Method,
    /// The matched route pattern; `""` for a 404.
    pub route: &'a str,
    /// The matched route's number ([`MatchedRoute::index`](crate::context::MatchedRoute::index)); `None` for 404 and 405.
    pub route_index: Option<usize>,
    /// The request URI.
    pub uri: &'a Uri,
    /// Response status.
    pub status: StatusCode,
    /// `status / 100`: 2 for success, 4 for client errors, …
    pub status_class: u16,
    /// Time spent in the chain.
    pub latency: Duration,
    /// Request body bytes read (0 when nothing read it).
    pub request_size: usize,
    /// Response body bytes: the buffer's length, or a stream's when known.
    pub response_size: Option<u64>,
    /// Requests being handled when this one finished, itself included.
    pub in_flight: u32,
}

/// Receives each request's figures, with a view of the request.
pub type OnStats = Arc<dyn Fn(&StatsInfo<'_>, &RequestView) + Send + Sync>;

/// Receives each request's figures alone: for a sink that needs no more (a metrics
/// registry), since no view of the request is made for it.
pub type Recorder = Arc<dyn Fn(&StatsInfo<'_>) + Send + Sync>;

/// Stats settings.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct StatsConfig {
    /// The hook; default (without a recorder either): a `tracing` debug event.
    pub on_stats: Option<OnStats>,
    /// A hook on the figures alone, called before `on_stats` (e.g.
    /// [`Metrics::stats`](super::metrics) sets it).
    pub recorder: Option<Recorder>,
}

crate::config::setters!(StatsConfig {
    on_stats: Option<OnStats>,
    recorder: Option<Recorder>,
});

/// The stats middleware.
pub struct Stats {
    config: StatsConfig,
    in_flight: Arc<AtomicU32>,
}

impl Stats {
    /// A stats middleware with `config`.
    pub fn new(config: StatsConfig) -> Self {
        Self::with_in_flight(config, Arc::new(AtomicU32::new(0)))
    }

    /// A stats middleware counting requests in flight in `in_flight` (shared with whoever
    /// reads it, e.g. a metrics exposition).
    pub fn with_in_flight(config: StatsConfig, in_flight: Arc<AtomicU32>) -> Self {
        Self { config, in_flight }
    }

    /// A handle on the in-flight counter.
    pub fn in_flight(&self) -> Arc<AtomicU32> {
        Arc::clone(&self.in_flight)
    }
}

fn default_on_stats(info: &StatsInfo<'_>) {
    tracing::debug!(
        request_id = info.request_id,
        ip = %info.ip,
        method = %info.method,
        route = info.route,
        uri = %info.uri,
        status = info.status.as_u16(),
        latency_us = u64::try_from(info.latency.as_micros()).unwrap_or(u64::MAX),
        request_size = info.request_size,
        response_size = info.response_size,
        in_flight = info.in_flight,
        "request stats"
    );
}

impl Stats {
    /// Whether anybody wants the figures: a hook, or `tracing` wanting the debug event.
    fn listening(&self) -> bool {
        self.config.on_stats.is_some()
            || self.config.recorder.is_some()
            || tracing::enabled!(target: "framework::middleware::stats", tracing::Level::DEBUG)
    }
}

/// Hooks only, no future: `before` counts the request in flight (the slot stays with the
/// context, [`Context::hold`](crate::Context::hold), which gives it back when the request
/// ends) and starts the request's clock (shared with the logger);
/// `after` reports. With nobody listening, it only counts.
impl Middleware for Stats {
    fn before(&self, ctx: &mut Context) -> Before {
        if ctx.is_committed() {
            return Before::Pass;
        }
        ctx.hold(Slot::take(&self.in_flight));
        if !self.listening() {
            return Before::Pass;
        }
        ctx.start_clock();
        Before::Continue
    }

    fn after(&self, ctx: &mut Context, result: Result) -> Result {
        let latency = ctx.clock_started().map(|t| t.elapsed()).unwrap_or_default();
        let status = match &result {
            Ok(()) => ctx.status().unwrap_or(StatusCode::OK),
            Err(err) => err.status(),
        };
        let response_size = match ctx.body_mut().stream_mut() {
            Some(stream) => stream.size_hint().exact(),
            None => Some(ctx.body().bytes().map_or(0, |b| b.len() as u64)),
        };
        let info = StatsInfo {
            request_id: ctx.request_id(),
            ip: ctx.real_ip(),
            method: ctx.method(),
            route: ctx.route().map_or("", |route| route.pattern()),
            route_index: ctx.route().and_then(|route| route.index()),
            uri: ctx.uri(),
            status,
            status_class: status.as_u16() / 100,
            latency,
            request_size: ctx.request_body().len(),
            response_size,
            in_flight: self.in_flight.load(Ordering::Acquire),
        };
        if let Some(recorder) = &self.config.recorder {
            recorder(&info);
        }
        match &self.config.on_stats {
            Some(hook) => hook(&info, &ctx.view()),
            None if self.config.recorder.is_none() => default_on_stats(&info),
            None => {}
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(service: &crate::Service) -> Context {
        service.test_context(http::Request::new(crate::body::RequestBody::Empty))
    }

    /// With nobody listening, `before` counts the request and passes it on: the context holds
    /// the slot until it is dropped. With a hook, it also starts the clock and reports after.
    #[test]
    fn with_nobody_listening_the_hook_only_counts() {
        let service = crate::App::new().build().expect("an app");
        let stats = Stats::new(StatsConfig::default());
        let in_flight = stats.in_flight();
        let mut ctx = context(&service);
        assert!(matches!(stats.before(&mut ctx), Before::Pass));
        assert_eq!(ctx.clock_started(), None, "no clock read");
        assert_eq!(in_flight.load(Ordering::Acquire), 1);
        drop(ctx);
        assert_eq!(in_flight.load(Ordering::Acquire), 0);

        let listening = Stats::new(StatsConfig {
            on_stats: Some(Arc::new(|_, _| {})),
            ..StatsConfig::default()
        });
        let mut ctx = context(&service);
        assert!(matches!(listening.before(&mut ctx), Before::Continue));
        assert_eq!(listening.in_flight().load(Ordering::Acquire), 1);
        assert!(ctx.clock_started().is_some());
    }
}

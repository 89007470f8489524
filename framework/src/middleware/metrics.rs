//! Prometheus metrics: per-route request figures fed by the [`stats`](super::stats) component,
//! the process's [`telemetry`](crate::telemetry) counters, and an endpoint that exposes them in
//! the OpenMetrics text format (through the `prometheus-client` crate; feature `metrics`).
//!
//! | metric | type | labels | what |
//! |---|---|---|---|
//! | `http_requests_total` | counter | `route`, `method`, `status` | requests answered; `status` is the class: `1xx` … `5xx` |
//! | `http_request_duration_seconds` | histogram | `route` | time in the chain (buckets: [`MetricsConfig::buckets`]) |
//! | `http_request_body_bytes_total` | counter | `route` | request body bytes read |
//! | `http_response_body_bytes_total` | counter | `route` | response body bytes, when known as the chain returns (a stream of unknown length adds nothing) |
//! | `http_requests_in_flight` | gauge | | requests being handled now |
//! | `framework_limiter_refusals_total` | counter | `component` | 429 answers: `rate_limiter`, `concurrent_limiter`, `global_concurrent_limiter`, `router_concurrent_limiter` |
//! | `framework_cache_requests_total` | counter | `outcome` | `hit`, `miss`, `hit_for_pass` |
//! | `framework_sessions_created_total` | counter | | sessions saved under a new id for the first time |
//! | `framework_store_errors_total` | counter | `category` | store failures by the component's error category (`framework-session`, `framework-cache`, …) |
//! | `framework_open_connections` | gauge | `protocol` | `http1`, `http2`, `websocket` |
//!
//! **Label values are bounded**: `route` is the route's pattern (`/users/:id`), never the URI;
//! every request without a route (404, 405) shares `route=""`; `method` is one of the nine
//! standard methods or `other`; so the exposition has at most one series set per route however
//! many distinct URIs arrive. Routes are found by their number
//! ([`MatchedRoute::index`](crate::context::MatchedRoute::index)(crate::context::MatchedRoute::index)), not by hashing the pattern: a
//! request costs a few relaxed atomic adds and two clock readings (the stats hook's future
//! included). At most [`MetricsConfig::max_routes`] routes are kept apart; routes beyond it
//! count under `route=""` too.
//!
//! The route and request figures belong to this `Metrics` (one per app; clones share it); the
//! telemetry counters belong to the process. Mount [`Metrics::stats`] as the app's stats
//! middleware (where stats goes in the reference order) and [`Metrics::endpoint`] on a route.
//! Your own metrics go in a `prometheus_client` registry passed to
//! [`Metrics::with_registry`]; they are exposed beside these.
//!
//! ```
//! use framework::middleware::metrics::{Metrics, MetricsConfig};
//!
//! let metrics = Metrics::new(MetricsConfig::default());
//! let app = framework::App::new()
//!     .use_middleware(metrics.stats())
//!     .endpoint(http::Method::GET, "/metrics", metrics.endpoint());
//! # let _ = app;
//! ```

use std::fmt::{self, Debug};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use http::{HeaderValue, Method};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use crate::context::Context;
use crate::handler::{Endpoint, EndpointFuture};
use crate::middleware::stats::{Stats, StatsConfig, StatsInfo};
use crate::telemetry::{CacheOutcome, Protocol, Refusal, counters};

/// The exposition's media type (OpenMetrics text 1.0, which Prometheus scrapes natively).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Metrics settings.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct MetricsConfig {
    /// Upper bounds of the latency histogram's buckets, in seconds, ascending (`+Inf` is
    /// added). Default: 1 ms to 10 s, 13 buckets.
    pub buckets: Vec<f64>,
    /// Routes kept apart; default 4 096.
    pub max_routes: usize,
}

crate::config::setters!(MetricsConfig {
    buckets: Vec<f64>,
    max_routes: usize,
});

impl Default for MetricsConfig {
    fn default() -> Self {
        Self {
            buckets: vec![
                0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ],
            max_routes: 4096,
        }
    }
}

/// The method label values; the index is a request's method's place, the last is `other`.
const METHODS: [&str; 10] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE", "other",
];

fn method_index(method: &Method) -> usize {
    match *method {
        Method::GET => 0,
        Method::HEAD => 1,
        Method::POST => 2,
        Method::PUT => 3,
        Method::DELETE => 4,
        Method::PATCH => 5,
        Method::OPTIONS => 6,
        Method::CONNECT => 7,
        Method::TRACE => 8,
        _ => 9,
    }
}

/// The status label values, by class.
const CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// Routes per lazily allocated chunk of the route table.
const CHUNK: usize = 64;

/// One route's figures.
struct RouteSeries {
    /// The pattern, set by the first request of the route.
    pattern: OnceLock<Box<str>>,
    requests: [[AtomicU64; 5]; METHODS.len()],
    /// Per bucket (not cumulative), the last for `+Inf`.
    latency: Box<[AtomicU64]>,
    latency_sum_ns: AtomicU64,
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
}

impl RouteSeries {
    fn new(buckets: usize) -> Self {
        Self {
            pattern: OnceLock::new(),
            requests: Default::default(),
            latency: (0..=buckets).map(|_| AtomicU64::new(0)).collect(),
            latency_sum_ns: AtomicU64::new(0),
            bytes_in: AtomicU64::new(0),
            bytes_out: AtomicU64::new(0),
        }
    }

    fn count(&self) -> u64 {
        self.latency.iter().map(|b| b.load(Ordering::Relaxed)).sum()
    }
}

struct Inner {
    /// Bucket bounds in nanoseconds, for the per-request comparison.
    bounds_ns: Box<[u64]>,
    bounds_s: Box<[f64]>,
    chunks: Box<[OnceLock<Box<[RouteSeries]>>]>,
    max_routes: usize,
    unmatched: RouteSeries,
    in_flight: Arc<AtomicU32>,
}

impl Inner {
    fn series(&self, index: Option<usize>, pattern: &str) -> &RouteSeries {
        let Some(index) = index.filter(|i| *i < self.max_routes) else {
            return &self.unmatched;
        };
        let chunk = self.chunks[index / CHUNK].get_or_init(|| {
            (0..CHUNK)
                .map(|_| RouteSeries::new(self.bounds_ns.len()))
                .collect()
        });
        let series = &chunk[index % CHUNK];
        if series.pattern.get().is_none() {
            let _ = series.pattern.set(pattern.into());
        }
        series
    }

    fn record(&self, info: &StatsInfo<'_>) {
        let series = self.series(info.route_index, info.route);
        let class = usize::from(info.status_class.clamp(1, 5)) - 1;
        series.requests[method_index(info.method)][class].fetch_add(1, Ordering::Relaxed);
        let ns = u64::try_from(info.latency.as_nanos()).unwrap_or(u64::MAX);
        let bucket = self
            .bounds_ns
            .iter()
            .position(|bound| ns <= *bound)
            .unwrap_or(self.bounds_ns.len());
        series.latency[bucket].fetch_add(1, Ordering::Relaxed);
        series.latency_sum_ns.fetch_add(ns, Ordering::Relaxed);
        if info.request_size > 0 {
            series
                .bytes_in
                .fetch_add(info.request_size as u64, Ordering::Relaxed);
        }
        if let Some(size) = info.response_size.filter(|s| *s > 0) {
            series.bytes_out.fetch_add(size, Ordering::Relaxed);
        }
    }

    /// Every series with a request, with its route label.
    fn all(&self) -> impl Iterator<Item = (&str, &RouteSeries)> {
        let routes = self
            .chunks
            .iter()
            .filter_map(OnceLock::get)
            .flat_map(|chunk| chunk.iter())
            .filter_map(|s| s.pattern.get().map(|p| (&**p, s)));
        std::iter::once(("", &self.unmatched)).chain(routes)
    }
}

/// The metrics component: see the module docs. Clones share the figures.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
    registry: Arc<Registry>,
}

impl Metrics {
    /// Metrics with `config`, alone in their registry.
    pub fn new(config: MetricsConfig) -> Self {
        Self::with_registry(config, Registry::default())
    }

    /// Metrics with `config`, exposed with those of `registry` (your own).
    pub fn with_registry(config: MetricsConfig, mut registry: Registry) -> Self {
        let mut bounds_s: Vec<f64> = config
            .buckets
            .into_iter()
            .filter(|b| b.is_finite() && *b > 0.0)
            .collect();
        bounds_s.sort_by(f64::total_cmp);
        bounds_s.dedup();
        let bounds_ns = bounds_s.iter().map(|s| (s * 1e9) as u64).collect();
        let max_routes = config.max_routes;
        let inner = Arc::new(Inner {
            bounds_ns,
            chunks: (0..max_routes.div_ceil(CHUNK))
                .map(|_| OnceLock::new())
                .collect(),
            unmatched: RouteSeries::new(bounds_s.len()),
            bounds_s: bounds_s.into(),
            max_routes,
            in_flight: Arc::new(AtomicU32::new(0)),
        });
        registry.register_collector(Box::new(Exposition(Arc::clone(&inner))));
        Self {
            inner,
            registry: Arc::new(registry),
        }
    }

    /// The stats middleware that feeds these metrics (its hook records each request; its
    /// in-flight count is the gauge). Mount one per app.
    pub fn stats(&self) -> Stats {
        let inner = Arc::clone(&self.inner);
        Stats::with_in_flight(
            StatsConfig {
                recorder: Some(Arc::new(move |info| inner.record(info))),
                ..StatsConfig::default()
            },
            Arc::clone(&self.inner.in_flight),
        )
    }

    /// The exposition, as served by [`Metrics::endpoint`].
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// An endpoint serving the exposition (`GET`, [`CONTENT_TYPE`], `Cache-Control: no-store`).
    pub fn endpoint(&self) -> MetricsEndpoint {
        MetricsEndpoint(self.clone())
    }
}

/// The endpoint of [`Metrics::endpoint`].
pub struct MetricsEndpoint(Metrics);

impl Endpoint for MetricsEndpoint {
    fn call<'a>(&'a self, ctx: &'a mut Context) -> EndpointFuture<'a> {
        crate::handler::endpoint_future(async move {
            let text = self.0.render();
            let headers = ctx.response_headers_mut();
            headers.insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static(CONTENT_TYPE),
            );
            headers.insert(
                http::header::CACHE_CONTROL,
                HeaderValue::from_static("no-store"),
            );
            ctx.body_mut().set_bytes(Bytes::from(text));
            Ok(())
        })
    }
}

/// The collector that writes the figures at each scrape.
struct Exposition(Arc<Inner>);

impl Debug for Exposition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("framework metrics")
    }
}

impl Collector for Exposition {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
        let inner = &*self.0;
        let series: Vec<_> = inner.all().collect();

        let mut requests = encoder.encode_descriptor(
            "http_requests",
            "Requests answered, by route pattern, method and status class.",
            None,
            MetricType::Counter,
        )?;
        for (route, s) in &series {
            for (m, method) in METHODS.iter().enumerate() {
                for (c, class) in CLASSES.iter().enumerate() {
                    let n = s.requests[m][c].load(Ordering::Relaxed);
                    if n > 0 {
                        let labels = [("route", *route), ("method", method), ("status", class)];
                        requests
                            .encode_family(&labels)?
                            .encode_counter::<NoLabelSet, _, u64>(&n, None)?;
                    }
                }
            }
        }

        let mut latency = encoder.encode_descriptor(
            "http_request_duration",
            "Time in the chain, by route pattern.",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
        for (route, s) in &series {
            let count = s.count();
            if count == 0 {
                continue;
            }
            let buckets: Vec<(f64, u64)> = inner
                .bounds_s
                .iter()
                .copied()
                .chain(std::iter::once(f64::INFINITY))
                .zip(s.latency.iter().map(|b| b.load(Ordering::Relaxed)))
                .collect();
            let sum = s.latency_sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
            latency
                .encode_family(&[("route", *route)])?
                .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
        }

        for (name, help, pick) in [
            (
                "http_request_body",
                "Request body bytes read, by route pattern.",
                (|s: &RouteSeries| &s.bytes_in) as fn(&RouteSeries) -> &AtomicU64,
            ),
            (
                "http_response_body",
                "Response body bytes of known length, by route pattern.",
                |s: &RouteSeries| &s.bytes_out,
            ),
        ] {
            let mut bytes =
                encoder.encode_descriptor(name, help, Some(&Unit::Bytes), MetricType::Counter)?;
            for (route, s) in &series {
                if s.count() > 0 {
                    let n = pick(s).load(Ordering::Relaxed);
                    bytes
                        .encode_family(&[("route", *route)])?
                        .encode_counter::<NoLabelSet, _, u64>(&n, None)?;
                }
            }
        }

        encoder
            .encode_descriptor(
                "http_requests_in_flight",
                "Requests being handled now.",
                None,
                MetricType::Gauge,
            )?
            .encode_gauge(&inner.in_flight.load(Ordering::Relaxed))?;

        let c = counters();
        let mut refusals = encoder.encode_descriptor(
            "framework_limiter_refusals",
            "Requests refused with 429, by component.",
            None,
            MetricType::Counter,
        )?;
        for kind in Refusal::ALL {
            refusals
                .encode_family(&[("component", kind.label())])?
                .encode_counter::<NoLabelSet, _, u64>(&c.refusals(kind), None)?;
        }
        let mut cache = encoder.encode_descriptor(
            "framework_cache_requests",
            "Requests the cache looked at, by outcome.",
            None,
            MetricType::Counter,
        )?;
        for outcome in CacheOutcome::ALL {
            cache
                .encode_family(&[("outcome", outcome.label())])?
                .encode_counter::<NoLabelSet, _, u64>(&c.cache_outcomes(outcome), None)?;
        }
        encoder
            .encode_descriptor(
                "framework_sessions_created",
                "Sessions saved under a new id for the first time.",
                None,
                MetricType::Counter,
            )?
            .encode_counter::<NoLabelSet, _, u64>(&c.sessions_created(), None)?;
        let mut errors = encoder.encode_descriptor(
            "framework_store_errors",
            "Store failures, by the component's error category.",
            None,
            MetricType::Counter,
        )?;
        for (category, n) in c.store_errors() {
            errors
                .encode_family(&[("category", category)])?
                .encode_counter::<NoLabelSet, _, u64>(&n, None)?;
        }
        let mut connections = encoder.encode_descriptor(
            "framework_open_connections",
            "Connections open now, by protocol.",
            None,
            MetricType::Gauge,
        )?;
        for protocol in Protocol::ALL {
            connections
                .encode_family(&[("protocol", protocol.label())])?
                .encode_gauge(&c.open_connections(protocol))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Latencies land in the first bucket whose bound is not below them; the histogram's
    /// buckets come out cumulative with `+Inf`.
    #[test]
    fn latency_buckets_and_exposition() {
        let metrics = Metrics::new(MetricsConfig {
            buckets: vec![0.01, 0.001, 0.1],
            max_routes: 2,
        });
        let uri: http::Uri = "/x".parse().unwrap();
        for (ms, index) in [
            (0, Some(0)),
            (5, Some(0)),
            (50, Some(0)),
            (500, Some(0)),
            (1, Some(7)),
        ] {
            metrics.inner.record(&StatsInfo {
                request_id: "r",
                ip: [127, 0, 0, 1].into(),
                method: &Method::GET,
                route: if index == Some(0) { "/x" } else { "/far" },
                route_index: index,
                uri: &uri,
                status: http::StatusCode::OK,
                status_class: 2,
                latency: std::time::Duration::from_millis(ms),
                request_size: 3,
                response_size: Some(10),
                in_flight: 1,
            });
        }
        let text = metrics.render();
        for line in [
            r#"http_requests_total{route="/x",method="GET",status="2xx"} 4"#,
            // A route past `max_routes` counts under route="".
            r#"http_requests_total{route="",method="GET",status="2xx"} 1"#,
            r#"http_request_duration_seconds_bucket{le="0.001",route="/x"} 1"#,
            r#"http_request_duration_seconds_bucket{le="0.01",route="/x"} 2"#,
            r#"http_request_duration_seconds_bucket{le="0.1",route="/x"} 3"#,
            r#"http_request_duration_seconds_bucket{le="+Inf",route="/x"} 4"#,
            r#"http_request_duration_seconds_count{route="/x"} 4"#,
            r#"http_request_body_bytes_total{route="/x"} 12"#,
            r#"http_response_body_bytes_total{route="/x"} 40"#,
            "# EOF",
        ] {
            assert!(text.contains(line), "{line} missing from\n{text}");
        }
    }
}

//! W3C Trace Context (`traceparent`, `tracestate`): each request joins the client's trace, or
//! starts one, and gets a span id of its own.
//!
//! - **Accepted from the client**: a valid `traceparent` (`00-<32 hex trace id>-<16 hex parent
//!   id>-<2 hex flags>`, lowercase, ids not all zero; a later version is read by its first four
//!   fields, as the specification asks) gives the trace id, the parent span id and the flags,
//!   and `tracestate` is kept as sent (only with a valid `traceparent`, at most 512 bytes).
//!   Anything else starts a new trace: a random trace id, no parent, flags `01` (sampled).
//!   [`TraceConfig::trust_incoming`] off always starts a new trace (a public edge that does not
//!   let clients choose trace ids).
//! - **Kept on the context** as a [`TraceContext`] ([`TraceExt::trace`]), with this request's
//!   own random span id. [`TraceContext::traceparent`] is the header for a call this request
//!   makes downstream; the [proxy](super::proxy) sends it (with a fresh span id of its own per
//!   proxied request, [`TraceContext::child`]) and `tracestate` as received.
//! - **Written** on the access-log line (the logger's `{trace-id}` and `{span-id}` tags, and a
//!   `trace_id` field on its default `tracing` event), and in a `tracing` span per request,
//!   `request`, with `trace_id`, `span_id`, `parent_id`, `method`, `route` (the pattern), and
//!   `status` and `latency_ms` recorded when the chain returns; events inside the request are
//!   in that span. The span is made only when a subscriber wants it (info level, target
//!   `framework::trace`); otherwise the request costs the header parse and the ids, no future.
//!
//! - **Exported** (feature `otel`): the request span is also an OpenTelemetry span, a child of
//!   the client's span, through `tracing-opentelemetry`; with an OpenTelemetry layer installed
//!   (the user service's `otlp` feature sends to an OTLP collector) the request's span id is
//!   the exported span's.
//!
//! Mount it outermost (before the logger), so every other component sees the trace.
//!
//! ```
//! use framework::middleware::trace::{Trace, TraceConfig, TraceExt};
//! use framework::{App, Context, Result};
//!
//! async fn hello(ctx: &mut Context) -> Result<String> {
//!     let trace = ctx.trace().map(|t| t.trace_id()).unwrap_or_default();
//!     Ok(format!("trace {trace}"))
//! }
//! let app = App::new().use_middleware(Trace::new(TraceConfig::default())).get("/", hello);
//! # let _ = app;
//! ```

use std::sync::OnceLock;

use http::HeaderValue;
use tracing::Instrument;

use crate::context::Context;
use crate::error::Result;
use crate::handler::{Before, BoxFuture, Middleware, Next};

/// `traceparent`.
pub const TRACEPARENT: http::HeaderName = http::HeaderName::from_static("traceparent");
/// `tracestate`.
pub const TRACESTATE: http::HeaderName = http::HeaderName::from_static("tracestate");

/// The longest `tracestate` kept (the specification's limit for what a vendor must pass on).
pub const MAX_TRACESTATE: usize = 512;

/// Trace settings.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TraceConfig {
    /// Join the client's trace when it sends a valid `traceparent`; default true. Off, every
    /// request starts a new trace.
    pub trust_incoming: bool,
}

crate::config::setters!(TraceConfig {
    trust_incoming: bool,
});

impl Default for TraceConfig {
    fn default() -> Self {
        Self {
            trust_incoming: true,
        }
    }
}

/// One request's place in a trace.
///
/// The ids a request makes itself (a new trace's id, its span id) are drawn when first read,
/// not when the request starts: a request whose trace nobody reads (no access log line, no
/// proxied call, no exported span) draws nothing. A clone draws them first, so it names the
/// same span.
pub struct TraceContext {
    /// The trace id when it is fixed: the client's (from its `traceparent`) or the one the
    /// OpenTelemetry layer gave the span. `None`: a new trace, whose id is drawn.
    trace_id: Option<[u8; 16]>,
    parent_id: Option<[u8; 8]>,
    /// A new trace's id (unused when `trace_id` is fixed) and this span's id.
    drawn: OnceLock<([u8; 16], [u8; 8])>,
    flags: u8,
    tracestate: Option<HeaderValue>,
}

/// A new trace id and span id, from one draw of the generator (all zeros is invalid for
/// either).
fn draw_ids() -> ([u8; 16], [u8; 8]) {
    loop {
        let bits = crate::ids::random_bytes::<24>();
        let (trace, span) = bits.split_at(16);
        if trace != [0; 16] && span != [0; 8] {
            let mut ids = ([0u8; 16], [0u8; 8]);
            ids.0.copy_from_slice(trace);
            ids.1.copy_from_slice(span);
            return ids;
        }
    }
}

impl Clone for TraceContext {
    fn clone(&self) -> Self {
        Self {
            trace_id: self.trace_id,
            parent_id: self.parent_id,
            drawn: OnceLock::from(*self.drawn()),
            flags: self.flags,
            tracestate: self.tracestate.clone(),
        }
    }
}

/// Two contexts are equal when they name the same span the same way: ids, parent, flags and
/// `tracestate`.
impl PartialEq for TraceContext {
    fn eq(&self, other: &Self) -> bool {
        self.ids() == other.ids()
            && self.parent_id == other.parent_id
            && self.flags == other.flags
            && self.tracestate == other.tracestate
    }
}

impl Eq for TraceContext {}

impl std::fmt::Debug for TraceContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceContext")
            .field("trace_id", &self.trace_id())
            .field("parent_id", &self.parent_id())
            .field("span_id", &self.span_id())
            .field("flags", &self.flags)
            .field("tracestate", &self.tracestate)
            .finish()
    }
}

/// The trace fields of a valid `traceparent`: trace id, parent id, flags.
pub fn parse_traceparent(value: &[u8]) -> Option<([u8; 16], [u8; 8], u8)> {
    // version "-" trace-id "-" parent-id "-" flags; a later version may append "-" fields.
    if value.len() < 55 {
        return None;
    }
    let version = hex_bytes::<1>(&value[0..2])?;
    if version[0] == 0xff || value[2] != b'-' || value[35] != b'-' || value[52] != b'-' {
        return None;
    }
    if version[0] == 0 && value.len() != 55 {
        return None;
    }
    if value.len() > 55 && value[55] != b'-' {
        return None;
    }
    let trace_id = hex_bytes::<16>(&value[3..35])?;
    let parent_id = hex_bytes::<8>(&value[36..52])?;
    let flags = hex_bytes::<1>(&value[53..55])?[0];
    if trace_id == [0; 16] || parent_id == [0; 8] {
        return None;
    }
    Some((trace_id, parent_id, flags))
}

/// `N` bytes from `2N` lowercase hex digits (W3C Trace Context refuses uppercase ones).
fn hex_bytes<const N: usize>(text: &[u8]) -> Option<[u8; N]> {
    if text.iter().any(u8::is_ascii_uppercase) {
        return None;
    }
    let mut out = [0u8; N];
    hex::decode_to_slice(text, &mut out).ok()?;
    Some(out)
}

impl TraceContext {
    /// The trace a request with these headers belongs to: the client's, from a valid
    /// `traceparent` (with its `tracestate`), else a new one; with a new span id either way.
    pub fn from_headers(headers: &http::HeaderMap) -> Self {
        // Looked up only when a scan of the request's few header names finds it.
        let incoming = crate::header::has_any(headers, std::slice::from_ref(&TRACEPARENT))
            .then(|| headers.get(TRACEPARENT))
            .flatten()
            .and_then(|v| parse_traceparent(v.as_bytes()));
        match incoming {
            Some((trace_id, parent_id, flags)) => Self {
                trace_id: Some(trace_id),
                parent_id: Some(parent_id),
                drawn: OnceLock::new(),
                flags,
                tracestate: headers
                    .get(TRACESTATE)
                    .filter(|v| v.len() <= MAX_TRACESTATE)
                    .cloned(),
            },
            None => Self::new_trace(),
        }
    }

    /// A new trace: random trace and span ids (drawn when first read), no parent, sampled.
    ///
    /// Ids come from the thread's fast generator that makes request ids (seeded from the OS):
    /// unique with overwhelming probability, as the specification asks, without a
    /// cryptographic generator's cost per request.
    pub fn new_trace() -> Self {
        Self {
            trace_id: None,
            parent_id: None,
            drawn: OnceLock::new(),
            flags: 0x01,
            tracestate: None,
        }
    }

    /// The same trace with a new span id, this one as its parent: what a call made on this
    /// request's behalf (a proxied request) carries.
    pub fn child(&self) -> Self {
        let (trace_id, span_id) = self.ids();
        Self {
            trace_id: Some(trace_id),
            parent_id: Some(span_id),
            drawn: OnceLock::new(),
            flags: self.flags,
            tracestate: self.tracestate.clone(),
        }
    }

    /// The drawn ids, drawn now if this is their first read.
    fn drawn(&self) -> &([u8; 16], [u8; 8]) {
        self.drawn.get_or_init(draw_ids)
    }
    /// The trace id, 32 lowercase hex digits.
    pub fn trace_id(&self) -> String {
        hex::encode(self.ids().0)
    }
    /// This request's span id, 16 lowercase hex digits.
    pub fn span_id(&self) -> String {
        hex::encode(self.ids().1)
    }
    /// The client's span id, when it sent a `traceparent`.
    pub fn parent_id(&self) -> Option<String> {
        self.parent_id.as_ref().map(hex::encode)
    }
    /// The trace flags (bit 0: sampled).
    pub fn flags(&self) -> u8 {
        self.flags
    }
    /// The raw ids: trace id and span id.
    pub fn ids(&self) -> ([u8; 16], [u8; 8]) {
        let (new_trace, span) = *self.drawn();
        (self.trace_id.unwrap_or(new_trace), span)
    }
    /// `tracestate` as received.
    pub fn tracestate(&self) -> Option<&HeaderValue> {
        self.tracestate.as_ref()
    }
    /// `traceparent` with this span as the parent: `00-<trace id>-<span id>-<flags>`.
    pub fn traceparent(&self) -> HeaderValue {
        let text = format!(
            "00-{}-{}-{:02x}",
            self.trace_id(),
            self.span_id(),
            self.flags
        );
        HeaderValue::try_from(text).unwrap_or_else(|_| unreachable!("hex and dashes"))
    }
}

/// The calls a typed client ([`crate::client`], feature `client`) makes on a request's behalf
/// carry its trace.
#[cfg(feature = "client")]
pub trait TracedClient {
    /// A handle whose calls carry the request's `X-Request-Id`
    /// ([`ApiClient::propagate`](crate::client::ApiClient::propagate)) and a `traceparent`
    /// naming a new span of its trace ([`TraceContext::child`]) when [`Trace`] runs.
    fn traced(&self, ctx: &Context) -> crate::client::ApiClient;
}

#[cfg(feature = "client")]
impl TracedClient for crate::client::ApiClient {
    fn traced(&self, ctx: &Context) -> crate::client::ApiClient {
        let client = self.propagate(ctx);
        match ctx.trace() {
            Some(trace) => client.with_header(TRACEPARENT, trace.child().traceparent()),
            None => client,
        }
    }
}

/// The request's trace, kept by [`Trace`].
pub trait TraceExt {
    /// The request's trace, when the trace middleware ran.
    fn trace(&self) -> Option<&TraceContext>;
}

impl TraceExt for Context {
    fn trace(&self) -> Option<&TraceContext> {
        self.data::<TraceContext>()
    }
}

/// The trace middleware: see the module docs.
pub struct Trace {
    config: TraceConfig,
}

impl Trace {
    /// A trace middleware with `config`.
    pub fn new(config: TraceConfig) -> Self {
        Self { config }
    }

    fn start(&self, ctx: &mut Context) {
        let trace = if self.config.trust_incoming {
            TraceContext::from_headers(ctx.request_headers())
        } else {
            TraceContext::new_trace()
        };
        ctx.insert_data(trace);
    }
}

/// Whether a subscriber wants the request spans.
fn spans_wanted() -> bool {
    tracing::enabled!(target: "framework::trace", tracing::Level::INFO)
}

impl Middleware for Trace {
    fn before(&self, ctx: &mut Context) -> Before {
        if spans_wanted() {
            return Before::Handle;
        }
        self.start(ctx);
        Before::Pass
    }

    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        Box::pin(async move {
            self.start(ctx);
            let Some(trace) = ctx.trace() else {
                return next.run(ctx).await;
            };
            let span = tracing::info_span!(
                target: "framework::trace",
                "request",
                trace_id = %trace.trace_id(),
                span_id = %trace.span_id(),
                parent_id = trace.parent_id(),
                method = %ctx.method(),
                route = ctx.route().map_or("", |route| route.pattern()),
                status = tracing::field::Empty,
                latency_ms = tracing::field::Empty,
            );
            #[cfg(feature = "otel")]
            if let Some(trace) = ctx.data_mut::<TraceContext>() {
                otel::link(&span, trace);
            }
            let started = ctx.start_clock();
            let result = next.run(ctx).instrument(span.clone()).await;
            let status = match &result {
                Ok(()) => ctx.status().unwrap_or(http::StatusCode::OK),
                Err(err) => err.status(),
            };
            span.record("status", i64::from(status.as_u16()));
            span.record("latency_ms", started.elapsed().as_secs_f64() * 1e3);
            result
        })
    }
}

/// The request span as an OpenTelemetry span (feature `otel`).
#[cfg(feature = "otel")]
mod otel {
    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState,
    };
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    use super::TraceContext;

    /// Makes `span` a child of the client's span (when it named one), then takes the ids the
    /// OpenTelemetry layer gave it, so logs, the proxy's `traceparent` and the exported spans
    /// name the same span. Without an OpenTelemetry layer the span has no valid context and
    /// the request keeps its own ids.
    pub(super) fn link(span: &tracing::Span, trace: &mut TraceContext) {
        if let Some(parent) = trace.parent_id {
            let remote = SpanContext::new(
                TraceId::from_bytes(trace.ids().0),
                SpanId::from_bytes(parent),
                TraceFlags::new(trace.flags),
                true,
                TraceState::default(),
            );
            let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
        }
        let context = span.context();
        let exported = context.span().span_context().clone();
        if exported.is_valid() {
            let trace_id = exported.trace_id().to_bytes();
            trace.trace_id = Some(trace_id);
            trace.drawn = std::sync::OnceLock::from((trace_id, exported.span_id().to_bytes()));
        }
    }
}

#[cfg(test)]
mod tests;

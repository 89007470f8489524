//! Each traced request is one `tracing` span with its route pattern, status and latency. Alone
//! in its test binary: `tracing` caches per call site whether anybody listens, and a test
//! without a subscriber running beside this one could settle that as "nobody" first.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use framework::middleware::responder::Responder;
use framework::middleware::trace::{Trace, TraceConfig, TraceExt};
use framework::{App, Context, Result};
use serde_json::{Value, json};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context as LayerContext, Layer};
use tracing_subscriber::prelude::*;
use tracing_subscriber::registry::LookupSpan;

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

/// How long `seen` takes at least: the span's latency cannot be less.
const HANDLER_TIME: std::time::Duration = std::time::Duration::from_millis(20);

async fn seen(ctx: &mut Context) -> Result<Value> {
    let trace = ctx.trace().expect("traced");
    tokio::time::sleep(HANDLER_TIME).await;
    Ok(json!({"span_id": trace.span_id()}))
}

/// The `request` spans closed so far, as their recorded fields.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<HashMap<String, String>>>>);

struct Fields<'a>(&'a mut HashMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(
            field.name().to_owned(),
            format!("{value:?}").trim_matches('"').to_owned(),
        );
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Spans {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: LayerContext<'_, S>,
    ) {
        let mut fields = HashMap::new();
        attrs.record(&mut Fields(&mut fields));
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        ctx: LayerContext<'_, S>,
    ) {
        if let Some(span) = ctx.span(id)
            && let Some(fields) = span.extensions_mut().get_mut::<HashMap<String, String>>()
        {
            values.record(&mut Fields(fields));
        }
    }

    fn on_close(&self, id: tracing::span::Id, ctx: LayerContext<'_, S>) {
        if let Some(span) = ctx.span(&id)
            && span.name() == "request"
            && let Some(fields) = span.extensions().get::<HashMap<String, String>>()
        {
            self.0.lock().unwrap().push(fields.clone());
        }
    }
}

#[tokio::test]
async fn each_request_is_one_span_with_its_route_status_and_latency() {
    let spans = Spans::default();
    let _default = tracing::subscriber::set_default(
        tracing_subscriber::registry().with(
            spans.clone().with_filter(
                tracing_subscriber::filter::Targets::new()
                    .with_target("framework::trace", tracing::Level::INFO),
            ),
        ),
    );
    let service = App::new()
        .use_middleware(Trace::new(TraceConfig::default()))
        .use_middleware(Responder::default())
        .get("/items/:id", seen)
        .build()
        .unwrap();
    let server = common::start(service).await;
    let client = reqwest::Client::new();
    let sent = std::time::Instant::now();
    let body: Value = client
        .get(server.url("/items/7"))
        .header("traceparent", PARENT)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let round_trip = sent.elapsed();
    let missing = client.get(server.url("/nowhere")).send().await.unwrap();
    assert_eq!(missing.status(), 404);
    server.stop().await;

    let spans = spans.0.lock().unwrap().clone();
    assert_eq!(spans.len(), 2, "{spans:?}");
    let item = &spans[0];
    assert_eq!(item["trace_id"], TRACE_ID);
    assert_eq!(item["span_id"], body["span_id"].as_str().unwrap());
    assert_eq!(item["parent_id"], "00f067aa0ba902b7");
    assert_eq!(item["method"], "GET");
    assert_eq!(item["route"], "/items/:id");
    assert_eq!(item["status"], "200");
    // The handler's time at least, the client's round trip at most.
    let latency_ms: f64 = item["latency_ms"].parse().unwrap();
    assert!(
        latency_ms >= HANDLER_TIME.as_secs_f64() * 1000.0
            && latency_ms <= round_trip.as_secs_f64() * 1000.0,
        "latency {latency_ms} ms, round trip {round_trip:?}"
    );
    assert_eq!(spans[1]["status"], "404");
    assert_eq!(spans[1]["route"], "");
}

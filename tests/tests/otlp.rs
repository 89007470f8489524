//! OpenTelemetry export: the user service (feature `otlp`) sends its request spans to an OTLP
//! collector. The collector here is a stand-in served by the framework in the test, taking
//! `POST /v1/traces` in OTLP/JSON; the spans of a request that named a trace in `traceparent`
//! arrive under that trace, as children of the client's span, with the route and status.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::backends::{Instance, signal};
use framework::middleware::body_parser::{BodyParser, BodyParserConfig};
use framework::middleware::responder::Responder;
use framework::{App, Context, Result};
use serde_json::Value;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// Every span of every export received: `resourceSpans[].scopeSpans[].spans[]`.
fn spans(exports: &[Value]) -> Vec<Value> {
    exports
        .iter()
        .flat_map(|e| e["resourceSpans"].as_array().cloned().unwrap_or_default())
        .flat_map(|r| r["scopeSpans"].as_array().cloned().unwrap_or_default())
        .flat_map(|s| s["spans"].as_array().cloned().unwrap_or_default())
        .collect()
}

fn attribute<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_spans_reach_the_collector_under_the_clients_trace() {
    let received = Arc::new(Mutex::new(Vec::<Value>::new()));
    let sink = Arc::clone(&received);
    let collector = App::new()
        .with_state(sink)
        .use_middleware(Responder::default())
        .use_middleware(BodyParser::new(BodyParserConfig {
            limit: 10 << 20,
            ..BodyParserConfig::default()
        }))
        .post("/v1/traces", |ctx: &mut Context| {
            let export: Value = serde_json::from_slice(&ctx.request_body).unwrap_or(Value::Null);
            if let Some(sink) = ctx.state().get::<Arc<Mutex<Vec<Value>>>>() {
                sink.lock().unwrap().push(export);
            }
            std::future::ready(Result::Ok("{}"))
        })
        .build()
        .unwrap();
    let collector = common::start(collector).await;
    let env = [
        ("DATABASE_URL", "memory".to_owned()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url("")),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json".to_owned()),
        ("OTEL_BSP_SCHEDULE_DELAY", "100".to_owned()),
        ("OTEL_SERVICE_NAME", "users-under-test".to_owned()),
        ("RUST_LOG", "warn".to_owned()),
    ];
    let mut service = tokio::task::spawn_blocking(move || Instance::start(&env))
        .await
        .unwrap();
    let answer = reqwest::Client::new()
        .get(service.url("/users/v1/login"))
        .header("traceparent", format!("00-{TRACE_ID}-{CLIENT_SPAN}-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    // SIGTERM: what is still queued is sent before the process exits.
    signal(service.pid(), "TERM");
    let exit = tokio::task::spawn_blocking(move || service.wait_exit(Duration::from_secs(15)))
        .await
        .unwrap();
    assert!(exit.success(), "{exit}");

    let exports = received.lock().unwrap().clone();
    let all = spans(&exports);
    let request = all
        .iter()
        .find(|s| s["name"] == "request" && s["traceId"].as_str() == Some(TRACE_ID))
        .unwrap_or_else(|| {
            panic!(
                "no request span of the trace among {all:#?} (the user-service binary needs the \
                 otlp feature: the workspace's `cargo test` builds it so)"
            )
        });
    assert_eq!(request["parentSpanId"], CLIENT_SPAN);
    let span_id = request["spanId"].as_str().unwrap();
    assert!(span_id.len() == 16 && span_id != CLIENT_SPAN, "{span_id}");
    assert_eq!(
        attribute(request, "route").and_then(|v| v["stringValue"].as_str()),
        Some("/users/v1/login")
    );
    // An integer attribute (OTLP/JSON writes 64-bit integers as strings).
    let status = attribute(request, "status").expect("status attribute");
    assert_eq!(
        status["intValue"].to_string().trim_matches('"'),
        "200",
        "{status}"
    );
    // The resource names the service.
    let resource = &exports[0]["resourceSpans"][0]["resource"]["attributes"];
    assert!(
        resource
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["key"] == "service.name" && a["value"]["stringValue"] == "users-under-test"),
        "{resource}"
    );
    collector.stop().await;
}

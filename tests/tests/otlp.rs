//! OpenTelemetry export: the user service (feature `otlp`) sends its request spans to an OTLP
//! collector. The collector here is a stand-in served by the framework in the test, taking
//! `POST /v1/traces` in both encodings: protobuf (the default, decoded with
//! `opentelemetry-proto`) and OTLP/JSON (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`). The spans of
//! a request that named a trace in `traceparent` arrive under that trace, as children of the
//! client's span, with the route and status, and the resource names the service.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::backends::{Instance, signal};
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

/// A request span as the test checks it, from either encoding.
#[derive(Debug, PartialEq)]
struct RequestSpan {
    parent: String,
    span: String,
    route: Option<String>,
    status: Option<i64>,
}

/// The request span of [`TRACE_ID`] and the service name of its resource, from JSON exports.
fn from_json(bodies: &[Vec<u8>]) -> Option<(RequestSpan, Option<String>)> {
    let exports: Vec<Value> = bodies
        .iter()
        .map(|b| serde_json::from_slice(b).expect("OTLP/JSON"))
        .collect();
    let all = spans(&exports);
    let request = all
        .iter()
        .find(|s| s["name"] == "request" && s["traceId"].as_str() == Some(TRACE_ID))?;
    // OTLP/JSON writes 64-bit integers as strings.
    let status = attribute(request, "status")
        .and_then(|v| v["intValue"].to_string().trim_matches('"').parse().ok());
    let service = exports[0]["resourceSpans"][0]["resource"]["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == "service.name")
        .and_then(|a| a["value"]["stringValue"].as_str().map(str::to_owned));
    Some((
        RequestSpan {
            parent: request["parentSpanId"].as_str()?.to_owned(),
            span: request["spanId"].as_str()?.to_owned(),
            route: attribute(request, "route")
                .and_then(|v| v["stringValue"].as_str().map(str::to_owned)),
            status,
        },
        service,
    ))
}

/// The same from protobuf exports (`ExportTraceServiceRequest`).
fn from_protobuf(bodies: &[Vec<u8>]) -> Option<(RequestSpan, Option<String>)> {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    use prost::Message;
    let exports: Vec<ExportTraceServiceRequest> = bodies
        .iter()
        .map(|b| ExportTraceServiceRequest::decode(b.as_slice()).expect("OTLP protobuf"))
        .collect();
    let value = |attributes: &[opentelemetry_proto::tonic::common::v1::KeyValue], key: &str| {
        attributes
            .iter()
            .find(|a| a.key == key)
            .and_then(|a| a.value.as_ref()?.value.clone())
    };
    for resource in exports.iter().flat_map(|e| &e.resource_spans) {
        for span in resource.scope_spans.iter().flat_map(|s| &s.spans) {
            if span.name != "request" || hex::encode(&span.trace_id) != TRACE_ID {
                continue;
            }
            let service = resource.resource.as_ref().and_then(|r| {
                match value(&r.attributes, "service.name") {
                    Some(Any::StringValue(name)) => Some(name),
                    _ => None,
                }
            });
            let route = match value(&span.attributes, "route") {
                Some(Any::StringValue(route)) => Some(route),
                _ => None,
            };
            let status = match value(&span.attributes, "status") {
                Some(Any::IntValue(status)) => Some(status),
                _ => None,
            };
            return Some((
                RequestSpan {
                    parent: hex::encode(&span.parent_span_id),
                    span: hex::encode(&span.span_id),
                    route,
                    status,
                },
                service,
            ));
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_spans_reach_the_collector_in_protobuf_by_default() {
    request_spans_reach_the_collector(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_spans_reach_the_collector_in_json() {
    request_spans_reach_the_collector(Some("http/json")).await;
}

/// One request with a `traceparent`, exported over `protocol` (the default when `None`).
async fn request_spans_reach_the_collector(protocol: Option<&'static str>) {
    let received = Arc::new(Mutex::new(Vec::<(String, Vec<u8>)>::new()));
    let sink = Arc::clone(&received);
    let collector = App::new()
        .with_state(sink)
        .use_middleware(Responder::default())
        .post("/v1/traces", |ctx: &mut Context| {
            let content_type = ctx
                .request_header("content-type")
                .unwrap_or_default()
                .to_owned();
            let sink = ctx
                .state()
                .get::<Arc<Mutex<Vec<(String, Vec<u8>)>>>>()
                .cloned();
            let body = ctx.take_raw_body();
            async move {
                let body = body
                    .read_limited(10 << 20)
                    .await
                    .map_err(|e| framework::HttpError::new(format!("{e:?}")))?;
                if let Some(sink) = sink {
                    sink.lock().unwrap().push((content_type, body.to_vec()));
                }
                Result::Ok("{}")
            }
        })
        .build()
        .unwrap();
    let collector = common::start(collector).await;
    let mut env = vec![
        ("DATABASE_URL", "memory".to_owned()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url("")),
        ("OTEL_BSP_SCHEDULE_DELAY", "100".to_owned()),
        ("OTEL_SERVICE_NAME", "users-under-test".to_owned()),
        ("RUST_LOG", "warn".to_owned()),
    ];
    if let Some(protocol) = protocol {
        env.push(("OTEL_EXPORTER_OTLP_PROTOCOL", protocol.to_owned()));
    }
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

    let received = received.lock().unwrap().clone();
    let expected_type = match protocol {
        Some(_) => "application/json",
        None => "application/x-protobuf",
    };
    assert!(!received.is_empty(), "nothing was exported");
    for (content_type, _) in &received {
        assert_eq!(content_type, expected_type);
    }
    let bodies: Vec<Vec<u8>> = received.into_iter().map(|(_, body)| body).collect();
    let found = match protocol {
        Some(_) => from_json(&bodies),
        None => from_protobuf(&bodies),
    };
    let (request, service_name) = found.unwrap_or_else(|| {
        panic!(
            "no request span of the trace among {} exports (the user-service binary needs the \
             otlp feature: the workspace's `cargo test` builds it so)",
            bodies.len()
        )
    });
    assert_eq!(request.parent, CLIENT_SPAN);
    assert!(
        request.span.len() == 16 && request.span != CLIENT_SPAN,
        "{request:?}"
    );
    assert_eq!(request.route.as_deref(), Some("/users/v1/login"));
    assert_eq!(request.status, Some(200));
    assert_eq!(service_name.as_deref(), Some("users-under-test"));
    collector.stop().await;
}

//! W3C trace context over real sockets: the client's trace is joined (or a new one started
//! when it sends none or a malformed one, or when incoming traces are not trusted), the
//! handler and the access-log line see it, the proxy passes it upstream with a span id of its
//! own and `tracestate` as received. The spans are checked in `trace_spans.rs`, alone in their
//! process.

mod common;

use std::sync::{Arc, Mutex};

use framework::middleware::logger::{Logger, LoggerConfig};
use framework::middleware::proxy::{Proxy, ProxyConfig};
use framework::middleware::responder::Responder;
use framework::middleware::trace::{Trace, TraceConfig, TraceExt};
use framework::{App, Context, Result, Service};
use serde_json::{Value, json};

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

/// What the upstream received: its `traceparent` and `tracestate`.
async fn upstream_echo(ctx: &mut Context) -> Result<Value> {
    Ok(json!({
        "traceparent": ctx.request_header("traceparent"),
        "tracestate": ctx.request_header("tracestate"),
    }))
}

async fn seen(ctx: &mut Context) -> Result<Value> {
    let trace = ctx.trace().expect("traced");
    Ok(json!({
        "trace_id": trace.trace_id(),
        "span_id": trace.span_id(),
        "parent_id": trace.parent_id(),
    }))
}

fn edge(upstream: &common::Running, trust: bool, lines: &Arc<Mutex<Vec<String>>>) -> Service {
    let sink = Arc::clone(lines);
    App::new()
        .use_middleware(Trace::new(TraceConfig::default().trust_incoming(trust)))
        .use_middleware(Logger::new(
            LoggerConfig::default()
                .format("{trace-id} {span-id} {status}")
                .on_log(Some(Arc::new(move |line, _, _| {
                    sink.lock().unwrap().push(line.to_owned());
                }))),
        ))
        .use_middleware(Responder::default())
        .get("/seen", seen)
        .any(
            "/up/*",
            Proxy::new(
                ProxyConfig::default()
                    .target(upstream.url("").parse().unwrap())
                    .rewrites(vec!["/up/*:/$1".into()]),
            )
            .unwrap(),
        )
        .build()
        .unwrap()
}

async fn json(client: &reqwest::Client, url: String, traceparent: Option<&str>) -> Value {
    let mut request = client.get(url).header("tracestate", "congo=t61rcWkgMzE");
    if let Some(parent) = traceparent {
        request = request.header("traceparent", parent);
    }
    let answer = request.send().await.unwrap();
    assert_eq!(answer.status(), 200);
    answer.json().await.unwrap()
}

fn is_hex(text: &str, len: usize) -> bool {
    text.len() == len
        && text
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

#[tokio::test]
async fn the_trace_is_joined_logged_and_passed_upstream() {
    let upstream = common::start(
        App::new()
            .use_middleware(Responder::default())
            .get("/echo", upstream_echo)
            .build()
            .unwrap(),
    )
    .await;
    let lines = Arc::new(Mutex::new(Vec::new()));
    let server = common::start(edge(&upstream, true, &lines)).await;
    let client = reqwest::Client::new();

    // Joined: the client's trace id, the client's span as parent, a span id of our own.
    let joined = json(&client, server.url("/seen"), Some(PARENT)).await;
    assert_eq!(joined["trace_id"], TRACE_ID);
    assert_eq!(joined["parent_id"], "00f067aa0ba902b7");
    let span = joined["span_id"].as_str().unwrap().to_owned();
    assert!(is_hex(&span, 16) && span != "00f067aa0ba902b7", "{span}");
    assert_eq!(
        lines.lock().unwrap().last().unwrap(),
        &format!("{TRACE_ID} {span} 200")
    );

    // Passed upstream: same trace, a new span id (neither the client's nor the request's),
    // tracestate as received.
    let upstream_saw = json(&client, server.url("/up/echo"), Some(PARENT)).await;
    let sent = upstream_saw["traceparent"].as_str().unwrap();
    let parts: Vec<&str> = sent.split('-').collect();
    assert_eq!(parts.len(), 4, "{sent}");
    assert_eq!((parts[0], parts[1], parts[3]), ("00", TRACE_ID, "01"));
    assert!(
        is_hex(parts[2], 16) && parts[2] != "00f067aa0ba902b7",
        "{sent}"
    );
    let logged = lines.lock().unwrap().last().unwrap().clone();
    let logged_span = logged.split(' ').nth(1).unwrap();
    assert_ne!(
        parts[2], logged_span,
        "the proxy's call has its own span id"
    );
    assert_eq!(upstream_saw["tracestate"], "congo=t61rcWkgMzE");

    // No traceparent, or a malformed one: a new trace, no parent; tracestate is not kept
    // without a valid traceparent.
    for parent in [None, Some("00-XYZ-00f067aa0ba902b7-01")] {
        let fresh = json(&client, server.url("/seen"), parent).await;
        let id = fresh["trace_id"].as_str().unwrap();
        assert!(is_hex(id, 32) && id != TRACE_ID, "{id}");
        assert_eq!(fresh["parent_id"], Value::Null);
        let upstream_saw = json(&client, server.url("/up/echo"), parent).await;
        assert_eq!(upstream_saw["tracestate"], Value::Null);
    }
    server.stop().await;

    // Not trusting incoming traces: a valid traceparent still starts a new trace.
    let server = common::start(edge(&upstream, false, &lines)).await;
    let own = json(&client, server.url("/seen"), Some(PARENT)).await;
    assert_ne!(own["trace_id"], TRACE_ID);
    assert_eq!(own["parent_id"], Value::Null);
    server.stop().await;
    upstream.stop().await;
}

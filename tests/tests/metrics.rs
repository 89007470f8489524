//! The Prometheus exposition over real sockets, read by a third-party parser (the Python
//! `prometheus_client` OpenMetrics parser, when installed; CI installs it): the request
//! counters match the requests sent, the label values stay bounded under 100 000 distinct
//! URIs, and the process's event counters (cache outcomes, limiter refusals, sessions
//! created) move with what the components did.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use framework::middleware::body_parser::BodyParser;
use framework::middleware::cache::{Cache, CacheConfig, MemoryCacheStore};
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::metrics::{Metrics, MetricsConfig};
use framework::middleware::rate_limiter::{
    MemoryRateStore, RateLimiter, RateLimiterConfig, RateQuota,
};
use framework::middleware::responder::Responder;
use framework::middleware::session::{MemoryStore, SessionConfig, SessionExt, SessionMiddleware};
use framework::{App, Context, HttpError, Result, Service};
use http::HeaderValue;

/// One sample: metric name and sorted labels.
type Key = (String, BTreeMap<String, String>);

const PARSER: &str = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        out.append([s.name, s.labels, s.value])
print(json.dumps(out))
"#;

/// The exposition's samples, as the Python parser reads them; without the parser installed
/// (and outside CI), a plain reading of the sample lines.
fn parse(text: &str) -> BTreeMap<Key, f64> {
    let python = std::process::Command::new("python3")
        .args(["-c", PARSER])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    if let Ok(mut child) = python {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        if out.status.success() {
            let samples: Vec<(String, BTreeMap<String, String>, f64)> =
                serde_json::from_slice(&out.stdout).unwrap();
            return samples
                .into_iter()
                .map(|(name, labels, value)| ((name, labels), value))
                .collect();
        }
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("No module named 'prometheus_client'"),
            "the parser refused the exposition: {err}\n{text}"
        );
    }
    assert!(
        std::env::var_os("REQUIRE_ALL_TESTS").is_none(),
        "python3 with prometheus_client is required (pip install prometheus_client)"
    );
    eprintln!("skipped the third-party parser: prometheus_client is not installed");
    plain_parse(text)
}

fn plain_parse(text: &str) -> BTreeMap<Key, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => {
                    let labels = rest
                        .trim_end_matches('}')
                        .split("\",")
                        .filter(|p| !p.is_empty())
                        .map(|pair| {
                            let (k, v) = pair.split_once('=').unwrap();
                            (k.to_owned(), v.trim_matches('"').to_owned())
                        })
                        .collect();
                    (name.to_owned(), labels)
                }
                None => (series.to_owned(), BTreeMap::new()),
            };
            let value = if value == "+Inf" {
                f64::INFINITY
            } else {
                value.parse().unwrap()
            };
            ((name, labels), value)
        })
        .collect()
}

fn key(name: &str, labels: &[(&str, &str)]) -> Key {
    (
        name.to_owned(),
        labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    )
}

async fn item(ctx: &mut Context) -> Result<String> {
    let id = ctx.param("id").unwrap_or_default().into_owned();
    if id == "bad" {
        return Err(HttpError::new("bad id")
            .with_status(http::StatusCode::BAD_REQUEST)
            .into());
    }
    Ok(id)
}

async fn echo(ctx: &mut Context) -> Result<String> {
    Ok(String::from_utf8_lossy(ctx.request_body()).into_owned())
}

fn app(metrics: &Metrics) -> Service {
    App::new()
        .use_middleware(metrics.stats())
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(BodyParser::default())
        .get("/items/:id", item)
        .post("/echo", echo)
        .endpoint(http::Method::GET, "/metrics", metrics.endpoint())
        .build()
        .unwrap()
}

async fn scrape(client: &reqwest::Client, server: &common::Running) -> String {
    let answer = client.get(server.url("/metrics")).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(
        answer.headers()["content-type"],
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    answer.text().await.unwrap()
}

#[tokio::test]
async fn the_counters_match_the_requests_sent() {
    let metrics = Metrics::new(MetricsConfig::default());
    let server = common::start(app(&metrics)).await;
    let client = reqwest::Client::new();
    for i in 0..7 {
        let r = client
            .get(server.url(&format!("/items/{i}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    for _ in 0..3 {
        let r = client.get(server.url("/items/bad")).send().await.unwrap();
        assert_eq!(r.status(), 400);
    }
    // Two JSON bodies of 11 bytes; the answers' lengths as sent.
    let mut sent_out = 0;
    for _ in 0..2 {
        let r = client
            .post(server.url("/echo"))
            .header("content-type", "application/json")
            .body(r#"{"a":"xyz"}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        sent_out += r.bytes().await.unwrap().len();
    }
    for i in 0..4 {
        let r = client
            .get(server.url(&format!("/nowhere/{i}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404);
    }
    let r = client.delete(server.url("/items/1")).send().await.unwrap();
    assert_eq!(r.status(), 405);

    let samples = parse(&scrape(&client, &server).await);
    let get = |k: Key| {
        samples
            .get(&k)
            .copied()
            .unwrap_or_else(|| panic!("{k:?} missing: {samples:#?}"))
    };
    let requests = "http_requests_total";
    let items = [("route", "/items/:id"), ("method", "GET")];
    assert_eq!(
        get(key(requests, &[items[0], items[1], ("status", "2xx")])),
        7.0
    );
    assert_eq!(
        get(key(requests, &[items[0], items[1], ("status", "4xx")])),
        3.0
    );
    assert_eq!(
        get(key(
            requests,
            &[("route", "/echo"), ("method", "POST"), ("status", "2xx")]
        )),
        2.0
    );
    assert_eq!(
        get(key(
            requests,
            &[("route", ""), ("method", "GET"), ("status", "4xx")]
        )),
        4.0
    );
    assert_eq!(
        get(key(
            requests,
            &[("route", ""), ("method", "DELETE"), ("status", "4xx")]
        )),
        1.0
    );
    assert_eq!(
        get(key(
            "http_request_duration_seconds_count",
            &[("route", "/items/:id")]
        )),
        10.0
    );
    assert_eq!(
        get(key(
            "http_request_duration_seconds_bucket",
            &[("route", "/items/:id"), ("le", "+Inf")]
        )),
        10.0
    );
    assert_eq!(
        get(key("http_request_body_bytes_total", &[("route", "/echo")])),
        22.0
    );
    assert_eq!(
        get(key("http_response_body_bytes_total", &[("route", "/echo")])),
        sent_out as f64
    );
    // The scrape itself is in flight while it renders.
    assert_eq!(get(key("http_requests_in_flight", &[])), 1.0);
    assert!(get(key("framework_open_connections", &[("protocol", "http1")])) >= 1.0);
    server.stop().await;
}

/// The set of series (names and labels) after 1 000 distinct URIs and after 100 000 is the
/// same: one series set per route, and one shared by every path without a route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_distinct_uris_keep_the_exposition_the_same_size() {
    let metrics = Metrics::new(MetricsConfig::default());
    let server = common::start(app(&metrics)).await;
    let client = reqwest::Client::new();
    let send = |from: usize, to: usize| {
        let tasks: Vec<_> = (0..16)
            .map(|task| {
                let client = client.clone();
                let base = server.url("");
                tokio::spawn(async move {
                    for n in (from + task..to).step_by(16) {
                        let path = if n % 2 == 0 {
                            format!("/items/{n}?q={n}")
                        } else {
                            format!("/unknown/{n}/x{n}")
                        };
                        client.get(format!("{base}{path}")).send().await.unwrap();
                    }
                })
            })
            .collect();
        async move {
            for task in tasks {
                task.await.unwrap();
            }
        }
    };
    send(0, 1_000).await;
    let first = scrape(&client, &server).await;
    send(1_000, 100_000).await;
    let last = scrape(&client, &server).await;
    let series = |text: &str| -> BTreeSet<Key> { parse(text).into_keys().collect() };
    let (before, after) = (series(&first), series(&last));
    // The scrape route appears once it has been scraped: compare without it.
    let without_scrape = |s: BTreeSet<Key>| -> BTreeSet<Key> {
        s.into_iter()
            .filter(|(_, labels)| labels.get("route").map(String::as_str) != Some("/metrics"))
            .collect()
    };
    let (before, after) = (without_scrape(before), without_scrape(after));
    assert_eq!(before, after, "new series appeared");
    // Same lines, so the size grows only by the digits of the values: at most 8 bytes a line
    // (1 000 → 100 000 is two more digits; a latency sum can gain a few more).
    let size = |text: &str| -> (usize, usize) {
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| !l.contains(r#"route="/metrics""#))
            .collect();
        (lines.len(), lines.iter().map(|l| l.len() + 1).sum())
    };
    let ((lines_before, bytes_before), (lines_after, bytes_after)) = (size(&first), size(&last));
    println!(
        "series: {}; exposition without the scrape route: {bytes_before} bytes in {lines_before} \
         lines after 1 000 URIs, {bytes_after} in {lines_after} after 100 000",
        after.len(),
    );
    assert_eq!(lines_before, lines_after, "the exposition gained lines");
    assert!(
        bytes_after <= bytes_before + 8 * lines_after,
        "{bytes_before} -> {bytes_after} bytes"
    );
    let samples = parse(&last);
    let items = key(
        "http_requests_total",
        &[
            ("route", "/items/:id"),
            ("method", "GET"),
            ("status", "2xx"),
        ],
    );
    let unknown = key(
        "http_requests_total",
        &[("route", ""), ("method", "GET"), ("status", "4xx")],
    );
    assert_eq!(samples[&items], 50_000.0);
    assert_eq!(samples[&unknown], 50_000.0);
    server.stop().await;
}

async fn cached(ctx: &mut Context) -> Result<&'static str> {
    ctx.set_response_header(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=60"),
    );
    Ok("cached")
}

async fn private(ctx: &mut Context) -> Result<&'static str> {
    ctx.set_response_header(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("private"),
    );
    Ok("private")
}

async fn touch(ctx: &mut Context) -> Result<&'static str> {
    ctx.session()?.set("seen", true)?;
    Ok("ok")
}

/// The only test of this binary that uses the cache, a rate limiter and sessions, so the
/// process-wide counters move by exactly what it does.
#[tokio::test]
async fn cache_outcomes_limiter_refusals_and_sessions_created_are_counted() {
    let metrics = Metrics::new(MetricsConfig::default());
    let quota = RateQuota::new(2, Duration::from_secs(60)).unwrap();
    let limited = RateLimiter::new(RateLimiterConfig::new(
        ["h:x-client"],
        MemoryRateStore::new(quota),
    ))
    .unwrap();
    // On its two routes only, so the other requests leave its counters alone.
    let cache = framework::share(Cache::new(
        Arc::new(MemoryCacheStore::new()),
        CacheConfig::default(),
    ));
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(SessionMiddleware::new(
            Arc::new(MemoryStore::new()),
            SessionConfig::default(),
        ))
        .route_with(http::Method::GET, "/cached", vec![cache.clone()], cached)
        .route_with(http::Method::GET, "/private", vec![cache], private)
        .get("/touch", touch)
        .route_with(
            http::Method::GET,
            "/limited",
            vec![framework::share(limited)],
            |_ctx: &mut Context| async { Ok("ok") },
        )
        .endpoint(http::Method::GET, "/metrics", metrics.endpoint())
        .build()
        .unwrap();
    let server = common::start(service).await;
    let client = reqwest::Client::builder()
        .cookie_store(true)
        .build()
        .unwrap();
    let read = |text: &str, name: &str, labels: &[(&str, &str)]| {
        parse(text).get(&key(name, labels)).copied().unwrap_or(0.0)
    };
    let before = scrape(&client, &server).await;

    // Cache: miss then hit; private: a miss that leaves a hit-for-pass marker, then a pass.
    for path in ["/cached", "/cached", "/private", "/private"] {
        let r = client.get(server.url(path)).send().await.unwrap();
        assert_eq!(r.status(), 200);
    }
    // Rate limit of 2: the third is refused.
    for expected in [200, 200, 429] {
        let r = client
            .get(server.url("/limited"))
            .header("x-client", "a")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), expected);
    }
    // One new session, then the same one again (the cookie comes back).
    for _ in 0..2 {
        assert_eq!(
            client
                .get(server.url("/touch"))
                .send()
                .await
                .unwrap()
                .status(),
            200
        );
    }

    let after = scrape(&client, &server).await;
    let delta = |name: &str, labels: &[(&str, &str)]| {
        read(&after, name, labels) - read(&before, name, labels)
    };
    let cache = "framework_cache_requests_total";
    assert_eq!(delta(cache, &[("outcome", "hit")]), 1.0);
    assert_eq!(delta(cache, &[("outcome", "hit_for_pass")]), 1.0);
    assert_eq!(delta(cache, &[("outcome", "miss")]), 2.0);
    assert_eq!(
        delta(
            "framework_limiter_refusals_total",
            &[("component", "rate_limiter")]
        ),
        1.0
    );
    assert_eq!(delta("framework_sessions_created_total", &[]), 1.0);
    server.stop().await;
}

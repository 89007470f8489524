//! Health and readiness probes: `GET /livez` (the process answers) and `GET /readyz` (its
//! backends answer in time, and it is not draining), for a load balancer or Kubernetes.
//!
//! - **`/livez`**: **200** `ok` at once, whatever the backends do: a liveness probe that
//!   failed on a database outage would have the orchestrator restart healthy processes.
//! - **`/readyz`**: runs every registered check ([`Health::check`]) at once, each under
//!   [`HealthConfig::timeout`]; **200** when all succeed, **503** when one fails or runs late,
//!   with a JSON report either way: `{"status":"ready","checks":{"users":{"status":"ok"}}}`,
//!   `{"status":"unavailable","checks":{"redis":{"status":"down"}}}`. The report names the
//!   check that failed and nothing more: the probe is public, and a backend's error text
//!   (addresses, server messages) is for the operator, so it goes to the log (warn, see below)
//!   and never into the answer. Once a graceful shutdown has begun ([`Context::is_draining`], see
//!   [`ServerLimits::drain_delay`](crate::ServerLimits::drain_delay)) it answers **503**
//!   `{"status":"draining"}` without running the checks, while the server still serves
//!   requests: the balancer takes the instance out before its connections are refused.
//! - **Backends are asked at most once per [`HealthConfig::cache_for`]** (1 s by default):
//!   probes that arrive meanwhile get the last report, and probes that arrive while a round
//!   runs wait for it, so a flood of probes costs the stores one round per second, not one
//!   per probe. A round takes at most `timeout`.
//! - **Not in the access log**: mount it outside the logger and the rest, so it answers
//!   before they see the request; only
//!   [`security_headers`](crate::middleware::security_headers) goes outside it, so the
//!   probes' answers carry `nosniff` (and HSTS over HTTPS) like every other. Each probe is a `tracing` debug event; a change
//!   of readiness (ready, unavailable, and which check failed) is logged at info or warn once.
//!   A failure whose detail changed while still unavailable is logged again, so the log
//!   names each distinct cause (the check's name and its error text, or `timed out after
//!   1s`). The paths answer `GET` and `HEAD`; other methods and paths pass on. Answers carry
//!   `Cache-Control: no-store`.
//!
//! ```
//! use std::time::Duration;
//! use framework::middleware::health::{Health, HealthConfig};
//!
//! let health = Health::new(HealthConfig::default()
//!     .timeout(Duration::from_millis(500)))
//! .check("database", || async {
//!     // e.g. `SELECT 1` on the pool
//!     Ok::<(), std::io::Error>(())
//! });
//! let app = framework::App::new().use_middleware(health);
//! # let _ = app;
//! ```

use std::borrow::Cow;
use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, Method, StatusCode};

use crate::context::Context;
use crate::error::Result;
use crate::handler::{Before, BoxFuture, Middleware, Next};

/// Health settings.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HealthConfig {
    /// The liveness path; default `/livez`.
    pub live_path: String,
    /// The readiness path; default `/readyz`.
    pub ready_path: String,
    /// How long each check may take before it counts as failed; default 1 s.
    pub timeout: Duration,
    /// How long a readiness report is reused; default 1 s. Zero runs the checks for every
    /// probe (still one round at a time).
    pub cache_for: Duration,
}

crate::config::setters!(HealthConfig {
    live_path => String,
    ready_path => String,
    timeout: Duration,
    cache_for: Duration,
});

impl Default for HealthConfig {
    fn default() -> Self {
        Self {
            live_path: "/livez".to_owned(),
            ready_path: "/readyz".to_owned(),
            timeout: Duration::from_secs(1),
            cache_for: Duration::from_secs(1),
        }
    }
}

/// One readiness check: a future that says whether a backend answers.
type Check = Arc<dyn Fn() -> BoxFuture<'static, std::result::Result<(), String>> + Send + Sync>;

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Ok,
    Failed(String),
}

/// One round of checks.
#[derive(Debug, Clone)]
struct Report {
    at: Instant,
    ready: bool,
    /// The JSON answer.
    body: Bytes,
}

/// The last readiness logged: 0 none yet, 1 ready, 2 unavailable.
const UNKNOWN: u8 = 0;
const READY: u8 = 1;
const UNAVAILABLE: u8 = 2;

/// The health component: see the module docs.
pub struct Health {
    config: HealthConfig,
    checks: Vec<(Cow<'static, str>, Check)>,
    /// The last report; the async lock also makes probes wait for a round in progress instead
    /// of starting their own (held across the round's await, which `timeout` bounds).
    last: tokio::sync::Mutex<Option<Report>>,
    logged: AtomicU8,
    /// The failures last logged (`name: detail; …`), so a new cause is logged once.
    logged_failures: std::sync::Mutex<String>,
}

impl Health {
    /// A health component with no checks yet: `/readyz` is ready unless draining.
    pub fn new(config: HealthConfig) -> Self {
        Self {
            config,
            checks: Vec::new(),
            last: tokio::sync::Mutex::new(None),
            logged: AtomicU8::new(UNKNOWN),
            logged_failures: std::sync::Mutex::new(String::new()),
        }
    }

    /// Adds a readiness check named `name` (the key in the report): `check()` is awaited for
    /// each round, under the configured timeout; an error fails readiness with its text.
    #[must_use]
    pub fn check<F, Fut, E>(mut self, name: impl Into<Cow<'static, str>>, check: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<(), E>> + Send + 'static,
        E: Display,
    {
        let check: Check = Arc::new(move || {
            let future = check();
            Box::pin(async move { future.await.map_err(|e| e.to_string()) })
        });
        self.checks.push((name.into(), check));
        self
    }

    /// Which probe `ctx` is, if any.
    fn probe(&self, ctx: &Context) -> Option<bool> {
        if ctx.method() != Method::GET && ctx.method() != Method::HEAD {
            return None;
        }
        let path = ctx.path();
        if path == self.config.live_path {
            Some(false)
        } else if path == self.config.ready_path {
            Some(true)
        } else {
            None
        }
    }

    /// Runs every check at once, each under the timeout.
    async fn round(&self) -> Report {
        let timeout = self.config.timeout;
        let outcomes =
            futures_util::future::join_all(self.checks.iter().map(|(_, check)| async move {
                match tokio::time::timeout(timeout, check()).await {
                    Ok(Ok(())) => Outcome::Ok,
                    Ok(Err(message)) => Outcome::Failed(message),
                    Err(_) => Outcome::Failed(format!("timed out after {timeout:?}")),
                }
            }))
            .await;
        let ready = outcomes.iter().all(|o| *o == Outcome::Ok);
        let mut checks = serde_json::Map::new();
        let mut failed = Vec::new();
        for ((name, _), outcome) in self.checks.iter().zip(outcomes) {
            let entry = match outcome {
                Outcome::Ok => serde_json::json!({"status": "ok"}),
                Outcome::Failed(error) => {
                    failed.push(format!("{name}: {error}"));
                    serde_json::json!({"status": "down"})
                }
            };
            checks.insert(name.to_string(), entry);
        }
        let status = if ready { "ready" } else { "unavailable" };
        self.log_change(ready, &failed);
        let body = serde_json::json!({"status": status, "checks": checks});
        Report {
            at: Instant::now(),
            ready,
            body: Bytes::from(body.to_string()),
        }
    }

    /// Logs readiness when it changes (and the first time), and the failures' detail whenever
    /// it differs from what was last logged.
    fn log_change(&self, ready: bool, failed: &[String]) {
        let now = if ready { READY } else { UNAVAILABLE };
        let changed = self.logged.swap(now, Ordering::Relaxed) != now;
        if ready {
            if changed {
                tracing::info!("readiness: ready");
            }
            return;
        }
        let failed = failed.join("; ");
        {
            let mut last = self
                .logged_failures
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !changed && *last == failed {
                tracing::debug!(failed, "readiness: still unavailable");
                return;
            }
            last.clone_from(&failed);
        }
        tracing::warn!(failed, "readiness: unavailable");
    }

    /// The report for this probe: the last one while it is fresh, else a new round.
    async fn report(&self) -> Report {
        let mut last = self.last.lock().await;
        if let Some(report) = last.as_ref()
            && report.at.elapsed() < self.config.cache_for
        {
            return report.clone();
        }
        let report = self.round().await;
        *last = Some(report.clone());
        report
    }
}

/// Sets a probe's answer.
fn answer(ctx: &mut Context, status: StatusCode, content_type: &'static str, body: Bytes) {
    ctx.set_status(status);
    let headers = ctx.response_headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    ctx.body_mut().set_bytes(body);
}

const JSON: &str = "application/json";

impl Middleware for Health {
    fn before(&self, ctx: &mut Context) -> Before {
        let Some(ready_probe) = self.probe(ctx) else {
            return Before::Pass;
        };
        if !ready_probe {
            tracing::debug!("liveness probe");
            answer(
                ctx,
                StatusCode::OK,
                "text/plain; charset=utf-8",
                Bytes::from_static(b"ok\n"),
            );
            return Before::Answer(Ok(()));
        }
        if ctx.is_draining() {
            tracing::debug!("readiness probe: draining");
            answer(
                ctx,
                StatusCode::SERVICE_UNAVAILABLE,
                JSON,
                Bytes::from_static(br#"{"status":"draining"}"#),
            );
            return Before::Answer(Ok(()));
        }
        if self.checks.is_empty() {
            answer(
                ctx,
                StatusCode::OK,
                JSON,
                Bytes::from_static(br#"{"status":"ready","checks":{}}"#),
            );
            return Before::Answer(Ok(()));
        }
        Before::Handle
    }

    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        Box::pin(async move {
            if self.probe(ctx) != Some(true) {
                return next.run(ctx).await;
            }
            let report = self.report().await;
            tracing::debug!(ready = report.ready, "readiness probe");
            let status = if report.ready {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            answer(ctx, status, JSON, report.body);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Checks run once per `cache_for`, however many probes ask.
    #[tokio::test]
    async fn a_report_is_reused_while_fresh() {
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&runs);
        let health = Health::new(HealthConfig {
            cache_for: Duration::from_secs(60),
            ..HealthConfig::default()
        })
        .check("counted", move || {
            counted.fetch_add(1, Ordering::SeqCst);
            async { Ok::<(), String>(()) }
        });
        for _ in 0..5 {
            assert!(health.report().await.ready);
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    /// A check that fails, and one that hangs, both fail readiness; the round still ends
    /// within the timeout.
    #[tokio::test]
    async fn a_failing_or_hung_check_fails_readiness_in_time() {
        let health = Health::new(HealthConfig {
            timeout: Duration::from_millis(50),
            cache_for: Duration::ZERO,
            ..HealthConfig::default()
        })
        .check("up", || async { Ok::<(), String>(()) })
        .check("down", || async { Err("connection refused") })
        .check("hung", || {
            std::future::pending::<std::result::Result<(), String>>()
        });
        let started = Instant::now();
        let report = health.report().await;
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(!report.ready);
        let body: serde_json::Value = serde_json::from_slice(&report.body).unwrap();
        assert_eq!(body["status"], "unavailable");
        assert_eq!(body["checks"]["up"], serde_json::json!({"status": "ok"}));
        // Which check failed, never why: the detail is the log's.
        assert_eq!(
            body["checks"]["down"],
            serde_json::json!({"status": "down"})
        );
        assert_eq!(
            body["checks"]["hung"],
            serde_json::json!({"status": "down"})
        );
        let text = String::from_utf8_lossy(&report.body);
        assert!(
            !text.contains("refused") && !text.contains("timed out"),
            "{text}"
        );
    }
}

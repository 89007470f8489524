//! Health and readiness over real sockets: `/livez` always answers, `/readyz` follows its
//! checks (a failing and a hung backend turn it 503 within the timeout, naming the check but
//! not its error text), the probes leave no
//! access-log line, and a graceful shutdown turns readiness 503 while the server still serves
//! for the drain delay, with `Connection: close` on HTTP/1 answers, before it stops accepting.

mod common;

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use framework::ServerLimits;
use framework::middleware::health::{Health, HealthConfig};
use framework::middleware::logger::{Logger, LoggerConfig};
use framework::middleware::responder::Responder;
use framework::{App, Context, Result};

/// 0 up, 1 refusing, 2 hung.
fn backend_check(
    state: &Arc<AtomicU8>,
) -> impl Fn() -> futures_util::future::BoxFuture<'static, std::result::Result<(), String>>
+ Send
+ Sync
+ 'static {
    let state = Arc::clone(state);
    move || {
        let now = state.load(Ordering::SeqCst);
        Box::pin(async move {
            match now {
                0 => Ok(()),
                1 => Err("connection refused".to_owned()),
                _ => std::future::pending().await,
            }
        })
    }
}

fn app(backend: &Arc<AtomicU8>, lines: &Arc<Mutex<Vec<String>>>, limits: ServerLimits) -> App {
    let seen = Arc::clone(lines);
    App::new()
        .server_limits(limits)
        .use_middleware(
            Health::new(
                HealthConfig::default()
                    .timeout(Duration::from_millis(200))
                    .cache_for(Duration::ZERO),
            )
            .check("backend", backend_check(backend)),
        )
        .use_middleware(Logger::new(
            LoggerConfig::default()
                .format("{method} {path} {status}")
                .on_log(Some(Arc::new(move |line, _, _| {
                    seen.lock().unwrap().push(line.to_owned());
                }))),
        ))
        .use_middleware(Responder::default())
        .get("/hello", |_ctx: &mut Context| async { Result::Ok("hello") })
}

#[tokio::test]
async fn readiness_follows_the_checks_and_probes_are_not_logged() {
    let backend = Arc::new(AtomicU8::new(0));
    let lines = Arc::new(Mutex::new(Vec::new()));
    let server = common::start(
        app(&backend, &lines, ServerLimits::default())
            .build()
            .unwrap(),
    )
    .await;
    let client = reqwest::Client::new();

    let live = client.get(server.url("/livez")).send().await.unwrap();
    assert_eq!(live.status(), 200);
    assert_eq!(live.headers()["cache-control"], "no-store");
    assert_eq!(live.text().await.unwrap(), "ok\n");

    let ready = client.get(server.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
    assert_eq!(ready.headers()["content-type"], "application/json");
    let body: serde_json::Value = ready.json().await.unwrap();
    assert_eq!(body["status"], "ready");
    assert_eq!(body["checks"]["backend"]["status"], "ok");

    backend.store(1, Ordering::SeqCst);
    let refused = client.get(server.url("/readyz")).send().await.unwrap();
    assert_eq!(refused.status(), 503);
    let text = refused.text().await.unwrap();
    // Which check failed, and nothing of why: the backend's error text is the log's.
    assert!(!text.contains("refused"), "{text}");
    let body: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"status": "unavailable", "checks": {"backend": {"status": "down"}}})
    );

    // A hung backend costs the probe the timeout (200 ms), not a hang.
    backend.store(2, Ordering::SeqCst);
    let asked = Instant::now();
    let hung = client.get(server.url("/readyz")).send().await.unwrap();
    let took = asked.elapsed();
    assert_eq!(hung.status(), 503);
    let body: serde_json::Value = hung.json().await.unwrap();
    assert_eq!(
        body["checks"]["backend"],
        serde_json::json!({"status": "down"})
    );
    assert!(took < Duration::from_secs(5), "took {took:?}");
    // Liveness does not depend on the backends.
    let live = client.get(server.url("/livez")).send().await.unwrap();
    assert_eq!(live.status(), 200);

    backend.store(0, Ordering::SeqCst);
    assert_eq!(
        client
            .get(server.url("/readyz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    // Other methods pass on to the app: it has no such route, so 404 as usual, not a probe.
    let posted = client.post(server.url("/readyz")).send().await.unwrap();
    assert_eq!(posted.status(), 404);
    assert!(!posted.text().await.unwrap().contains("\"status\""));

    assert_eq!(
        client
            .get(server.url("/hello"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    let logged = lines.lock().unwrap().clone();
    assert!(
        logged
            .iter()
            .all(|l| !l.contains("/livez") && !l.contains("GET /readyz")),
        "probes logged: {logged:?}"
    );
    assert!(logged.contains(&"GET /hello 200".to_owned()), "{logged:?}");
    server.stop().await;
}

/// From the shutdown signal, for the drain delay: `/readyz` says 503 draining, requests are
/// still served (new connections too), and HTTP/1 answers ask the client to close. Then the
/// server stops accepting.
#[tokio::test]
async fn a_graceful_shutdown_drains_before_it_refuses() {
    let backend = Arc::new(AtomicU8::new(0));
    let lines = Arc::new(Mutex::new(Vec::new()));
    let limits = ServerLimits::default().drain_delay(Duration::from_millis(1500));
    let mut server = common::start(app(&backend, &lines, limits).build().unwrap()).await;
    let addr = server.addr;
    let before = common::raw_get(addr, "/readyz").await;
    assert_eq!(before.status, 200);

    let signalled = Instant::now();
    let stopped = server.signal_shutdown();
    // The drain is seen at once...
    let readiness = common::raw_get(addr, "/readyz").await;
    assert_eq!(readiness.status, 503);
    assert_eq!(readiness.text(), r#"{"status":"draining"}"#);
    // ...while the app still serves, on a new connection, asking the client to go: a
    // keep-alive request is answered with `Connection: close` and the connection closes.
    let hello = common::raw_request(addr, "GET /hello HTTP/1.1\r\nHost: test\r\n\r\n").await;
    assert_eq!(hello.status, 200);
    assert_eq!(hello.header("connection"), Some("close"));
    assert!(
        signalled.elapsed() < Duration::from_millis(1500),
        "checked within the delay"
    );
    stopped.await.unwrap().unwrap();
    assert!(
        signalled.elapsed() >= Duration::from_millis(1500),
        "the server stopped only after the drain delay"
    );
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

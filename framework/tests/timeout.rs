//! Timeout, through the in-process client on tokio's paused clock, so the boundaries are
//! exact: a chain that returns a millisecond before the deadline is answered, one a
//! millisecond after it gets the configured status; what the abandoned chain held is released
//! at once; a streamed body is cut when it idles. The same over a real socket:
//! `tests/tests/timeout.rs`.

use std::sync::Arc;
use std::time::Duration;

use framework::body::{BodyStream, Bytes};
use framework::middleware::concurrent_limiter::{ConcurrentLimiter, ConcurrentLimiterConfig};
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::timeout::{CATEGORY, Timeout, TimeoutConfig};
use framework::testing::TestClient;
use framework::{App, Context, Group, Result, share};
use http::StatusCode;

const DEADLINE: Duration = Duration::from_millis(1000);

fn timeout(deadline: Duration, status: StatusCode) -> Timeout {
    Timeout::new(TimeoutConfig::default().deadline(deadline).status(status)).expect("valid")
}

/// Sleeps for `?ms=` milliseconds, then answers.
async fn sleepy(ctx: &mut Context) -> Result<String> {
    let ms: u64 = ctx.query("ms").and_then(|ms| ms.parse().ok()).unwrap_or(0);
    ctx.set_response_header("x-half-written", http::HeaderValue::from_static("1"));
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(format!("slept {ms} ms"))
}

fn app() -> App {
    App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(timeout(DEADLINE, StatusCode::SERVICE_UNAVAILABLE))
        .get("/sleep", sleepy)
}

#[tokio::test(start_paused = true)]
async fn just_under_the_deadline_is_answered_just_over_it_is_503() {
    let client = TestClient::new(app().build().unwrap());
    let res = client.get("/sleep?ms=999").send().await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(res.text(), "slept 999 ms");

    let started = tokio::time::Instant::now();
    let res = client
        .get("/sleep?ms=1001")
        .header("accept", "application/json")
        .send()
        .await;
    assert_eq!(res.status, 503, "{}", res.text());
    assert_eq!(
        started.elapsed(),
        DEADLINE,
        "answered at the deadline, not after the handler"
    );
    let body = res.json();
    assert_eq!(body["category"], CATEGORY);
    assert_eq!(body["message"], "the request took longer than 1000 ms");
    assert_eq!(
        res.header("x-half-written"),
        None,
        "what the abandoned handler set is cleared"
    );
}

#[tokio::test(start_paused = true)]
async fn the_status_is_configurable_and_a_route_may_have_a_shorter_deadline() {
    let service = app()
        .group(
            Group::new("/fast")
                .use_middleware(timeout(
                    Duration::from_millis(100),
                    StatusCode::GATEWAY_TIMEOUT,
                ))
                .get("/sleep", sleepy),
        )
        .route_with(
            http::Method::GET,
            "/slow-client",
            vec![share(timeout(
                Duration::from_millis(50),
                StatusCode::REQUEST_TIMEOUT,
            ))],
            sleepy,
        )
        .build()
        .unwrap();
    let client = TestClient::new(service);
    assert_eq!(client.get("/fast/sleep?ms=99").send().await.status, 200);
    assert_eq!(client.get("/fast/sleep?ms=101").send().await.status, 504);
    assert_eq!(client.get("/slow-client?ms=51").send().await.status, 408);
    // The app's own deadline is still there around the group's.
    assert_eq!(client.get("/sleep?ms=500").send().await.status, 200);
}

/// Waits for a lock in the app state, holds it for `?ms=`.
async fn locked(ctx: &mut Context) -> Result<&'static str> {
    let ms: u64 = ctx.query("ms").and_then(|ms| ms.parse().ok()).unwrap_or(0);
    let lock = Arc::clone(ctx.state().get::<Arc<tokio::sync::Mutex<()>>>().unwrap());
    let _guard = lock.lock().await;
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok("had the lock")
}

#[tokio::test(start_paused = true)]
async fn an_abandoned_handler_releases_its_lock_and_its_limiter_lock_at_once() {
    let limiter =
        ConcurrentLimiter::new(ConcurrentLimiterConfig::default().keys(vec!["h:x-account".into()]))
            .unwrap();
    let service = app()
        .with_state(Arc::new(tokio::sync::Mutex::new(())))
        .route_with(http::Method::GET, "/locked", vec![share(limiter)], locked)
        .build()
        .unwrap();
    let client = TestClient::new(service);
    let res = client
        .get("/locked?ms=3600000")
        .header("x-account", "ada")
        .send()
        .await;
    assert_eq!(res.status, 503);
    // The same key at once: neither the limiter's lock (429) nor the mutex (a second 503)
    // is still held by the abandoned request.
    let started = tokio::time::Instant::now();
    let res = client
        .get("/locked?ms=0")
        .header("x-account", "ada")
        .send()
        .await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(res.text(), "had the lock");
    assert_eq!(started.elapsed(), Duration::ZERO, "no wait for the lock");
}

/// One chunk, then `?ms=` of silence, then a second chunk.
async fn stalls(ctx: &mut Context) -> Result {
    let ms: u64 = ctx.query("ms").and_then(|ms| ms.parse().ok()).unwrap_or(0);
    let chunks = framework::body::stream::unfold(0, move |i| async move {
        match i {
            0 => Some((Ok::<_, std::io::Error>(Bytes::from("first\n")), 1)),
            1 => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Some((Ok(Bytes::from("second\n")), 2))
            }
            _ => None,
        }
    });
    ctx.body_mut().set_stream(BodyStream::from_stream(chunks));
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_stream_outlives_the_deadline_but_not_its_idle_timeout() {
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(
            Timeout::new(
                TimeoutConfig::default()
                    .deadline(Duration::from_millis(100))
                    .stream_idle(Some(Duration::from_millis(500))),
            )
            .unwrap(),
        )
        .get("/stream", stalls)
        .build()
        .unwrap();
    let client = TestClient::new(service);
    // 499 ms of silence, 5 times the deadline: the whole body arrives.
    let res = client.get("/stream?ms=499").send().await;
    assert_eq!(res.status, 200);
    assert_eq!(res.text(), "first\nsecond\n");
    // 501 ms: the body fails after its first chunk (the test client then keeps no bytes).
    let started = tokio::time::Instant::now();
    let res = client.get("/stream?ms=501").send().await;
    assert_eq!(res.status, 200, "the head was out before the stream idled");
    assert_eq!(res.text(), "", "the body failed");
    assert_eq!(started.elapsed(), Duration::from_millis(500));
}

#[test]
fn configurations_that_fail_every_request_are_refused() {
    for (config, says) in [
        (
            TimeoutConfig::default().deadline(Duration::ZERO),
            "deadline",
        ),
        (
            TimeoutConfig::default().stream_idle(Some(Duration::ZERO)),
            "stream_idle",
        ),
        (
            TimeoutConfig::default().status(StatusCode::OK),
            "not an error status",
        ),
    ] {
        let err = Timeout::new(config).unwrap_err();
        assert_eq!(err.component(), "timeout");
        assert!(err.message().contains(says), "{err}");
    }
    let defaults = TimeoutConfig::default();
    assert_eq!(defaults.deadline, Duration::from_secs(30));
    assert_eq!(defaults.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(defaults.stream_idle, Some(Duration::from_secs(30)));
}

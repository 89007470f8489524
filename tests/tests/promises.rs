//! Promises of the guide that no test checked, each over a real socket: `TRACE` is a safe
//! method to CSRF; cookie changes go out with error answers; `fallback_endpoint` answers
//! unrouted paths; the cache never stores an answer that sets a cookie through the jar; a
//! global limiter's slot is free again after a timeout's 503; a multipart `Content-Length`
//! over the total is refused before the body is sent. (The avatar upload's CSRF check:
//! `user_flow.rs`, whose binary links the user service's controllers.)

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use framework::cookies::Cookie;
use framework::cookies::CookiesExt;
use framework::middleware::cache::{Cache, CacheConfig, MemoryCacheStore};
use framework::middleware::csrf::{Csrf, CsrfConfig};
use framework::middleware::global_concurrent_limiter::{
    GlobalConcurrentLimiter, GlobalConcurrentLimiterConfig,
};
use framework::middleware::timeout::{Timeout, TimeoutConfig};
use framework::multipart::{Multipart, MultipartLimits};
use framework::{App, Context, HttpError, handler_fn};
use http::{Method, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `request` as written, and the answer's status line and head.
async fn send(server: &common::Running, request: &str) -> common::RawResponse {
    common::raw_request(server.addr, request).await
}

#[tokio::test]
async fn trace_is_a_safe_method_to_csrf() {
    let service = App::new()
        .use_middleware(Csrf::new(CsrfConfig::default()).unwrap())
        .route(Method::TRACE, "/echo", |_ctx: &mut Context| async {
            Ok("traced")
        })
        .route(Method::POST, "/echo", |_ctx: &mut Context| async {
            Ok("posted")
        })
        .build()
        .unwrap();
    let server = common::start(service).await;
    let forged = "Host: t\r\nSec-Fetch-Site: cross-site\r\nOrigin: https://evil.example\r\n\
                  Content-Length: 0\r\nConnection: close\r\n\r\n";
    let trace = send(&server, &format!("TRACE /echo HTTP/1.1\r\n{forged}")).await;
    assert_eq!((trace.status, trace.text().as_str()), (200, "traced"));
    // The same headers on a POST: refused, so the CSRF check is there.
    let post = send(&server, &format!("POST /echo HTTP/1.1\r\n{forged}")).await;
    assert_eq!(post.status, 403, "{}", post.head);
    server.stop().await;
}

#[tokio::test]
async fn cookie_changes_go_out_with_an_error_answer() {
    let service = App::new()
        .get("/fail", |ctx: &mut Context| {
            let added = ctx.cookies().add(Cookie::build(("seen", "1")).path("/"));
            async move {
                added?;
                Err::<String, _>(HttpError::with(StatusCode::CONFLICT, "t", "taken").into())
            }
        })
        .build()
        .unwrap();
    let server = common::start(service).await;
    let answer = common::raw_get(server.addr, "/fail").await;
    assert_eq!(answer.status, 409);
    assert_eq!(answer.header("set-cookie"), Some("seen=1; Path=/"));
    server.stop().await;
}

#[tokio::test]
async fn the_fallback_endpoint_answers_paths_no_route_has() {
    let service = App::new()
        .get("/known", |_ctx: &mut Context| async { Ok("known") })
        .fallback_endpoint(handler_fn(|ctx: &mut Context| {
            let text = format!("fallback for {}", ctx.path());
            ctx.body_mut().set_bytes(text);
            async { Ok(()) }
        }))
        .build()
        .unwrap();
    let server = common::start(service).await;
    let known = common::raw_get(server.addr, "/known").await;
    assert_eq!(known.text(), "known");
    let other = common::raw_get(server.addr, "/app/settings").await;
    assert_eq!(
        (other.status, other.text().as_str()),
        (200, "fallback for /app/settings")
    );
    server.stop().await;
}

#[tokio::test]
async fn the_cache_never_stores_an_answer_that_sets_a_cookie_through_the_jar() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let service = App::new()
        .use_middleware(Cache::new(
            Arc::new(MemoryCacheStore::new()),
            CacheConfig::default(),
        ))
        .get("/page", move |ctx: &mut Context| {
            counted.fetch_add(1, Ordering::SeqCst);
            ctx.set_response_header(
                http::header::CACHE_CONTROL,
                http::HeaderValue::from_static("public, max-age=60"),
            );
            let added = ctx.cookies().add(Cookie::new("visit", "1"));
            async move {
                added?;
                Ok("page")
            }
        })
        .build()
        .unwrap();
    let server = common::start(service).await;
    for _ in 0..3 {
        let answer = common::raw_get(server.addr, "/page").await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.header("set-cookie"), Some("visit=1"));
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3,
        "no answer came from the cache"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_limiter_slot_is_free_again_after_a_timeouts_503() {
    let service = App::new()
        .use_middleware(GlobalConcurrentLimiter::new(
            GlobalConcurrentLimiterConfig::default().max(1),
        ))
        .use_middleware(
            Timeout::new(TimeoutConfig::default().deadline(Duration::from_millis(200))).unwrap(),
        )
        .get("/hang", |_ctx: &mut Context| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok("late")
        })
        .get("/quick", |_ctx: &mut Context| async { Ok("quick") })
        .build()
        .unwrap();
    let server = common::start(service).await;
    let hung = common::raw_get(server.addr, "/hang").await;
    assert_eq!(hung.status, 503, "{}", hung.head);
    // The one slot was the hung request's: the next request gets it, not a 429.
    let next = common::raw_get(server.addr, "/quick").await;
    assert_eq!((next.status, next.text().as_str()), (200, "quick"));
    server.stop().await;
}

#[tokio::test]
async fn a_multipart_length_over_the_total_is_refused_before_the_body_is_sent() {
    let service = App::new()
        .post("/upload", |ctx: &mut Context| {
            let form = Multipart::<framework::multipart::AnyParts>::from_context(
                ctx,
                MultipartLimits::DEFAULT.total_size(1000),
            );
            async move {
                let mut form = form?;
                while form.next_part().await?.is_some() {}
                Ok("read")
            }
        })
        .build()
        .unwrap();
    let server = common::start(service).await;
    let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    // The head only: a client that waits for `100 Continue` or a refusal before sending.
    socket
        .write_all(
            b"POST /upload HTTP/1.1\r\nHost: t\r\nContent-Type: multipart/form-data; \
              boundary=b\r\nContent-Length: 1001\r\nAccept: application/json\r\n\r\n",
        )
        .await
        .unwrap();
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut answer))
        .await
        .expect("answered without the body")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        answer.contains("exceeds the total size limit of 1000 bytes"),
        "{answer}"
    );
    server.stop().await;
}

/// A comma may stand inside an entity tag (RFC 9110 section 8.8.3): `If-None-Match: "a,b", "c"`
/// names two tags, and matches an answer tagged `"a,b"`; `"a", "b"` names neither.
#[tokio::test]
async fn an_entity_tag_with_a_comma_is_matched_whole() {
    let service = App::new()
        .use_middleware(framework::middleware::fresh::Fresh)
        .get("/tagged", |ctx: &mut Context| {
            ctx.set_response_header(
                http::header::ETAG,
                http::HeaderValue::from_static("\"a,b\""),
            );
            async { Ok("tagged") }
        })
        .build()
        .unwrap();
    let server = common::start(service).await;
    for (list, status) in [
        ("\"a,b\", \"c\"", 304),
        ("\"c\", \"a,b\"", 304),
        ("\"a\", \"b\"", 200),
        ("\"a\"", 200),
    ] {
        let answer = send(
            &server,
            &format!(
                "GET /tagged HTTP/1.1\r\nHost: t\r\nIf-None-Match: {list}\r\nConnection: close\r\n\r\n"
            ),
        )
        .await;
        assert_eq!(answer.status, status, "{list}");
    }
    server.stop().await;
}

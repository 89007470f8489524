//! Sessions kept whole in an encrypted cookie (`CookieStore`), over a real socket: no server
//! state, tampering, expiry inside the seal, key rotation, and the 4096-byte bound.

mod common;

use std::sync::Arc;
use std::time::Duration;

use framework::cookies::{CookieKeys, Key};
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::middleware::session::{
    CookieStore, SessionConfig, SessionExt, SessionMiddleware, SessionMode,
};
use framework::{App, Context, Result, Service};

async fn put(ctx: &mut Context) -> Result<&'static str> {
    let value = ctx.query("v").unwrap_or_default().into_owned();
    let ttl = ctx.query("ttl").and_then(|t| t.parse().ok());
    let session = ctx.session()?;
    session.set_str("v", &value);
    session.set_ttl(ttl.map(Duration::from_secs));
    Ok("ok")
}

async fn read(ctx: &mut Context) -> Result<String> {
    Ok(ctx.session()?.get_str("v").unwrap_or("-").to_owned())
}

/// A value of `n` bytes, for the size bound.
async fn fill(ctx: &mut Context) -> Result<&'static str> {
    let n: usize = ctx.query("n").and_then(|n| n.parse().ok()).unwrap_or(0);
    ctx.session()?.set_str("v", &"x".repeat(n));
    Ok("ok")
}

/// Cookie `sess`: with its attributes, a sealed value of 4k base64 characters makes a cookie
/// of exactly 4096 bytes for some k (`sess=` 5 + 4k + 47 bytes of attributes).
fn service(keys: CookieKeys) -> Service {
    let sessions = SessionMiddleware::new(
        Arc::new(CookieStore::new(keys)),
        SessionConfig::default().mode(SessionMode::Cookie("sess".to_owned())),
    );
    App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(sessions)
        .get("/put", put)
        .get("/read", read)
        .get("/fill", fill)
        .build()
        .unwrap()
}

async fn get(server: &common::Running, path: &str, cookie: &str) -> common::RawResponse {
    let cookie = if cookie.is_empty() {
        String::new()
    } else {
        format!("Cookie: {cookie}\r\n")
    };
    common::raw_request(
        server.addr,
        &format!("GET {path} HTTP/1.1\r\nHost: t\r\n{cookie}Connection: close\r\n\r\n"),
    )
    .await
}

fn set_cookie(answer: &common::RawResponse) -> Option<String> {
    answer
        .head
        .lines()
        .find_map(|line| line.strip_prefix("set-cookie: "))
        .map(str::to_owned)
}

/// `sess=<sealed>`, as the browser sends it back.
fn pair(answer: &common::RawResponse) -> String {
    let cookie = set_cookie(answer).unwrap_or_else(|| panic!("no cookie: {}", answer.head));
    cookie.split(';').next().unwrap().to_owned()
}

#[tokio::test]
async fn the_session_travels_sealed_and_any_instance_with_the_key_reads_it() {
    let keys = CookieKeys::generate();
    let one = common::start(service(keys.clone())).await;
    let other = common::start(service(keys)).await;
    let answer = get(&one, "/put?v=secret-value", "").await;
    assert_eq!(answer.status, 200, "{}", answer.head);
    let cookie = set_cookie(&answer).unwrap();
    assert!(!cookie.contains("secret-value"), "encrypted: {cookie}");
    assert!(
        cookie.ends_with("; HttpOnly; SameSite=Lax; Path=/; Max-Age=86400"),
        "{cookie}"
    );
    let jar = pair(&answer);
    assert_eq!(get(&other, "/read", &jar).await.text(), "secret-value");
    assert_eq!(get(&other, "/read", "").await.text(), "-");
    // Reading does not write the cookie again.
    assert_eq!(set_cookie(&get(&other, "/read", &jar).await), None);
    one.stop().await;
    other.stop().await;
}

#[tokio::test]
async fn a_tampered_or_foreign_cookie_is_no_session() {
    let server = common::start(service(CookieKeys::generate())).await;
    let jar = pair(&get(&server, "/put?v=kept", "").await);
    let mut bytes = jar.into_bytes();
    let last = bytes.len() - 3;
    bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    let foreign = pair(
        &get(
            &common::start(service(CookieKeys::generate())).await,
            "/put?v=x",
            "",
        )
        .await,
    );
    for cookie in [tampered.as_str(), foreign.as_str(), "sess=garbage"] {
        let answer = get(&server, "/read", cookie).await;
        assert_eq!(answer.status, 200, "{cookie}");
        assert_eq!(answer.text(), "-", "{cookie}");
    }
    server.stop().await;
}

#[tokio::test]
async fn an_expired_session_is_gone_even_when_the_browser_kept_its_cookie() {
    let server = common::start(service(CookieKeys::generate())).await;
    // Written in the last 50 ms of a second and read just after it: a session lives at least
    // its TTL, so it is there (its expiry is sealed in whole seconds, rounded up).
    let subsec = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_millis()
    };
    while subsec() < 950 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let answer = get(&server, "/put?v=brief&ttl=1", "").await;
    assert!(set_cookie(&answer).unwrap().ends_with("Max-Age=1"));
    let jar = pair(&answer);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(get(&server, "/read", &jar).await.text(), "brief");
    // Less than a second more than its TTL: gone 2.1 s after it was written.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert_eq!(
        get(&server, "/read", &jar).await.text(),
        "-",
        "past its sealed expiry"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_rotated_key_still_opens_old_sessions_and_seals_new_ones() {
    let old = Key::generate();
    let new = Key::generate();
    let before = common::start(service(CookieKeys::new(old.clone()))).await;
    let during = common::start(service(CookieKeys::rotated(new.clone(), [old]))).await;
    let after = common::start(service(CookieKeys::new(new))).await;
    let sealed_old = pair(&get(&before, "/put?v=one", "").await);
    assert_eq!(get(&during, "/read", &sealed_old).await.text(), "one");
    assert_eq!(get(&after, "/read", &sealed_old).await.text(), "-");
    let sealed_new = pair(&get(&during, "/put?v=two", &sealed_old).await);
    assert_eq!(get(&after, "/read", &sealed_new).await.text(), "two");
    assert_eq!(get(&before, "/read", &sealed_new).await.text(), "-");
    for server in [before, during, after] {
        server.stop().await;
    }
}

#[tokio::test]
async fn a_cookie_of_exactly_4096_bytes_passes_and_a_larger_one_fails_clearly() {
    let server = common::start(service(CookieKeys::generate())).await;
    let mut largest_passing = None;
    let mut first_failing = None;
    for n in 2900..3100 {
        let answer = get(&server, &format!("/fill?n={n}"), "").await;
        match answer.status {
            200 => {
                let len = set_cookie(&answer).unwrap().len();
                assert!(len <= 4096, "n={n}: {len}");
                largest_passing = Some((n, len));
            }
            500 => {
                assert!(set_cookie(&answer).is_none(), "no cookie with the failure");
                let body = answer.text();
                assert!(body.contains("category=framework-session"), "{body}");
                assert!(body.contains("4096"), "{body}");
                first_failing.get_or_insert(n);
            }
            other => panic!("n={n}: {other}"),
        }
        if first_failing.is_some() {
            break;
        }
    }
    let (passing, len) = largest_passing.expect("a size that fits");
    assert_eq!(len, 4096, "the largest passing cookie is exactly the bound");
    assert_eq!(first_failing, Some(passing + 1), "one byte more fails");
    // Its code, and the line it is logged with (the server runs on this test's thread).
    let lines = common::SharedWriter::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_writer(move || writer.clone())
        .finish();
    let log = tracing::subscriber::set_default(subscriber);
    let answer = common::raw_request(
        server.addr,
        &format!(
            "GET /fill?n={} HTTP/1.1\r\nHost: t\r\nAccept: application/json\r\n\
             Connection: close\r\n\r\n",
            passing + 1
        ),
    )
    .await;
    drop(log);
    assert_eq!(answer.status, 500);
    let body: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(body["code"], "session_too_large", "{body}");
    let logged = String::from_utf8_lossy(&lines.0.lock().unwrap()).into_owned();
    assert!(
        logged.contains("session too large for its cookie"),
        "{logged}"
    );
    server.stop().await;
}

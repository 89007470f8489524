//! The session cookie as a browser receives it, over a real socket: the id's form and every
//! attribute, with and without `Secure`, across the lifetimes whose `Max-Age` changes width.

mod common;

use std::sync::Arc;
use std::time::Duration;

use framework::middleware::session::{MemoryStore, SessionConfig, SessionExt, SessionMiddleware};
use framework::{App, Context, Result, Service};

/// Stores a value with the lifetime the query asks for (`?ttl=<secs>`).
async fn touch(ctx: &mut Context) -> Result<&'static str> {
    let ttl = ctx.query("ttl").and_then(|t| t.parse().ok());
    let session = ctx.session()?;
    session.set("seen", true)?;
    if let Some(secs) = ttl {
        session.set_ttl(Some(Duration::from_secs(secs)));
    }
    Ok("ok")
}

fn service(secure: bool) -> Service {
    let session = SessionMiddleware::new(
        Arc::new(MemoryStore::new()),
        SessionConfig::default().secure(secure),
    );
    App::new()
        .use_middleware(session)
        .get("/touch", touch)
        .build()
        .unwrap()
}

async fn set_cookie(server: &common::Running, path: &str) -> String {
    let answer = common::raw_request(
        server.addr,
        &format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.head);
    answer
        .head
        .lines()
        .find_map(|line| line.strip_prefix("set-cookie: "))
        .unwrap_or_else(|| panic!("no cookie in {}", answer.head))
        .to_owned()
}

/// `sid=<22 base64url characters>` and the rest of the cookie after it.
fn split_id(cookie: &str) -> &str {
    let id = &cookie["sid=".len()..].split(';').next().expect("an id");
    assert!(cookie.starts_with("sid="), "{cookie}");
    assert_eq!(id.len(), 22, "{cookie}");
    assert!(
        id.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "{cookie}"
    );
    &cookie["sid=".len() + 22..]
}

#[tokio::test]
async fn the_cookie_has_the_id_and_every_attribute() {
    let server = common::start(service(false)).await;
    let cookie = set_cookie(&server, "/touch").await;
    assert_eq!(
        split_id(&cookie),
        "; HttpOnly; SameSite=Lax; Path=/; Max-Age=86400"
    );
    for (ttl, max_age) in [("0", "0"), ("9", "9"), ("10", "10"), ("600", "600")] {
        let cookie = set_cookie(&server, &format!("/touch?ttl={ttl}")).await;
        assert_eq!(
            split_id(&cookie),
            format!("; HttpOnly; SameSite=Lax; Path=/; Max-Age={max_age}")
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn a_secure_cookie_ends_with_secure() {
    let server = common::start(service(true)).await;
    let cookie = set_cookie(&server, "/touch?ttl=1000").await;
    assert_eq!(
        split_id(&cookie),
        "; HttpOnly; SameSite=Lax; Secure; Path=/; Max-Age=1000"
    );
    server.stop().await;
}

#[tokio::test]
async fn each_new_session_gets_its_own_id() {
    let server = common::start(service(false)).await;
    let mut ids = std::collections::HashSet::new();
    for _ in 0..20 {
        let cookie = set_cookie(&server, "/touch").await;
        ids.insert(cookie[..4 + 22].to_owned());
    }
    assert_eq!(ids.len(), 20);
    server.stop().await;
}

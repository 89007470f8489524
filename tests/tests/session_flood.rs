//! 200 000 anonymous token requests (each a new session) keep the in-memory session store
//! within its bound: the oldest sessions are evicted, memory does not grow with the flood; and
//! logins keep working while a flood keeps the store full.

use std::sync::Arc;

use framework::body::RequestBody;
use framework::middleware::session::MemoryStore;
use framework::testing::TEST_PEER;
use http::{Method, Request, StatusCode};
use user_service::{Config, Stores};

/// The user service with in-memory stores, its sessions in `sessions`, and no per-IP limits:
/// they would stop these floods first (every request comes from one peer), and the tests are
/// about the session store's own bound.
fn service(sessions: &Arc<MemoryStore>) -> framework::Service {
    let stores = Stores {
        sessions: Arc::clone(sessions) as _,
        ..Stores::in_memory()
    };
    let config = Config {
        token_rate: None,
        login_rate: None,
        ..Config::default()
    };
    user_service::build(&config, stores).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_token_flood_stays_within_the_bound() {
    const CAPACITY: usize = 5_000;
    const REQUESTS: usize = 200_000;
    let sessions = Arc::new(MemoryStore::with_capacity(CAPACITY));
    let service = Arc::new(service(&sessions));
    let tasks: Vec<_> = (0..2)
        .map(|_| {
            let service = Arc::clone(&service);
            tokio::spawn(async move {
                for _ in 0..REQUESTS / 2 {
                    let request = Request::get("/users/v1/login")
                        .header("host", "t")
                        .body(RequestBody::Empty)
                        .unwrap();
                    let response = service.handle(request, TEST_PEER).await;
                    assert_eq!(response.status(), StatusCode::OK);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    assert!(
        sessions.len() <= CAPACITY,
        "{} sessions held",
        sessions.len()
    );
    assert!(
        sessions.evicted() >= (REQUESTS - CAPACITY) as u64,
        "{} evicted",
        sessions.evicted()
    );
}

/// A request to the service with an optional cookie and JSON body; the status, the session
/// cookie it sets (`sid=…`) and the body.
async fn send(
    service: &framework::Service,
    method: Method,
    path: &str,
    cookie: Option<&str>,
    body: Option<String>,
) -> (StatusCode, Option<String>, serde_json::Value) {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "t");
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    let body = match body {
        Some(json) => {
            request = request.header("content-type", "application/json");
            RequestBody::Full(json.into())
        }
        None => RequestBody::Empty,
    };
    let response = service.handle(request.body(body).unwrap(), TEST_PEER).await;
    let status = response.status();
    let cookie = response
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::to_owned);
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    (
        status,
        cookie,
        serde_json::from_slice(&bytes).unwrap_or_default(),
    )
}

/// Logins keep working while anonymous sessions keep a small store full and the logins' own
/// session changes (a new id, the old record deleted) move records about in it: a session is
/// never evicted before half its shard's capacity of newer sessions (32 here) has been added,
/// wherever it lands, so a token session that sees 8 other new sessions before its login is
/// still there, and so is the logged-in session 8 sessions later. (The benchmark's register,
/// token, login flow on a full store once lost 19 logins in about 540 000 this way: a record
/// moved or added just ahead of the hand was evicted by the next save.)
#[tokio::test]
async fn logins_succeed_while_anonymous_sessions_keep_the_store_full() {
    const CAPACITY: usize = 64;
    const FLOWS: usize = 1_000;
    const BETWEEN: usize = 8;
    let sessions = Arc::new(MemoryStore::with_capacity(CAPACITY));
    let service = service(&sessions);
    let flood = async |n| {
        for _ in 0..n {
            let (status, _, _) = send(&service, Method::GET, "/users/v1/login", None, None).await;
            assert_eq!(status, StatusCode::OK);
        }
    };
    let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"flood password"));
    let mut failed = Vec::new();
    for i in 0..FLOWS {
        flood(BETWEEN).await;
        let account = format!("u{i}");
        let body = format!(r#"{{"account":"{account}","password":"{digest}"}}"#);
        let (status, _, _) = send(&service, Method::POST, "/users/v1/me", None, Some(body)).await;
        assert_eq!(status, StatusCode::CREATED);
        let (status, cookie, answer) =
            send(&service, Method::GET, "/users/v1/login", None, None).await;
        assert_eq!(status, StatusCode::OK);
        let proof = user_service::controllers::user::login_proof(
            &digest,
            answer["token"].as_str().unwrap(),
        );
        flood(BETWEEN).await;
        let body = format!(r#"{{"account":"{account}","password":"{proof}"}}"#);
        let (status, cookie, _) = send(
            &service,
            Method::POST,
            "/users/v1/login",
            cookie.as_deref(),
            Some(body),
        )
        .await;
        if status != StatusCode::OK {
            failed.push(format!("flow {i}: login answered {status}"));
            continue;
        }
        flood(BETWEEN).await;
        let (_, _, me) = send(
            &service,
            Method::GET,
            "/users/v1/me",
            cookie.as_deref(),
            None,
        )
        .await;
        if me["name"] != account.as_str() {
            failed.push(format!("flow {i}: logged out, me answered {me}"));
        }
    }
    assert!(failed.is_empty(), "{} failures: {failed:?}", failed.len());
    assert_eq!(sessions.len(), CAPACITY);
    assert!(sessions.evicted() > 20_000, "{}", sessions.evicted());
}

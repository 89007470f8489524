//! Sessions: cookie and header modes, saving rules, regenerate, store failures.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::session::{
    ImmediateSessionStore, MemoryStore, SessionConfig, SessionData, SessionExt, SessionMiddleware,
    SessionMode, SessionStore, X_SESSION_ID,
};
use framework::testing::TestClient;
use framework::{App, Context, Error, HttpError, Result};

async fn put(ctx: &mut Context) -> Result {
    let value = ctx.query("v").unwrap_or_default().into_owned();
    ctx.session()?.set("v", value)?;
    ctx.set_status(http::StatusCode::NO_CONTENT);
    Ok(())
}
async fn read(ctx: &mut Context) -> Result {
    let v = ctx.session()?.get_str("v").unwrap_or("").to_owned();
    ctx.body_mut().set_bytes(v);
    Ok(())
}
async fn put_then_fail(ctx: &mut Context) -> Result {
    ctx.session()?.set("v", "from-failed-request")?;
    Err(HttpError::new("nope").into())
}
async fn regenerate(ctx: &mut Context) -> Result {
    ctx.session()?.regenerate();
    ctx.set_status(http::StatusCode::NO_CONTENT);
    Ok(())
}

fn app(store: Arc<dyn SessionStore>, config: SessionConfig) -> App {
    App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(SessionMiddleware::new(store, config))
        .get("/put", put)
        .get("/read", read)
        .get("/fail", put_then_fail)
        .get("/regenerate", regenerate)
}

/// A client for the test app with default settings, and the memory store behind it.
fn memory_client() -> (Arc<MemoryStore>, TestClient) {
    let store = Arc::new(MemoryStore::new());
    let client = TestClient::new(
        app(store.clone(), SessionConfig::default())
            .build()
            .unwrap(),
    );
    (store, client)
}

#[tokio::test]
async fn cookie_mode_round_trip() {
    let (store, c) = memory_client();
    let res = c.get("/read").send().await;
    assert_eq!(
        res.header("set-cookie"),
        None,
        "an untouched session is not saved"
    );
    let res = c.get("/put?v=hello").send().await;
    let cookie = res.header("set-cookie").unwrap();
    assert!(cookie.starts_with("sid="), "{cookie}");
    assert!(
        cookie.contains("; HttpOnly; SameSite=Lax; Path=/; Max-Age=86400"),
        "{cookie}"
    );
    assert!(!cookie.contains("Secure"));
    let id = &cookie[4..26];
    assert_eq!(id.len(), 22);
    assert_eq!(c.get("/read").send().await.text(), "hello");
    assert_eq!(store.len(), 1);
}

#[tokio::test]
async fn secure_cookie_when_configured() {
    let config = SessionConfig::default().secure(true);
    let c = TestClient::new(app(Arc::new(MemoryStore::new()), config).build().unwrap());
    let res = c.get("/put?v=x").send().await;
    assert!(res.header("set-cookie").unwrap().contains("; Secure;"));
}

/// Names of any length give the same cookie (its length is worked out before it is written),
/// and the session comes back with it.
#[tokio::test]
async fn a_long_cookie_name_gives_the_same_cookie() {
    for name in ["s", &"n".repeat(47), &"long_cookie_name_".repeat(6)] {
        let config = SessionConfig::default()
            .mode(SessionMode::Cookie(name.to_owned()))
            .secure(true);
        let c = TestClient::new(app(Arc::new(MemoryStore::new()), config).build().unwrap());
        let res = c.get("/put?v=kept").send().await;
        let cookie = res.header("set-cookie").unwrap().to_owned();
        let (prefix, rest) = cookie.split_at(name.len() + 1);
        assert_eq!(prefix, format!("{name}="));
        assert_eq!(
            &rest[22..],
            "; HttpOnly; SameSite=Lax; Secure; Path=/; Max-Age=86400"
        );
        assert_eq!(c.get("/read").send().await.text(), "kept", "{name}");
    }
}

#[tokio::test]
async fn header_mode() {
    let config = SessionConfig::default().mode(SessionMode::Header(X_SESSION_ID));
    let c = TestClient::new(app(Arc::new(MemoryStore::new()), config).build().unwrap());
    let res = c.get("/put?v=hdr").send().await;
    assert_eq!(res.header("set-cookie"), None);
    let id = res.header("x-session-id").unwrap().to_owned();
    let res = c.get("/read").header("x-session-id", &id).send().await;
    assert_eq!(res.text(), "hdr");
    // Without the header: a new, empty session.
    assert_eq!(c.get("/read").send().await.text(), "");
}

#[tokio::test]
async fn not_saved_when_the_chain_fails() {
    let (store, c) = memory_client();
    let res = c.get("/fail").send().await;
    assert_eq!(res.status, 400);
    assert_eq!(res.header("set-cookie"), None);
    assert!(store.is_empty());
}

#[tokio::test]
async fn regenerate_changes_id_keeps_data_and_drops_old_record() {
    let (store, c) = memory_client();
    let first = c.get("/put?v=keep").send().await;
    let old = first.header("set-cookie").unwrap()[4..26].to_owned();
    let res = c.get("/regenerate").send().await;
    let new = res.header("set-cookie").unwrap()[4..26].to_owned();
    assert_ne!(old, new);
    assert_eq!(c.get("/read").send().await.text(), "keep");
    assert!(store.load(&old).await.unwrap().is_none());
    assert_eq!(store.len(), 1);
}

#[tokio::test]
async fn forged_or_unknown_ids_start_a_new_session() {
    let (_store, c) = memory_client();
    for cookie in [
        "sid=short",
        "sid=AAAAAAAAAAAAAAAAAAAAAA",
        "sid=../../etc/passwd%00aaaaaa",
    ] {
        let res = c.get("/read").header("cookie", cookie).send().await;
        assert_eq!(res.status, 200);
        assert_eq!(res.text(), "");
    }
}

/// A store that fails while `down` is set; with `immediate` it also answers at once, so the
/// middleware takes its hook path, and without it the middleware awaits it.
#[derive(Default)]
struct FlakyStore {
    inner: MemoryStore,
    down: AtomicBool,
    immediate: bool,
}

impl FlakyStore {
    fn check(&self) -> Result {
        if self.down.load(Ordering::SeqCst) {
            return Err(Error::msg("connection refused"));
        }
        Ok(())
    }
}

impl ImmediateSessionStore for FlakyStore {
    fn load_now(&self, id: &str) -> Result<Option<SessionData>> {
        self.check()?;
        self.inner.load_now(id)
    }
    fn save_now(&self, id: &str, data: SessionData, ttl: Duration) -> Result {
        self.check()?;
        self.inner.save_now(id, data, ttl)
    }
    fn destroy_now(&self, id: &str) -> Result {
        self.inner.destroy_now(id)
    }
}

#[async_trait::async_trait]
impl SessionStore for FlakyStore {
    async fn load(&self, id: &str) -> Result<Option<Bytes>> {
        self.check()?;
        self.inner.load(id).await
    }
    async fn save(&self, id: &str, data: &[u8], ttl: Duration) -> Result {
        self.check()?;
        self.inner.save(id, data, ttl).await
    }
    async fn destroy(&self, id: &str) -> Result {
        self.inner.destroy(id).await
    }
    fn immediate(&self) -> Option<&dyn ImmediateSessionStore> {
        self.immediate.then_some(self as &dyn ImmediateSessionStore)
    }
}

/// A client for the test app on a [`FlakyStore`], and the store.
fn flaky_client(immediate: bool) -> (Arc<FlakyStore>, TestClient) {
    let store = Arc::new(FlakyStore {
        immediate,
        ..FlakyStore::default()
    });
    let client = TestClient::new(
        app(store.clone(), SessionConfig::default())
            .build()
            .unwrap(),
    );
    (store, client)
}

#[tokio::test]
async fn store_failure_is_500_session_category_then_recovers() {
    for immediate in [false, true] {
        let (store, c) = flaky_client(immediate);
        c.get("/put?v=before").send().await;
        store.down.store(true, Ordering::SeqCst);
        for path in ["/read", "/regenerate"] {
            // Loading fails on both; so would saving the new id.
            let res = c
                .get(path)
                .header("accept", "application/json")
                .send()
                .await;
            assert_eq!(res.status, 500, "immediate: {immediate}, {path}");
            let body = res.json();
            assert_eq!(body["category"], "framework-session");
            assert_eq!(body["exception"], true);
            assert_eq!(body["message"], "session store is unavailable");
        }
        store.down.store(false, Ordering::SeqCst);
        assert_eq!(c.get("/read").send().await.text(), "before");
    }
}

/// A failure to save, after the handler ran: 500, and no cookie for a session that was not
/// stored; the same whether the store is awaited or answers at once.
#[tokio::test]
async fn a_failed_save_is_500_without_a_cookie() {
    for immediate in [false, true] {
        let (store, c) = flaky_client(immediate);
        store.down.store(true, Ordering::SeqCst);
        // No cookie: nothing to load, so only the save meets the failure.
        let res = c
            .get("/put?v=x")
            .header("accept", "application/json")
            .send()
            .await;
        assert_eq!(res.status, 500, "immediate: {immediate}");
        assert_eq!(res.json()["category"], "framework-session");
        assert_eq!(res.header("set-cookie"), None);
        assert!(store.inner.is_empty());
    }
}

/// The awaited path (a store without [`SessionStore::immediate`]) keeps, regenerates and
/// refuses to save exactly as the hook path does with the memory store.
#[tokio::test]
async fn an_awaited_store_behaves_as_the_memory_store() {
    let (store, c) = flaky_client(false);
    assert!(store.immediate().is_none());
    let first = c.get("/put?v=keep").send().await;
    let cookie = first.header("set-cookie").unwrap().to_owned();
    assert!(
        cookie.ends_with("; HttpOnly; SameSite=Lax; Path=/; Max-Age=86400"),
        "{cookie}"
    );
    let old = cookie[4..26].to_owned();
    assert_eq!(c.get("/read").send().await.text(), "keep");
    let res = c.get("/regenerate").send().await;
    let new = res.header("set-cookie").unwrap()[4..26].to_owned();
    assert_ne!(old, new);
    assert_eq!(c.get("/read").send().await.text(), "keep");
    assert!(store.inner.load_now(&old).unwrap().is_none());
    assert_eq!(store.inner.len(), 1);
    let res = c.get("/fail").send().await;
    assert_eq!(res.status, 400);
    assert_eq!(res.header("set-cookie"), None);
    assert_eq!(c.get("/read").send().await.text(), "keep");
}

#[tokio::test]
async fn session_without_middleware_is_a_clear_error() {
    let c = TestClient::new(
        App::new()
            .use_middleware(ErrorHandler::default())
            .get("/read", read)
            .build()
            .unwrap(),
    );
    let res = c
        .get("/read")
        .header("accept", "application/json")
        .send()
        .await;
    assert_eq!(res.status, 500);
    assert_eq!(res.json()["category"], "framework-session");
}

/// A hook middleware that passes every request on.
struct PassOn;

impl framework::Middleware for PassOn {
    fn before(&self, _ctx: &mut Context) -> framework::Before {
        framework::Before::Pass
    }
}

/// Beyond the first 64 middleware of a chain the hooks are not used and `handle` does it all:
/// with the memory store too, the session is loaded, kept and regenerated as usual. (At 65th
/// place the session middleware is run by `handle`; a middleware further on would be hooked
/// again, by the next run of the rest of the chain.)
#[tokio::test]
async fn the_session_middleware_works_whole_beyond_the_hooked_part_of_a_chain() {
    let store = Arc::new(MemoryStore::new());
    let mut app = App::new().use_middleware(ErrorHandler::default());
    for _ in 0..63 {
        app = app.use_middleware(Arc::new(PassOn));
    }
    let c = TestClient::new(
        app.use_middleware(SessionMiddleware::new(
            store.clone(),
            SessionConfig::default(),
        ))
        .get("/put", put)
        .get("/read", read)
        .get("/regenerate", regenerate)
        .build()
        .unwrap(),
    );
    let first = c.get("/put?v=far").send().await;
    let old = first.header("set-cookie").unwrap()[4..26].to_owned();
    assert_eq!(c.get("/read").send().await.text(), "far");
    let res = c.get("/regenerate").send().await;
    let new = res.header("set-cookie").unwrap()[4..26].to_owned();
    assert_ne!(old, new);
    assert_eq!(c.get("/read").send().await.text(), "far");
    assert_eq!(store.len(), 1);
}

//! The reference user service over a real socket with a real HTTP client.

mod common;

use reqwest::StatusCode;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use user_service::{Config, Stores};

/// The `name=value` pair of the cookie an answer sets, as a browser sends it back.
fn session_cookie(res: &reqwest::Response) -> String {
    res.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned()
}

fn sha256_hex(data: &str) -> String {
    hex::encode(Sha256::digest(data.as_bytes()))
}

async fn start() -> common::Running {
    let service = user_service::build(&Config::default(), Stores::in_memory()).expect("service");
    common::start(service).await
}

struct User<'a> {
    account: &'a str,
    digest: String,
}

impl<'a> User<'a> {
    fn new(account: &'a str, password: &str) -> Self {
        Self {
            account,
            digest: sha256_hex(password),
        }
    }
}

async fn register(
    client: &reqwest::Client,
    server: &common::Running,
    user: &User<'_>,
) -> reqwest::Response {
    client
        .post(server.url("/users/v1/me"))
        .json(&json!({"account": user.account, "password": user.digest}))
        .send()
        .await
        .expect("register")
}

async fn token(client: &reqwest::Client, server: &common::Running) -> String {
    let res = client
        .get(server.url("/users/v1/login"))
        .send()
        .await
        .expect("token");
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.expect("json");
    body["token"].as_str().expect("token string").to_owned()
}

async fn login(
    client: &reqwest::Client,
    server: &common::Running,
    account: &str,
    proof: &str,
) -> (StatusCode, Value) {
    let res = client
        .post(server.url("/users/v1/login"))
        .json(&json!({"account": account, "password": proof}))
        .send()
        .await
        .expect("login");
    let status = res.status();
    (status, res.json().await.expect("json body"))
}

async fn me(client: &reqwest::Client, server: &common::Running) -> Value {
    let res = client
        .get(server.url("/users/v1/me"))
        .send()
        .await
        .expect("me");
    assert_eq!(res.status(), StatusCode::OK);
    res.json().await.expect("json")
}

fn wrong_credentials() -> Value {
    json!({"statusCode": 400, "category": "user", "message": "account or password is wrong"})
}

#[tokio::test]
async fn register_token_login_me() {
    let server = start().await;
    let client = common::browser();
    let alice = User::new("alice", "correct horse");

    assert_eq!(me(&client, &server).await, json!({"name": ""}));

    let res = register(&client, &server, &alice).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let body: Value = res.json().await.unwrap();
    assert_eq!(
        body,
        json!({"account": "alice"}),
        "the digest never leaves the server"
    );

    let t = token(&client, &server).await;
    assert_eq!(t.len(), 32);
    let proof = sha256_hex(&format!("{}{t}", alice.digest));
    let (status, body) = login(&client, &server, "alice", &proof).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, json!({"account": "alice"}));
    assert_eq!(me(&client, &server).await, json!({"name": "alice"}));

    // The token was consumed: the same proof cannot be replayed.
    let (status, body) = login(&client, &server, "alice", &proof).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body, wrong_credentials());
    server.stop().await;
}

/// `SESSION_STORE=cookie`: the same flow on sessions sealed in the cookie, which a second
/// instance with the same key (and its own memory) reads as well.
#[tokio::test]
async fn register_token_login_me_on_cookie_sessions() {
    use base64::Engine;
    let key = base64::engine::general_purpose::STANDARD.encode([42u8; 64]);
    let config = Config::from_lookup(|name| match name {
        "DATABASE_URL" => Some("memory".to_owned()),
        "SESSION_STORE" => Some("cookie".to_owned()),
        "SESSION_KEY" => Some(key.clone()),
        _ => None,
    })
    .expect("config");
    let stores = Stores::connect(&config).await.expect("stores");
    assert!(
        stores.description.ends_with("sessions: cookie"),
        "{}",
        stores.description
    );
    let server = common::start(user_service::build(&config, stores).expect("service")).await;
    // The typed client from the service's API crate: its cookie store carries the sealed
    // session from the token to the login and on to `me`. The inspector keeps the session
    // cookie the login set, to show it to the second instance.
    let sealed = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let kept = std::sync::Arc::clone(&sealed);
    let client = framework::client::ApiClient::builder()
        .inspect(move |call| {
            if call.route == "/users/v1/login"
                && call.method == http::Method::POST
                && let Some(cookie) = call.response_headers.get("set-cookie")
            {
                let pair = cookie.to_str().unwrap().split(';').next().unwrap();
                *kept.lock().unwrap() = pair.to_owned();
            }
        })
        .build(&server.url(""))
        .expect("client");
    let client = user_api::UserApiClient::from_client(client);
    let alice = User::new("alice", "correct horse");
    let params = |password: &str| {
        framework::extract::Json(user_api::UserParams {
            account: "alice".to_owned(),
            password: password.to_owned(),
        })
    };
    let user = client
        .register(params(&alice.digest))
        .await
        .expect("register");
    assert_eq!(user.account, "alice");
    let t = client.login_token().await.expect("token").token;
    let proof = sha256_hex(&format!("{}{}", alice.digest, t.as_str()));
    client.login(params(&proof)).await.expect("login");
    assert_eq!(client.me().await.expect("me").name, "alice");
    let err = client.login(params(&proof)).await.expect_err("replayed");
    assert_eq!(
        err.status(),
        Some(StatusCode::BAD_REQUEST),
        "the token was consumed"
    );
    // A second instance with the same key, and a memory of its own, reads the session.
    let stores = Stores::connect(&config).await.expect("stores");
    let second = common::start(user_service::build(&config, stores).expect("service")).await;
    let cookie = sealed.lock().unwrap().clone();
    assert!(cookie.starts_with("sid="), "{cookie}");
    let me = reqwest::Client::new()
        .get(second.url("/users/v1/me"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(me.json::<Value>().await.unwrap(), json!({"name": "alice"}));
    second.stop().await;
    server.stop().await;

    let missing =
        Config::from_lookup(|name| (name == "SESSION_STORE").then(|| "cookie".to_owned()));
    assert!(missing.unwrap_err().contains("SESSION_KEY"));
}

/// The cookie a client had before its login attempt, replayed with the same proof: with a
/// cookie session it still carries the token, so only the used-token record refuses it.
/// Both instances (`a`, `b`) share the key; `b` shares the record only through Redis.
async fn replay_the_pre_login_cookie(a: &common::Running, b: Option<&common::Running>) {
    let client = reqwest::Client::new();
    let alice = User::new("replayer", "correct horse");
    // The account exists on each instance (each has its own memory user store), so only the
    // token can refuse the replay.
    for server in std::iter::once(a).chain(b) {
        register(&client, server, &alice).await;
    }
    let res = client.get(a.url("/users/v1/login")).send().await.unwrap();
    let before = session_cookie(&res);
    let t = res.json::<Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let proof = sha256_hex(&format!("{}{t}", alice.digest));
    let attempt = |server: &common::Running| {
        client
            .post(server.url("/users/v1/login"))
            .header("cookie", &before)
            .header("accept", "application/json")
            .json(&json!({"account": "replayer", "password": proof}))
            .send()
    };
    assert_eq!(attempt(a).await.unwrap().status(), StatusCode::OK);
    for server in std::iter::once(a).chain(b) {
        let res = attempt(server).await.unwrap();
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "the token was used");
        assert_eq!(res.json::<Value>().await.unwrap(), wrong_credentials());
    }
}

/// A service on cookie sessions under a fixed key, with `REDIS_URL` when given.
async fn cookie_session_service(redis: Option<String>) -> common::Running {
    use base64::Engine;
    let key = base64::engine::general_purpose::STANDARD.encode([7u8; 64]);
    let config = Config::from_lookup(|name| match name {
        "DATABASE_URL" => Some("memory".to_owned()),
        "SESSION_STORE" => Some("cookie".to_owned()),
        "SESSION_KEY" => Some(key.clone()),
        "SESSION_KEY_PREFIX" => Some("replay-test:".to_owned()),
        "REDIS_URL" => redis.clone(),
        _ => None,
    })
    .expect("config");
    let stores = Stores::connect(&config).await.expect("stores");
    common::start(user_service::build(&config, stores).expect("service")).await
}

#[tokio::test]
async fn a_replayed_pre_login_cookie_does_not_log_in_again_with_memory_or_cookie_sessions() {
    let memory = start().await;
    replay_the_pre_login_cookie(&memory, None).await;
    memory.stop().await;
    let cookie = cookie_session_service(None).await;
    replay_the_pre_login_cookie(&cookie, None).await;
    cookie.stop().await;
}

#[tokio::test]
#[cfg_attr(no_test_redis, ignore = "needs Redis: set TEST_REDIS_URL")]
async fn a_replayed_pre_login_cookie_is_refused_by_every_instance_sharing_redis() {
    let url = common::store_url("TEST_REDIS_URL");
    let a = cookie_session_service(Some(url.clone())).await;
    let b = cookie_session_service(Some(url)).await;
    replay_the_pre_login_cookie(&a, Some(&b)).await;
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn login_regenerates_the_session_id() {
    let server = start().await;
    let client = reqwest::Client::new();
    let bob = User::new("bob", "pw");
    register(&client, &server, &bob).await;
    let res = client
        .get(server.url("/users/v1/login"))
        .send()
        .await
        .unwrap();
    let cookie = res.headers()["set-cookie"].to_str().unwrap().to_owned();
    let sid = cookie.split(';').next().unwrap().to_owned();
    let t = res.json::<Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let res = client
        .post(server.url("/users/v1/login"))
        .header("cookie", &sid)
        .json(&json!({"account": "bob", "password": sha256_hex(&format!("{}{t}", bob.digest))}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let new_sid = session_cookie(&res);
    assert_ne!(sid, new_sid);
    // The old id no longer carries anything: fixation gives an attacker nothing.
    let res = client
        .get(server.url("/users/v1/me"))
        .header("cookie", &sid)
        .send()
        .await
        .unwrap();
    assert_eq!(res.json::<Value>().await.unwrap(), json!({"name": ""}));
    let res = client
        .get(server.url("/users/v1/me"))
        .header("cookie", &new_sid)
        .send()
        .await
        .unwrap();
    assert_eq!(res.json::<Value>().await.unwrap(), json!({"name": "bob"}));
    server.stop().await;
}

#[tokio::test]
async fn a_second_token_replaces_the_first() {
    let server = start().await;
    let client = common::browser();
    let carol = User::new("carol", "pw");
    register(&client, &server, &carol).await;
    let first = token(&client, &server).await;
    let second = token(&client, &server).await;
    assert_ne!(first, second);
    let stale = sha256_hex(&format!("{}{first}", carol.digest));
    let (status, body) = login(&client, &server, "carol", &stale).await;
    assert_eq!(
        (status, body),
        (StatusCode::BAD_REQUEST, wrong_credentials())
    );
    // That attempt consumed the current token too (any attempt does): `second` is gone.
    let with_second = sha256_hex(&format!("{}{second}", carol.digest));
    let (status, _) = login(&client, &server, "carol", &with_second).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let third = token(&client, &server).await;
    let fresh = sha256_hex(&format!("{}{third}", carol.digest));
    let (status, _) = login(&client, &server, "carol", &fresh).await;
    assert_eq!(status, StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn every_failed_login_gets_the_same_answer() {
    let server = start().await;
    let client = common::browser();
    let dave = User::new("dave", "pw");
    register(&client, &server, &dave).await;

    // No token in the session yet.
    let proof = sha256_hex(&format!("{}{}", dave.digest, "0".repeat(32)));
    let no_token = login(&client, &server, "dave", &proof).await;

    let t = token(&client, &server).await;
    let wrong_proof = login(&client, &server, "dave", &sha256_hex("nonsense")).await;
    let unknown = login(
        &client,
        &server,
        "nobody",
        &sha256_hex(&format!("{}{t}", dave.digest)),
    )
    .await;

    for answer in [no_token, wrong_proof, unknown] {
        assert_eq!(answer, (StatusCode::BAD_REQUEST, wrong_credentials()));
    }
    // A failed login consumed the token: the right proof with it fails too, a new one works.
    let (status, _) = login(
        &client,
        &server,
        "dave",
        &sha256_hex(&format!("{}{t}", dave.digest)),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let fresh = token(&client, &server).await;
    let (status, _) = login(
        &client,
        &server,
        "dave",
        &sha256_hex(&format!("{}{fresh}", dave.digest)),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn uppercase_proof_is_accepted() {
    let server = start().await;
    let client = common::browser();
    let erin = User::new("erin", "pw");
    register(&client, &server, &erin).await;
    let t = token(&client, &server).await;
    let proof = sha256_hex(&format!("{}{t}", erin.digest)).to_uppercase();
    let (status, _) = login(&client, &server, "erin", &proof).await;
    assert_eq!(status, StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn duplicate_registration_is_409() {
    let server = start().await;
    let client = common::browser();
    let frank = User::new("frank", "pw");
    assert_eq!(
        register(&client, &server, &frank).await.status(),
        StatusCode::CREATED
    );
    let res = register(&client, &server, &frank).await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    assert_eq!(
        res.json::<Value>().await.unwrap(),
        json!({"statusCode": 409, "category": "user", "message": "account already exists"})
    );
    server.stop().await;
}

#[tokio::test]
async fn validation_failures() {
    let server = start().await;
    let client = common::browser();
    let digest = sha256_hex("pw");
    let account_rule = "account: must be 2-20 letters, digits or _";
    let password_rule = "password: must be 64 hexadecimal characters (a SHA-256 digest)";
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            json!({"account": "a", "password": digest}),
            "xUserAccount",
            account_rule,
        ),
        (
            json!({"account": "a".repeat(21), "password": digest}),
            "xUserAccount",
            account_rule,
        ),
        (
            json!({"account": "bad name", "password": digest}),
            "xUserAccount",
            account_rule,
        ),
        (
            json!({"account": "dash-ed", "password": digest}),
            "xUserAccount",
            account_rule,
        ),
        (
            json!({"account": "gina", "password": "z".repeat(64)}),
            "xUserPassword",
            password_rule,
        ),
        (
            json!({"account": "gina", "password": "a".repeat(63)}),
            "xUserPassword",
            password_rule,
        ),
        (
            json!({"account": "gina", "password": "a".repeat(65)}),
            "xUserPassword",
            password_rule,
        ),
        // A missing field is `required` and a value of the wrong type `invalid`, whatever the
        // field's validator: the validator's code is for a value that broke its rule.
        (
            json!({"account": "gina"}),
            "required",
            "password: is required",
        ),
        (
            json!({"password": digest}),
            "required",
            "account: is required",
        ),
        (
            json!({"account": 42, "password": digest}),
            "invalid",
            "account: invalid type: integer `42`, expected a string",
        ),
        (
            json!({"account": "gina", "password": null}),
            "invalid",
            "password: invalid type: null, expected a string",
        ),
        (
            json!(["gina", digest]),
            "json",
            "request body must be a JSON object",
        ),
    ];
    for path in ["/users/v1/me", "/users/v1/login"] {
        for (body, code, message) in &cases {
            let res = client
                .post(server.url(path))
                .json(body)
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{path} {body}");
            let err: Value = res.json().await.unwrap();
            assert_eq!(
                err,
                json!({"statusCode": 400, "code": code, "category": "validate", "message": message}),
                "{path} {body}"
            );
        }
    }
    // Malformed JSON is stopped by the body parser before validation.
    let res = client
        .post(server.url("/users/v1/me"))
        .header("content-type", "application/json")
        .body("{\"account\":")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        res.json::<Value>().await.unwrap()["message"],
        "invalid json"
    );
    // Nothing was registered by any of these.
    let t = token(&client, &server).await;
    let (status, _) = login(
        &client,
        &server,
        "gina",
        &sha256_hex(&format!("{digest}{t}")),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    server.stop().await;
}

#[tokio::test]
async fn text_errors_without_accept_json() {
    let server = start().await;
    let res = reqwest::Client::new()
        .post(server.url("/users/v1/me"))
        .json(&json!({"account": "x", "password": sha256_hex("pw")}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert_eq!(res.headers()["content-type"], "text/plain; charset=utf-8");
    assert_eq!(
        res.text().await.unwrap(),
        "statusCode=400, category=validate, message=account: must be 2-20 letters, digits or _"
    );
    server.stop().await;
}

#[tokio::test]
async fn route_table_has_the_page_the_document_its_docs_the_metrics_the_six_endpoints_and_no_list()
{
    let service = user_service::build(&Config::default(), Stores::in_memory()).unwrap();
    let routes: Vec<(String, String, String)> = service
        .routes()
        .iter()
        .map(|r| (r.method.clone(), r.path.clone(), r.handler.clone()))
        .collect();
    assert_eq!(
        routes,
        [
            (
                "GET".into(),
                "/".into(),
                "framework::middleware::static_serve::StaticServe".into()
            ),
            (
                "GET".into(),
                "/assets/*".into(),
                "framework::middleware::static_serve::StaticServe".into()
            ),
            (
                "GET".into(),
                "/docs".into(),
                "framework::openapi_docs".into()
            ),
            (
                "GET".into(),
                "/docs/*file".into(),
                "framework::openapi_docs".into()
            ),
            (
                "GET".into(),
                "/metrics".into(),
                "framework::middleware::metrics::MetricsEndpoint".into()
            ),
            (
                "GET".into(),
                "/openapi.json".into(),
                "framework::openapi".into()
            ),
            (
                "GET".into(),
                "/users/v1/avatar/{account}".into(),
                "AvatarController::avatar".into()
            ),
            (
                "GET".into(),
                "/users/v1/login".into(),
                "UserController::login_token".into()
            ),
            (
                "POST".into(),
                "/users/v1/login".into(),
                "UserController::login".into()
            ),
            (
                "GET".into(),
                "/users/v1/me".into(),
                "UserController::me".into()
            ),
            (
                "POST".into(),
                "/users/v1/me".into(),
                "UserController::register".into()
            ),
            (
                "PUT".into(),
                "/users/v1/me/avatar".into(),
                "AvatarController::upload".into()
            ),
        ]
    );
}

#[tokio::test]
async fn any_login_attempt_consumes_the_token_and_answers_are_not_stored() {
    let server = start().await;
    let client = common::browser();
    let user = User::new("guesser", "right password");
    assert_eq!(
        register(&client, &server, &user).await.status(),
        StatusCode::CREATED
    );
    let res = client
        .get(server.url("/users/v1/login"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["cache-control"], "no-store");
    let first = res.json::<Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let wrong = sha256_hex(&format!("{}{first}", sha256_hex("wrong password")));
    let res = client
        .post(server.url("/users/v1/login"))
        .json(&json!({"account": "guesser", "password": wrong}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    // The right proof with the same token no longer works: each guess needs a new token.
    let right = sha256_hex(&format!("{}{first}", user.digest));
    let res = client
        .post(server.url("/users/v1/login"))
        .json(&json!({"account": "guesser", "password": right}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    // A new token and the right proof: logged in.
    let second = token(&client, &server).await;
    let right = sha256_hex(&format!("{}{second}", user.digest));
    let res = client
        .post(server.url("/users/v1/login"))
        .json(&json!({"account": "guesser", "password": right}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let me = client.get(server.url("/users/v1/me")).send().await.unwrap();
    assert_eq!(me.headers()["cache-control"], "no-store");
    assert_eq!(
        me.json::<Value>().await.unwrap(),
        json!({"name": "guesser"})
    );
    server.stop().await;
}

#[tokio::test]
async fn accounts_are_one_ignoring_case_and_the_digest_case_does_not_matter() {
    let server = start().await;
    let client = common::browser();
    let upper = User {
        account: "CaseX",
        digest: sha256_hex("pw").to_ascii_uppercase(),
    };
    assert_eq!(
        register(&client, &server, &upper).await.status(),
        StatusCode::CREATED
    );
    let again = User {
        account: "casex",
        digest: sha256_hex("other"),
    };
    assert_eq!(
        register(&client, &server, &again).await.status(),
        StatusCode::CONFLICT
    );
    // Log in with another case of the account, the proof from the lowercase digest.
    let token = token(&client, &server).await;
    let proof = sha256_hex(&format!("{}{token}", sha256_hex("pw")));
    let (status, body) = login(&client, &server, "CASEX", &proof).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["account"], "CaseX");
    server.stop().await;
}

#[tokio::test]
async fn anonymous_sessions_are_short_logged_in_ones_full() {
    let server = start().await;
    let client = common::browser();
    let max_age = |res: &reqwest::Response| {
        res.headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split("; ").find_map(|p| p.strip_prefix("Max-Age=")))
            .map(str::to_owned)
    };
    let user = User::new("shorty", "pw");
    register(&client, &server, &user).await;
    let res = client
        .get(server.url("/users/v1/login"))
        .send()
        .await
        .unwrap();
    assert_eq!(max_age(&res).as_deref(), Some("600"));
    let token = res.json::<Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let res = client
        .post(server.url("/users/v1/login"))
        .json(&json!({"account": "shorty", "password": sha256_hex(&format!("{}{token}", user.digest))}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(max_age(&res).as_deref(), Some("86400"));
    server.stop().await;
}

#[tokio::test]
async fn failed_logins_are_limited_per_account_without_telling_accounts_apart() {
    let config = Config {
        login_limits: user_service::throttle::LoginLimits {
            per_account: 3,
            per_ip: 100,
            window: std::time::Duration::from_secs(2),
        },
        ..Config::default()
    };
    let service = user_service::build(&config, Stores::in_memory()).expect("service");
    let server = common::start(service).await;
    let client = common::browser();
    let user = User::new("target", "right");
    register(&client, &server, &user).await;
    let attempt = |account: &'static str, right: bool| {
        let client = client.clone();
        let digest = user.digest.clone();
        let url_token = server.url("/users/v1/login");
        async move {
            let token: Value = client
                .get(&url_token)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let token = token["token"].as_str().unwrap();
            let base = if right { digest } else { sha256_hex("guess") };
            let res = client
                .post(&url_token)
                .json(
                    &json!({"account": account, "password": sha256_hex(&format!("{base}{token}"))}),
                )
                .send()
                .await
                .unwrap();
            let retry = res
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().parse::<u64>().unwrap());
            (res.status(), retry, res.json::<Value>().await.unwrap())
        }
    };
    for _ in 0..3 {
        assert_eq!(attempt("target", false).await.0, StatusCode::BAD_REQUEST);
        assert_eq!(attempt("nobody", false).await.0, StatusCode::BAD_REQUEST);
    }
    // Over the limit: even the right proof is refused, the same way for an unknown account.
    let (status, retry, body) = attempt("target", true).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert!(matches!(retry, Some(1..=2)), "{retry:?}");
    assert_eq!(body["category"], "user");
    assert_eq!(body["message"], "too many failed logins");
    let (status, retry_unknown, body_unknown) = attempt("nobody", true).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert!(retry_unknown.is_some());
    assert_eq!(body_unknown, body);
    // After the window, the right proof works.
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    assert_eq!(attempt("target", true).await.0, StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn no_store_answers_are_untagged_and_others_get_a_strong_etag() {
    let server = start().await;
    let client = common::browser();
    let user = User::new("etagged", "pw");
    // The registration answer is an ordinary one: the etag middleware tags it.
    let created = register(&client, &server, &user).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let tag = created.headers()["etag"].to_str().unwrap().to_owned();
    assert!(tag.starts_with('"'), "strong: {tag}");

    // `me` and the login token are `no-store`: no cache keeps them, so none gets a tag, and
    // a conditional request is answered in full.
    let first = client.get(server.url("/users/v1/me")).send().await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(first.headers()["cache-control"], "no-store");
    assert!(first.headers().get("etag").is_none());
    let would_be = framework::middleware::etag::strong_etag(br#"{"name":""}"#);
    assert_eq!(&first.bytes().await.unwrap()[..], br#"{"name":""}"#);
    let again = client
        .get(server.url("/users/v1/me"))
        .header("if-none-match", would_be)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(&again.bytes().await.unwrap()[..], br#"{"name":""}"#);
    let login = client
        .get(server.url("/users/v1/login"))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), StatusCode::OK);
    assert_eq!(login.headers()["cache-control"], "no-store");
    assert!(login.headers().get("etag").is_none());
    server.stop().await;
}

#[tokio::test]
async fn the_login_page_and_its_files_come_from_the_binary() {
    let server = start().await;
    let client = reqwest::Client::new();
    // Identity, so compress leaves the body (and its strong tag) alone.
    let page = client
        .get(server.url("/"))
        .header("accept-encoding", "identity")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    let etag = page.headers()["etag"].to_str().unwrap().to_owned();
    assert!(
        !etag.starts_with("W/"),
        "strong, from the build-time hash: {etag}"
    );
    assert!(
        page.text()
            .await
            .unwrap()
            .contains(r#"src="/assets/login.js""#)
    );
    let again = client
        .get(server.url("/"))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);

    let script = client
        .get(server.url("/assets/login.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        script.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    assert!(
        script
            .text()
            .await
            .unwrap()
            .contains("crypto.subtle.digest(\"SHA-256\"")
    );
    let missing = client
        .get(server.url("/assets/nope.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    server.stop().await;
}

/// Every answer carries the security headers: the page a strict Content-Security-Policy (no
/// inline script, same origin only), the docs page its own (Swagger UI's styles); no CORS
/// headers unless `CORS_ORIGINS` names the origin, and then with the session cookie allowed.
#[tokio::test]
async fn security_headers_everywhere_and_cors_only_for_configured_origins() {
    let server = start().await;
    let client = reqwest::Client::new();
    // The health probes too: they answer before most middleware run.
    for path in [
        "/",
        "/users/v1/me",
        "/openapi.json",
        "/nowhere",
        "/livez",
        "/readyz",
    ] {
        let res = client
            .get(server.url(path))
            .header("origin", "https://elsewhere.example")
            .send()
            .await
            .unwrap();
        let h = res.headers();
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        // The page policies on the page only.
        if path == "/" {
            assert_eq!(
                h["content-security-policy"],
                framework::middleware::security_headers::STRICT_CSP
            );
            assert_eq!(h["x-frame-options"], "DENY");
        } else {
            assert!(h.get("content-security-policy").is_none(), "{path}");
        }
        assert!(h.get("access-control-allow-origin").is_none(), "{path}");
    }
    let docs = client.get(server.url("/docs")).send().await.unwrap();
    let csp = docs.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.starts_with("default-src 'self'") && csp.contains("'unsafe-inline'"));
    server.stop().await;

    let config = Config {
        cors_origins: vec!["https://app.example.com".to_owned()],
        ..Config::default()
    };
    let server = common::start(user_service::build(&config, Stores::in_memory()).unwrap()).await;
    let preflight = client
        .request(reqwest::Method::OPTIONS, server.url("/users/v1/login"))
        .header("origin", "https://app.example.com")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status(), StatusCode::NO_CONTENT);
    let h = preflight.headers();
    assert_eq!(h["access-control-allow-origin"], "https://app.example.com");
    assert_eq!(h["access-control-allow-credentials"], "true");
    // PUT for the avatar upload.
    assert_eq!(h["access-control-allow-methods"], "GET, POST, PUT");
    assert_eq!(h["access-control-allow-headers"], "content-type");
    let me = client
        .get(server.url("/users/v1/me"))
        .header("origin", "https://app.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(
        me.headers()["access-control-allow-origin"],
        "https://app.example.com"
    );
    let other = client
        .get(server.url("/users/v1/me"))
        .header("origin", "https://elsewhere.example")
        .send()
        .await
        .unwrap();
    assert!(other.headers().get("access-control-allow-origin").is_none());
    server.stop().await;
}

/// A session store that counts its loads.
struct CountingSessions {
    inner: framework::middleware::session::MemoryStore,
    loads: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl framework::middleware::session::SessionStore for CountingSessions {
    async fn load(&self, id: &str) -> framework::Result<Option<bytes::Bytes>> {
        self.loads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.load(id).await
    }
    async fn save(&self, id: &str, data: &[u8], ttl: std::time::Duration) -> framework::Result {
        self.inner.save(id, data, ttl).await
    }
    async fn destroy(&self, id: &str) -> framework::Result {
        self.inner.destroy(id).await
    }
}

/// The user service refuses a forged registration and login before it loads a session (the
/// CSRF check runs first), trusts its `CORS_ORIGINS`, and lets a client that sends neither
/// header (curl, the other tests) through.
#[tokio::test]
async fn the_user_service_refuses_cross_site_posts_on_its_post_routes() {
    let config = user_service::Config {
        database_url: "memory".to_owned(),
        cors_origins: vec!["https://app.example".to_owned()],
        ..user_service::Config::default()
    };
    let sessions = std::sync::Arc::new(CountingSessions {
        inner: framework::middleware::session::MemoryStore::new(),
        loads: std::sync::atomic::AtomicUsize::new(0),
    });
    let stores = user_service::Stores {
        sessions: sessions.clone(),
        ..user_service::Stores::connect(&config)
            .await
            .expect("stores")
    };
    let service = common::start(user_service::build(&config, stores).expect("service")).await;
    let client = common::browser();
    // The victim's session cookie, as a browser sends it with a forged post.
    let res = client
        .get(service.url("/users/v1/login"))
        .send()
        .await
        .unwrap();
    let victim = session_cookie(&res);
    let loads = || sessions.loads.load(std::sync::atomic::Ordering::SeqCst);
    let before = loads();
    let body = serde_json::json!({"account": "mallory", "password": "a".repeat(64)});
    for path in ["/users/v1/me", "/users/v1/login"] {
        let res = client
            .post(service.url(path))
            .header("sec-fetch-site", "cross-site")
            .header("origin", "https://evil.example")
            .header("cookie", &victim)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 403, "{path}");
        let error: serde_json::Value = res.json().await.unwrap();
        assert_eq!(error["category"], "framework-csrf", "{path}");
    }
    assert_eq!(loads(), before, "a forged post loads no session");
    // The same cookie on a real request is loaded: the count sees loads.
    let res = client
        .get(service.url("/users/v1/me"))
        .header("cookie", &victim)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(loads(), before + 1);
    let trusted = client
        .post(service.url("/users/v1/me"))
        .header("sec-fetch-site", "cross-site")
        .header("origin", "https://app.example")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(trusted.status(), 201, "a CORS origin is trusted");
    service.stop().await;
}

/// The avatar upload is a state-changing route too: a forged cross-site `PUT` is refused.
#[tokio::test]
async fn the_avatar_upload_refuses_a_forged_cross_site_put() {
    let service = user_service::build(
        &user_service::Config::default(),
        user_service::Stores::in_memory(),
    )
    .unwrap();
    let server = common::start(service).await;
    let body = "--b\r\nContent-Disposition: form-data; name=\"avatar\"; filename=\"a.png\"\r\n\
                Content-Type: image/png\r\n\r\n\x7fPNG\r\n--b--\r\n";
    let answer = common::raw_request(
        server.addr,
        &format!(
            "PUT /users/v1/me/avatar HTTP/1.1\r\nHost: t\r\nSec-Fetch-Site: cross-site\r\n\
             Origin: https://evil.example\r\nAccept: application/json\r\n\
             Content-Type: multipart/form-data; boundary=b\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        ),
    )
    .await;
    assert_eq!(answer.status, 403, "{}", answer.head);
    assert!(
        answer.text().contains("framework-csrf"),
        "{}",
        answer.text()
    );
    server.stop().await;
}

//! The typed client generated from the user service's `#[api]` trait (`user_api::UserApi`):
//! register, token, proof, login and me with one client, over HTTP/1.1, over HTTP/2 (prior
//! knowledge), over HTTPS (both) and in process; the service's error answers, transport
//! failures and timeouts apart.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use framework::client::{ApiClient, ClientBuilder, ClientError};
use framework::extract::Json;
use framework::testing::TestClient;
use sha2::{Digest, Sha256};
use user_api::{UserApiClient, UserParams};
use user_service::controllers::user::login_proof;
use user_service::{Config, Stores};

fn sha256_hex(data: &str) -> String {
    hex::encode(Sha256::digest(data.as_bytes()))
}

fn params(account: &str, password: &str) -> Json<UserParams> {
    Json(UserParams {
        account: account.to_owned(),
        password: password.to_owned(),
    })
}

fn service() -> framework::Service {
    user_service::build(&Config::default(), Stores::in_memory()).expect("service")
}

/// The whole flow with one client: its cookie store carries the session from the token to
/// the login and from the login to `me`.
async fn register_token_proof_login_me(client: &UserApiClient) {
    let digest = sha256_hex("correct horse");
    let user = client
        .register(params("alice_1", &digest))
        .await
        .expect("register");
    assert_eq!(user.account, "alice_1");

    // A declared error: the status and the error object.
    let err = client
        .register(params("ALICE_1", &digest))
        .await
        .expect_err("taken");
    let ClientError::Status {
        status,
        error: Some(error),
        declared,
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(status.as_u16(), 409);
    assert!(declared);
    assert_eq!(error.category, "user");
    assert_eq!(error.message, "account already exists");

    // A validation error the framework answers: not declared by the route, still an object.
    let err = client
        .register(params("a", &digest))
        .await
        .expect_err("invalid");
    assert_eq!(err.status().map(|s| s.as_u16()), Some(400));
    assert!(matches!(
        err,
        ClientError::Status {
            declared: false,
            ..
        }
    ));
    let error = err.error_object().expect("an error object");
    assert_eq!(error.category, "validate");
    assert_eq!(error.code, "xUserAccount");
    assert!(!err.is_transport());

    assert_eq!(client.me().await.expect("me").name, "");
    let token = client.login_token().await.expect("token").token;
    let proof = login_proof(&digest, token.as_str());
    let user = client
        .login(params("alice_1", &proof))
        .await
        .expect("login");
    assert_eq!(user.account, "alice_1");
    assert_eq!(client.me().await.expect("me").name, "alice_1");

    // The token was used: the same proof again is the one wrong-credentials answer.
    let err = client
        .login(params("alice_1", &proof))
        .await
        .expect_err("replayed");
    assert_eq!(err.status().map(|s| s.as_u16()), Some(400));
    assert_eq!(
        err.error_object().map(|e| e.message.as_str()),
        Some("account or password is wrong")
    );
}

#[tokio::test]
async fn the_flow_over_http1() {
    let server = common::start(service()).await;
    let versions = Arc::default();
    let client = recording_versions(&versions)
        .build(&server.url(""))
        .expect("client");
    register_token_proof_login_me(&UserApiClient::from_client(client)).await;
    {
        let versions = versions.lock().unwrap();
        assert_eq!(versions.len(), 8);
        assert!(
            versions.iter().all(|v| *v == http::Version::HTTP_11),
            "{versions:?}"
        );
    }
    // The constructor the generated client has, with the defaults.
    let server = common::start(service()).await;
    register_token_proof_login_me(&UserApiClient::new(&server.url("")).unwrap()).await;
}

/// A builder that records the HTTP version of every answer in `versions`.
fn recording_versions(versions: &Arc<Mutex<Vec<http::Version>>>) -> ClientBuilder {
    let versions = Arc::clone(versions);
    ApiClient::builder().inspect(move |call| versions.lock().unwrap().push(call.version))
}

#[tokio::test]
async fn the_flow_over_http2() {
    let server = common::start(service()).await;
    let versions = Arc::default();
    let client = recording_versions(&versions)
        .http2_prior_knowledge()
        .build(&server.url(""))
        .expect("client");
    register_token_proof_login_me(&UserApiClient::from_client(client)).await;
    let versions = versions.lock().unwrap();
    assert_eq!(versions.len(), 8);
    assert!(
        versions.iter().all(|v| *v == http::Version::HTTP_2),
        "{versions:?}"
    );
}

#[tokio::test]
async fn the_flow_over_https_with_http1_and_http2() {
    for http2 in [false, true] {
        let pki = common::pki::Pki::new(if http2 { "api-client-h2" } else { "api-client" });
        pki.issue("api-client");
        let tls = framework::tls::Tls::from_pem_files(pki.cert(), pki.key()).unwrap();
        let service = user_service::app(&Config::default(), Stores::in_memory())
            .expect("app")
            .tls(tls)
            .build()
            .expect("service");
        let server = common::start(service).await;
        let base = format!("https://localhost:{}", server.addr.port());
        let versions = Arc::default();
        let mut builder = recording_versions(&versions)
            .tls_root_pem(pki.ca_pem.as_bytes())
            .expect("the CA");
        builder = if http2 {
            builder.http2_prior_knowledge()
        } else {
            builder.http1_only()
        };
        let client = UserApiClient::from_client(builder.build(&base).expect("client"));
        register_token_proof_login_me(&client).await;
        let expected = if http2 {
            http::Version::HTTP_2
        } else {
            http::Version::HTTP_11
        };
        assert!(
            versions.lock().unwrap().iter().all(|v| *v == expected),
            "{versions:?}"
        );

        // Without the CA the service's certificate is not trusted: a transport failure.
        let other = common::pki::Pki::new("api-client-other");
        let untrusting = ApiClient::builder()
            .tls_root_pem(other.ca_pem.as_bytes())
            .unwrap()
            .build(&base)
            .unwrap();
        let err = UserApiClient::from_client(untrusting)
            .me()
            .await
            .expect_err("untrusted");
        assert!(matches!(err, ClientError::Transport(_)), "{err:?}");
    }
    assert!(matches!(
        ApiClient::builder().tls_root_pem(b"not a certificate"),
        Err(ClientError::Request(_))
    ));
}

#[tokio::test]
async fn the_flow_in_process() {
    let test_client = TestClient::new(service());
    let client = UserApiClient::from_client(ApiClient::in_process(&test_client));
    register_token_proof_login_me(&client).await;
    // The test client's jar holds the same session: a raw request sees the login.
    let res = test_client.get("/users/v1/me").send().await;
    assert_eq!(res.json()["name"], "alice_1");
}

#[tokio::test]
async fn without_the_cookie_store_no_session_flows() {
    let server = common::start(service()).await;
    let client = ApiClient::builder()
        .cookie_store(false)
        .build(&server.url(""))
        .expect("client");
    let client = UserApiClient::from_client(client);
    let digest = sha256_hex("pw");
    client.register(params("bob_1", &digest)).await.unwrap();
    let token = client.login_token().await.unwrap().token;
    // The token is bound to a session the next call does not carry.
    let err = client
        .login(params("bob_1", &login_proof(&digest, token.as_str())))
        .await
        .expect_err("no session");
    assert_eq!(err.status().map(|s| s.as_u16()), Some(400));
}

#[tokio::test]
async fn transport_failures_and_timeouts_are_apart_from_answers() {
    // Nothing listens: a transport failure.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = closed.local_addr().unwrap();
    drop(closed);
    let client = UserApiClient::new(&format!("http://{address}")).unwrap();
    let err = client.me().await.expect_err("refused");
    assert!(matches!(err, ClientError::Transport(_)), "{err:?}");
    assert!(err.is_transport());
    assert_eq!(err.status(), None);

    // A peer that accepts and never answers: the timeout.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = silent.local_addr().unwrap();
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
        }
    });
    let client = ApiClient::builder()
        .timeout(Some(Duration::from_millis(300)))
        .build(&format!("http://{address}"))
        .unwrap();
    let started = std::time::Instant::now();
    let err = UserApiClient::from_client(client)
        .me()
        .await
        .expect_err("silent");
    assert!(matches!(err, ClientError::Timeout), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    hold.abort();

    // A base URL the client cannot use.
    for bad in ["not a url", "https://example.com", "/relative"] {
        assert!(
            matches!(UserApiClient::new(bad), Err(ClientError::Request(_))),
            "{bad}"
        );
    }
}

//! Client certificates (mutual TLS) over real sockets, with CAs and certificates made in the
//! test (`rcgen`): a verified client's identity reaches handlers and middleware (subject, names,
//! fingerprint, read once per connection); required client authentication refuses a client
//! with no certificate, an expired one, or one from another CA, each with its TLS alert;
//! optional client authentication serves an anonymous client with no identity; a reload of the
//! CRL or of the CA bundle refuses a client it accepted before, on new connections; bad files
//! are errors naming them, at start-up and on reload; a controller method takes the
//! certificate as an argument. The user service's `TLS_CLIENT_CA` is tested in tls.rs, whose
//! binary links the user service (its controllers would be mounted beside this file's).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::pki::{ClientId, Pki, VALID, connect_with, get_on};
use framework::middleware::responder::Responder;
use framework::tls::{ClientAuth, ClientCert, Tls};
use framework::{App, Context, FromState, Next, Result, Service, controller, from_fn};
use http::HeaderValue;
use sha2::Digest;

/// Marks the answer with the client's common name, or `anonymous`: middleware sees the
/// identity as handlers do.
async fn mark_client(ctx: &mut Context, next: Next<'_>) -> Result {
    let who = ctx
        .connection()
        .client_cert()
        .and_then(|cert| cert.common_name())
        .unwrap_or("anonymous");
    let who = HeaderValue::from_str(who).unwrap();
    let result = next.run(ctx).await;
    ctx.set_response_header("x-client", who);
    result
}

fn service(tls: Tls) -> Service {
    App::bare()
        .tls(tls)
        .use_middleware(from_fn(mark_client))
        .use_middleware(Responder::default())
        .get("/whoami", |ctx: &mut Context| {
            let identity = ctx.connection().client_cert().map(|cert| {
                serde_json::json!({
                    "subject": cert.subject(),
                    "cn": cert.common_name(),
                    "dns": cert.dns_names(),
                    "emails": cert.emails(),
                    "ips": cert.ips(),
                    "uris": cert.uris(),
                    "fingerprint": cert.fingerprint_sha256(),
                    "der_len": cert.der().len(),
                    // Which parsed copy: the same for every request of a connection.
                    "copy": Arc::as_ptr(cert) as usize,
                })
            });
            async move { Ok(identity.unwrap_or(serde_json::Value::Null)) }
        })
        .build()
        .expect("app builds")
}

fn url(server: &common::Running) -> String {
    format!("https://localhost:{}/whoami", server.addr.port())
}

/// The server's certificate and a client CA in `pki`'s directory; returns the CA bundle's path.
fn files(pki: &Pki) -> std::path::PathBuf {
    pki.issue("server");
    pki.write("clients-ca.pem", &pki.ca_pem)
}

/// Waits until `check` holds, within 10 s.
async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check().await {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_verified_client_certificate_reaches_handlers_and_middleware() {
    let pki = Pki::new("mtls-identity");
    let ca = files(&pki);
    let tls = Tls::from_pem_files(pki.cert(), pki.key())
        .unwrap()
        .client_auth(ClientAuth::required(&ca))
        .unwrap();
    let server = common::start(service(tls)).await;
    let alice = pki.client_cert("alice", 7, VALID);
    let fingerprint = hex::encode(sha2::Sha256::digest(&alice.der));
    for (http1_only, version) in [
        (true, reqwest::Version::HTTP_11),
        (false, reqwest::Version::HTTP_2),
    ] {
        let client = alice.reqwest(&pki, http1_only);
        let mut copies = Vec::new();
        // Two requests on one kept-alive connection.
        for _ in 0..2 {
            let res = client.get(url(&server)).send().await.unwrap();
            assert_eq!(res.version(), version);
            assert_eq!(res.status(), 200);
            assert_eq!(res.headers()["x-client"], "alice");
            let body: serde_json::Value = res.json().await.unwrap();
            // RFC 4514 writes the last RDN first; rcgen puts the common name first.
            assert_eq!(body["subject"], "O=Example Clients,CN=alice");
            assert_eq!(body["cn"], "alice");
            assert_eq!(body["dns"], serde_json::json!(["alice.clients.test"]));
            assert_eq!(body["emails"], serde_json::json!(["alice@example.test"]));
            assert_eq!(body["ips"], serde_json::json!(["10.0.0.7"]));
            assert_eq!(
                body["uris"],
                serde_json::json!(["spiffe://example.test/alice"])
            );
            assert_eq!(body["fingerprint"], fingerprint.as_str());
            assert_eq!(body["der_len"], alice.der.len());
            copies.push(body["copy"].as_u64().unwrap());
        }
        assert_eq!(copies[0], copies[1], "read once per connection");
    }
    server.stop().await;
}

#[tokio::test]
async fn required_client_auth_refuses_no_certificate_an_expired_one_and_another_cas() {
    let pki = Pki::new("mtls-required");
    let ca = files(&pki);
    let tls = Tls::from_pem_files(pki.cert(), pki.key())
        .unwrap()
        .client_auth(ClientAuth::required(&ca))
        .unwrap();
    let server = common::start(service(tls)).await;
    let addr = server.addr;

    let good = pki.client_cert("good", 1, VALID);
    let body = pki.get_as(addr, Some(&good), "/whoami").await.unwrap();
    assert!(body.contains("\"cn\":\"good\""), "{body}");

    let refusals = [
        (None, "CertificateRequired"),
        (
            Some(pki.client_cert("expired", 2, ((2000, 1, 1), (2001, 1, 1)))),
            "CertificateExpired",
        ),
        (
            // TLS has no alert of its own for this: rustls sends the expired one.
            Some(pki.client_cert("early", 3, ((2099, 1, 1), (2100, 1, 1)))),
            "CertificateExpired",
        ),
        (
            Some(Pki::new("mtls-other-ca").client_cert("stranger", 1, VALID)),
            "UnknownCA",
        ),
    ];
    for (id, alert) in &refusals {
        let err = pki.get_as(addr, id.as_ref(), "/whoami").await.unwrap_err();
        assert!(err.contains(alert), "{alert}: {err}");
    }
    // reqwest too: no answer at all for a client without a certificate.
    let err = pki
        .client(false)
        .get(url(&server))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_connect() || err.is_request(), "{err:?}");
    // And the server goes on serving good clients.
    assert!(pki.get_as(addr, Some(&good), "/whoami").await.is_ok());
    server.stop().await;
}

#[tokio::test]
async fn optional_client_auth_serves_an_anonymous_client_with_no_identity() {
    let pki = Pki::new("mtls-optional");
    let ca = files(&pki);
    let auth = ClientAuth::optional(&ca);
    assert!(!auth.is_required());
    let tls = Tls::from_pem_files(pki.cert(), pki.key())
        .unwrap()
        .client_auth(auth)
        .unwrap();
    let server = common::start(service(tls)).await;

    let res = pki.client(false).get(url(&server)).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["x-client"], "anonymous");
    assert_eq!(res.text().await.unwrap(), "null");

    let bob = pki.client_cert("bob", 5, VALID);
    let res = bob
        .reqwest(&pki, false)
        .get(url(&server))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-client"], "bob");

    // A certificate shown must still be good.
    let stranger = Pki::new("mtls-optional-other").client_cert("stranger", 1, VALID);
    let err = pki
        .get_as(server.addr, Some(&stranger), "/whoami")
        .await
        .unwrap_err();
    assert!(err.contains("UnknownCA"), "{err}");
    let expired = pki.client_cert("expired", 6, ((2000, 1, 1), (2001, 1, 1)));
    let err = pki
        .get_as(server.addr, Some(&expired), "/whoami")
        .await
        .unwrap_err();
    assert!(err.contains("CertificateExpired"), "{err}");
    server.stop().await;
}

#[tokio::test]
async fn a_new_crl_revokes_a_client_on_new_connections_and_a_bad_one_keeps_the_old() {
    let pki = Pki::new("mtls-crl");
    let ca = files(&pki);
    let crl = pki.write("clients-crl.pem", &pki.crl(1, &[]));
    let tls = Tls::from_pem_files(pki.cert(), pki.key())
        .unwrap()
        .client_auth(ClientAuth::required(&ca).crl(&crl))
        .unwrap()
        .reload_every(Duration::from_millis(50));
    let server = common::start(service(tls.clone())).await;
    let addr = server.addr;
    let (alice, bob) = (
        pki.client_cert("alice", 10, VALID),
        pki.client_cert("bob", 11, VALID),
    );
    for id in [&alice, &bob] {
        assert!(pki.get_as(addr, Some(id), "/whoami").await.is_ok());
    }
    // A connection of Alice's opened before the revocation, and a second one that resumed
    // its TLS session.
    let resuming = pki.connector(Some(&alice));
    let mut open = connect_with(&resuming, addr).await.unwrap();
    assert!(get_on(&mut open, "/whoami").await.is_ok());
    let mut resumed = connect_with(&resuming, addr).await.unwrap();
    assert!(get_on(&mut resumed, "/whoami").await.is_ok());
    assert_eq!(
        resumed.get_ref().1.handshake_kind(),
        Some(rustls::HandshakeKind::Resumed)
    );

    // Alice's certificate revoked: the watch reads the new list.
    pki.write("clients-crl.pem", &pki.crl(2, &[10]));
    eventually("the new CRL was not picked up", async || {
        pki.get_as(addr, Some(&alice), "/whoami")
            .await
            .is_err_and(|err| err.contains("CertificateRevoked"))
    })
    .await;
    assert!(pki.get_as(addr, Some(&bob), "/whoami").await.is_ok());
    // Nor can Alice resume a session from before: a reload forgets them.
    let mut again = connect_with(&resuming, addr).await.unwrap();
    let err = get_on(&mut again, "/whoami").await.unwrap_err();
    assert!(err.contains("CertificateRevoked"), "{err}");
    // The connection opened before goes on: a reload applies to new handshakes.
    assert!(get_on(&mut open, "/whoami").await.is_ok());

    // A CRL file that does not load: the reload says which file, the current list stays.
    std::fs::write(&crl, "not a CRL").unwrap();
    let err = tls.reload().unwrap_err();
    assert!(err.to_string().contains("clients-crl.pem"), "{err}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let err = pki.get_as(addr, Some(&alice), "/whoami").await.unwrap_err();
    assert!(err.contains("CertificateRevoked"), "{err}");
    assert!(pki.get_as(addr, Some(&bob), "/whoami").await.is_ok());

    // A CRL of another CA does not cover this CA's certificates: their status is unknown, and
    // they are refused (rustls sends the unknown-CA alert for that).
    let other = Pki::new("mtls-crl-other");
    pki.write("clients-crl.pem", &other.crl(1, &[]));
    tls.reload().unwrap();
    let err = pki.get_as(addr, Some(&bob), "/whoami").await.unwrap_err();
    assert!(err.contains("UnknownCA"), "{err}");
    server.stop().await;
}

/// A CRL past its `nextUpdate` covers nothing: the clients it would cover are refused, as
/// OpenSSL's CRL check refuses them, unless the app chose `allow_expired_crl`.
#[tokio::test]
async fn an_expired_crl_refuses_its_clients_unless_allowed() {
    let pki = Pki::new("mtls-crl-expired");
    let ca = files(&pki);
    let crl = pki.write("clients-crl.pem", &pki.crl_until(1, &[], 2021));
    let bob = pki.client_cert("bob", 11, VALID);
    for (allowed, auth) in [
        (false, ClientAuth::required(&ca).crl(&crl)),
        (
            true,
            ClientAuth::required(&ca).crl(&crl).allow_expired_crl(),
        ),
    ] {
        let tls = Tls::from_pem_files(pki.cert(), pki.key())
            .unwrap()
            .client_auth(auth)
            .unwrap();
        let server = common::start(service(tls)).await;
        let answer = pki.get_as(server.addr, Some(&bob), "/whoami").await;
        assert_eq!(answer.is_ok(), allowed, "allowed: {allowed}, {answer:?}");
        server.stop().await;
    }
    // A current CRL of the same CA lets the client in.
    pki.write("clients-crl.pem", &pki.crl(2, &[]));
    let tls = Tls::from_pem_files(pki.cert(), pki.key())
        .unwrap()
        .client_auth(ClientAuth::required(&ca).crl(&crl))
        .unwrap();
    let server = common::start(service(tls)).await;
    assert!(pki.get_as(server.addr, Some(&bob), "/whoami").await.is_ok());
    server.stop().await;
}

#[tokio::test]
async fn a_new_ca_bundle_refuses_the_old_cas_clients() {
    let pki = Pki::new("mtls-ca-reload");
    let ca = files(&pki);
    // The file watch reloads (`SIGHUP` calls the same reload, see tls.rs; not sent here,
    // where it would reload the other tests' servers and forget their TLS sessions).
    let tls = Tls::from_pem_files(pki.cert(), pki.key())
        .unwrap()
        .client_auth(ClientAuth::required(&ca))
        .unwrap()
        .reload_every(Duration::from_millis(50));
    let server = common::start(service(tls)).await;
    let addr = server.addr;
    let old_client = pki.client_cert("old", 1, VALID);
    assert!(pki.get_as(addr, Some(&old_client), "/whoami").await.is_ok());

    let new_ca = Pki::new("mtls-ca-new");
    let new_client: ClientId = new_ca.client_cert("new", 1, VALID);
    pki.write("clients-ca.pem", &new_ca.ca_pem);
    eventually("the new CA bundle was not picked up", async || {
        pki.get_as(addr, Some(&old_client), "/whoami")
            .await
            .is_err_and(|err| err.contains("UnknownCA"))
    })
    .await;
    let body = pki
        .get_as(addr, Some(&new_client), "/whoami")
        .await
        .unwrap();
    assert!(body.contains("\"cn\":\"new\""), "{body}");
    server.stop().await;
}

#[tokio::test]
async fn bad_client_auth_files_at_start_up_are_errors_naming_them() {
    let pki = Pki::new("mtls-bad-files");
    let ca = files(&pki);
    let tls = || Tls::from_pem_files(pki.cert(), pki.key()).unwrap();

    let missing = pki.dir.join("missing-ca.pem");
    let err = tls()
        .client_auth(ClientAuth::required(&missing))
        .unwrap_err();
    assert!(err.to_string().contains("missing-ca.pem"), "{err}");

    let empty = pki.write("empty-ca.pem", "no certificate here\n");
    let err = tls().client_auth(ClientAuth::optional(&empty)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "client CA bundle {}: no certificate in the file",
            empty.display()
        )
    );

    // A certificate that is not one: rustls cannot make a trust anchor of it.
    let broken = pki.write(
        "broken-ca.pem",
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    );
    let err = tls()
        .client_auth(ClientAuth::required(&broken))
        .unwrap_err();
    assert!(err.to_string().contains("broken-ca.pem"), "{err}");

    let no_crl = pki.write("no-crl.pem", "");
    let err = tls()
        .client_auth(ClientAuth::required(&ca).crl(&no_crl))
        .unwrap_err();
    assert!(err.to_string().contains("no-crl.pem: no CRL"), "{err}");
    let bad_crl = pki.write(
        "bad-crl.pem",
        "-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n",
    );
    let err = tls()
        .client_auth(ClientAuth::required(&ca).crl(&bad_crl))
        .unwrap_err();
    assert!(err.to_string().contains("bad-crl.pem"), "{err}");

    // Bytes that are not a certificate are an error, not a panic; a certificate is read whole.
    let err = framework::tls::ClientCert::from_der(b"not DER").unwrap_err();
    assert!(err.to_string().starts_with("client certificate: "), "{err}");
    let id = pki.client_cert("carol", 9, VALID);
    let cert = framework::tls::ClientCert::from_der(&id.der).unwrap();
    assert_eq!(cert.common_name(), Some("carol"));
    assert_eq!(cert.der(), &id.der[..]);
    assert!(framework::tls::ClientCert::from_der(&id.der[..id.der.len() - 1]).is_err());
}

/// What a controller method may take: the certificate, or an optional one.
#[derive(FromState)]
struct Identity;

#[controller(prefix = "/typed")]
impl Identity {
    #[get("/required")]
    async fn required(&self, cert: Arc<ClientCert>) -> String {
        cert.common_name().unwrap_or_default().to_owned()
    }

    #[get("/optional")]
    async fn optional(&self, cert: Option<Arc<ClientCert>>) -> String {
        cert.map_or_else(|| "anonymous".to_owned(), |cert| cert.subject().to_owned())
    }
}

#[tokio::test]
async fn a_controller_method_takes_the_client_certificate_as_an_argument() {
    let pki = Pki::new("mtls-typed");
    let ca = files(&pki);
    let tls = Tls::from_pem_files(pki.cert(), pki.key())
        .unwrap()
        .client_auth(ClientAuth::optional(&ca))
        .unwrap();
    // `App::new()` mounts the controller, with the error handler and the responder.
    let server = common::start(App::new().tls(tls).build().unwrap()).await;
    let at = |path: &str| format!("https://localhost:{}/typed/{path}", server.addr.port());

    let anonymous = pki.client(false);
    let res = anonymous.get(at("optional")).send().await.unwrap();
    assert_eq!(res.text().await.unwrap(), "anonymous");
    let res = anonymous
        .get(at("required"))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body["category"], "framework-tls", "{body}");

    let dave = pki.client_cert("dave", 4, VALID).reqwest(&pki, false);
    let res = dave.get(at("required")).send().await.unwrap();
    assert_eq!(res.text().await.unwrap(), "dave");
    let res = dave.get(at("optional")).send().await.unwrap();
    assert_eq!(res.text().await.unwrap(), "O=Example Clients,CN=dave");
    server.stop().await;
}

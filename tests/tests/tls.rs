//! HTTPS over real sockets, with certificates made in the test (`rcgen`): reqwest (rustls)
//! over HTTP/1.1 and HTTP/2 by ALPN, `curl --cacert`, a certificate reload under load with no
//! failed request (new handshakes get the new certificate, open connections keep theirs), a
//! bad new file that leaves the old certificate in place, a reload on `SIGHUP`, and a stalled
//! handshake closed within the request-head limit; TLS over a Unix-domain socket; the user
//! service over HTTPS, and with client certificates (`TLS_CLIENT_CA`; the rest of mTLS is in
//! mtls.rs).

mod common;

use common::pki::{Pki, VALID};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use framework::client_ip::ClientIpExt;
use framework::middleware::responder::Responder;
use framework::middleware::security_headers::SecurityHeaders;
use framework::tls::Tls;
use framework::{App, Context, ServerLimits, Service};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `GET /` on an open HTTP/1.1 connection: true when answered "over tls".
async fn answered_over<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    tls: &mut tokio_rustls::client::TlsStream<S>,
) -> bool {
    tls.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    while !seen.ends_with(b"over tls") {
        match tokio::time::timeout(Duration::from_secs(5), tls.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => seen.extend_from_slice(&chunk[..n]),
            _ => return false,
        }
    }
    seen.starts_with(b"HTTP/1.1 200")
}

fn service(tls: Tls) -> Service {
    App::bare()
        .tls(tls)
        .server_limits(ServerLimits::default().header_read_timeout(Duration::from_millis(300)))
        .use_middleware(SecurityHeaders::default())
        .use_middleware(Responder::default())
        .get("/", |ctx: &mut Context| {
            let https = ctx.is_https();
            async move { Ok(if https { "over tls" } else { "plain" }) }
        })
        .build()
        .expect("app builds")
}

/// TLS works the same over a Unix-domain socket: the handshake, the request, `is_https`.
#[cfg(unix)]
#[tokio::test]
async fn https_over_a_unix_socket() {
    let pki = Pki::new("tls-unix");
    pki.issue("first");
    let path = pki.dir.join("https.sock");
    let listener = framework::listener::Listener::unix(&path).await.unwrap();
    let service = service(Tls::from_pem_files(pki.cert(), pki.key()).unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(service.serve_with_shutdown(listener, async {
        let _ = stopped.await;
    }));
    let stream = tokio::net::UnixStream::connect(&path).await.unwrap();
    let mut tls = pki.connect_over(stream).await;
    assert!(
        answered_over(&mut tls).await,
        "no answer over TLS on the socket"
    );
    drop(tls);
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

fn url(server: &common::Running, path: &str) -> String {
    format!("https://localhost:{}{path}", server.addr.port())
}

// Two workers: curl runs as a blocking child process while the server answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_over_http1_and_http2_by_alpn_and_with_curl() {
    let pki = Pki::new("tls-alpn");
    pki.issue("first");
    let server = common::start(service(Tls::from_pem_files(pki.cert(), pki.key()).unwrap())).await;
    for (http1_only, version) in [
        (true, reqwest::Version::HTTP_11),
        (false, reqwest::Version::HTTP_2),
    ] {
        let res = pki
            .client(http1_only)
            .get(url(&server, "/"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.version(), version);
        assert_eq!(res.status(), 200);
        // Over TLS, security headers send HSTS.
        assert_eq!(
            res.headers()["strict-transport-security"],
            "max-age=31536000; includeSubDomains"
        );
        assert_eq!(res.text().await.unwrap(), "over tls");
    }

    // A third-party client, when it is there (CI installs it).
    let ca = pki.dir.join("ca.pem");
    std::fs::write(&ca, &pki.ca_pem).unwrap();
    match std::process::Command::new("curl")
        .args(["-sS", "--max-time", "20", "--cacert"])
        .arg(&ca)
        .args(["-w", " %{http_version}", &url(&server, "/")])
        .output()
    {
        Ok(out) => {
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let text = String::from_utf8(out.stdout).unwrap();
            assert!(
                text == "over tls 2" || text == "over tls 1.1",
                "curl said {text:?}"
            );
        }
        Err(_) if std::env::var_os("REQUIRE_ALL_TESTS").is_some() => panic!("curl is missing"),
        Err(_) => eprintln!("skipped: curl is not installed"),
    }
    // A plain-HTTP request on the TLS port gets no answer, not a crash.
    let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    tcp.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut buf)).await;
    // At most a TLS alert record (content type 21), never an HTTP answer of any kind.
    let text = String::from_utf8_lossy(&buf);
    assert!(
        !text.contains("HTTP/") && buf.first().is_none_or(|&b| b == 21),
        "answered in plain text: {text:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_reload_under_load_fails_no_request_and_a_bad_file_keeps_the_old_certificate() {
    let pki = Pki::new("tls-reload");
    let first = pki.issue("first");
    let tls = Tls::from_pem_files(pki.cert(), pki.key())
        .unwrap()
        .reload_every(Duration::from_millis(50));
    let server = common::start(service(tls.clone())).await;
    assert_eq!(pki.presented(server.addr).await, first);
    // A connection open from before the reload, to be used after it.
    let mut open = pki.connect(server.addr).await;
    assert!(answered_over(&mut open).await);

    // Load: four clients, each on a kept-alive connection and each also opening new ones.
    let stop = Arc::new(AtomicBool::new(false));
    let (done, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut load = Vec::new();
    for i in 0..4 {
        let (stop, done, failed) = (Arc::clone(&stop), Arc::clone(&done), Arc::clone(&failed));
        let kept = pki.client(i % 2 == 0);
        let ca = pki.ca_pem.clone();
        let target = url(&server, "/");
        load.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let fresh = reqwest::Client::builder()
                    .use_rustls_tls()
                    .tls_built_in_root_certs(false)
                    .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes()).unwrap())
                    .build()
                    .unwrap();
                for client in [&kept, &fresh] {
                    match client.get(&target).send().await {
                        Ok(res) if res.status() == 200 => {
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        _ => {
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // New files: picked up by the watch within its interval.
    let second = pki.issue("second");
    let deadline = Instant::now() + Duration::from_secs(10);
    while pki.presented(server.addr).await != second {
        assert!(
            Instant::now() < deadline,
            "the new certificate was not picked up"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, Ordering::Relaxed);
    for task in load {
        task.await.unwrap();
    }
    assert!(done.load(Ordering::Relaxed) > 20, "the load ran");
    assert_eq!(failed.load(Ordering::Relaxed), 0, "no request failed");
    // The connection opened before the reload goes on, on the certificate it was opened with.
    assert!(
        answered_over(&mut open).await,
        "the open connection still answers"
    );
    assert_eq!(
        open.get_ref().1.peer_certificates().unwrap()[0].to_vec(),
        first
    );

    // A broken file: the reload says why, and handshakes go on with the current certificate.
    std::fs::write(pki.cert(), "not a certificate").unwrap();
    let err = tls.reload().unwrap_err();
    assert!(err.to_string().contains("cert.pem"), "{err}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(pki.presented(server.addr).await, second);
    // A key that belongs to another certificate is refused too.
    let other = Pki::new("tls-other");
    other.issue("other");
    std::fs::copy(other.key(), pki.key()).unwrap();
    pki.issue("third");
    std::fs::copy(other.key(), pki.key()).unwrap();
    let err = tls.reload().unwrap_err();
    assert!(err.to_string().contains("does not belong"), "{err}");
    assert_eq!(pki.presented(server.addr).await, second);
    server.stop().await;

    // And a bad file at start-up is an error naming it.
    let err = Tls::from_pem_files(pki.cert(), "/nonexistent/key.pem").unwrap_err();
    assert!(err.to_string().contains("/nonexistent/key.pem"), "{err}");
}

#[tokio::test]
async fn sighup_reloads_the_certificate() {
    let pki = Pki::new("tls-sighup");
    let first = pki.issue("first");
    // No file watch to speak of: only the signal reloads.
    let tls = Tls::from_pem_files(pki.cert(), pki.key())
        .unwrap()
        .reload_every(Duration::from_secs(3600));
    let server = common::start(service(tls)).await;
    // A handshake answered: the server runs, so its SIGHUP handler is in place (the watch
    // installs it before the first accept).
    assert_eq!(pki.presented(server.addr).await, first);
    let second = pki.issue("second");
    let status = std::process::Command::new("kill")
        .args(["-HUP", &std::process::id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(5);
    while pki.presented(server.addr).await != second {
        assert!(Instant::now() < deadline, "SIGHUP did not reload");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.stop().await;
}

#[tokio::test]
async fn a_stalled_handshake_is_closed_within_the_head_limit() {
    let pki = Pki::new("tls-stall");
    pki.issue("first");
    let server = common::start(service(Tls::from_pem_files(pki.cert(), pki.key()).unwrap())).await;
    // One connection sends nothing, one half a ClientHello record header.
    for first_bytes in [&b""[..], &[0x16, 0x03, 0x01][..]] {
        let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        tcp.write_all(first_bytes).await.unwrap();
        let started = Instant::now();
        let mut buf = [0u8; 64];
        let read = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf))
            .await
            .expect("closed by the server, not left open");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        // 300 ms limit, swept every few tens of ms.
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }
    // A good client is still served.
    let res = pki
        .client(false)
        .get(url(&server, "/"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    server.stop().await;
}

/// The user service with `TLS_CERT`/`TLS_KEY`: HTTPS on HTTP/2 and HTTP/1.1, the session
/// cookie `Secure`, a login token bound to the session over TLS.
#[tokio::test]
async fn the_user_service_serves_https_with_a_secure_session_cookie() {
    let pki = Pki::new("tls-user-service");
    pki.issue("user-service");
    let config = user_service::Config::from_lookup(|k| match k {
        "TLS_CERT" => Some(pki.cert().display().to_string()),
        "TLS_KEY" => Some(pki.key().display().to_string()),
        _ => None,
    })
    .unwrap();
    let service = user_service::build(&config, user_service::Stores::in_memory()).unwrap();
    let server = common::start(service).await;
    for (http1_only, version) in [
        (true, reqwest::Version::HTTP_11),
        (false, reqwest::Version::HTTP_2),
    ] {
        let res = pki
            .client(http1_only)
            .get(url(&server, "/users/v1/login"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.version(), version);
        assert_eq!(res.status(), 200);
        let cookie = res.headers()["set-cookie"].to_str().unwrap().to_owned();
        assert!(cookie.starts_with("sid="), "{cookie}");
        assert!(cookie.contains("; Secure"), "{cookie}");
        assert!(res.headers().contains_key("strict-transport-security"));
        let body: serde_json::Value = res.json().await.unwrap();
        assert_eq!(body["token"].as_str().map(str::len), Some(32));
        // The health probes' answers carry the security headers too.
        for probe in ["/livez", "/readyz"] {
            let res = pki
                .client(http1_only)
                .get(url(&server, probe))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200, "{probe}");
            let h = res.headers();
            assert_eq!(h["x-content-type-options"], "nosniff", "{probe}");
            assert_eq!(
                h["strict-transport-security"], "max-age=31536000; includeSubDomains",
                "{probe}"
            );
        }
    }
    server.stop().await;
}

/// The user service with `TLS_CLIENT_CA`: a client without a certificate is refused, one with
/// a certificate of the CA is served; a bad bundle stops the build with an error naming it.
#[tokio::test]
async fn the_user_service_asks_for_client_certificates_with_tls_client_ca() {
    let pki = Pki::new("mtls-user-service");
    pki.issue("user-service");
    let ca = pki.write("clients-ca.pem", &pki.ca_pem);
    let config = |ca: &std::path::Path| {
        user_service::Config::from_lookup(|k| match k {
            "TLS_CERT" => Some(pki.cert().display().to_string()),
            "TLS_KEY" => Some(pki.key().display().to_string()),
            "TLS_CLIENT_CA" => Some(ca.display().to_string()),
            _ => None,
        })
        .unwrap()
    };
    let service = user_service::build(&config(&ca), user_service::Stores::in_memory()).unwrap();
    let server = common::start(service).await;
    let livez = format!("https://localhost:{}/livez", server.addr.port());
    assert!(pki.client(false).get(&livez).send().await.is_err());
    let res = pki
        .client_cert("ops", 1, VALID)
        .reqwest(&pki, false)
        .get(&livez)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    server.stop().await;

    // `TLS_CLIENT_AUTH=optional`: a client without a certificate is served too, one with a
    // certificate of another CA is still refused.
    let optional = user_service::Config::from_lookup(|k| match k {
        "TLS_CERT" => Some(pki.cert().display().to_string()),
        "TLS_KEY" => Some(pki.key().display().to_string()),
        "TLS_CLIENT_CA" => Some(ca.display().to_string()),
        "TLS_CLIENT_AUTH" => Some("optional".to_owned()),
        _ => None,
    })
    .unwrap();
    let service = user_service::build(&optional, user_service::Stores::in_memory()).unwrap();
    let server = common::start(service).await;
    let livez = format!("https://localhost:{}/livez", server.addr.port());
    let res = pki.client(false).get(&livez).send().await.unwrap();
    assert_eq!(res.status(), 200, "no certificate: served");
    let res = pki
        .client_cert("ops", 2, VALID)
        .reqwest(&pki, false)
        .get(&livez)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "a certificate of the CA: served");
    let other = Pki::new("mtls-user-service-other");
    let stranger = other.client_cert("stranger", 3, VALID).reqwest(&pki, false);
    assert!(
        stranger.get(&livez).send().await.is_err(),
        "a certificate of another CA: refused"
    );
    server.stop().await;

    let missing = pki.dir.join("missing-ca.pem");
    let err = user_service::build(&config(&missing), user_service::Stores::in_memory())
        .err()
        .expect("a missing bundle is an error");
    assert!(err.to_string().contains("missing-ca.pem"), "{err}");
}

/// A plain app speaking only `versions`, with or without TLS.
fn speaking(versions: framework::HttpVersions, tls: Option<Tls>) -> Service {
    let mut app = App::bare()
        .server_limits(ServerLimits::default().http_versions(versions))
        .use_middleware(Responder::default())
        .get("/", |_ctx: &mut Context| async { Ok("hi") });
    if let Some(tls) = tls {
        app = app.tls(tls);
    }
    app.build().expect("app builds")
}

/// `ServerLimits::http_versions`: over TLS, ALPN offers only what the server speaks (a client
/// offering h2 gets HTTP/1.1; one offering only HTTP/1.1 cannot shake hands with an h2-only
/// server); in cleartext, an HTTP/2-only server refuses HTTP/1.1 with no HTTP/1.1 answer and an
/// HTTP/1.1-only one does not speak HTTP/2 by prior knowledge.
#[tokio::test]
async fn http_versions_restrict_alpn_and_cleartext() {
    use framework::HttpVersions;
    let pki = Pki::new("tls-versions");
    pki.issue("first");
    let tls = || Some(Tls::from_pem_files(pki.cert(), pki.key()).unwrap());

    let h1 = common::start(speaking(HttpVersions::Http1Only, tls())).await;
    let res = pki.client(false).get(url(&h1, "/")).send().await.unwrap();
    assert_eq!(
        res.version(),
        reqwest::Version::HTTP_11,
        "offered h2, got HTTP/1.1"
    );
    h1.stop().await;

    let h2 = common::start(speaking(HttpVersions::Http2Only, tls())).await;
    let res = pki.client(false).get(url(&h2, "/")).send().await.unwrap();
    assert_eq!(res.version(), reqwest::Version::HTTP_2);
    assert!(
        pki.client(true).get(url(&h2, "/")).send().await.is_err(),
        "an HTTP/1.1-only client finds no protocol in common"
    );
    h2.stop().await;

    let h2c = common::start(speaking(HttpVersions::Http2Only, None)).await;
    let prior = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let res = prior.get(h2c.url("/")).send().await.unwrap();
    assert_eq!(res.version(), reqwest::Version::HTTP_2);
    assert_eq!(res.text().await.unwrap(), "hi");
    let mut stream = tokio::net::TcpStream::connect(h2c.addr).await.unwrap();
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer))
        .await
        .expect("the server closes the connection")
        .ok();
    assert!(
        !answer.starts_with(b"HTTP/1"),
        "an HTTP/1.1 request gets no HTTP/1.1 answer: {:?}",
        String::from_utf8_lossy(&answer)
    );
    assert!(reqwest::get(h2c.url("/")).await.is_err());
    h2c.stop().await;

    let plain = common::start(speaking(HttpVersions::Http1Only, None)).await;
    assert!(prior.get(plain.url("/")).send().await.is_err());
    let res = reqwest::get(plain.url("/")).await.unwrap();
    assert_eq!(res.version(), reqwest::Version::HTTP_11);
    plain.stop().await;
}

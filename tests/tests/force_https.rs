//! Force HTTPS over real sockets: a plain-HTTP request (GET and POST, path and query kept) is
//! answered 308 to the HTTPS port, the rest of the chain untouched; `X-Forwarded-Proto: https`
//! lets a request through only from a trusted proxy; a request without a usable host gets the
//! 400 (its message as text: the middleware sits outside the error handler); a pinned host and 307 are honoured; and a client that follows the redirect ends on the
//! app served over TLS with its `POST` body intact.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::pki::Pki;
use framework::client_ip::ClientIpExt;
use framework::client_ip::TrustedProxies;
use framework::middleware::force_https::ForceHttps;
use framework::tls::Tls;
use framework::{App, Context, Result, Service};

const HTTPS_PORT: u16 = 8443;

/// Echoes the method, the path and query, the body, and whether the request was HTTPS;
/// counts the requests that reached it.
fn app(force: ForceHttps, trusted: TrustedProxies, reached: Arc<AtomicUsize>) -> App {
    let echo = move |ctx: &mut Context| {
        reached.fetch_add(1, Ordering::SeqCst);
        let target = ctx.uri().path_and_query().map(|p| p.as_str().to_owned());
        let head = format!("{} {target:?} https={}", ctx.method(), ctx.is_https());
        let body = ctx.take_raw_body();
        async move {
            let body = body.read_limited(1024).await.unwrap_or_default();
            Result::Ok(format!("{head} body={}", String::from_utf8_lossy(&body)))
        }
    };
    App::new()
        .trusted_proxies(trusted)
        .use_middleware(force)
        .get("/orders", echo.clone())
        .route(http::Method::POST, "/orders", echo)
}

async fn plain(force: ForceHttps, trusted: TrustedProxies) -> (common::Running, Arc<AtomicUsize>) {
    let reached = Arc::new(AtomicUsize::new(0));
    let service = app(force, trusted, reached.clone()).build().unwrap();
    (common::start(service).await, reached)
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

fn location(res: &reqwest::Response) -> &str {
    res.headers()[http::header::LOCATION].to_str().unwrap()
}

#[tokio::test]
async fn plain_http_is_sent_to_https_with_its_method_path_and_query() {
    let (server, reached) = plain(
        ForceHttps::new().https_port(HTTPS_PORT),
        TrustedProxies::None,
    )
    .await;
    let client = no_redirects();
    let port = server.addr.port();

    let res = client
        .get(server.url("/orders?page=2&sort=a%20b"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 308);
    assert_eq!(
        location(&res),
        format!("https://127.0.0.1:{HTTPS_PORT}/orders?page=2&sort=a%20b")
    );
    assert_eq!(res.headers()[http::header::CONTENT_LENGTH], "0");

    // A POST is redirected with 308 too (the client repeats method and body there).
    let res = client
        .post(server.url("/orders"))
        .body("pen")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 308);
    assert_eq!(
        location(&res),
        format!("https://127.0.0.1:{HTTPS_PORT}/orders")
    );

    // The request's host, its port replaced.
    let res = client
        .get(server.url("/orders"))
        .header("host", format!("shop.example:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        location(&res),
        format!("https://shop.example:{HTTPS_PORT}/orders")
    );
    let res = client
        .get(server.url("/orders"))
        .header("host", "[::1]:8080")
        .send()
        .await
        .unwrap();
    assert_eq!(location(&res), format!("https://[::1]:{HTTPS_PORT}/orders"));

    // An untrusted client cannot claim HTTPS.
    let res = client
        .get(server.url("/orders"))
        .header("x-forwarded-proto", "https")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 308);
    assert_eq!(reached.load(Ordering::SeqCst), 0, "the handler never ran");
    server.stop().await;
}

#[tokio::test]
async fn a_trusted_proxy_saying_https_is_believed() {
    let (server, reached) = plain(ForceHttps::new(), TrustedProxies::Hops(1)).await;
    let client = no_redirects();
    let res = client
        .get(server.url("/orders?x=1"))
        .header("x-forwarded-proto", "https")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.text().await.unwrap(),
        r#"GET Some("/orders?x=1") https=true body="#
    );
    assert_eq!(reached.load(Ordering::SeqCst), 1);

    // The proxy saying plain HTTP: redirected, to the host it forwarded and port 443 (left
    // out).
    let res = client
        .get(server.url("/orders"))
        .header("x-forwarded-proto", "http")
        .header("x-forwarded-host", "shop.example")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 308);
    assert_eq!(location(&res), "https://shop.example/orders");
    assert_eq!(reached.load(Ordering::SeqCst), 1);
    server.stop().await;
}

#[tokio::test]
async fn a_request_without_a_usable_host_is_a_400() {
    let (server, reached) = plain(ForceHttps::new(), TrustedProxies::None).await;
    for request in [
        // HTTP/1.0 needs no Host.
        "GET /orders HTTP/1.0\r\n\r\n",
        "GET /orders HTTP/1.1\r\nHost: evil.example@shop.example\r\nConnection: close\r\n\r\n",
    ] {
        let res = common::raw_request(server.addr, request).await;
        assert_eq!(res.status, 400, "{request:?}: {}", res.head);
        // Outside the error handler (where it belongs), the error is answered as text.
        assert_eq!(
            res.text(),
            "the request names no valid host to redirect to HTTPS"
        );
        assert_eq!(res.header("location"), None);
    }
    assert_eq!(reached.load(Ordering::SeqCst), 0);
    server.stop().await;
}

#[tokio::test]
async fn a_pinned_host_and_a_temporary_redirect() {
    let force = ForceHttps::new()
        .host("www.example.com")
        .unwrap()
        .temporary();
    let (server, _) = plain(force, TrustedProxies::None).await;
    let res = no_redirects()
        .get(server.url("/orders"))
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 307);
    assert_eq!(location(&res), "https://www.example.com/orders");
    server.stop().await;

    for bad in ["www.example.com:443", "a@b", "", "exa mple"] {
        assert!(ForceHttps::new().host(bad).is_err(), "{bad:?}");
    }
}

/// The app over TLS, with a certificate for `localhost` from the tests' own CA.
fn https_service(pki: &Pki, reached: Arc<AtomicUsize>) -> Service {
    pki.issue("force-https");
    let tls = Tls::from_pem_files(pki.cert(), pki.key()).unwrap();
    app(ForceHttps::new(), TrustedProxies::None, reached)
        .tls(tls)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_client_following_the_redirect_ends_on_https_with_its_body() {
    let reached = Arc::new(AtomicUsize::new(0));
    let pki = Pki::new("force-https");
    let https = common::start(https_service(&pki, reached.clone())).await;
    let (plain, plain_reached) = plain(
        ForceHttps::new().https_port(https.addr.port()),
        TrustedProxies::None,
    )
    .await;
    let client = pki.client(false);
    let port = plain.addr.port();
    let res = client
        .post(format!("http://localhost:{port}/orders?n=1"))
        .body("pen")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.url().scheme(), "https");
    assert_eq!(
        res.text().await.unwrap(),
        r#"POST Some("/orders?n=1") https=true body=pen"#
    );
    assert_eq!(plain_reached.load(Ordering::SeqCst), 0);
    assert_eq!(reached.load(Ordering::SeqCst), 1);
    plain.stop().await;
    https.stop().await;
}

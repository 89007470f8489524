//! CORS and security headers over real sockets, against the Fetch standard's rules: preflights
//! answered without the handler, the origin echoed (never `*` with credentials), `Vary:
//! Origin`, no CORS headers for a disallowed origin (which runs or is refused as configured),
//! error answers carrying the headers; and the security headers' defaults, HSTS on HTTPS
//! answers only, a route's own value kept.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use framework::http::{Method, header};
use framework::middleware::cors::{AllowOrigin, Cors, CorsConfig};
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::middleware::security_headers::{STRICT_CSP, SecurityHeaders, SecurityHeadersConfig};
use framework::{App, Context, HttpError, Service};
use reqwest::header::HeaderMap;

const SITE: &str = "https://app.example.com";
const OTHER: &str = "https://evil.example.net";

fn app(cors: CorsConfig, calls: Arc<AtomicUsize>) -> Service {
    App::new()
        .use_middleware(Cors::new(cors).expect("valid"))
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/items", move |ctx: &mut Context| {
            calls.fetch_add(1, Ordering::SeqCst);
            ctx.set_response_header(
                header::HeaderName::from_static("x-total"),
                header::HeaderValue::from_static("3"),
            );
            async { Ok("items") }
        })
        .get("/missing", |_ctx: &mut Context| async {
            Err::<(), _>(
                HttpError::with(http::StatusCode::NOT_FOUND, "items", "no such item").into(),
            )
        })
        .build()
        .expect("app builds")
}

fn get<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn vary(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all("vary")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().to_ascii_lowercase())
        .collect()
}

async fn request(
    server: &common::Running,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = reqwest::Client::new().request(method, server.url(path));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("request")
}

#[tokio::test]
async fn preflights_are_answered_here_and_allowed_origins_read_answers() {
    let calls = Arc::new(AtomicUsize::new(0));
    let config = CorsConfig::new(AllowOrigin::list([SITE]))
        .methods([Method::GET, Method::POST, Method::DELETE])
        .headers([header::CONTENT_TYPE, header::AUTHORIZATION])
        .credentials(true)
        .max_age(Duration::from_secs(600))
        .expose([header::HeaderName::from_static("x-total")]);
    let server = common::start(app(config, Arc::clone(&calls))).await;

    // A preflight: 204 from the middleware, the handler never runs, even on a path without an
    // OPTIONS route (no 405) or with no route at all (no 404).
    for path in ["/items", "/nowhere"] {
        let res = request(
            &server,
            Method::OPTIONS,
            path,
            &[
                ("origin", SITE),
                ("access-control-request-method", "DELETE"),
                ("access-control-request-headers", "content-type"),
            ],
        )
        .await;
        assert_eq!(res.status(), 204, "{path}");
        let h = res.headers();
        assert_eq!(get(h, "access-control-allow-origin"), Some(SITE));
        assert_eq!(get(h, "access-control-allow-credentials"), Some("true"));
        assert_eq!(
            get(h, "access-control-allow-methods"),
            Some("GET, POST, DELETE")
        );
        assert_eq!(
            get(h, "access-control-allow-headers"),
            Some("content-type, authorization")
        );
        assert_eq!(get(h, "access-control-max-age"), Some("600"));
        let vary = vary(h);
        for name in [
            "origin",
            "access-control-request-method",
            "access-control-request-headers",
        ] {
            assert!(vary.contains(&name.to_owned()), "{vary:?} names {name}");
        }
        assert!(res.bytes().await.unwrap().is_empty());
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0, "no handler ran");

    // The actual request: the origin echoed (credentials: never `*`), exposed headers listed.
    let res = request(&server, Method::GET, "/items", &[("origin", SITE)]).await;
    assert_eq!(res.status(), 200);
    let h = res.headers();
    assert_eq!(get(h, "access-control-allow-origin"), Some(SITE));
    assert_eq!(get(h, "access-control-allow-credentials"), Some("true"));
    assert_eq!(get(h, "access-control-expose-headers"), Some("x-total"));
    assert_eq!(vary(h), ["origin"]);
    assert_eq!(res.text().await.unwrap(), "items");

    // An error answer carries them too, or the page could not read why it failed.
    let res = request(&server, Method::GET, "/missing", &[("origin", SITE)]).await;
    assert_eq!(res.status(), 404);
    assert_eq!(
        get(res.headers(), "access-control-allow-origin"),
        Some(SITE)
    );

    // Without Origin (same-origin, or not a browser): no CORS headers, but Vary still says
    // the answer depends on it.
    let res = request(&server, Method::GET, "/items", &[]).await;
    assert_eq!(res.status(), 200);
    assert!(get(res.headers(), "access-control-allow-origin").is_none());
    assert_eq!(vary(res.headers()), ["origin"]);

    // A disallowed origin: the request runs, its page gets nothing to read with.
    let before = calls.load(Ordering::SeqCst);
    let res = request(&server, Method::GET, "/items", &[("origin", OTHER)]).await;
    assert_eq!(res.status(), 200);
    assert_eq!(calls.load(Ordering::SeqCst), before + 1);
    for name in [
        "access-control-allow-origin",
        "access-control-allow-credentials",
        "access-control-expose-headers",
    ] {
        assert!(get(res.headers(), name).is_none(), "{name}");
    }
    let res = request(
        &server,
        Method::OPTIONS,
        "/items",
        &[("origin", OTHER), ("access-control-request-method", "GET")],
    )
    .await;
    assert_eq!(res.status(), 204);
    assert!(get(res.headers(), "access-control-allow-origin").is_none());
    assert!(get(res.headers(), "access-control-allow-methods").is_none());
    // An OPTIONS request that is not a preflight (no Access-Control-Request-Method) is routed.
    let res = request(&server, Method::OPTIONS, "/items", &[("origin", SITE)]).await;
    assert_eq!(res.status(), 405);
    server.stop().await;
}

#[tokio::test]
async fn any_origin_is_a_star_and_a_refused_origin_a_403() {
    let calls = Arc::new(AtomicUsize::new(0));
    let server = common::start(app(
        CorsConfig::new(AllowOrigin::any()).mirror_headers(),
        Arc::clone(&calls),
    ))
    .await;
    let res = request(&server, Method::GET, "/items", &[("origin", OTHER)]).await;
    assert_eq!(get(res.headers(), "access-control-allow-origin"), Some("*"));
    assert!(get(res.headers(), "access-control-allow-credentials").is_none());
    // `*` is the same for everyone: no Vary.
    assert!(vary(res.headers()).is_empty());
    let res = request(
        &server,
        Method::OPTIONS,
        "/items",
        &[
            ("origin", OTHER),
            ("access-control-request-method", "GET"),
            ("access-control-request-headers", "x-custom, x-other"),
        ],
    )
    .await;
    assert_eq!(
        get(res.headers(), "access-control-allow-headers"),
        Some("x-custom, x-other"),
        "mirrored"
    );
    server.stop().await;

    // Refusing: a disallowed origin gets a 403 and the handler does not run; a predicate
    // decides which origins are allowed.
    let config = CorsConfig::new(AllowOrigin::predicate(|origin| {
        origin.ends_with(".example.com")
    }))
    .refuse_disallowed(true);
    let server = common::start(app(config, Arc::clone(&calls))).await;
    let before = calls.load(Ordering::SeqCst);
    let res = request(&server, Method::GET, "/items", &[("origin", OTHER)]).await;
    assert_eq!(res.status(), 403);
    assert_eq!(calls.load(Ordering::SeqCst), before);
    assert!(get(res.headers(), "access-control-allow-origin").is_none());
    let res = request(
        &server,
        Method::OPTIONS,
        "/items",
        &[("origin", OTHER), ("access-control-request-method", "GET")],
    )
    .await;
    assert_eq!(res.status(), 403);
    let res = request(&server, Method::GET, "/items", &[("origin", SITE)]).await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        get(res.headers(), "access-control-allow-origin"),
        Some(SITE)
    );
    // No Origin at all: not a cross-origin request, served.
    assert_eq!(
        request(&server, Method::GET, "/items", &[]).await.status(),
        200
    );
    server.stop().await;
}

#[test]
fn credentials_are_never_combined_with_any_origin() {
    let Err(err) = Cors::new(CorsConfig::new(AllowOrigin::any()).credentials(true)) else {
        panic!("credentials with `*` accepted")
    };
    assert_eq!(err.component(), "cors");
    assert!(err.message().contains("credentials"), "{err}");
}

fn secured(config: SecurityHeadersConfig) -> Service {
    App::new()
        .trusted_proxies(framework::client_ip::TrustedProxies::Hops(1))
        .use_middleware(SecurityHeaders::new(config).expect("valid"))
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/", |ctx: &mut Context| {
            ctx.set_response_header(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static("text/html; charset=utf-8"),
            );
            ctx.body_mut().set_bytes("<!doctype html><p>page");
            async { Ok(()) }
        })
        .get("/api", |_ctx: &mut Context| async {
            Ok(serde_json::json!({"ok": true}))
        })
        .get("/framed", |ctx: &mut Context| {
            ctx.set_response_header(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static("text/html"),
            );
            ctx.set_response_header(
                header::CONTENT_SECURITY_POLICY,
                header::HeaderValue::from_static("frame-ancestors 'self'"),
            );
            ctx.body_mut().set_bytes("<p>framed");
            async { Ok(()) }
        })
        .get("/fails", |_ctx: &mut Context| async {
            Err::<(), _>(HttpError::with(http::StatusCode::BAD_REQUEST, "t", "no").into())
        })
        .get("/own", |ctx: &mut Context| {
            ctx.set_response_header(
                header::X_CONTENT_TYPE_OPTIONS,
                header::HeaderValue::from_static("nosniff, own"),
            );
            ctx.set_response_header(
                header::STRICT_TRANSPORT_SECURITY,
                header::HeaderValue::from_static("max-age=60"),
            );
            async { Ok("own") }
        })
        .build()
        .expect("app builds")
}

#[tokio::test]
async fn security_headers_have_safe_defaults_and_hsts_only_over_https() {
    let server = common::start(secured(SecurityHeadersConfig::default())).await;
    // A page gets every policy.
    let res = request(&server, Method::GET, "/", &[]).await;
    let h = res.headers();
    assert_eq!(get(h, "content-security-policy"), Some(STRICT_CSP));
    assert_eq!(get(h, "x-content-type-options"), Some("nosniff"));
    assert_eq!(get(h, "referrer-policy"), Some("no-referrer"));
    assert_eq!(get(h, "x-frame-options"), Some("DENY"));
    assert_eq!(get(h, "cross-origin-opener-policy"), Some("same-origin"));
    assert!(
        get(h, "strict-transport-security").is_none(),
        "no HSTS over plain HTTP"
    );
    // JSON, errors and 404s: `nosniff` only; the page policies govern documents.
    for path in ["/api", "/fails", "/nowhere"] {
        let res = request(&server, Method::GET, path, &[]).await;
        let h = res.headers();
        assert_eq!(get(h, "x-content-type-options"), Some("nosniff"), "{path}");
        for name in [
            "content-security-policy",
            "referrer-policy",
            "x-frame-options",
            "cross-origin-opener-policy",
        ] {
            assert!(get(h, name).is_none(), "{path}: {name}");
        }
    }
    // Behind a trusted proxy that says the client came over HTTPS.
    let res = request(&server, Method::GET, "/", &[("x-forwarded-proto", "https")]).await;
    assert_eq!(
        get(res.headers(), "strict-transport-security"),
        Some("max-age=31536000; includeSubDomains")
    );
    // A route's own value is kept.
    let res = request(&server, Method::GET, "/framed", &[]).await;
    assert_eq!(
        get(res.headers(), "content-security-policy"),
        Some("frame-ancestors 'self'")
    );
    // So are its own `X-Content-Type-Options` and HSTS, alone: ours are not added beside them.
    let res = request(
        &server,
        Method::GET,
        "/own",
        &[("x-forwarded-proto", "https")],
    )
    .await;
    for (name, own) in [
        ("x-content-type-options", "nosniff, own"),
        ("strict-transport-security", "max-age=60"),
    ] {
        let values: Vec<_> = res.headers().get_all(name).iter().collect();
        assert_eq!(values, [own], "{name}");
    }
    server.stop().await;

    // `None` leaves a header out; `pages_only: false` puts the policies on every answer; a bad
    // value is refused when the middleware is made.
    let server = common::start(secured(
        SecurityHeadersConfig::default()
            .frame_options(None)
            .pages_only(false),
    ))
    .await;
    let res = request(&server, Method::GET, "/", &[]).await;
    assert!(get(res.headers(), "x-frame-options").is_none());
    let res = request(&server, Method::GET, "/api", &[]).await;
    assert_eq!(
        get(res.headers(), "content-security-policy"),
        Some(STRICT_CSP)
    );
    assert!(get(res.headers(), "x-frame-options").is_none());
    assert_eq!(
        get(res.headers(), "x-content-type-options"),
        Some("nosniff")
    );
    server.stop().await;
    let bad = SecurityHeaders::new(
        SecurityHeadersConfig::default()
            .referrer_policy(Some("no-referrer\r\nx-injected: 1".into())),
    );
    assert!(bad.is_err());
}

/// A page on `origin` that calls the API at `api` with a credentialed JSON `POST` (so the
/// browser sends a preflight first) and shows what it could read, or `blocked`.
fn page_app(api: &str) -> Service {
    let html = format!(
        r#"<!doctype html><html><body><p id="result">waiting</p><script>
fetch("{api}/items", {{
  method: "POST",
  credentials: "include",
  headers: {{"content-type": "application/json", "x-trace": "1"}},
  body: JSON.stringify({{name: "pen"}}),
}})
  .then(async (res) => {{
    const total = res.headers.get("x-total");
    document.getElementById("result").textContent =
      res.status + " " + (await res.text()) + " total=" + total;
  }})
  .catch(() => {{ document.getElementById("result").textContent = "blocked"; }});
</script></body></html>"#
    );
    App::new()
        .get("/", move |ctx: &mut Context| {
            ctx.set_response_header(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static("text/html; charset=utf-8"),
            );
            ctx.body_mut().set_bytes(html.clone());
            async { Ok(()) }
        })
        .build()
        .expect("page app")
}

/// The Fetch standard as Chromium applies it: a page on an allowed origin reads the API's
/// answer (after a preflight the middleware answered, the handler running once, for the POST
/// itself), including an exposed header; a page on another origin cannot read it.
#[tokio::test]
#[cfg_attr(
    no_test_browser,
    ignore = "needs Chromium: apt-get install chromium chromium-driver, set TEST_CHROMEDRIVER=/usr/bin/chromedriver"
)]
async fn a_browser_reads_across_origins_only_where_allowed() {
    let driver = common::chrome::ChromeDriver::start(&common::store_url("TEST_CHROMEDRIVER")).await;
    // Ports first, so the API can name the page's origin.
    let allowed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let denied = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let allowed_origin = format!("http://{}", allowed.local_addr().unwrap());
    let posts = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&posts);
    let api = App::new()
        .use_middleware(
            Cors::new(
                CorsConfig::new(AllowOrigin::list([allowed_origin.as_str()]))
                    .methods([Method::GET, Method::POST])
                    .headers([
                        header::CONTENT_TYPE,
                        header::HeaderName::from_static("x-trace"),
                    ])
                    .credentials(true)
                    .expose([header::HeaderName::from_static("x-total")]),
            )
            .expect("valid"),
        )
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .post("/items", move |ctx: &mut Context| {
            counted.fetch_add(1, Ordering::SeqCst);
            ctx.set_response_header(
                header::HeaderName::from_static("x-total"),
                header::HeaderValue::from_static("3"),
            );
            async { Ok("added") }
        })
        .build()
        .expect("api");
    let api = common::start(api).await;
    let api_url = api.url("");
    let api_url = api_url.trim_end_matches('/').to_owned();
    let serve = |listener: tokio::net::TcpListener| {
        let service = page_app(&api_url);
        tokio::spawn(async move { service.serve(listener).await })
    };
    let allowed_task = serve(allowed);
    let denied_origin = format!("http://{}", denied.local_addr().unwrap());
    let denied_task = serve(denied);

    let browser = driver.browser().await;
    browser.goto(&format!("{allowed_origin}/")).await.unwrap();
    let read = common::chrome::text_when(&browser, "result", |t| t != "waiting").await;
    assert_eq!(read, "200 added total=3");
    assert_eq!(
        posts.load(Ordering::SeqCst),
        1,
        "the preflight ran no handler"
    );

    browser.goto(&format!("{denied_origin}/")).await.unwrap();
    let read = common::chrome::text_when(&browser, "result", |t| t != "waiting").await;
    assert_eq!(read, "blocked");
    // The preflight from the other origin got no permission, so the POST was never sent.
    assert_eq!(posts.load(Ordering::SeqCst), 1);

    browser.close().await.unwrap();
    allowed_task.abort();
    denied_task.abort();
    api.stop().await;
}

/// An empty list of methods is refused, naming it, where it silently became `GET, HEAD`.
#[test]
fn an_empty_method_list_is_refused() {
    let err = Cors::new(CorsConfig::new(AllowOrigin::any()).methods([]))
        .err()
        .expect("refused");
    assert!(err.to_string().starts_with("cors: methods: "), "{err}");
    assert!(Cors::new(CorsConfig::new(AllowOrigin::any()).methods([Method::PUT])).is_ok());
}

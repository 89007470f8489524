//! CSRF through the in-process client: every combination of `Sec-Fetch-Site` and `Origin`
//! browsers send, per method; trusted origins; the double-submit token (missing, wrong, right,
//! by header and by form field) and its cookie over HTTP and HTTPS. In a real browser:
//! `tests/tests/csrf.rs`.

use framework::client_ip::TrustedProxies;
use framework::middleware::body_parser::{
    BodyParser, BodyParserConfig, FormDecoder, json_and_form_content_type,
};
use framework::middleware::csrf::{AllowOrigin, CATEGORY, Csrf, CsrfConfig, CsrfExt};
use framework::middleware::error_handler::ErrorHandler;
use framework::testing::{TestClient, TestResponse};
use framework::{App, Context, Result, share};
use http::Method;

const HOST: &str = "app.example:8080";
const OWN: &str = "http://app.example:8080";
const TRUSTED: &str = "https://admin.example";

async fn changed(ctx: &mut Context) -> Result<String> {
    Ok(format!("changed, token {:?}", ctx.csrf_token().is_some()))
}

fn client(config: CsrfConfig) -> TestClient {
    let csrf = share(Csrf::new(config).unwrap());
    let mut app = App::new()
        .trusted_proxies(TrustedProxies::Hops(1))
        .use_middleware(ErrorHandler::default())
        .use_middleware(
            BodyParser::new(
                BodyParserConfig::default().content_type_validate(json_and_form_content_type),
            )
            .add_decoder(FormDecoder),
        );
    for method in [
        Method::GET,
        Method::HEAD,
        Method::OPTIONS,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
    ] {
        app = app.route_with(method, "/thing", vec![csrf.clone()], changed);
    }
    TestClient::new(app.build().unwrap())
}

async fn send(
    client: &TestClient,
    method: Method,
    site: Option<&str>,
    origin: Option<&str>,
) -> TestResponse {
    let mut req = client
        .request(method, "/thing")
        .header("host", HOST)
        .header("accept", "application/json");
    if let Some(site) = site {
        req = req.header("sec-fetch-site", site);
    }
    if let Some(origin) = origin {
        req = req.header("origin", origin);
    }
    req.send().await
}

#[tokio::test]
async fn the_headers_browsers_send_decide_for_unsafe_methods() {
    let client = client(CsrfConfig::default().trusted_origins(AllowOrigin::list([TRUSTED])));
    // (Sec-Fetch-Site, Origin, passes, what a refusal names)
    let table: &[(Option<&str>, Option<&str>, bool, &str)] = &[
        // A modern browser: Sec-Fetch-Site decides.
        (Some("same-origin"), Some(OWN), true, ""),
        (Some("same-origin"), None, true, ""),
        (Some("none"), None, true, ""),
        (
            Some("same-site"),
            Some("http://other.app.example:8080"),
            false,
            "Sec-Fetch-Site is same-site",
        ),
        (
            Some("same-site"),
            None,
            false,
            "Sec-Fetch-Site is same-site",
        ),
        (
            Some("cross-site"),
            Some("https://evil.example"),
            false,
            "Sec-Fetch-Site is cross-site",
        ),
        (
            Some("cross-site"),
            Some("null"),
            false,
            "Sec-Fetch-Site is cross-site",
        ),
        (
            Some("cross-site"),
            None,
            false,
            "Sec-Fetch-Site is cross-site",
        ),
        (
            Some("Same-Origin"),
            None,
            false,
            "Sec-Fetch-Site is Same-Origin",
        ),
        (Some("cross-site"), Some(TRUSTED), true, ""),
        (Some("same-site"), Some(TRUSTED), true, ""),
        // An older browser: Origin decides.
        (None, Some(OWN), true, ""),
        (Some(""), Some(OWN), true, ""),
        (None, Some("HTTP://App.Example:8080"), true, ""),
        (None, Some(TRUSTED), true, ""),
        (
            None,
            Some("https://app.example:8080"),
            false,
            "Origin https://app.example:8080",
        ),
        (
            None,
            Some("http://app.example:8081"),
            false,
            "Origin http://app.example:8081",
        ),
        (
            None,
            Some("http://app.example"),
            false,
            "Origin http://app.example is neither",
        ),
        (
            None,
            Some("https://evil.example"),
            false,
            "Origin https://evil.example is neither",
        ),
        (None, Some("null"), false, "Origin null is neither"),
        // Neither: not a browser.
        (None, None, true, ""),
        (Some(""), Some(""), true, ""),
    ];
    for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
        for (site, origin, passes, reason) in table {
            let res = send(&client, method.clone(), *site, *origin).await;
            let case = format!("{method} Sec-Fetch-Site {site:?} Origin {origin:?}");
            if *passes {
                assert_eq!(res.status, 200, "{case}: {}", res.text());
            } else {
                assert_eq!(res.status, 403, "{case}");
                let body = res.json();
                assert_eq!(body["category"], CATEGORY, "{case}");
                let message = body["message"].as_str().unwrap();
                assert!(message.contains(reason), "{case}: {message}");
            }
        }
    }
    // Safe methods are never refused.
    for method in [Method::GET, Method::HEAD, Method::OPTIONS] {
        let res = send(
            &client,
            method.clone(),
            Some("cross-site"),
            Some("https://evil.example"),
        )
        .await;
        assert_eq!(res.status, 200, "{method}");
    }
}

#[tokio::test]
async fn without_trusted_origins_another_site_is_refused_even_when_listed_nowhere() {
    let client = client(CsrfConfig::default());
    assert_eq!(
        send(&client, Method::POST, Some("cross-site"), Some(TRUSTED))
            .await
            .status,
        403
    );
    assert_eq!(
        send(&client, Method::POST, None, Some(TRUSTED))
            .await
            .status,
        403
    );
    assert_eq!(send(&client, Method::POST, None, None).await.status, 200);
}

/// The token cookie's value in a `Set-Cookie` answer.
fn issued(res: &TestResponse, name: &str) -> String {
    let line = res.header("set-cookie").expect("a token cookie");
    let (pair, _) = line.split_once(';').unwrap();
    let (cookie, token) = pair.split_once('=').unwrap();
    assert_eq!(cookie, name, "{line}");
    token.to_owned()
}

#[tokio::test]
async fn token_mode_wants_the_cookie_echoed_when_neither_header_came() {
    let client = client(CsrfConfig::default().token(true));
    let page = client.get("/thing").header("host", HOST).send().await;
    assert_eq!(page.text(), "changed, token true");
    let line = page.header("set-cookie").unwrap().to_owned();
    assert!(line.ends_with("; Path=/; SameSite=Strict"), "{line}");
    assert!(
        !line.contains("HttpOnly"),
        "the page's script must read it: {line}"
    );
    let token = issued(&page, "csrf");
    assert_eq!(token.len(), 43);
    // The test client keeps the cookie: no new one on the next answer.
    let again = client.get("/thing").header("host", HOST).send().await;
    assert_eq!(again.header("set-cookie"), None);

    let post = || {
        client
            .post("/thing")
            .header("host", HOST)
            .header("accept", "application/json")
    };
    let res = post().send().await;
    assert_eq!(res.status, 403);
    assert!(
        res.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("CSRF token missing")
    );
    let res = post().header("x-csrf-token", &"A".repeat(43)).send().await;
    assert_eq!(res.status, 403);
    assert_eq!(
        res.json()["message"],
        "CSRF token does not match its cookie"
    );
    let res = post().header("x-csrf-token", &token[..42]).send().await;
    assert_eq!(res.status, 403, "a prefix is not the token");
    let res = post().header("x-csrf-token", &token).send().await;
    assert_eq!(res.status, 200, "{}", res.text());
    // The same token as a form field.
    let res = post()
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("name=pen&csrf_token={token}"))
        .send()
        .await;
    assert_eq!(res.status, 200, "{}", res.text());
    let res = post()
        .header("content-type", "application/x-www-form-urlencoded")
        .body("name=pen&csrf_token=forged")
        .send()
        .await;
    assert_eq!(res.status, 403);
    // A browser that sends the headers needs no token.
    let res = post().header("sec-fetch-site", "same-origin").send().await;
    assert_eq!(res.status, 200);
    let res = post().header("origin", OWN).send().await;
    assert_eq!(res.status, 200);
    let res = post()
        .header("origin", "https://evil.example")
        .header("x-csrf-token", &token)
        .send()
        .await;
    assert_eq!(res.status, 403, "a token does not excuse a foreign origin");
}

#[tokio::test]
async fn token_mode_without_the_cookie_is_refused_and_over_https_it_is_a_host_cookie() {
    let client = client(CsrfConfig::default().token(true));
    // A first request that is a POST: no cookie to compare with (it gets one for next time).
    let res = client
        .post("/thing")
        .header("host", HOST)
        .header("accept", "application/json")
        .header("x-csrf-token", &"A".repeat(43))
        .send()
        .await;
    assert_eq!(res.status, 403);
    assert!(
        res.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("CSRF token cookie missing")
    );

    let client = self::client(CsrfConfig::default().token(true));
    let page = client
        .get("/thing")
        .header("host", HOST)
        .header("x-forwarded-proto", "https")
        .send()
        .await;
    let line = page.header("set-cookie").unwrap().to_owned();
    assert!(line.starts_with("__Host-csrf="), "{line}");
    assert!(
        line.ends_with("; Path=/; SameSite=Strict; Secure"),
        "{line}"
    );
    assert!(!line.contains("Domain"), "{line}");
    let token = issued(&page, "__Host-csrf");
    let res = client
        .post("/thing")
        .header("host", HOST)
        .header("x-forwarded-proto", "https")
        .header("x-csrf-token", &token)
        .send()
        .await;
    assert_eq!(res.status, 200, "{}", res.text());
}

#[test]
fn any_origin_cannot_be_trusted() {
    let err = Csrf::new(CsrfConfig::default().trusted_origins(AllowOrigin::any())).unwrap_err();
    assert_eq!(err.component(), "csrf");
    assert!(err.message().contains("trusted_origins"), "{err}");
}

/// A CSRF check inside the session would load the victim's session for every forged request
/// before refusing it: `build()` refuses such a route, naming it and the fix.
#[test]
fn a_route_with_csrf_inside_its_session_does_not_build() {
    use framework::Group;
    use framework::middleware::session::{MemoryStore, SessionConfig, SessionMiddleware};
    use std::sync::Arc;
    let session = || SessionMiddleware::new(Arc::new(MemoryStore::new()), SessionConfig::default());
    let csrf = || Csrf::new(CsrfConfig::default()).unwrap();
    let inside = App::new()
        .use_middleware(session())
        .group(Group::new("/g").use_middleware(csrf()).post("/x", changed))
        .build()
        .err()
        .expect("refused");
    let message = inside.to_string();
    assert!(message.contains("POST /g/x"), "{message}");
    assert!(message.contains("mount csrf before session"), "{message}");
    // The reference order builds.
    App::new()
        .use_middleware(csrf())
        .group(
            Group::new("/g")
                .use_middleware(session())
                .post("/x", changed),
        )
        .build()
        .expect("csrf before session");
}

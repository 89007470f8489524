//! CSRF in headless Chromium: a page of the protected app posts a form and calls `fetch`, and
//! both pass on the headers the browser sends itself; the same form and `fetch` from a page of
//! another site (`localhost` against `127.0.0.1`: cross-site) and of the same site on another
//! port (same-site) are refused with 403 `framework-csrf`, and the handler never runs for them.
//! Every header combination, and token mode: `framework/tests/csrf.rs`; the user service's
//! POST routes: `user_flow.rs`.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::chrome::{ChromeDriver, text_when};
use framework::middleware::csrf::{Csrf, CsrfConfig};
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::{App, Context, Service, share};
use http::header;

/// Pages posting to `target`: `/form` submits a form at once, `/fetch` posts with `fetch` and
/// shows the status it could read (`opaque` for a cross-origin `no-cors` answer).
fn pages(target: &str) -> App {
    let form = format!(
        r#"<!doctype html><html><body><form id="f" method="post" action="{target}/submit">
<input name="item" value="pen"></form><script>document.getElementById("f").submit();</script>
</body></html>"#
    );
    let fetch = format!(
        r#"<!doctype html><html><body><p id="result">waiting</p><script>
const own = "{target}" === "";
fetch("{target}/submit", {{
  method: "POST",
  mode: own ? "same-origin" : "no-cors",
  credentials: "include",
  headers: {{"content-type": "application/x-www-form-urlencoded"}},
  body: "item=pen",
}})
  .then(async (res) => {{
    document.getElementById("result").textContent =
      res.type === "opaque" ? "opaque" : res.status + " " + (await res.text());
  }})
  .catch((e) => {{ document.getElementById("result").textContent = "failed " + e; }});
</script></body></html>"#
    );
    let page = |html: String| {
        move |ctx: &mut Context| {
            ctx.set_response_header(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static("text/html; charset=utf-8"),
            );
            ctx.body_mut().set_bytes(html.clone());
            async { Ok(()) }
        }
    };
    App::new()
        .get("/form", page(form))
        .get("/fetch", page(fetch))
}

/// The protected app: its own pages, and `POST /submit` behind CSRF counting what it accepts.
fn protected(accepted: Arc<AtomicUsize>) -> Service {
    pages("")
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .route_with(
            http::Method::POST,
            "/submit",
            vec![share(Csrf::new(CsrfConfig::default()).unwrap())],
            move |_ctx: &mut Context| {
                accepted.fetch_add(1, Ordering::SeqCst);
                async { Ok("accepted") }
            },
        )
        .build()
        .unwrap()
}

#[tokio::test]
#[cfg_attr(
    no_test_browser,
    ignore = "needs Chromium: apt-get install chromium chromium-driver, set TEST_CHROMEDRIVER=/usr/bin/chromedriver"
)]
async fn chromium_posts_from_the_page_pass_and_from_other_sites_are_refused() {
    let driver = ChromeDriver::start(&common::store_url("TEST_CHROMEDRIVER")).await;
    let accepted = Arc::new(AtomicUsize::new(0));
    let app = common::start(protected(Arc::clone(&accepted))).await;
    let target = format!("http://127.0.0.1:{}", app.addr.port());
    let other = common::start(pages(&target).build().unwrap()).await;
    let cross_site = format!("http://localhost:{}", other.addr.port());
    let same_site = format!("http://127.0.0.1:{}", other.addr.port());
    let browser = driver.browser().await;

    // The app's own page: the form post lands on the handler's answer.
    browser.goto(&format!("{target}/form")).await.unwrap();
    wait_for_text(&browser, "accepted").await;
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    // Its fetch reads the answer.
    browser.goto(&format!("{target}/fetch")).await.unwrap();
    let read = text_when(&browser, "result", |t| t != "waiting").await;
    assert_eq!(read, "200 accepted");
    assert_eq!(accepted.load(Ordering::SeqCst), 2);

    for (origin, site) in [(&cross_site, "cross-site"), (&same_site, "same-site")] {
        // Another site's form: the browser follows it to the app's 403.
        browser.goto(&format!("{origin}/form")).await.unwrap();
        let text = wait_for_text(&browser, "framework-csrf").await;
        assert!(
            text.contains(&format!("Sec-Fetch-Site is {site}")),
            "{origin}: {text}"
        );
        // Another site's fetch: sent (no-cors needs no preflight), refused, unreadable.
        browser.goto(&format!("{origin}/fetch")).await.unwrap();
        let read = text_when(&browser, "result", |t| t != "waiting").await;
        assert_eq!(read, "opaque", "{origin}");
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            2,
            "{origin}: the handler never ran for another site's post"
        );
    }

    browser.close().await.unwrap();
    other.stop().await;
    app.stop().await;
}

/// The page's whole text once it contains `needle` (10 s at most).
async fn wait_for_text(browser: &fantoccini::Client, needle: &str) -> String {
    let mut last = String::new();
    for _ in 0..200 {
        if let Ok(source) = browser.source().await {
            if source.contains(needle) {
                return source;
            }
            last = source;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the page never showed {needle:?}: {last}");
}

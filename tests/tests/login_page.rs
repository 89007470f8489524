//! The user service's login page at `/`, driven in headless Chromium through chromedriver:
//! register, reload, a wrong password shows the service's message, log in and see the name,
//! stay logged in across a reload, upload an avatar and see it, log out by clearing the `sid`
//! cookie. The digest and the proof are computed by the page with WebCrypto. A screenshot of
//! the logged-in page is saved as `target/login-page.png`. The page links to the API docs page (Swagger UI), tried out too.

mod common;

use std::time::Duration;

use common::chrome::{ChromeDriver, text_when};
use fantoccini::{Client, Locator};
use serde_json::json;
use user_service::{Config, Stores};

/// Whether the login form (not the signed-in panel) is what the page shows, once it settled.
async fn shows_form(browser: &Client) -> bool {
    for _ in 0..200 {
        let form = browser
            .find(Locator::Id("credentials"))
            .await
            .expect("form");
        let panel = browser.find(Locator::Id("signed-in")).await.expect("panel");
        let (form, panel) = (
            form.is_displayed().await.expect("form display"),
            panel.is_displayed().await.expect("panel display"),
        );
        if form != panel {
            return form;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the page shows neither the form nor the signed-in panel after 10 s");
}

async fn fill(browser: &Client, account: &str, password: &str) {
    for (id, value) in [("account", account), ("password", password)] {
        let input = browser.find(Locator::Id(id)).await.expect("input");
        input.clear().await.expect("clear");
        input.send_keys(value).await.expect("type");
    }
}

/// A `size`×`size` RGB PNG of a colour gradient: a real image the browser decodes and shows.
fn gradient_png(size: u32) -> Vec<u8> {
    use std::io::Write;
    fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
        out.extend_from_slice(&u32::try_from(data.len()).unwrap().to_be_bytes());
        let mut crc = flate2::Crc::new();
        crc.update(kind);
        crc.update(data);
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        out.extend_from_slice(&crc.sum().to_be_bytes());
    }
    let mut header = Vec::new();
    header.extend_from_slice(&size.to_be_bytes());
    header.extend_from_slice(&size.to_be_bytes());
    // 8 bits per channel, RGB, deflate, no filter method, no interlace.
    header.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut pixels = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    for y in 0..size {
        let mut row = vec![0u8]; // filter: none
        for x in 0..size {
            let (x, y) = ((x * 255 / size) as u8, (y * 255 / size) as u8);
            row.extend_from_slice(&[47, x, 211 - y / 2]);
        }
        pixels.write_all(&row).unwrap();
    }
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut png, b"IHDR", &header);
    chunk(&mut png, b"IDAT", &pixels.finish().unwrap());
    chunk(&mut png, b"IEND", &[]);
    png
}

async fn click(browser: &Client, id: &str) {
    browser
        .find(Locator::Id(id))
        .await
        .expect("button")
        .click()
        .await
        .expect("click");
}

#[tokio::test]
#[cfg_attr(
    no_test_browser,
    ignore = "needs Chromium: apt-get install chromium chromium-driver, set TEST_CHROMEDRIVER=/usr/bin/chromedriver"
)]
async fn register_log_in_and_out_in_chromium() {
    let driver = ChromeDriver::start(&common::store_url("TEST_CHROMEDRIVER")).await;
    let service = user_service::build(&Config::default(), Stores::in_memory()).expect("service");
    let server = common::start(service).await;
    let browser = driver.browser().await;
    let page = server.url("/");

    browser.goto(&page).await.expect("open the page");
    assert!(shows_form(&browser).await, "nobody is logged in yet");

    fill(&browser, "alice", "correct horse battery").await;
    click(&browser, "register").await;
    let status = text_when(&browser, "status", |t| !t.is_empty()).await;
    assert_eq!(status, "Registered alice. You can log in now.");

    browser.refresh().await.expect("reload");
    assert!(shows_form(&browser).await, "registering does not log in");

    fill(&browser, "alice", "wrong horse").await;
    click(&browser, "login").await;
    let error = text_when(&browser, "error", |t| !t.is_empty()).await;
    assert_eq!(error, "account or password is wrong");
    assert!(shows_form(&browser).await);

    fill(&browser, "alice", "correct horse battery").await;
    click(&browser, "login").await;
    assert_eq!(text_when(&browser, "who", |t| !t.is_empty()).await, "alice");
    assert!(
        !shows_form(&browser).await,
        "the signed-in panel replaces the form"
    );
    assert_eq!(text_when(&browser, "error", |_| true).await, "");

    // An avatar: chosen in the file input, uploaded, then shown beside the name.
    let image = common::temp_dir("avatar").join("alice.png");
    std::fs::write(&image, gradient_png(64)).expect("write the image");
    browser
        .find(Locator::Id("avatar-file"))
        .await
        .expect("file input")
        .send_keys(image.to_str().unwrap())
        .await
        .expect("choose the file");
    click(&browser, "avatar-upload").await;
    assert_eq!(
        text_when(&browser, "status", |t| !t.is_empty()).await,
        "Avatar saved."
    );
    let shown = "const img = document.getElementById('avatar'); \
                 return !img.hidden && img.complete ? img.naturalWidth : 0;";
    script_when(&browser, shown, |v| v == &json!(64)).await;
    std::fs::remove_dir_all(image.parent().unwrap()).expect("remove the image");

    // The session is the `sid` cookie: a reload keeps the user (and shows the avatar),
    // clearing it logs out.
    browser.refresh().await.expect("reload");
    assert_eq!(text_when(&browser, "who", |t| !t.is_empty()).await, "alice");
    script_when(&browser, shown, |v| v == &json!(64)).await;
    let screenshot = browser.screenshot().await.expect("screenshot");
    let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    std::fs::create_dir_all(&target).expect("target dir");
    std::fs::write(target.join("login-page.png"), &screenshot).expect("save screenshot");
    assert!(screenshot.starts_with(b"\x89PNG"), "a PNG");

    browser
        .delete_cookie("sid")
        .await
        .expect("clear the cookie");
    browser.refresh().await.expect("reload");
    assert!(
        shows_form(&browser).await,
        "without the cookie nobody is logged in"
    );

    browser.close().await.expect("close the browser");
    server.stop().await;
}

/// Runs `script` (a function body returning JSON) until `done` accepts its value (10 s).
async fn script_when(
    browser: &Client,
    script: &str,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let mut last = serde_json::Value::Null;
    for _ in 0..200 {
        if let Ok(value) = browser.execute(script, Vec::new()).await {
            if done(&value) {
                return value;
            }
            last = value;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("`{script}` still gives {last} after 10 s");
}

/// The login page links to the API docs: Swagger UI, served from the binary, lists the six
/// operations from `/openapi.json`, and "Execute" on `GET /users/v1/login` gets a token from
/// the running service. Every file the page loads comes from the service itself (no CDN: it
/// works without internet).
#[tokio::test]
#[cfg_attr(
    no_test_browser,
    ignore = "needs Chromium: apt-get install chromium chromium-driver, set TEST_CHROMEDRIVER=/usr/bin/chromedriver"
)]
async fn docs_page_lists_the_operations_and_tries_one_out() {
    let driver = ChromeDriver::start(&common::store_url("TEST_CHROMEDRIVER")).await;
    let service = user_service::build(&Config::default(), Stores::in_memory()).expect("service");
    let server = common::start(service).await;
    let browser = driver.browser().await;

    browser.goto(&server.url("/")).await.expect("open the page");
    click(&browser, "api-docs").await;
    let operations = script_when(
        &browser,
        "return [...document.querySelectorAll('.opblock')].map(op => \
            op.querySelector('.opblock-summary-method').textContent + ' ' + \
            op.querySelector('.opblock-summary-path').textContent.replace(/\\u200b/g, ''));",
        |v| v.as_array().is_some_and(|ops| ops.len() == 6),
    )
    .await;
    assert_eq!(browser.current_url().await.unwrap().path(), "/docs");
    let mut operations: Vec<&str> = operations
        .as_array()
        .unwrap()
        .iter()
        .map(|op| op.as_str().unwrap())
        .collect();
    operations.sort_unstable();
    assert_eq!(
        operations,
        [
            "GET /users/v1/avatar/{account}",
            "GET /users/v1/login",
            "GET /users/v1/me",
            "POST /users/v1/login",
            "POST /users/v1/me",
            "PUT /users/v1/me/avatar",
        ]
    );

    // Open GET /users/v1/login, "Try it out" (enabled from the start), Execute.
    let operation = "#operations-UserController-UserController_login_token";
    browser
        .find(Locator::Css(&format!("{operation} .opblock-summary")))
        .await
        .expect("the operation")
        .click()
        .await
        .expect("open it");
    let execute = script_when(
        &browser,
        &format!("return !!document.querySelector('{operation} .btn.execute');"),
        |v| v == &json!(true),
    )
    .await;
    assert_eq!(execute, json!(true));
    browser
        .find(Locator::Css(&format!("{operation} .btn.execute")))
        .await
        .expect("Execute")
        .click()
        .await
        .expect("execute");
    let answer = script_when(
        &browser,
        &format!(
            "const live = document.querySelector('{operation} .live-responses-table');\
             if (!live) return null;\
             const status = live.querySelector('tr.response .response-col_status');\
             const body = live.querySelector('tr.response .highlight-code code, tr.response .highlight-code pre');\
             if (!status || !body) return null;\
             return [status.textContent.trim(), body.textContent];"
        ),
        |v| v.is_array(),
    )
    .await;
    assert_eq!(answer[0], "200", "{answer}");
    let body: serde_json::Value =
        serde_json::from_str(answer[1].as_str().unwrap()).expect("a JSON answer");
    assert_eq!(body["token"].as_str().map(str::len), Some(32), "{body}");

    // The page runs under its Content-Security-Policy without a violation, and the console
    // has no error.
    let console = driver.console(&browser).await;
    assert!(
        !console
            .iter()
            .any(|m| m.contains("SEVERE") || m.contains("Content Security Policy")),
        "{console:#?}"
    );

    // Everything the page loaded came from the service.
    let loaded = browser
        .execute(
            "return performance.getEntriesByType('resource').map(e => e.name);",
            Vec::new(),
        )
        .await
        .expect("resource list");
    let origin = server.url("");
    let loaded: Vec<&str> = loaded
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_str().unwrap())
        .collect();
    assert!(loaded.len() >= 4, "{loaded:?}");
    assert!(
        loaded.iter().all(|url| url.starts_with(&origin)),
        "{loaded:?} all from {origin}"
    );

    browser.close().await.expect("close the browser");
    server.stop().await;
}

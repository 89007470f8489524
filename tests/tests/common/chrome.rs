//! Headless Chromium through chromedriver, for the browser tests.

use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;

/// A chromedriver process on a free port, killed when dropped.
pub struct ChromeDriver {
    process: std::process::Child,
    pub url: String,
}

impl Drop for ChromeDriver {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

impl ChromeDriver {
    pub async fn start(path: &str) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let mut driver = Self {
            process: std::process::Command::new(path)
                .arg(format!("--port={port}"))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {path}: {e}")),
            url: format!("http://127.0.0.1:{port}"),
        };
        let status = format!("{}/status", driver.url);
        for _ in 0..100 {
            if reqwest::get(&status).await.is_ok_and(|r| r.status() == 200) {
                return driver;
            }
            if let Ok(Some(exit)) = driver.process.try_wait() {
                panic!("{path} exited at start: {exit}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("chromedriver did not answer on {} within 5 s", driver.url);
    }

    pub async fn browser(&self) -> Client {
        let capabilities = json!({
            "goog:loggingPrefs": {"browser": "ALL"},
            "goog:chromeOptions": {
                "args": [
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--window-size=900,700",
                ],
            },
        });
        let serde_json::Value::Object(capabilities) = capabilities else {
            unreachable!("an object")
        };
        ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&self.url)
            .await
            .expect("a Chromium session")
    }

    /// The messages of the browser's console so far (chromedriver's log endpoint), each as
    /// `LEVEL text`.
    pub async fn console(&self, browser: &Client) -> Vec<String> {
        let id = browser
            .session_id()
            .await
            .expect("session id")
            .expect("a session");
        let log: serde_json::Value = reqwest::Client::new()
            .post(format!("{}/session/{id}/se/log", self.url))
            .json(&json!({"type": "browser"}))
            .send()
            .await
            .expect("log request")
            .json()
            .await
            .expect("log answer");
        log["value"]
            .as_array()
            .expect("log entries")
            .iter()
            .map(|e| format!("{} {}", e["level"], e["message"]))
            .collect()
    }
}

/// The text of `#id` once `done` accepts it (10 s at most).
pub async fn text_when(browser: &Client, id: &str, done: impl Fn(&str) -> bool) -> String {
    let mut last = String::new();
    for _ in 0..200 {
        if let Ok(element) = browser.find(Locator::Id(id)).await
            && let Ok(text) = element.text().await
        {
            if done(&text) {
                return text;
            }
            last = text;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("#{id} still reads {last:?} after 10 s");
}

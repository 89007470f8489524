//! Starting servers on real sockets for the end-to-end tests.

#![allow(dead_code, unreachable_pub)]

pub mod backends;
pub mod chrome;
pub mod pki;
pub mod proxy;

use std::net::SocketAddr;

use framework::Service;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A server running on an ephemeral loopback port.
pub struct Running {
    pub addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl Running {
    /// `http://127.0.0.1:<port>` plus `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Signals graceful shutdown and waits for the server to return.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.expect("server task").expect("server result");
        }
    }

    /// Signals shutdown without waiting.
    pub fn signal_shutdown(&mut self) -> JoinHandle<std::io::Result<()>> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.task.take().expect("running")
    }
}

/// The value of a store variable such as `TEST_REDIS_URL`. Tests that call this carry a
/// `cfg_attr(no_test_redis, ignore = ..)` (see `tests/build.rs`), so they only run when it is set.
pub fn store_url(name: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            panic!("{name} is not set: this test is ignored without it (see tests/build.rs)")
        })
}

/// Serves `service` on 127.0.0.1 with an OS-chosen port.
pub async fn start(service: Service) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local addr");
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(service.serve_with_shutdown(listener, async {
        let _ = rx.await;
    }));
    Running {
        addr,
        shutdown: Some(tx),
        task: Some(task),
    }
}

/// A client like a browser: keeps cookies, asks for JSON errors.
pub fn browser() -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::ACCEPT,
        reqwest::header::HeaderValue::from_static("application/json"),
    );
    reqwest::Client::builder()
        .cookie_store(true)
        .default_headers(headers)
        .build()
        .expect("client")
}

/// A response read from a raw socket.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl RawResponse {
    /// A header's value (first one), by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (k, v) = line.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Sends `request` as written (no client normalises the path) with `Connection: close` and
/// reads the answer to the end. The body is returned as sent (chunked framing included).
pub async fn raw_request(addr: SocketAddr, request: &str) -> RawResponse {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut buf = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stream.read_to_end(&mut buf),
    )
    .await
    .expect("answer within 10 s")
    .expect("read");
    let split = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&buf[..split]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status code");
    RawResponse {
        status,
        head,
        body: buf[split + 4..].to_vec(),
    }
}

/// `GET <target>` on a raw socket.
pub async fn raw_get(addr: SocketAddr, target: &str) -> RawResponse {
    raw_request(
        addr,
        &format!("GET {target} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"),
    )
    .await
}

/// A fresh, empty directory under the system temp dir.
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    let mut bits = [0u8; 8];
    getrandom::fill(&mut bits).expect("random");
    let dir = std::env::temp_dir().join(format!("e2e-{name}-{}", hex::encode(bits)));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// This process's resident set size in bytes.
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// `prefix` plus 48 random bits in hex: keys and schemas that no other test run shares.
pub fn unique(prefix: &str) -> String {
    let mut bits = [0u8; 6];
    getrandom::fill(&mut bits).expect("random");
    format!("{prefix}{}", hex::encode(bits))
}

/// Waits until `check` holds, polling every 10 ms for up to 5 s; false when it never did.
pub async fn eventually(mut check: impl FnMut() -> bool) -> bool {
    for _ in 0..500 {
        if check() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    check()
}

/// [`eventually`], failing the test when the condition is not reached.
pub async fn wait_for(check: impl FnMut() -> bool) {
    assert!(eventually(check).await, "condition not reached in 5 s");
}

/// A `tracing` writer into a shared buffer: what a test's subscriber logged, as bytes.
#[derive(Clone, Default)]
pub struct SharedWriter(pub std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for SharedWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A third-party validator's verdict on an OpenAPI document (`openapi-spec-validator` from
/// PyPI): a failure panics with its output. Skipped with a line when it is not installed,
/// unless `REQUIRE_ALL_TESTS` is set (CI), where that fails too.
pub fn validate_openapi(doc: &serde_json::Value, name: &str) {
    let dir = temp_dir(name);
    let path = dir.join("openapi.json");
    std::fs::write(&path, serde_json::to_vec(doc).unwrap()).unwrap();
    let out = std::process::Command::new("openapi-spec-validator")
        .arg(&path)
        .output();
    let _ = std::fs::remove_dir_all(&dir);
    match out {
        Ok(out) => assert!(
            out.status.success(),
            "openapi-spec-validator: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(_) if std::env::var_os("REQUIRE_ALL_TESTS").is_some() => {
            panic!("openapi-spec-validator is not installed (pip install openapi-spec-validator)")
        }
        Err(_) => eprintln!("skipped: openapi-spec-validator is not installed"),
    }
}

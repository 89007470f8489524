//! Uploads stream: 20 clients each sending a 1 MiB file at once, saved to temporary files,
//! grow the server's resident memory by less than 16 MiB (the files' 20 MiB never sit in
//! memory together). The server runs in a process of its own, so only its memory is counted.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use framework::multipart::{Multipart, MultipartLimits};
use framework::{App, Context, Result};

const BOUNDARY: &str = "memory-test-boundary";
const MIB: usize = 1024 * 1024;
const CLIENTS: usize = 20;
/// The bound the issue sets for 20 parallel uploads of 1 MiB.
const MAX_GROWTH: u64 = 16 * MIB as u64;

/// Saves each file part to a temporary file, deleted when the request ends.
async fn upload(ctx: &mut Context) -> Result<String> {
    let mut form: Multipart = Multipart::from_context(ctx, MultipartLimits::DEFAULT)?;
    let mut total = 0;
    while let Some(part) = form.next_part().await? {
        total += part.save_to_temp().await?.len();
    }
    Ok(total.to_string())
}

/// A multipart body with one 1 MiB file, streamed in 64 KiB chunks of one shared buffer (so
/// the client holds no copy of the file).
fn streamed_body() -> reqwest::Body {
    static CHUNK: [u8; 64 * 1024] = [b'u'; 64 * 1024];
    let head = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f.bin\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    );
    let tail = format!("\r\n--{BOUNDARY}--\r\n");
    let chunks = std::iter::once(Bytes::from(head))
        .chain(std::iter::repeat_n(
            Bytes::from_static(&CHUNK),
            MIB / CHUNK.len(),
        ))
        .chain(std::iter::once(Bytes::from(tail)))
        .map(Ok::<_, std::io::Error>);
    reqwest::Body::wrap_stream(futures_util::stream::iter(chunks))
}

/// Sends the 20 uploads at once; each must be answered with its 1 MiB.
async fn round(url: &str, client: &reqwest::Client) {
    let uploads = (0..CLIENTS).map(|_| {
        client
            .post(url)
            .header(
                "content-type",
                format!("multipart/form-data; boundary={BOUNDARY}"),
            )
            .body(streamed_body())
            .send()
    });
    for res in futures_util::future::join_all(uploads).await {
        let res = res.expect("upload");
        assert_eq!(res.status(), 200);
        assert_eq!(res.text().await.unwrap(), MIB.to_string());
    }
}

/// The server's process, stopped when the test ends, also when it fails.
struct ServerProcess(std::process::Child);

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What the server process reports in `/proc/<pid>/status` as `VmRSS`, in bytes.
fn rss_of(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// The server this test measures, in a process of its own (this test binary, run again with
/// `UPLOAD_MEMORY_SERVER` set): it prints its address and serves until its input closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the server of the memory test, which starts it in a process of its own"]
async fn upload_server() {
    if std::env::var_os("UPLOAD_MEMORY_SERVER").is_none() {
        return;
    }
    let service = App::new().post("/upload", upload).build().expect("app");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    println!("listening {}", listener.local_addr().unwrap());
    let stdin_closed = tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
    });
    service
        .serve_with_shutdown(listener, async {
            let _ = stdin_closed.await;
        })
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_parallel_uploads_of_1_mib_grow_server_memory_by_less_than_16_mib() {
    use std::io::BufRead;
    let mut child = ServerProcess(
        std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "upload_server", "--ignored", "--nocapture"])
            .env("UPLOAD_MEMORY_SERVER", "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start the server process"),
    );
    // libtest writes `test upload_server ... ` before the test's own line.
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some((_, addr)) = line.split_once("listening ") {
                let _ = tx.send(addr.trim().to_owned());
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the server process prints its address");
    let url = format!("http://{addr}/upload");
    let client = reqwest::Client::new();
    // One upload first: the code paths, a blocking thread and the allocator's first arenas
    // exist before the baseline.
    let warm = client
        .post(&url)
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .body(streamed_body())
        .send()
        .await
        .unwrap();
    assert_eq!(warm.status(), 200);

    let pid = child.0.id();
    let baseline = rss_of(pid);
    assert!(baseline > 0, "this test reads /proc/<pid>/status");
    let peak = Arc::new(AtomicU64::new(baseline));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (Arc::clone(&peak), Arc::clone(&done));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(rss_of(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    round(&url, &client).await;
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    drop(child);
    let growth = peak.load(Ordering::Relaxed).saturating_sub(baseline);
    eprintln!(
        "{CLIENTS} parallel uploads of 1 MiB: server resident memory {:.1} MiB before, peak \
         growth {:.2} MiB",
        baseline as f64 / MIB as f64,
        growth as f64 / MIB as f64
    );
    assert!(
        growth < MAX_GROWTH,
        "the server's resident memory grew by {growth} bytes (at most {MAX_GROWTH})"
    );
}

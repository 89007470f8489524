//! Uploads stream: 20 clients each sending a 1 MiB file at once, saved to temporary files,
//! grow the server's resident memory by less than 16 MiB (the files' 20 MiB never sit in
//! memory together), and the same 20 clients sending 8 MiB files each (160 MiB in all) grow
//! it by at most a full read buffer per connection (and 4 MiB) more than that: what a request
//! holds is a chunk of its connection, not its file. The server runs in a process of its own, so only its memory is counted.

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
/// The most a connection's read buffer holds: hyper's default `max_buf_size` (8 KiB + 400 ×
/// 4 KiB), which a long upload grows into, and the chunk the parser is handed.
const CONNECTION_CHUNK: u64 = 8192 + 4096 * 100;
/// How much more 20 uploads of 8 MiB may grow memory than 20 of 1 MiB: a full read buffer per
/// connection and 4 MiB of slack, far below the 140 MiB more that holding the files would
/// take (about 7 MiB more measured).
const MAX_MORE_FOR_LARGER_FILES: u64 = CLIENTS as u64 * CONNECTION_CHUNK + 4 * MIB as u64;

/// Saves each file part to a temporary file, deleted when the request ends.
async fn upload(ctx: &mut Context) -> Result<String> {
    let mut form: Multipart = Multipart::from_context(ctx, MultipartLimits::DEFAULT)?;
    let mut total = 0;
    while let Some(part) = form.next_part().await? {
        total += part.save_to_temp().await?.len();
    }
    Ok(total.to_string())
}

/// A multipart body with one file of `size` bytes (a multiple of 64 KiB), streamed in 64 KiB
/// chunks of one shared buffer (so the client holds no copy of the file).
fn streamed_body(size: usize) -> reqwest::Body {
    static CHUNK: [u8; 64 * 1024] = [b'u'; 64 * 1024];
    let head = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f.bin\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    );
    let tail = format!("\r\n--{BOUNDARY}--\r\n");
    let chunks = std::iter::once(Bytes::from(head))
        .chain(std::iter::repeat_n(
            Bytes::from_static(&CHUNK),
            size / CHUNK.len(),
        ))
        .chain(std::iter::once(Bytes::from(tail)))
        .map(Ok::<_, std::io::Error>);
    reqwest::Body::wrap_stream(futures_util::stream::iter(chunks))
}

/// Sends the 20 uploads of `size` bytes at once; each must be answered with its size.
async fn round(url: &str, client: &reqwest::Client, size: usize) {
    let uploads = (0..CLIENTS).map(|_| {
        client
            .post(url)
            .header(
                "content-type",
                format!("multipart/form-data; boundary={BOUNDARY}"),
            )
            .body(streamed_body(size))
            .send()
    });
    for res in futures_util::future::join_all(uploads).await {
        let res = res.expect("upload");
        assert_eq!(res.status(), 200);
        assert_eq!(res.text().await.unwrap(), size.to_string());
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
        .body(streamed_body(MIB))
        .send()
        .await
        .unwrap();
    assert_eq!(warm.status(), 200);

    let pid = child.0.id();
    let baseline = rss_of(pid);
    assert!(baseline > 0, "this test reads /proc/<pid>/status");
    // The peak resident memory over a round, sampled every 2 ms, above the baseline.
    let peak_growth = async |size: usize| {
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
        round(&url, &client, size).await;
        done.store(true, Ordering::Relaxed);
        sampler.join().unwrap();
        peak.load(Ordering::Relaxed).saturating_sub(baseline)
    };
    let growth = peak_growth(MIB).await;
    let growth_large = peak_growth(8 * MIB).await;
    drop(child);
    let mib = |bytes: u64| bytes as f64 / MIB as f64;
    eprintln!(
        "{CLIENTS} parallel uploads: server resident memory {:.1} MiB before, peak growth \
         {:.2} MiB with files of 1 MiB, {:.2} MiB with files of 8 MiB",
        mib(baseline),
        mib(growth),
        mib(growth_large)
    );
    assert!(
        growth < MAX_GROWTH,
        "the server's resident memory grew by {growth} bytes (at most {MAX_GROWTH})"
    );
    // Holding whole files would take 140 MiB more for the larger ones.
    assert!(
        growth_large < growth + MAX_MORE_FOR_LARGER_FILES,
        "8 MiB files grew memory by {growth_large} bytes, 1 MiB files by {growth}: it grows \
         with the file size"
    );
}

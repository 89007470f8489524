//! What a stream holds: file handles and upstream connections are released when the client
//! goes away mid-stream, and memory stays flat while 50 MiB files and 100 MiB uploads flow.
//!
//! The tests measure this process (descriptors, resident memory), so they run one at a time.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use framework::body::BodyStream;
use framework::middleware::proxy::{Proxy, ProxyConfig};
use framework::middleware::responder::Responder;
use framework::middleware::static_serve::{DirectorySource, StaticServe, StaticServeConfig};
use framework::{App, Context, Result};
use futures_util::StreamExt;
use http::Method;
use http_body_util::BodyExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const MIB: usize = 1024 * 1024;

fn big_file(name: &str, size: usize) -> std::path::PathBuf {
    let dir = common::temp_dir(name);
    let chunk: Vec<u8> = (0..MIB).map(|i| (i % 253) as u8).collect();
    let mut file = std::fs::File::create(dir.join("big.bin")).unwrap();
    for _ in 0..size / MIB {
        std::io::Write::write_all(&mut file, &chunk).unwrap();
    }
    dir
}

fn static_service(dir: &std::path::Path) -> framework::Service {
    App::new()
        .endpoint(
            Method::GET,
            "/files/*",
            StaticServe::new(
                DirectorySource::new(dir).unwrap(),
                StaticServeConfig::default(),
            ),
        )
        .build()
        .unwrap()
}

/// Samples this process's RSS every 5 ms until stopped; returns the peak.
fn rss_sampler() -> (Arc<AtomicBool>, std::thread::JoinHandle<u64>) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let handle = std::thread::spawn(move || {
        let mut peak = 0;
        while !flag.load(Ordering::SeqCst) {
            peak = peak.max(common::rss_bytes());
            std::thread::sleep(Duration::from_millis(5));
        }
        peak.max(common::rss_bytes())
    });
    (stop, handle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_disconnect_releases_the_file() {
    let _serial = SERIAL.lock().await;
    let dir = big_file("disconnect", 20 * MIB);
    let server = common::start(static_service(&dir)).await;
    let open_copies = || {
        std::fs::read_dir("/proc/self/fd")
            .map(|fds| {
                fds.filter_map(Result::ok)
                    .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                    .filter(|target| target.ends_with("big.bin"))
                    .count()
            })
            .unwrap_or(0)
    };
    assert_eq!(open_copies(), 0);

    let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    socket
        .write_all(b"GET /files/big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 256 * 1024];
    let mut read = 0;
    while read < 256 * 1024 {
        read += socket.read(&mut buf[read..]).await.unwrap();
    }
    assert_eq!(open_copies(), 1, "the file is open mid-stream");
    drop(socket);
    assert!(
        common::eventually(|| open_copies() == 0).await,
        "the file is still open after the client left"
    );
    server.stop().await;
}

/// A stream that never ends, and says when it is dropped.
struct Endless(Arc<AtomicBool>);

impl Drop for Endless {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

struct DropFlag(Arc<AtomicBool>);

async fn endless(ctx: &mut Context) -> Result {
    let flag = Arc::clone(&ctx.state().require::<DropFlag>()?.0);
    let chunks = futures_util::stream::unfold(Endless(flag), |guard| async move {
        tokio::task::yield_now().await;
        Some((
            Ok::<_, std::io::Error>(Bytes::from(vec![b'x'; 64 * 1024])),
            guard,
        ))
    });
    ctx.body_mut().set_stream(BodyStream::from_stream(chunks));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_disconnect_releases_the_upstream() {
    let _serial = SERIAL.lock().await;
    let dropped = Arc::new(AtomicBool::new(false));
    let upstream = common::start(
        App::new()
            .with_state(DropFlag(Arc::clone(&dropped)))
            .get("/endless", endless)
            .build()
            .unwrap(),
    )
    .await;
    let proxy = Proxy::new(
        ProxyConfig::default().target(format!("http://{}", upstream.addr).parse().unwrap()),
    )
    .unwrap();
    let front = common::start(App::new().any("/*", proxy).build().unwrap()).await;
    let mut socket = tokio::net::TcpStream::connect(front.addr).await.unwrap();
    socket
        .write_all(b"GET /endless HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 1024 * 1024];
    let mut read = 0;
    while read < 1024 * 1024 {
        read += socket.read(&mut buf[read..]).await.unwrap();
    }
    assert!(!dropped.load(Ordering::SeqCst), "still streaming");
    drop(socket);
    assert!(
        common::eventually(|| dropped.load(Ordering::SeqCst)).await,
        "the upstream stream was not dropped after the client left"
    );
    front.stop().await;
    upstream.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_mib_file_in_flat_memory() {
    let _serial = SERIAL.lock().await;
    let dir = big_file("rss", 50 * MIB);
    let server = common::start(static_service(&dir)).await;
    let client = reqwest::Client::new();
    // Warm-up: a first small request sizes the runtime's and the client's buffers.
    let _ = client
        .get(server.url("/files/missing"))
        .send()
        .await
        .unwrap();
    let baseline = common::rss_bytes();
    let (stop, sampler) = rss_sampler();
    let mut res = client
        .get(server.url("/files/big.bin"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.headers()["content-length"],
        (50 * MIB).to_string().as_str()
    );
    let mut total = 0;
    while let Some(chunk) = res.chunk().await.unwrap() {
        total += chunk.len();
    }
    stop.store(true, Ordering::SeqCst);
    let peak = sampler.join().unwrap();
    assert_eq!(total, 50 * MIB);
    let growth = peak.saturating_sub(baseline);
    println!("50 MiB file: RSS baseline {baseline} B, peak {peak} B, growth {growth} B");
    assert!(growth < 10 * MIB as u64, "RSS grew by {growth} bytes");
    server.stop().await;
}

/// Counts the request body as it streams in.
async fn count(ctx: &mut Context) -> Result<String> {
    let mut body = ctx.take_raw_body();
    let mut total = 0u64;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            total += data.len() as u64;
        }
    }
    Ok(total.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_mib_upload_through_the_proxy_in_flat_memory() {
    let _serial = SERIAL.lock().await;
    let upstream = common::start(
        App::new()
            .use_middleware(Responder::default())
            .post("/count", count)
            .build()
            .unwrap(),
    )
    .await;
    let proxy = Proxy::new(
        ProxyConfig::default().target(format!("http://{}", upstream.addr).parse().unwrap()),
    )
    .unwrap();
    let front = common::start(App::new().any("/*", proxy).build().unwrap()).await;
    let client = reqwest::Client::new();
    let small = client
        .post(front.url("/count"))
        .body("warm")
        .send()
        .await
        .unwrap();
    assert_eq!(small.text().await.unwrap(), "4");
    let baseline = common::rss_bytes();
    let (stop, sampler) = rss_sampler();
    let sent = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&sent);
    let chunk = Bytes::from(vec![5u8; 64 * 1024]);
    let chunks = futures_util::stream::iter(0..1600).map(move |_| {
        counter.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        Ok::<_, std::io::Error>(chunk.clone())
    });
    let res = client
        .post(front.url("/count"))
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    let received = res.text().await.unwrap();
    stop.store(true, Ordering::SeqCst);
    let peak = sampler.join().unwrap();
    assert_eq!(received, (100 * MIB).to_string());
    assert_eq!(sent.load(Ordering::Relaxed), 100 * MIB as u64);
    let growth = peak.saturating_sub(baseline);
    println!("100 MiB proxied upload: RSS baseline {baseline} B, peak {peak} B, growth {growth} B");
    assert!(growth < 8 * MIB as u64, "RSS grew by {growth} bytes");
    front.stop().await;
    upstream.stop().await;
}

//! The reverse proxy over real sockets: rewrites, headers both ways, streaming, WebSocket,
//! failures, `done`, and the user service's whole flow through it.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::proxy::{Proxy, ProxyConfig};
use framework::middleware::responder::Responder;
use framework::{App, Context, Result};
use futures_util::{SinkExt, StreamExt};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What the upstream saw: method, path and query, every header with all its values.
async fn echo(ctx: &mut Context) -> Result<Value> {
    let mut headers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in ctx.request_headers() {
        headers
            .entry(name.to_string())
            .or_default()
            .push(value.to_str().unwrap_or("").to_owned());
    }
    Ok(json!({"method": ctx.method().as_str(), "uri": ctx.uri().to_string(), "headers": headers}))
}

/// Bytes `/upload` has received so far, over every upload.
static UPLOADED: AtomicUsize = AtomicUsize::new(0);

/// Counts the request body as it streams in (and in [`UPLOADED`] as each chunk arrives).
async fn upload(ctx: &mut Context) -> Result<String> {
    let mut body = ctx.take_raw_body();
    let mut total = 0usize;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            total += data.len();
            UPLOADED.fetch_add(data.len(), Ordering::SeqCst);
        }
    }
    Ok(total.to_string())
}

async fn upstream() -> common::Running {
    let service = App::bare()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .any("/*", framework::handler_fn(echo))
        .post("/upload", upload)
        .build()
        .unwrap();
    common::start(service).await
}

fn proxy_app(config: ProxyConfig, path: &str) -> framework::Service {
    App::bare()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .any(path, Proxy::new(config).expect("proxy config"))
        .build()
        .unwrap()
}

fn target(addr: SocketAddr) -> http::Uri {
    format!("http://{addr}").parse().unwrap()
}

/// A raw upstream that answers every connection with `response`, then closes it (or, with
/// `hang`, never answers). It keeps the request heads it read.
async fn raw_upstream(
    response: &'static [u8],
    hang: bool,
) -> (SocketAddr, Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let heads = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&heads);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                seen.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&buf).into_owned());
                if hang {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    return;
                }
                let _ = socket.write_all(response).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (addr, heads)
}

#[tokio::test]
async fn rewrites_and_forwarded_headers() {
    let up = upstream().await;
    let proxy = common::start(proxy_app(
        ProxyConfig::default()
            .target(target(up.addr))
            .rewrites(vec!["/api/*:/$1".into(), "/v1/old/*:/v2/$1".into()]),
        "/api/*",
    ))
    .await;
    let res = common::raw_request(
        proxy.addr,
        "GET /api/v1/old/items?x=1&y=2 HTTP/1.1\r\nHost: front.example\r\n\
         X-Forwarded-For: 203.0.113.7\r\nX-Multi: a\r\nX-Multi: b\r\n\
         Connection: close, X-Custom\r\nX-Custom: secret\r\nKeep-Alive: timeout=5\r\n\
         TE: trailers\r\nProxy-Authorization: Basic eA==\r\nTrailer: X-T\r\n\r\n",
    )
    .await;
    assert_eq!(res.status, 200, "{}", res.text());
    let seen: Value = serde_json::from_slice(&res.body).unwrap();
    assert_eq!(seen["uri"], "/v2/items?x=1&y=2");
    let h = &seen["headers"];
    assert_eq!(h["x-multi"], json!(["a", "b"]));
    assert_eq!(h["x-forwarded-for"], json!(["203.0.113.7, 127.0.0.1"]));
    assert_eq!(h["x-forwarded-proto"], json!(["http"]));
    assert_eq!(h["x-forwarded-host"], json!(["front.example"]));
    // The incoming Host is kept by default.
    assert_eq!(h["host"], json!(["front.example"]));
    for hop in [
        "x-custom",
        "keep-alive",
        "te",
        "proxy-authorization",
        "trailer",
    ] {
        assert!(h.get(hop).is_none(), "{hop} was forwarded: {h}");
    }
    // The pooled connection to the upstream is kept alive, whatever the client asked.
    let connection = h.get("connection").cloned().unwrap_or(json!([]));
    assert!(!connection.to_string().contains("close"), "{connection}");
    proxy.stop().await;
    up.stop().await;
}

#[tokio::test]
async fn host_header_choices() {
    let up = upstream().await;
    let host_seen = |config: ProxyConfig| async {
        let proxy = common::start(proxy_app(config, "/*")).await;
        let res = common::raw_get(proxy.addr, "/h").await;
        let seen: Value = serde_json::from_slice(&res.body).unwrap();
        proxy.stop().await;
        seen["headers"]["host"][0].as_str().unwrap().to_owned()
    };
    let base = || ProxyConfig::default().target(target(up.addr));
    assert_eq!(host_seen(base()).await, "test");
    assert_eq!(
        host_seen(base().host(Some("configured.example".into()))).await,
        "configured.example"
    );
    assert_eq!(
        host_seen(base().target_host(true)).await,
        up.addr.to_string()
    );
    up.stop().await;
}

#[tokio::test]
async fn response_headers_multi_values_and_hop_by_hop() {
    let (addr, _) = raw_upstream(
        b"HTTP/1.1 200 OK\r\nConnection: X-Hop, keep-alive\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\n\
          Set-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 2\r\n\r\nok",
        false,
    )
    .await;
    let proxy = common::start(proxy_app(ProxyConfig::default().target(target(addr)), "/*")).await;
    let res = reqwest::get(proxy.url("/x")).await.unwrap();
    assert_eq!(res.status(), 200);
    let cookies: Vec<_> = res.headers().get_all("set-cookie").iter().collect();
    assert_eq!(cookies, ["a=1", "b=2"]);
    assert!(res.headers().get("x-hop").is_none());
    assert!(res.headers().get("keep-alive").is_none());
    assert_eq!(res.text().await.unwrap(), "ok");
    proxy.stop().await;
}

#[tokio::test]
async fn streams_an_upload_and_counts_done() {
    let up = upstream().await;
    let done = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&done);
    let proxy = common::start(proxy_app(
        ProxyConfig::default()
            .target(target(up.addr))
            .done(Some(Arc::new(move |_request: &framework::RequestView| {
                counter.fetch_add(1, Ordering::SeqCst);
            }))),
        "/*",
    ))
    .await;
    // The upload is fed by the test: its first chunk must reach the upstream before the rest
    // is even sent, which a proxy that read the whole body first could not do.
    let (feed, chunks) = tokio::sync::mpsc::channel::<Vec<u8>>(1);
    let chunks = futures_util::stream::unfold(chunks, |mut chunks| async move {
        chunks
            .recv()
            .await
            .map(|chunk| (Ok::<_, std::io::Error>(chunk), chunks))
    });
    let before = UPLOADED.load(Ordering::SeqCst);
    let sent = tokio::spawn(
        reqwest::Client::new()
            .post(proxy.url("/upload"))
            .body(reqwest::Body::wrap_stream(chunks))
            .send(),
    );
    feed.send(vec![7u8; 16 * 1024]).await.unwrap();
    common::wait_for(|| UPLOADED.load(Ordering::SeqCst) >= before + 16 * 1024).await;
    for _ in 1..64 {
        feed.send(vec![7u8; 16 * 1024]).await.unwrap();
    }
    drop(feed);
    let res = sent.await.unwrap().unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.text().await.unwrap(), (64 * 16 * 1024).to_string());
    assert_eq!(done.load(Ordering::SeqCst), 1);
    proxy.stop().await;
    up.stop().await;
}

#[tokio::test]
async fn upstream_failures() {
    let done = Arc::new(AtomicUsize::new(0));
    let done_hook = |counter: &Arc<AtomicUsize>| {
        let counter = Arc::clone(counter);
        Some(Arc::new(move |_request: &framework::RequestView| {
            counter.fetch_add(1, Ordering::SeqCst);
        }) as framework::middleware::proxy::ProxyDone)
    };
    // Refused: nothing listens on the port.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let closed_addr = closed.local_addr().unwrap();
    drop(closed);
    let proxy = common::start(proxy_app(
        ProxyConfig::default()
            .target(target(closed_addr))
            .done(done_hook(&done)),
        "/*",
    ))
    .await;
    let res = common::browser().get(proxy.url("/x")).send().await.unwrap();
    assert_eq!(res.status(), 502);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["category"], "framework-proxy");
    assert_eq!(body["message"], "bad gateway");
    proxy.stop().await;

    // An upstream that never answers: 504 after the response timeout.
    let (hang_addr, heads) = raw_upstream(b"", true).await;
    let proxy = common::start(proxy_app(
        ProxyConfig::default()
            .target(target(hang_addr))
            .timeout(Duration::from_millis(300))
            .done(done_hook(&done)),
        "/*",
    ))
    .await;
    let res = common::browser()
        .get(proxy.url("/slow"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 504);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["message"], "gateway timeout");
    assert_eq!(heads.lock().unwrap().len(), 1);
    proxy.stop().await;

    // An upstream that resets before its head: 502.
    let (reset_addr, _) = raw_upstream(b"", false).await;
    let proxy = common::start(proxy_app(
        ProxyConfig::default()
            .target(target(reset_addr))
            .done(done_hook(&done)),
        "/*",
    ))
    .await;
    let res = reqwest::get(proxy.url("/reset")).await.unwrap();
    assert_eq!(res.status(), 502);
    proxy.stop().await;

    // A body that fails midway: the client's body fails too, never a short 200.
    let (short_addr, _) = raw_upstream(
        b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nonly ten b",
        false,
    )
    .await;
    let proxy = common::start(proxy_app(
        ProxyConfig::default()
            .target(target(short_addr))
            .done(done_hook(&done)),
        "/*",
    ))
    .await;
    let res = reqwest::get(proxy.url("/short")).await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-length"], "1000");
    assert!(res.bytes().await.is_err(), "a truncated body must fail");
    proxy.stop().await;

    assert_eq!(
        done.load(Ordering::SeqCst),
        4,
        "done runs after success and failure"
    );
}

#[test]
fn malformed_rewrites_are_refused() {
    for rule in ["/api/*", "/api/*:/$2", "api:/x"] {
        let err = Proxy::new(ProxyConfig::default().rewrites(vec![rule.into()]))
            .err()
            .unwrap_or_else(|| panic!("{rule} accepted"));
        assert!(err.to_string().contains(rule), "{err}");
    }
    assert!(
        Proxy::new(ProxyConfig::default().target("https://example.com".parse().unwrap())).is_err()
    );
}

#[tokio::test]
async fn websocket_echo_through_the_proxy() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let ws_addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut ws = tokio_tungstenite::accept_async(socket).await.unwrap();
                while let Some(Ok(msg)) = ws.next().await {
                    if (msg.is_text() || msg.is_binary()) && ws.send(msg).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    let proxy = common::start(proxy_app(
        ProxyConfig::default().target(target(ws_addr)),
        "/*",
    ))
    .await;
    let stream = tokio::net::TcpStream::connect(proxy.addr).await.unwrap();
    let (mut ws, response) =
        tokio_tungstenite::client_async(format!("ws://{}/chat", proxy.addr), stream)
            .await
            .expect("handshake through the proxy");
    assert_eq!(response.status(), 101);
    for text in ["hello", "through", "the proxy"] {
        ws.send(tokio_tungstenite::tungstenite::Message::text(text))
            .await
            .unwrap();
        let echoed = tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .expect("echo in time")
            .expect("a message")
            .unwrap();
        assert_eq!(echoed.into_text().unwrap().as_str(), text);
    }
    ws.close(None).await.unwrap();
    proxy.stop().await;
}

#[tokio::test]
async fn user_service_flow_through_the_proxy() {
    let config = user_service::Config::default();
    let backend =
        common::start(user_service::build(&config, user_service::Stores::in_memory()).unwrap())
            .await;
    let proxy = common::start(proxy_app(
        ProxyConfig::default().target(target(backend.addr)),
        "/*",
    ))
    .await;
    let client = common::browser();
    let digest = hex::encode(Sha256::digest(b"correct horse"));
    let res = client
        .post(proxy.url("/users/v1/me"))
        .json(&json!({"account": "proxied", "password": digest}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let res = client
        .get(proxy.url("/users/v1/login"))
        .send()
        .await
        .unwrap();
    assert!(
        res.headers().get("set-cookie").is_some(),
        "session cookie passes"
    );
    let token: Value = res.json().await.unwrap();
    let token = token["token"].as_str().unwrap();
    let proof = hex::encode(Sha256::digest(format!("{digest}{token}").as_bytes()));
    let res = client
        .post(proxy.url("/users/v1/login"))
        .json(&json!({"account": "proxied", "password": proof}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    let me: Value = client
        .get(proxy.url("/users/v1/me"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me, json!({"name": "proxied"}));
    proxy.stop().await;
    backend.stop().await;
}

/// What the upstream saw of the proxy headers, for a request with forged ones from 127.0.0.1
/// through an app that trusts `trusted`.
async fn forged_headers_seen(trusted: framework::client_ip::TrustedProxies) -> Value {
    let up = upstream().await;
    let proxy = common::start(
        App::bare()
            .trusted_proxies(trusted)
            .use_middleware(ErrorHandler::default())
            .use_middleware(Responder::default())
            .any(
                "/*",
                Proxy::new(ProxyConfig::default().target(target(up.addr))).unwrap(),
            )
            .build()
            .unwrap(),
    )
    .await;
    let res = common::raw_request(
        proxy.addr,
        "GET /h HTTP/1.1\r\nHost: front.example\r\nX-Forwarded-Host: evil.example\r\n\
         X-Forwarded-Proto: https\r\nForwarded: for=198.51.100.9;proto=https\r\n\
         X-Real-IP: 198.51.100.9\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(res.status, 200, "{}", res.text());
    proxy.stop().await;
    up.stop().await;
    serde_json::from_slice::<Value>(&res.body).unwrap()["headers"].clone()
}

#[tokio::test]
async fn only_trusted_peers_speak_for_the_client() {
    use framework::client_ip::TrustedProxies;
    // Trust configured, but not for this peer (127.0.0.1), and no trust at all: the client's
    // claims are overwritten or dropped.
    for trusted in [
        TrustedProxies::Networks(vec!["10.0.0.0/8".parse().unwrap()]),
        TrustedProxies::None,
    ] {
        let h = forged_headers_seen(trusted.clone()).await;
        assert_eq!(
            h["x-forwarded-host"],
            json!(["front.example"]),
            "{trusted:?}"
        );
        assert_eq!(h["x-forwarded-proto"], json!(["http"]), "{trusted:?}");
        assert!(h.get("forwarded").is_none(), "{trusted:?}: {h}");
        assert!(h.get("x-real-ip").is_none(), "{trusted:?}: {h}");
    }
    // A trusted peer speaks for the client: its headers pass as sent.
    let h = forged_headers_seen(TrustedProxies::Networks(vec![
        "127.0.0.0/8".parse().unwrap(),
    ]))
    .await;
    assert_eq!(h["x-forwarded-host"], json!(["evil.example"]));
    assert_eq!(h["x-forwarded-proto"], json!(["https"]));
    assert_eq!(h["forwarded"], json!(["for=198.51.100.9;proto=https"]));
    assert_eq!(h["x-real-ip"], json!(["198.51.100.9"]));
}

#[tokio::test]
async fn an_upstream_that_stalls_mid_body_cuts_the_client() {
    // Head and 1 000 of 10 000 000 bytes, then silence.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let _ = socket
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n")
                    .await;
                let _ = socket.write_all(&[b'x'; 1000]).await;
                tokio::time::sleep(Duration::from_secs(60)).await;
            });
        }
    });
    let proxy = common::start(proxy_app(
        ProxyConfig::default()
            .target(target(addr))
            .body_idle_timeout(Duration::from_millis(300)),
        "/*",
    ))
    .await;
    let started = std::time::Instant::now();
    let res = reqwest::get(proxy.url("/big")).await.unwrap();
    assert_eq!(res.status(), 200);
    let body = tokio::time::timeout(Duration::from_secs(10), res.bytes())
        .await
        .expect("the client's connection is cut, not held");
    assert!(
        body.is_err(),
        "a stalled body must fail, never look complete"
    );
    println!("cut after {:?}", started.elapsed());
    proxy.stop().await;
}

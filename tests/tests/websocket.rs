//! WebSocket endpoints over real sockets, with tokio-tungstenite as the client: the handshake
//! and its refusals, the route's middleware run before the upgrade, text and binary, pings,
//! the size limit (1009), the idle timeout (1001), a slow reader closed (1008) without memory
//! growing, shutdown (1001), the connection limit, and a broadcast across two instances
//! through Redis.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::middleware::session::{MemoryStore, SessionConfig, SessionExt, SessionMiddleware};
use framework::ws::{AllowOrigin, Broadcast, Message, WebSocketExt, WsConfig};
use framework::{App, Context, ServerLimits, Service, when};
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message as Frame;

type Client =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

fn config() -> WsConfig {
    WsConfig::default()
        .max_message_size(1024)
        .max_frame_size(1024)
        .send_queue(4)
        .ping_interval(Duration::from_millis(200))
        .idle_timeout(Duration::from_millis(600))
        .send_timeout(Duration::from_millis(300))
        .allowed_origins(AllowOrigin::list(["https://app.example.com"]))
}

/// `/echo` echoes (after the session middleware, which names the visitor); `/flood` sends
/// without waiting (`try_send`) as fast as it can; `/firehose` sends as fast as the client
/// takes it (`send`, which waits); `/quiet` never sends; `/anyone` echoes to any origin.
fn service(limits: ServerLimits) -> Service {
    App::new()
        .server_limits(limits)
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(when(
            |ctx: &Context| ctx.path() == "/echo",
            SessionMiddleware::new(Arc::new(MemoryStore::new()), SessionConfig::default()),
        ))
        .get("/echo", |ctx: &mut Context| {
            let seen = ctx.session().is_ok();
            let upgraded = ctx.websocket(config(), move |mut socket| async move {
                let _ = socket.send(format!("session {seen}")).await;
                while let Some(message) = socket.recv().await {
                    if socket.send(message).await.is_err() {
                        break;
                    }
                }
            });
            async move { upgraded.map_err(Into::into) }
        })
        .get("/flood", |ctx: &mut Context| {
            let upgraded = ctx.websocket(config(), |socket| async move {
                let sender = socket.sender();
                let block = "x".repeat(1000);
                for _ in 0..1_000_000 {
                    if sender.try_send(block.as_str()).is_err() {
                        break;
                    }
                    tokio::task::yield_now().await;
                }
                drop(socket);
            });
            async move { upgraded.map_err(Into::into) }
        })
        .get("/firehose", |ctx: &mut Context| {
            let upgraded = ctx.websocket(config(), |socket| async move {
                let block = "x".repeat(1000);
                while socket.send(block.as_str()).await.is_ok() {}
            });
            async move { upgraded.map_err(Into::into) }
        })
        .get("/anyone", |ctx: &mut Context| {
            let any = config().allowed_origins(AllowOrigin::any());
            let upgraded = ctx.websocket(any, |mut socket| async move {
                while let Some(message) = socket.recv().await {
                    if socket.send(message).await.is_err() {
                        break;
                    }
                }
            });
            async move { upgraded.map_err(Into::into) }
        })
        .get("/quiet", |ctx: &mut Context| {
            let upgraded = ctx.websocket(config(), |mut socket| async move {
                while socket.recv().await.is_some() {}
            });
            async move { upgraded.map_err(Into::into) }
        })
        .build()
        .expect("app builds")
}

async fn connect(server: &common::Running, path: &str) -> Client {
    let url = format!("ws://{}{path}", server.addr);
    tokio_tungstenite::connect_async(url)
        .await
        .expect("handshake")
        .0
}

/// The next data or close frame (pings are answered by the client library).
async fn next(client: &mut Client) -> Option<Frame> {
    loop {
        match tokio::time::timeout(Duration::from_secs(5), client.next())
            .await
            .expect("a frame within 5 s")
        {
            Some(Ok(Frame::Ping(_) | Frame::Pong(_))) => {}
            Some(Ok(frame)) => return Some(frame),
            _ => return None,
        }
    }
}

fn close_code(frame: Option<Frame>) -> Option<u16> {
    match frame {
        Some(Frame::Close(Some(close))) => Some(close.code.into()),
        _ => None,
    }
}

/// 300 messages and a normal close in one write: every message reaches the handler, in order,
/// before `recv` says the client closed; none is dropped behind the close.
#[tokio::test]
async fn a_burst_then_a_close_in_one_write_loses_no_message() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let ended = Arc::new(tokio::sync::Notify::new());
    let (kept, done) = (Arc::clone(&seen), Arc::clone(&ended));
    let service = App::new()
        .get("/count", move |ctx: &mut Context| {
            let (kept, done) = (Arc::clone(&kept), Arc::clone(&done));
            let upgraded = ctx.websocket(config(), move |mut socket| async move {
                while let Some(message) = socket.recv().await {
                    if let framework::ws::Message::Text(text) = message {
                        kept.lock().unwrap().push(text[..3].to_owned());
                    }
                }
                done.notify_one();
            });
            async move { upgraded.map_err(Into::into) }
        })
        .build()
        .unwrap();
    let server = common::start(service).await;
    let mut client = connect(&server, "/count").await;
    for i in 0..300usize {
        let size = if i.is_multiple_of(2) { 100 } else { 1000 };
        client
            .feed(Frame::text(format!("{i:03}{}", "m".repeat(size - 3))))
            .await
            .unwrap();
    }
    client.feed(Frame::Close(None)).await.unwrap();
    // One flush: the 300 frames and the close leave in one write.
    client.flush().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), ended.notified())
        .await
        .expect("the handler saw the close");
    let seen = seen.lock().unwrap().clone();
    let expected: Vec<String> = (0..300).map(|i| format!("{i:03}")).collect();
    assert_eq!(seen, expected, "every message, in order, before the close");
    assert!(
        matches!(next(&mut client).await, Some(Frame::Close(_)) | None),
        "the close answered"
    );
    server.stop().await;
}

#[tokio::test]
async fn echo_after_the_route_middleware_with_text_binary_and_pings() {
    let server = common::start(service(ServerLimits::default())).await;
    let mut client = connect(&server, "/echo").await;
    // The session middleware ran before the upgrade.
    assert_eq!(next(&mut client).await, Some(Frame::text("session true")));
    client.send(Frame::text("hello")).await.unwrap();
    assert_eq!(next(&mut client).await, Some(Frame::text("hello")));
    client
        .send(Frame::binary(vec![0u8, 1, 2, 255]))
        .await
        .unwrap();
    assert_eq!(
        next(&mut client).await,
        Some(Frame::binary(vec![0u8, 1, 2, 255]))
    );
    client.send(Frame::Ping(vec![7u8].into())).await.unwrap();
    let pong = tokio::time::timeout(Duration::from_secs(5), client.next())
        .await
        .unwrap();
    assert!(
        matches!(pong, Some(Ok(Frame::Pong(ref p))) if p.as_ref() == [7u8]),
        "{pong:?}"
    );
    // A normal close is answered.
    client.close(None).await.unwrap();
    assert!(matches!(
        next(&mut client).await,
        Some(Frame::Close(_)) | None
    ));
    server.stop().await;
}

#[tokio::test]
async fn a_bad_handshake_is_refused_with_a_reason() {
    let server = common::start(service(ServerLimits::default())).await;
    let plain = reqwest::get(server.url("/echo")).await.unwrap();
    assert_eq!(plain.status(), 400);
    let old = reqwest::Client::new()
        .get(server.url("/echo"))
        .header("connection", "upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-version", "8")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .send()
        .await
        .unwrap();
    assert_eq!(old.status(), 426);
    assert_eq!(old.headers()["sec-websocket-version"], "13");
    let bad_key = reqwest::Client::new()
        .get(server.url("/echo"))
        .header("connection", "Upgrade")
        .header("upgrade", "WebSocket")
        .header("sec-websocket-version", "13")
        .header("sec-websocket-key", "short")
        .send()
        .await
        .unwrap();
    assert_eq!(bad_key.status(), 400);
    server.stop().await;
}

/// The upgrade with an `Origin` header of `origin`: its status line.
async fn upgrade_status(server: &common::Running, path: &str, origin: Option<&str>) -> String {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut request = format!("ws://{}{path}", server.addr)
        .into_client_request()
        .unwrap();
    if let Some(origin) = origin {
        request
            .headers_mut()
            .insert("origin", origin.parse().unwrap());
    }
    match tokio_tungstenite::connect_async(request).await {
        Ok((_, response)) => response.status().as_str().to_owned(),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            response.status().as_str().to_owned()
        }
        Err(err) => panic!("{err}"),
    }
}

/// Cross-site WebSocket hijacking: a page of another origin cannot open a connection (with
/// the visitor's cookies); the request's own origin, a listed one, and a client that sends
/// no `Origin` can.
#[tokio::test]
async fn an_upgrade_from_another_origin_is_refused() {
    let server = common::start(service(ServerLimits::default())).await;
    let own = format!("http://{}", server.addr);
    let port = server.addr.port();
    let others = [
        "https://evil.example".to_owned(),
        "null".to_owned(),
        format!("http://127.0.0.1.evil.example:{port}"),
        format!("https://127.0.0.1:{port}"),
        format!("http://127.0.0.1:{}", port.wrapping_add(1)),
        format!("http://localhost:{port}"),
        format!("http://evil.127.0.0.1:{port}"),
        format!("{own}/"),
        format!("{own}.evil.example"),
        format!("http://user@127.0.0.1:{port}"),
        "https://app.example.com.evil.example".to_owned(),
        "https://evil.app.example.com".to_owned(),
        "http://app.example.com".to_owned(),
        "https://app.example.com:8443".to_owned(),
    ];
    for origin in &others {
        assert_eq!(
            upgrade_status(&server, "/quiet", Some(origin)).await,
            "403",
            "{origin}"
        );
    }
    // The refusal says why, in the framework's error format.
    let refused = reqwest::Client::new()
        .get(server.url("/quiet"))
        .header("connection", "upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-version", "13")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    let text = refused.text().await.unwrap();
    assert!(
        text.contains("framework-websocket") && text.contains("origin not allowed"),
        "{text}"
    );
    for origin in [Some(own.as_str()), Some("https://app.example.com"), None] {
        assert_eq!(
            upgrade_status(&server, "/quiet", origin).await,
            "101",
            "{origin:?}"
        );
    }
    // The explicit opt-out.
    assert_eq!(
        upgrade_status(&server, "/anyone", Some("https://evil.example")).await,
        "101"
    );
    server.stop().await;
}

/// A raw client: the handshake by hand, then whatever bytes a test writes.
async fn raw_upgrade(server: &common::Running, path: &str) -> tokio::net::TcpStream {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        server.addr
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        assert_eq!(
            tcp.read(&mut byte).await.unwrap(),
            1,
            "the handshake's answer"
        );
        head.push(byte[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 101"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    tcp
}

/// A frame as a client writes it: `first` is FIN, RSV and opcode; masked unless `unmasked`.
fn raw_frame(first: u8, payload: &[u8], unmasked: bool) -> Vec<u8> {
    let mask_bit = if unmasked { 0 } else { 0x80 };
    let mut frame = vec![first];
    match payload.len() {
        n @ 0..=125 => frame.push(mask_bit | n as u8),
        n => {
            frame.push(mask_bit | 126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
    }
    if unmasked {
        frame.extend_from_slice(payload);
    } else {
        let key = [0x37, 0xfa, 0x21, 0x3d];
        frame.extend_from_slice(&key);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    }
    frame
}

/// Reads the server's frames until its close frame: its code, or `None` when the TCP
/// connection ended without one.
async fn raw_close_code(tcp: &mut tokio::net::TcpStream) -> Option<u16> {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    loop {
        // A whole frame in `buf`? Server frames are unmasked.
        if buf.len() >= 2 {
            let (len, at) = match buf[1] & 0x7f {
                126 if buf.len() >= 4 => (usize::from(u16::from_be_bytes([buf[2], buf[3]])), 4),
                126 | 127 => (usize::MAX, 0),
                n => (usize::from(n), 2),
            };
            if len != usize::MAX && buf.len() >= at + len {
                if buf[0] & 0x0f == 0x8 {
                    return (len >= 2).then(|| u16::from_be_bytes([buf[at], buf[at + 1]]));
                }
                buf.drain(..at + len);
                continue;
            }
        }
        let mut chunk = [0u8; 1024];
        match tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut chunk)).await {
            Ok(Ok(0) | Err(_)) => return None,
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => panic!("no close frame and no end within 5 s"),
        }
    }
}

/// RFC 6455 section 7.1.7 and 8.1: a client that breaks the protocol is told why with a
/// close frame (1002, or 1007 for text that is not UTF-8) before the TCP connection closes.
#[tokio::test]
async fn protocol_violations_are_answered_with_a_close_code() {
    let server = common::start(service(ServerLimits::default())).await;
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("an unmasked frame", raw_frame(0x81, b"hello", true), 1002),
        (
            "text that is not UTF-8",
            raw_frame(0x81, &[0xff, 0xfe, 0x41], false),
            1007,
        ),
        ("a 126-byte ping", raw_frame(0x89, &[0u8; 126], false), 1002),
        ("a fragmented ping", raw_frame(0x09, b"ping", false), 1002),
        ("RSV1 set", raw_frame(0xc1, b"hello", false), 1002),
        ("RSV3 set", raw_frame(0x91, b"hello", false), 1002),
        ("opcode 0x3", raw_frame(0x83, b"hello", false), 1002),
        ("opcode 0xB", raw_frame(0x8b, b"hello", false), 1002),
        (
            "a lone continuation",
            raw_frame(0x80, b"hello", false),
            1002,
        ),
        (
            "interleaved data frames",
            [
                raw_frame(0x01, b"hel", false),
                raw_frame(0x82, b"lo", false),
            ]
            .concat(),
            1002,
        ),
        (
            "a 1-byte close payload",
            raw_frame(0x88, &[0x03], false),
            1002,
        ),
        (
            "a close reason that is not UTF-8",
            raw_frame(0x88, &[0x03, 0xe8, 0xff, 0xfe], false),
            1007,
        ),
    ];
    for (case, bytes, code) in cases {
        use tokio::io::AsyncWriteExt;
        let mut tcp = raw_upgrade(&server, "/quiet").await;
        tcp.write_all(&bytes).await.unwrap();
        assert_eq!(raw_close_code(&mut tcp).await, Some(code), "{case}");
    }
    // A well-formed close gets its answer as before.
    let mut tcp = raw_upgrade(&server, "/quiet").await;
    tokio::io::AsyncWriteExt::write_all(&mut tcp, &raw_frame(0x88, &[0x03, 0xe8], false))
        .await
        .unwrap();
    assert_eq!(raw_close_code(&mut tcp).await, Some(1000));
    server.stop().await;
}

/// A client that never reads, while the handler sends with `send` (which waits for room): the
/// connection is closed once a write has waited `send_timeout` (300 ms here), not held open
/// for as long as the client stays connected. It held the server's only connection place, so
/// a second client gets in once it is gone.
#[tokio::test]
async fn a_client_that_never_reads_is_closed_within_the_send_timeout() {
    let limits = ServerLimits::default().max_connections(1);
    let server = common::start(service(limits)).await;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let tcp = socket.connect(server.addr).await.unwrap();
    let (stuck, _) = tokio_tungstenite::client_async(format!("ws://{}/firehose", server.addr), tcp)
        .await
        .unwrap();
    let started = Instant::now();
    // Never read again: the server's writes back up.
    let url = format!("ws://{}/echo", server.addr);
    let second = tokio::time::timeout(
        Duration::from_secs(5),
        tokio_tungstenite::connect_async(url),
    )
    .await
    .expect("the stuck client still holds the only place after 5 s")
    .unwrap();
    let waited = started.elapsed();
    println!("a client that never reads was closed after {waited:?}");
    drop((stuck, second));
    server.stop().await;
}

#[tokio::test]
async fn limits_close_with_their_codes() {
    let server = common::start(service(ServerLimits::default())).await;
    // Over the message size: 1009.
    let mut client = connect(&server, "/echo").await;
    next(&mut client).await;
    client.send(Frame::text("y".repeat(2000))).await.unwrap();
    assert_eq!(close_code(next(&mut client).await), Some(1009));

    // A slow reader of a fast sender: closed with 1008 once the queue is full, not buffered.
    let mut client = connect(&server, "/flood").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut frames = 0;
    let code = loop {
        match next(&mut client).await {
            Some(Frame::Text(_)) => frames += 1,
            other => break close_code(other),
        }
    };
    assert_eq!(code, Some(1008));
    // What the kernel's socket buffers held plus the queue: far below the million sent.
    assert!(frames < 20_000, "{frames} frames");

    // Idle: pinged, and a client that never answers (its pongs held back) is closed with
    // 1001. tungstenite answers pings while it is read, so this client stops reading.
    let client = connect(&server, "/quiet").await;
    let started = Instant::now();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let mut client = client;
    let mut code = None;
    while let Ok(Some(frame)) = tokio::time::timeout(Duration::from_secs(3), client.next()).await {
        if let Ok(Frame::Close(Some(close))) = frame {
            code = Some(u16::from(close.code));
            break;
        }
    }
    assert_eq!(code, Some(1001));
    assert!(started.elapsed() < Duration::from_secs(5));
    server.stop().await;
}

#[tokio::test]
async fn shutdown_closes_with_1001_and_upgraded_connections_count_against_the_limit() {
    let limits = ServerLimits::default().max_connections(2);
    let mut server = common::start(service(limits)).await;
    let mut first = connect(&server, "/echo").await;
    let mut second = connect(&server, "/echo").await;
    next(&mut first).await;
    next(&mut second).await;
    // Two upgraded connections hold both places: a third waits in the backlog, unanswered...
    let url = format!("ws://{}/echo", server.addr);
    let mut third = tokio::spawn(tokio_tungstenite::connect_async(url));
    assert!(
        tokio::time::timeout(Duration::from_millis(500), &mut third)
            .await
            .is_err(),
        "the third connection was served"
    );
    // ...until one of the two closes and gives its place back: then it is served.
    first.close(None).await.unwrap();
    while next(&mut first).await.is_some() {}
    let (mut third, _) = tokio::time::timeout(Duration::from_secs(5), third)
        .await
        .expect("the third connection served once a place was free")
        .unwrap()
        .unwrap();
    assert_eq!(next(&mut third).await, Some(Frame::text("session true")));
    let stopping = server.signal_shutdown();
    assert_eq!(close_code(next(&mut second).await), Some(1001));
    assert_eq!(close_code(next(&mut third).await), Some(1001));
    tokio::time::timeout(Duration::from_secs(5), stopping)
        .await
        .expect("shut down")
        .unwrap()
        .unwrap();
}

/// The close comes when the drain begins, not when the drain delay is over: the client
/// reconnects elsewhere while this instance still answers its probes with 503.
#[tokio::test]
async fn a_websocket_is_closed_with_1001_when_the_drain_begins() {
    let limits = ServerLimits::default().drain_delay(Duration::from_secs(5));
    let mut server = common::start(service(limits)).await;
    let mut socket = connect(&server, "/echo").await;
    next(&mut socket).await;
    let stopping = server.signal_shutdown();
    let closed = tokio::time::timeout(Duration::from_secs(3), next(&mut socket))
        .await
        .expect("closed before the 5 s drain delay was over");
    assert_eq!(close_code(closed), Some(1001));
    tokio::time::timeout(Duration::from_secs(10), stopping)
        .await
        .expect("shut down")
        .unwrap()
        .unwrap();
}

/// A chat message sent by a client of one instance reaches a client of the other, through
/// Redis.
#[tokio::test]
#[cfg_attr(no_test_redis, ignore = "needs Redis: set TEST_REDIS_URL")]
async fn a_broadcast_reaches_clients_of_another_instance_through_redis() {
    a_broadcast_reaches_clients_of_another_instance(common::backends::TestRedis::server()).await;
}

/// The same through a Redis Cluster (publish and subscribe on any node reach every node).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    no_test_redis,
    ignore = "needs redis-server and redis-cli: set TEST_REDIS_URL"
)]
async fn a_broadcast_reaches_clients_of_another_instance_through_a_redis_cluster() {
    a_broadcast_reaches_clients_of_another_instance(common::backends::TestRedis::cluster().await)
        .await;
}

async fn a_broadcast_reaches_clients_of_another_instance(backend: common::backends::TestRedis) {
    let (one_link, two_link) = (backend.connection().await, backend.connection().await);
    let channel = common::unique("ws-test");
    let instance = |hub: Broadcast| {
        App::new()
            .get("/room", move |ctx: &mut Context| {
                let hub = hub.clone();
                let upgraded = ctx.websocket(WsConfig::default(), move |mut socket| async move {
                    let mut feed = hub.subscribe();
                    loop {
                        tokio::select! {
                            message = socket.recv() => match message {
                                Some(Message::Text(text)) => {
                                    if hub.publish(text).await.is_err() {
                                        break;
                                    }
                                }
                                Some(Message::Binary(_)) => {}
                                None => break,
                            },
                            published = feed.recv() => match published {
                                Ok(bytes) => {
                                    let text = String::from_utf8_lossy(&bytes).into_owned();
                                    if socket.sender().try_send(text).is_err() {
                                        break;
                                    }
                                }
                                Err(_) => break,
                            },
                        }
                    }
                });
                async move { upgraded.map_err(Into::into) }
            })
            .build()
            .unwrap()
    };
    let one = common::start(instance(
        Broadcast::redis(one_link, &channel, 64).await.unwrap(),
    ))
    .await;
    let two = common::start(instance(
        Broadcast::redis(two_link, &channel, 64).await.unwrap(),
    ))
    .await;
    // Each hears its own first message back once its handler listens to the room: then the
    // next one joins.
    let mut alice = connect(&one, "/room").await;
    alice.send(Frame::text("alice here")).await.unwrap();
    assert_eq!(next(&mut alice).await, Some(Frame::text("alice here")));
    let mut bob = connect(&two, "/room").await;
    bob.send(Frame::text("bob here")).await.unwrap();
    assert_eq!(next(&mut bob).await, Some(Frame::text("bob here")));
    assert_eq!(next(&mut alice).await, Some(Frame::text("bob here")));
    alice.send(Frame::text("hi from one")).await.unwrap();
    assert_eq!(next(&mut bob).await, Some(Frame::text("hi from one")));
    assert_eq!(next(&mut alice).await, Some(Frame::text("hi from one")));
    bob.send(Frame::text("hello from two")).await.unwrap();
    assert_eq!(next(&mut alice).await, Some(Frame::text("hello from two")));
    one.stop().await;
    two.stop().await;
}

/// RFC 8441: over HTTP/2 a WebSocket is an extended CONNECT with `:protocol: websocket` on
/// the same route as the HTTP/1.1 upgrade (a `GET` route), answered 200, the stream then
/// carrying the WebSocket frames.
#[tokio::test]
async fn websockets_over_http2_by_extended_connect() {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    let server = common::start(service(ServerLimits::default())).await;
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let (mut send, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .unwrap();
    tokio::spawn(connection);
    let mut request = http::Request::builder()
        .method(http::Method::CONNECT)
        .version(http::Version::HTTP_2)
        .uri(format!("http://{}/echo", server.addr))
        .header("sec-websocket-version", "13")
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .unwrap();
    request
        .extensions_mut()
        .insert(hyper::ext::Protocol::from_static("websocket"));
    let response = send.send_request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let stream = hyper::upgrade::on(response).await.unwrap();
    let mut client = tokio_tungstenite::WebSocketStream::from_raw_socket(
        TokioIo::new(stream),
        tokio_tungstenite::tungstenite::protocol::Role::Client,
        None,
    )
    .await;
    let first = tokio::time::timeout(Duration::from_secs(5), client.next())
        .await
        .unwrap();
    assert!(
        matches!(first, Some(Ok(Frame::Text(ref t))) if t.as_str() == "session true"),
        "{first:?}"
    );
    client.send(Frame::text("over h2")).await.unwrap();
    let echo = tokio::time::timeout(Duration::from_secs(5), client.next())
        .await
        .unwrap();
    assert!(
        matches!(echo, Some(Ok(Frame::Text(ref t))) if t.as_str() == "over h2"),
        "{echo:?}"
    );
    // A plain CONNECT (no :protocol, its target an authority, not a path) is no WebSocket:
    // it reaches no route.
    let plain = http::Request::builder()
        .method(http::Method::CONNECT)
        .version(http::Version::HTTP_2)
        .uri(format!("http://{}/echo", server.addr))
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .unwrap();
    let answer = send.send_request(plain).await.unwrap();
    assert_eq!(answer.status(), 404);
    drop(client);
    server.stop().await;
}

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
use framework::ws::{Broadcast, Message, WsConfig};
use framework::{App, Context, ServerLimits, Service, when};
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message as Frame;

type Client =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

fn config() -> WsConfig {
    WsConfig {
        max_message_size: 1024,
        max_frame_size: 1024,
        send_queue: 4,
        ping_interval: Duration::from_millis(200),
        idle_timeout: Duration::from_millis(600),
    }
}

/// `/echo` echoes (after the session middleware, which names the visitor); `/flood` sends
/// without waiting (`try_send`) as fast as it can; `/quiet` never sends.
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
    let limits = ServerLimits {
        max_connections: 2,
        ..ServerLimits::default()
    };
    let mut server = common::start(service(limits)).await;
    let mut first = connect(&server, "/echo").await;
    let mut second = connect(&server, "/echo").await;
    next(&mut first).await;
    next(&mut second).await;
    // Two upgraded connections hold both places: a third waits in the backlog.
    let url = format!("ws://{}/echo", server.addr);
    let third = tokio::time::timeout(
        Duration::from_millis(500),
        tokio_tungstenite::connect_async(url),
    )
    .await;
    assert!(third.is_err(), "the third connection was served");
    let stopping = server.signal_shutdown();
    assert_eq!(close_code(next(&mut first).await), Some(1001));
    assert_eq!(close_code(next(&mut second).await), Some(1001));
    tokio::time::timeout(Duration::from_secs(5), stopping)
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
    let mut alice = connect(&one, "/room").await;
    let mut bob = connect(&two, "/room").await;
    // Let both handlers subscribe.
    tokio::time::sleep(Duration::from_millis(100)).await;
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

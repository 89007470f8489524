//! The chat example as two programs sharing Redis: a message from a client of the first
//! reaches a client of the second; the upgrade without a chosen name is refused; and 1 000
//! idle WebSocket connections cost the server under 64 KiB each (its resident memory, read
//! from /proc, before and after; printed for the record).
//!
//! The two-instance test needs Redis: `TEST_REDIS_URL` (set by `.ci/run`); without it the
//! test is reported as ignored (and the build fails under `REQUIRE_ALL_TESTS=1`, as CI runs
//! it). The other tests run the example on its memory stores.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// A running chat program, killed when dropped.
struct Chat {
    child: Child,
    port: u16,
}

impl Drop for Chat {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>")
        .join("examples")
        .join("chat")
}

/// The chat program, its room and sessions in Redis when `redis` names one, else in memory;
/// returned once it says it listens (its first line on stderr). Polling the port instead can
/// be fooled: a connect to a free port of the ephemeral range can connect to itself.
async fn start(redis: Option<&str>) -> Chat {
    use std::io::BufRead;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut child = Command::new(binary())
        .env("REDIS_URL", redis.unwrap_or(""))
        .env("BIND", format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the chat example (built by cargo test)");
    let stderr = child.stderr.take().expect("piped stderr");
    let chat = Chat { child, port };
    let first_line = tokio::task::spawn_blocking(move || {
        let mut lines = std::io::BufReader::new(stderr).lines();
        let first = lines.next();
        // Keep reading, so the program never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        first
    });
    let line = tokio::time::timeout(Duration::from_secs(20), first_line)
        .await
        .expect("the chat example said nothing within 20 s")
        .unwrap();
    match line {
        Some(Ok(line)) if line.starts_with("listening on") => chat,
        other => panic!("the chat example did not start: {other:?}"),
    }
}

/// Chooses `name` on `chat`: the session cookie that carries it.
async fn named(chat: &Chat, name: &str) -> String {
    let res = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{}/chat/name", chat.port))
        .header("content-type", "application/json")
        .body(format!(r#"{{"name":"{name}"}}"#))
        .send()
        .await
        .expect("name request");
    assert_eq!(res.status(), 200);
    let cookie = res.headers()["set-cookie"].to_str().unwrap();
    cookie.split(';').next().unwrap().to_owned()
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn join(chat: &Chat, cookie: Option<&str>) -> Result<Socket, String> {
    join_from(chat, cookie, None).await
}

/// Joins as a page of `origin` would (a browser sends its page's origin with the upgrade).
async fn join_from(
    chat: &Chat,
    cookie: Option<&str>,
    origin: Option<&str>,
) -> Result<Socket, String> {
    let mut request = format!("ws://127.0.0.1:{}/chat/ws", chat.port)
        .into_client_request()
        .unwrap();
    if let Some(cookie) = cookie {
        request
            .headers_mut()
            .insert("cookie", cookie.parse().unwrap());
    }
    if let Some(origin) = origin {
        request
            .headers_mut()
            .insert("origin", origin.parse().unwrap());
    }
    tokio_tungstenite::connect_async(request)
        .await
        .map(|(socket, _)| socket)
        .map_err(|e| e.to_string())
}

/// Joins over a connection whose receive buffer is 4 KiB: a client on a slow link, which the
/// server cannot hand a burst to at once however fast it reads.
async fn join_over_a_slow_link(chat: &Chat, cookie: &str) -> Socket {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let stream = socket
        .connect(format!("127.0.0.1:{}", chat.port).parse().unwrap())
        .await
        .unwrap();
    let mut request = format!("ws://127.0.0.1:{}/chat/ws", chat.port)
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("cookie", cookie.parse().unwrap());
    let stream = tokio_tungstenite::MaybeTlsStream::Plain(stream);
    tokio_tungstenite::client_async(request, stream)
        .await
        .map(|(socket, _)| socket)
        .expect("joined")
}

async fn heard(socket: &mut Socket) -> String {
    loop {
        match tokio::time::timeout(Duration::from_secs(5), socket.next())
            .await
            .expect("a message within 5 s")
        {
            Some(Ok(Message::Text(text))) => return text.as_str().to_owned(),
            Some(Ok(_)) => {}
            other => panic!("the socket ended: {other:?}"),
        }
    }
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .expect("VmRSS")
}

#[tokio::test]
#[cfg_attr(no_test_redis, ignore = "needs Redis: set TEST_REDIS_URL")]
async fn two_instances_are_one_room_and_idle_connections_are_cheap() {
    let redis = std::env::var("TEST_REDIS_URL").expect("TEST_REDIS_URL (see build.rs)");
    // Both programs and this one open a thousand sockets.
    let _ = rlimit::increase_nofile_limit(8192);
    let first = start(Some(&redis)).await;
    let second = start(Some(&redis)).await;

    // No name, no room.
    let refused = join(&first, None).await.unwrap_err();
    assert!(refused.contains("401"), "{refused}");

    let alice = named(&first, "alice").await;
    let bob = named(&second, "bob").await;
    // Each hears its own first message back once its connection listens to the room: then
    // the next one joins.
    let mut on_first = join(&first, Some(&alice)).await.unwrap();
    on_first.send(Message::text("alice here")).await.unwrap();
    assert_eq!(heard(&mut on_first).await, "alice: alice here");
    let mut on_second = join(&second, Some(&bob)).await.unwrap();
    on_second.send(Message::text("bob here")).await.unwrap();
    assert_eq!(heard(&mut on_second).await, "bob: bob here");
    assert_eq!(heard(&mut on_first).await, "bob: bob here");
    on_first
        .send(Message::text("hello from one"))
        .await
        .unwrap();
    assert_eq!(heard(&mut on_second).await, "alice: hello from one");
    assert_eq!(heard(&mut on_first).await, "alice: hello from one");
    on_second.send(Message::text("hi alice")).await.unwrap();
    assert_eq!(heard(&mut on_first).await, "bob: hi alice");

    // A thousand idle connections on the first program.
    let pid = first.child.id();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = rss_kib(pid);
    let mut idle = Vec::new();
    for _ in 0..1000 {
        idle.push(join(&first, Some(&alice)).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib(pid);
    let per_connection = (after.saturating_sub(before) * 1024) / 1000;
    println!(
        "1000 idle websocket connections: resident {before} KiB -> {after} KiB, {per_connection} bytes each"
    );
    assert!(
        per_connection < 64 * 1024,
        "{per_connection} bytes per idle connection"
    );
    // Still one room: the crowd hears a message.
    on_second.send(Message::text("to everyone")).await.unwrap();
    assert_eq!(heard(&mut idle[999]).await, "bob: to everyone");
    drop(idle);
}

/// A page of another site cannot join the room with the visitor's session cookie
/// (cross-site WebSocket hijacking); the chat's own page can.
#[tokio::test]
async fn pages_of_other_origins_cannot_join() {
    let chat = start(None).await;
    let alice = named(&chat, "alice").await;
    let own = format!("http://127.0.0.1:{}", chat.port);
    for origin in [
        "https://evil.example".to_owned(),
        "null".to_owned(),
        format!("http://127.0.0.1.evil.example:{}", chat.port),
        format!("http://127.0.0.1:{}", chat.port + 1),
    ] {
        let refused = join_from(&chat, Some(&alice), Some(&origin))
            .await
            .err()
            .unwrap_or_else(|| panic!("{origin} joined"));
        assert!(refused.contains("403"), "{origin}: {refused}");
    }
    let mut socket = join_from(&chat, Some(&alice), Some(&own)).await.unwrap();
    socket
        .send(Message::text("from my own page"))
        .await
        .unwrap();
    assert_eq!(heard(&mut socket).await, "alice: from my own page");
}

/// One client's burst never closes readers that keep reading: 300 messages (of 100 and
/// 1 000 bytes) in one write, while five others on slow links (a 4 KiB receive buffer, a
/// millisecond over each message) read all the time, in six rounds. Every reader
/// gets all 300 in order, no connection is closed, and the sender hears its own messages
/// back: the sender is paced to stay within the room's buffer, not dropped.
#[tokio::test]
async fn a_burst_from_one_client_closes_no_reader() {
    let chat = start(None).await;
    let alice = named(&chat, "alice").await;
    let bob = named(&chat, "bob").await;
    for round in 0..6 {
        let mut readers = Vec::new();
        for _ in 0..5 {
            readers.push(join_over_a_slow_link(&chat, &bob).await);
        }
        let mut sender = join(&chat, Some(&alice)).await.unwrap();
        // 100 and 1 000 characters (the room's longest), numbered.
        let text = move |i: usize| {
            let size = if i.is_multiple_of(2) { 100 } else { 1000 };
            let number = format!("{round}-{i}-");
            format!("{number}{}", "x".repeat(size - number.len()))
        };
        for i in 0..300 {
            sender.feed(Message::text(text(i))).await.unwrap();
        }
        // One flush: the 300 frames leave in one write.
        sender.flush().await.unwrap();
        // A reader takes a millisecond over each message (a page that shows it), the sender
        // none: all keep reading, none as fast as the server can publish.
        let read_all = move |mut socket: Socket, who: String, pause: Duration| async move {
            for i in 0..300 {
                tokio::time::sleep(pause).await;
                let next = tokio::time::timeout(Duration::from_secs(10), socket.next())
                    .await
                    .unwrap_or_else(|_| panic!("round {round}, {who}: nothing after {i}"));
                match next {
                    Some(Ok(Message::Text(line))) => {
                        let expected = format!("alice: {}", text(i));
                        assert!(
                            line.as_str() == expected,
                            "round {round}, {who}: message {i}"
                        );
                    }
                    other => panic!("round {round}, {who}, after {i} of 300: {other:?}"),
                }
            }
            socket
        };
        let mut tasks = Vec::new();
        for (n, reader) in readers.into_iter().enumerate() {
            let who = format!("reader {n}");
            tasks.push(tokio::spawn(read_all(
                reader,
                who,
                Duration::from_millis(1),
            )));
        }
        let who = "the sender".to_owned();
        tasks.push(tokio::spawn(read_all(sender, who, Duration::ZERO)));
        for task in tasks {
            let mut socket = task.await.expect("every reader got all 300");
            socket.close(None).await.unwrap();
        }
    }
}

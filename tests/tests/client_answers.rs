//! The typed client against a server that misbehaves, over a real socket: an answer over the
//! client's size limit (by `Content-Length`, and chunked without end), a flood of large
//! cookies, a redirect dressed as the route's answer, and answers that are not HTTP, each
//! failing with an error that says what happened.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use framework::client::{
    ApiClient, ClientError, DEFAULT_MAX_ANSWER_BYTES, MAX_COOKIE_HEADER_BYTES,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use user_api::UserApiClient;

/// What the fake server does with a connection once it has read a request's head.
type Script = Arc<dyn Fn(usize) -> Answer + Send + Sync>;

enum Answer {
    /// These bytes, then the connection closes.
    Bytes(Vec<u8>),
    /// These bytes, then chunks of 64 KiB without end (while the client reads).
    EndlessChunks(Vec<u8>),
    /// These bytes, then `a` without end (while the client reads).
    Endless(Vec<u8>),
    /// These bytes, then the connection stays open, silent.
    BytesThenHold(Vec<u8>),
}

/// A server that answers the `n`th request (from 0) as `script(n)` says, and keeps each
/// request's head.
struct Fake {
    url: String,
    heads: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn fake(script: impl Fn(usize) -> Answer + Send + Sync + 'static) -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let heads = Arc::new(Mutex::new(Vec::new()));
    let script: Script = Arc::new(script);
    let seen = Arc::clone(&heads);
    let task = tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (script, seen) = (Arc::clone(&script), Arc::clone(&seen));
            tokio::spawn(serve(socket, script, seen));
        }
    });
    Fake { url, heads, task }
}

async fn serve(mut socket: TcpStream, script: Script, seen: Arc<Mutex<Vec<String>>>) {
    loop {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            match socket.read(&mut byte).await {
                Ok(1) => head.push(byte[0]),
                _ => return,
            }
        }
        let n = {
            let mut seen = seen.lock().unwrap();
            seen.push(String::from_utf8_lossy(&head).into_owned());
            seen.len() - 1
        };
        match script(n) {
            Answer::Bytes(bytes) => {
                if socket.write_all(&bytes).await.is_err() {
                    return;
                }
                // Keep-alive answers go on to the next request; a closing one ends here.
                if !String::from_utf8_lossy(&bytes).contains("content-length: ") {
                    return;
                }
            }
            Answer::EndlessChunks(bytes) => {
                let chunk = format!("10000\r\n{}\r\n", "x".repeat(0x10000));
                let _ = socket.write_all(&bytes).await;
                while socket.write_all(chunk.as_bytes()).await.is_ok() {}
                return;
            }
            Answer::Endless(bytes) => {
                let filler = vec![b'a'; 0x10000];
                let _ = socket.write_all(&bytes).await;
                while socket.write_all(&filler).await.is_ok() {}
                return;
            }
            Answer::BytesThenHold(bytes) => {
                let _ = socket.write_all(&bytes).await;
                tokio::time::sleep(Duration::from_secs(60)).await;
                return;
            }
        }
    }
}

fn me_answer(status: &str, extra: &str) -> Vec<u8> {
    let body = r#"{"name":"mallory"}"#;
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn client(url: &str, limit: Option<usize>) -> UserApiClient {
    let mut builder = ApiClient::builder().timeout(Some(Duration::from_secs(20)));
    if let Some(limit) = limit {
        builder = builder.max_answer_bytes(limit);
    }
    UserApiClient::from_client(builder.build(url).unwrap())
}

#[tokio::test]
async fn an_answer_over_the_limit_is_refused_by_its_length_without_reading_it() {
    assert_eq!(DEFAULT_MAX_ANSWER_BYTES, 16 * 1024 * 1024);
    // A 1 GiB answer: its head and a first MiB are sent, then the server waits. The client
    // refuses it by the Content-Length at once.
    let server = fake(|_| {
        let mut bytes = b"HTTP/1.1 201 Created\r\ncontent-type: application/json\r\n\
                          content-length: 1073741824\r\n\r\n"
            .to_vec();
        bytes.extend(std::iter::repeat_n(b' ', 1 << 20));
        Answer::BytesThenHold(bytes)
    })
    .await;
    let started = Instant::now();
    let err = client(&server.url, None).me().await.expect_err("too large");
    assert!(
        matches!(err, ClientError::TooLarge { limit, .. } if limit == DEFAULT_MAX_ANSWER_BYTES),
        "{err:?}"
    );
    assert_eq!(err.status().map(|s| s.as_u16()), Some(201));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "not waited for"
    );
    assert!(err.to_string().contains("16777216 bytes"), "{err}");

    // At the boundary: a body of exactly the limit is read, one byte more is not.
    let server = fake(|_| Answer::Bytes(me_answer("200 OK", ""))).await;
    let exact = r#"{"name":"mallory"}"#.len();
    assert_eq!(
        client(&server.url, Some(exact)).me().await.unwrap().name,
        "mallory"
    );
    let err = client(&server.url, Some(exact - 1))
        .me()
        .await
        .expect_err("one byte over");
    assert!(matches!(err, ClientError::TooLarge { .. }), "{err:?}");
}

#[tokio::test]
async fn an_endless_chunked_answer_is_cut_off_at_the_limit() {
    let server = fake(|_| {
        Answer::EndlessChunks(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
              transfer-encoding: chunked\r\n\r\n"
                .to_vec(),
        )
    })
    .await;
    let started = Instant::now();
    let err = client(&server.url, Some(1 << 20))
        .me()
        .await
        .expect_err("endless");
    assert!(
        matches!(err, ClientError::TooLarge { limit, .. } if limit == 1 << 20),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    // Chunked at the boundary: the limit's bytes exactly are read.
    let body = r#"{"name":"chunked"}"#;
    let server = fake(move |_| {
        Answer::Bytes(
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                 transfer-encoding: chunked\r\nconnection: close\r\n\r\n\
                 {:x}\r\n{body}\r\n0\r\n\r\n",
                body.len()
            )
            .into_bytes(),
        )
    })
    .await;
    let me = client(&server.url, Some(body.len())).me().await.unwrap();
    assert_eq!(me.name, "chunked");
    let err = client(&server.url, Some(body.len() - 1))
        .me()
        .await
        .expect_err("over");
    assert!(matches!(err, ClientError::TooLarge { .. }), "{err:?}");
}

#[tokio::test]
async fn a_flood_of_large_cookies_is_not_sent_back_whole() {
    // 90 cookies of 3.9 KB on the first answer; the second request's Cookie header is what
    // the client sends back.
    let server = fake(|n| {
        let cookies: String = if n == 0 {
            (0..90)
                .map(|i| format!("set-cookie: c{i:02}={}\r\n", "v".repeat(3900)))
                .collect()
        } else {
            String::new()
        };
        Answer::Bytes(me_answer("200 OK", &cookies))
    })
    .await;
    let client = client(&server.url, None);
    client.me().await.unwrap();
    client.me().await.unwrap();
    let heads = server.heads.lock().unwrap().clone();
    let cookie = heads[1]
        .lines()
        .find_map(|line| line.strip_prefix("cookie: "))
        .expect("a cookie header");
    assert!(
        cookie.len() <= MAX_COOKIE_HEADER_BYTES,
        "{} bytes",
        cookie.len()
    );
    // The newest cookies are the ones kept.
    assert!(cookie.contains("c89="), "{}", &cookie[..40]);
    assert!(!cookie.contains("c00="));
}

#[tokio::test]
async fn a_redirect_is_not_the_routes_answer() {
    let server =
        fake(|_| Answer::Bytes(me_answer("302 Found", "location: http://evil.example/\r\n"))).await;
    let err = client(&server.url, None)
        .me()
        .await
        .expect_err("a redirect");
    assert!(
        matches!(&err, ClientError::Status { status, declared: false, .. } if status.as_u16() == 302),
        "{err:?}"
    );
    assert!(!err.to_string().contains("mallory"));
}

#[tokio::test]
async fn answers_that_are_not_http_say_why() {
    let many_headers: String = (0..5000).map(|i| format!("x-h{i}: v\r\n")).collect();
    let cases: Vec<(&str, Answer, &str)> = vec![
        (
            "endless headers",
            Answer::Endless(b"HTTP/1.1 200 OK\r\nx-long: ".to_vec()),
            "message head is too large",
        ),
        (
            "5000 headers",
            Answer::Bytes(format!("HTTP/1.1 200 OK\r\n{many_headers}\r\n").into_bytes()),
            "message head is too large",
        ),
        (
            "a garbage status line",
            Answer::Bytes(b"HTTP/1.1 two hundred OK\r\n\r\n".to_vec()),
            "invalid HTTP status-code parsed",
        ),
        (
            "HTTP/0.9",
            Answer::Bytes(b"{\"name\":\"mallory\"}".to_vec()),
            "invalid HTTP version parsed",
        ),
        (
            "closed at once",
            Answer::Bytes(Vec::new()),
            "connection closed before message completed",
        ),
    ];
    for (case, answer, cause) in cases {
        let answer = Mutex::new(Some(answer));
        let server = fake(move |_| answer.lock().unwrap().take().expect("one request")).await;
        let err = client(&server.url, None).me().await.expect_err(case);
        assert!(matches!(err, ClientError::Transport(_)), "{case}: {err:?}");
        let message = err.to_string();
        assert!(message.contains(cause), "{case}: {message}");
    }
}

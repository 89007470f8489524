//! Every example, run as its own program and asked what its doc comment says to ask: the
//! programs are checked for behaviour, not only for compiling. They all listen on
//! 127.0.0.1:3000, so they run one after the other in a single test.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use reqwest::{Client, Method, StatusCode};

/// A running example program, killed when dropped.
struct Example(Child);

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `target/<profile>/examples/<name>`, next to this test's `deps/` folder.
fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let profile = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>");
    profile.join("examples").join(name)
}

async fn start(name: &str) -> Example {
    // An answer from another program on the port would be taken for the example's.
    assert!(
        tokio::net::TcpStream::connect("127.0.0.1:3000")
            .await
            .is_err(),
        "127.0.0.1:3000 is in use by another program: stop it to run the examples"
    );
    let child = Command::new(binary(name))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("example {name} (built by cargo test): {e}"));
    let mut example = Example(child);
    for _ in 0..200 {
        if tokio::net::TcpStream::connect("127.0.0.1:3000")
            .await
            .is_ok()
        {
            return example;
        }
        if let Ok(Some(status)) = example.0.try_wait() {
            panic!("example {name} exited: {status}");
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("example {name} did not listen on 127.0.0.1:3000 within 5 s");
}

/// One request of an example's doc comment and what must come back.
struct Ask {
    method: Method,
    path: &'static str,
    headers: &'static [(&'static str, &'static str)],
    body: Option<&'static str>,
    status: u16,
    contains: &'static str,
}

const fn ask(path: &'static str, status: u16, contains: &'static str) -> Ask {
    Ask {
        method: Method::GET,
        path,
        headers: &[],
        body: None,
        status,
        contains,
    }
}

async fn check(client: &Client, name: &str, ask: &Ask) -> reqwest::Response {
    let mut request = client.request(
        ask.method.clone(),
        format!("http://127.0.0.1:3000{}", ask.path),
    );
    for (k, v) in ask.headers {
        request = request.header(*k, *v);
    }
    if let Some(body) = ask.body {
        request = request
            .header("content-type", "application/json")
            .body(body);
    }
    let res = request
        .send()
        .await
        .unwrap_or_else(|e| panic!("{name} {}: {e}", ask.path));
    assert_eq!(
        res.status(),
        StatusCode::from_u16(ask.status).unwrap(),
        "{name} {}",
        ask.path
    );
    res
}

async fn run(name: &str, asks: &[Ask]) {
    let _example = start(name).await;
    let client = Client::builder()
        .cookie_store(true)
        .build()
        .expect("client");
    for ask in asks {
        let res = check(&client, name, ask).await;
        let text = res.text().await.expect("body");
        assert!(text.contains(ask.contains), "{name} {}: {text:?}", ask.path);
    }
}

#[tokio::test]
async fn every_example_answers_as_its_doc_comment_says() {
    run("hello", &[ask("/", 200, "Hello, world!")]).await;
    run(
        "json_validate",
        &[
            Ask {
                method: Method::POST,
                body: Some(r#"{"title":"milk","tag":"shopping"}"#),
                ..ask("/notes", 201, r#""tag":"shopping""#)
            },
            Ask {
                method: Method::POST,
                body: Some(r#"{"title":"milk","tag":"Shop"}"#),
                headers: &[("accept", "application/json")],
                ..ask("/notes", 400, "must be lowercase letters")
            },
            ask("/notes", 200, r#""title":"milk""#),
        ],
    )
    .await;
    run(
        "openapi",
        &[
            Ask {
                method: Method::POST,
                body: Some(r#"{"title":"Dune","year":1965}"#),
                ..ask("/books", 201, r#"{"id":1,"title":"Dune","year":1965}"#)
            },
            Ask {
                method: Method::POST,
                body: Some(r#"{"title":"Dune","year":1965}"#),
                ..ask("/books", 409, "already on the shelf")
            },
            Ask {
                method: Method::POST,
                body: Some(r#"{"title":" Dune","year":1965}"#),
                ..ask("/books", 400, "title: must be 1-80 characters")
            },
            ask("/books/1", 200, r#""title":"Dune""#),
            ask("/books/2", 404, "no book 2"),
            ask("/books/x", 400, "id"),
            ask("/books?since=1960", 200, r#"[{"id":1"#),
            ask("/books?since=1970", 200, "[]"),
            ask("/openapi.json", 200, r#""maxLength": 80"#),
            ask("/docs", 200, "swagger-ui-bundle.js"),
        ],
    )
    .await;
    run(
        "chat",
        &[
            ask("/", 200, "/chat.js"),
            Ask {
                method: Method::POST,
                body: Some(r#"{"name":"ada"}"#),
                ..ask("/chat/name", 200, "ok")
            },
            Ask {
                method: Method::POST,
                body: Some(r#"{"name":""}"#),
                ..ask("/chat/name", 400, "name")
            },
            // A plain GET on the socket's path is no upgrade.
            ask("/chat/ws", 400, "websocket"),
        ],
    )
    .await;
    run(
        "middleware_fn",
        &[
            ask("/timed", 200, "timed"),
            ask("/admin/stats", 401, "x-api-key"),
            Ask {
                headers: &[("x-api-key", "let-me-in")],
                ..ask("/admin/stats", 200, "42 requests")
            },
        ],
    )
    .await;
    run(
        "sessions",
        &[
            ask("/visits", 200, r#"{"visits":1}"#),
            ask("/visits", 200, r#"{"visits":2}"#),
            Ask {
                method: Method::POST,
                ..ask("/forget", 200, "forgotten")
            },
            ask("/visits", 200, r#"{"visits":1}"#),
        ],
    )
    .await;
    run(
        "errors",
        &[
            ask("/items/7", 404, "no item 7"),
            Ask {
                headers: &[("accept", "application/json")],
                ..ask("/items/7", 404, r#""category":"example-items""#)
            },
            ask("/items/x", 400, "x is not a number"),
            ask("/broken", 500, ""),
        ],
    )
    .await;
    // `testing` is built as a test harness (`test = true`): its own tests run it.
    run(
        "compress",
        &[Ask {
            headers: &[("accept-encoding", "identity")],
            ..ask("/report", 200, "All systems nominal.")
        }],
    )
    .await;
    run(
        "static_files",
        &[ask("/static/", 200, "Served from examples/static/")],
    )
    .await;
    run(
        "replies",
        &[
            ask("/events", 200, "event: tick\nid: 0\ndata: tick 0\n\n"),
            Ask {
                headers: &[("last-event-id", "7")],
                ..ask("/events", 200, "id: 10\ndata: tick 10\n\n")
            },
            ask("/changes", 200, "{\"id\":2,\"text\":\"renamed\"}\n"),
            // Followed by the client: the redirect's target answers.
            ask("/go?next=/changes", 200, "{\"id\":1,"),
            ask("/go?next=//evil.example", 400, "a path on this site"),
            ask("/go?next=https://evil.example", 400, ""),
            ask("/download", 200, "Served from examples/static/"),
            ask("/export.csv", 200, "2,renamed"),
        ],
    )
    .await;
    run("proxy", &[ask("/api/time", 200, "upstream at")]).await;
    run(
        "rate_limit",
        &[
            ask("/", 200, "within budget"),
            ask("/", 200, ""),
            ask("/", 200, ""),
            ask("/", 200, ""),
            ask("/", 200, ""),
            ask("/", 429, ""),
        ],
    )
    .await;
    run(
        "logger",
        &[ask("/hello", 200, "hello"), ask("/health", 200, "ok")],
    )
    .await;
    run(
        "basic_auth",
        &[
            ask("/", 200, "public"),
            ask("/admin", 401, ""),
            Ask {
                // admin:s3cret
                headers: &[("authorization", "Basic YWRtaW46czNjcmV0")],
                ..ask("/admin", 200, "the admin page")
            },
            // The group's `/` route is `/admin`; the slashed form is strict: 404.
            Ask {
                headers: &[("authorization", "Basic YWRtaW46czNjcmV0")],
                ..ask("/admin/", 404, "")
            },
        ],
    )
    .await;
    run(
        "tower",
        &[
            ask("/hello", 200, "hello from the framework"),
            Ask {
                method: Method::OPTIONS,
                headers: &[
                    ("origin", "https://a.example"),
                    ("access-control-request-method", "POST"),
                ],
                ..ask("/hello", 200, "")
            },
            ask("/slow", 408, ""),
            ask("/legacy/users/7", 200, "user 7, from the axum router"),
            ask("/files/", 200, "Served from examples/static/"),
        ],
    )
    .await;
    jwt().await;
    cache().await;
    compressed().await;
    upload().await;
}

async fn upload() {
    let _example = start("upload").await;
    let client = Client::new();
    let form = |data: &[u8]| {
        let mut body = b"--b0undary\r\nContent-Disposition: form-data; name=\"file\"; \
                         filename=\"../notes.txt\"\r\n\r\n"
            .to_vec();
        body.extend_from_slice(data);
        body.extend_from_slice(
            b"\r\n--b0undary\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\n\
              hello\r\n--b0undary--\r\n",
        );
        client
            .post("http://127.0.0.1:3000/files")
            .header("content-type", "multipart/form-data; boundary=b0undary")
            .body(body)
            .send()
    };
    let res = form(b"0123456789abcdef").await.unwrap();
    assert_eq!(res.status(), 200);
    let stored: serde_json::Value = res.json().await.unwrap();
    assert_eq!(stored["fileName"], "notes.txt");
    assert_eq!(
        (&stored["size"], &stored["note"]),
        (&16.into(), &"hello".into())
    );
    let url = format!(
        "http://127.0.0.1:3000/files/{}",
        stored["id"].as_str().unwrap()
    );
    let res = client
        .get(&url)
        .header("range", "bytes=0-9")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 206);
    assert_eq!(res.text().await.unwrap(), "0123456789");
    let res = form(&vec![0; 1024 * 1024 + 1]).await.unwrap();
    assert_eq!(res.status(), 413);
    // An id of 64 bytes that are not 64 hex digits (`a` and 21 euro signs, which slicing by
    // position cut inside a character): a 404, not a panic.
    let euros = format!("a{}", "%E2%82%AC".repeat(21));
    let res = client
        .get(format!("http://127.0.0.1:3000/files/{euros}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
}

async fn jwt() {
    let _example = start("jwt").await;
    let client = Client::new();
    let token = client
        .post("http://127.0.0.1:3000/login?user=alice")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let token = token.trim_matches('"');
    let me = "http://127.0.0.1:3000/api/me";
    assert_eq!(client.get(me).send().await.unwrap().status(), 401);
    let res = client.get(me).bearer_auth(token).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.text().await.unwrap(), "alice");
}

async fn cache() {
    let _example = start("cache").await;
    let client = Client::new();
    let url = "http://127.0.0.1:3000/slow";
    let first = client.get(url).send().await.unwrap();
    assert_eq!(first.headers()["x-cache"], "fetch");
    let second = client.get(url).send().await.unwrap();
    assert_eq!(second.headers()["x-cache"], "hit");
    let url = "http://127.0.0.1:3000/private";
    client.get(url).send().await.unwrap();
    let again = client.get(url).send().await.unwrap();
    assert_eq!(again.headers()["x-cache"], "hit-for-pass");
}

async fn compressed() {
    let _example = start("compress").await;
    // reqwest would decompress gzip itself and drop the header: ask for the raw bytes.
    let client = Client::builder().no_gzip().build().expect("client");
    let res = client
        .get("http://127.0.0.1:3000/report")
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["content-encoding"], "gzip");
    assert!(
        res.bytes().await.unwrap().len() < 1_000,
        "10 500 bytes of text, compressed"
    );
    // About a megabyte: compressed as a stream, its compressed length unknown up front.
    let res = client
        .get("http://127.0.0.1:3000/export")
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["content-encoding"], "gzip");
    assert!(res.headers().get("content-length").is_none());
    let compressed = res.bytes().await.unwrap().len();
    assert!(
        (10_000..300_000).contains(&compressed),
        "{compressed} bytes for about a megabyte"
    );
}

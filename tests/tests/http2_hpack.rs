//! HTTP/2 header compression (HPACK) of the framework's own headers, read by a third-party
//! HTTP/2 client (the Python `h2` library): each answer's `X-Request-Id` is new, so it is sent
//! "never indexed" instead of being added to the connection's dynamic table, where it would
//! only push out the entries that repeat (and cost the server a comparison with every earlier
//! id per answer). Headers that repeat are still indexed.

mod common;

use std::collections::HashSet;

use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::{App, Context, Result};

async fn hello(_ctx: &mut Context) -> Result<&'static str> {
    Ok("hello")
}

/// Three GETs on one HTTP/2 connection (prior knowledge); prints each answer's headers as
/// `[name, value, never_indexed]`.
const CLIENT: &str = r#"
import json, socket, sys
import h2.config, h2.connection, h2.events
from hpack import NeverIndexedHeaderTuple
sock = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
conn.initiate_connection()
sock.sendall(conn.data_to_send())
answers = []
for _ in range(3):
    stream = conn.get_next_available_stream_id()
    conn.send_headers(stream, [(":method", "GET"), (":path", "/hello"), (":scheme", "http"), (":authority", "localhost")], end_stream=True)
    sock.sendall(conn.data_to_send())
    headers, ended = None, False
    while not ended:
        data = sock.recv(65536)
        if not data:
            sys.exit("the server closed the connection")
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
                headers = [[n, v, isinstance(h, NeverIndexedHeaderTuple)] for h in event.headers for (n, v) in [h]]
            elif isinstance(event, h2.events.DataReceived):
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                ended = True
        sock.sendall(conn.data_to_send())
    answers.append(headers)
print(json.dumps(answers))
"#;

#[tokio::test]
#[cfg_attr(
    no_test_python_h2,
    ignore = "needs python3 with the h2 library (pip install h2)"
)]
async fn request_ids_are_never_indexed_and_repeating_headers_are() {
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/hello", hello)
        .build()
        .unwrap();
    let server = common::start(service).await;
    let (ip, port) = (server.addr.ip().to_string(), server.addr.port().to_string());
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("python3")
            .args(["-c", CLIENT, &ip, &port])
            .output()
    })
    .await
    .unwrap();
    let out = match out {
        Ok(out) if out.status.success() => out,
        Ok(out) => panic!(
            "the HTTP/2 client failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(err) => panic!("python3 did not start: {err}"),
    };
    let answers: Vec<Vec<(String, String, bool)>> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answers.len(), 3);
    let mut ids = HashSet::new();
    for headers in &answers {
        let find = |name: &str| {
            headers
                .iter()
                .find(|(n, _, _)| n == name)
                .unwrap_or_else(|| panic!("no {name} in {headers:?}"))
        };
        assert_eq!(find(":status").1, "200");
        let (_, id, never_indexed) = find("x-request-id");
        assert!(*never_indexed, "x-request-id is never indexed: {headers:?}");
        assert_eq!(id.len(), 32);
        ids.insert(id.clone());
        let (_, content_type, never_indexed) = find("content-type");
        assert_eq!(content_type, "text/plain; charset=utf-8");
        assert!(!*never_indexed, "content-type may be indexed: {headers:?}");
    }
    assert_eq!(ids.len(), 3, "a new id per answer");
    server.stop().await;
}

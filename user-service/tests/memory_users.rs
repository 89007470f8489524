//! The memory user store is bounded (`MEMORY_USERS`): a registration past the bound gets 507
//! with the user category, and an account already there is still a 409 (nothing is evicted).

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;

/// Sends one request on a new connection; the status and the body.
fn send(address: &str, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.write_all(request.as_bytes()).expect("write");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    let status = answer[9..12].parse().expect("status");
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    (status, body)
}

fn register(address: &str, account: &str) -> (u16, String) {
    let body = format!(
        r#"{{"account":"{account}","password":"{}"}}"#,
        "ab".repeat(32)
    );
    send(
        address,
        &format!(
            "POST /users/v1/me HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\
             content-type: application/json\r\naccept: application/json\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        ),
    )
}

#[test]
fn registration_past_the_bound_is_refused_with_507() {
    let (_service, address) = common::start_with(&[("MEMORY_USERS", "3")]);
    for account in ["ann", "bob", "cat"] {
        assert_eq!(register(&address, account).0, 201, "{account} fits");
    }
    let (status, body) = register(&address, "dan");
    assert_eq!(status, 507, "{body}");
    assert!(body.contains("\"category\":\"user\""), "{body}");
    assert!(body.contains("the user store is full"), "{body}");
    // An account that exists is still a conflict, full or not.
    assert_eq!(register(&address, "BOB").0, 409);
}

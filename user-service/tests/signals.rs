//! The real binary and the signals that stop it: SIGTERM (what an orchestrator sends) and
//! SIGINT (Ctrl-C) end it with exit code 0 once nothing is in flight. The time it takes is
//! printed, not asserted (speed belongs to benchmarks); the 10 s limit only catches a hang.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

fn get_me(address: &str) -> String {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream
        .write_all(b"GET /users/v1/me HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n")
        .expect("write");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    answer
}

fn stop_with(signal: &str) {
    let (mut service, address) = common::start();
    assert!(get_me(&address).starts_with("HTTP/1.1 200 "), "it serves");
    let sent = Instant::now();
    let status = Command::new("kill")
        .args([format!("-{signal}"), service.0.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let exit = loop {
        if let Some(exit) = service.0.try_wait().expect("wait") {
            break exit;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(10),
            "user-service still runs 10 s after SIG{signal}"
        );
        std::thread::sleep(Duration::from_millis(1));
    };
    println!("SIG{signal}: exited {exit} after {:?}", sent.elapsed());
    assert!(exit.success(), "SIG{signal} is a clean stop: {exit}");
    assert!(
        TcpStream::connect(&address).is_err(),
        "nothing listens after the stop"
    );
}

#[test]
fn sigterm_stops_the_service_cleanly() {
    stop_with("TERM");
}

#[test]
fn sigint_stops_the_service_cleanly() {
    stop_with("INT");
}

//! The real binary and the signals that stop it: SIGTERM (what an orchestrator sends) and
//! SIGINT (Ctrl-C) end it with exit code 0 once nothing is in flight. The time it takes is
//! printed, not asserted (speed belongs to benchmarks); the 10 s limit only catches a hang.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The service, killed if a test fails before it stops.
struct Service(Child);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the binary on a free port with in-memory stores; returns it and its address, read
/// from the `listening` log line.
fn start() -> (Service, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_user-service"))
        .env("BIND", "127.0.0.1:0")
        .env("DATABASE_URL", "memory")
        .env_remove("REDIS_URL")
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start user-service");
    let stdout = child.stdout.take().expect("stdout");
    let service = Service(child);
    let mut lines = BufReader::new(stdout).lines();
    let address = loop {
        let line = lines
            .next()
            .expect("user-service exited before it listened")
            .expect("stdout");
        if let Some(rest) = line.split("address=").nth(1) {
            break rest.split_whitespace().next().expect("address").to_owned();
        }
    };
    // Keep draining the log so the service never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (service, address)
}

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
    let (mut service, address) = start();
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

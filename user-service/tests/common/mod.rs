//! The real binary, started for a test.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// The service, killed if a test fails before it stops.
pub(crate) struct Service(pub(crate) Child);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the binary on a free port with in-memory stores; returns it and its address, read
/// from the `listening` log line.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub(crate) fn start() -> (Service, String) {
    start_with(&[])
}

/// [`start`] with more settings.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub(crate) fn start_with(env: &[(&str, &str)]) -> (Service, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_user-service"))
        .envs(env.iter().copied())
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

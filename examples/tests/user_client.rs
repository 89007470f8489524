//! The `user_client` example against the user service: it logs in and prints the current
//! user, and a wrong password gets the service's error and a failing exit status.

use std::path::PathBuf;
use std::process::Command;

use user_service::{Config, Stores};

/// `target/<profile>/examples/user_client`, next to this test's `deps/` folder.
fn binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let profile = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>");
    profile.join("examples").join("user_client")
}

/// Runs the example (off the async workers: the service answers it meanwhile).
async fn user_client(args: &[&str]) -> std::process::Output {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        Command::new(binary())
            .args(&args)
            .output()
            .expect("example user_client (built by cargo test)")
    })
    .await
    .expect("run the example")
}

#[tokio::test]
async fn the_client_example_logs_in_and_prints_the_user() {
    let service = user_service::build(&Config::default(), Stores::in_memory()).expect("service");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(service.serve(listener));

    // New account: registered, then logged in; existing account: logged in.
    for _ in 0..2 {
        let out = user_client(&[&base, "alice_1", "correct horse"]).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "logged in as alice_1\n"
        );
    }
    let out = user_client(&[&base, "alice_1", "wrong"]).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("account or password is wrong"), "{stderr}");
    let out = user_client(&[&base]).await;
    assert_eq!(out.status.code(), Some(2));
    server.abort();
}

//! A client of the user service, generated from its API crate: `user-api` declares the routes
//! on the `UserApi` trait, the service implements it, and this program uses the
//! `UserApiClient` the same declaration gives (feature `client`). It registers the account
//! when it is new, takes a login token, logs in with the proof and prints the current user.
//!
//! Run the service (`cargo run -p user-service`, on 127.0.0.1:3000), then:
//!
//! ```text
//! cargo run -p examples --example user_client -- http://127.0.0.1:3000 alice_1 'correct horse'
//! ```
//!
//! It prints `logged in as alice_1`; a wrong password prints the service's error
//! (`400 Bad Request: account or password is wrong (category user)`) and exits with 1.

use std::process::ExitCode;

use framework::client::ClientError;
use framework::extract::Json;
use sha2::{Digest, Sha256};
use user_api::{UserApiClient, UserParams};

/// Lowercase hex of the SHA-256 of `data`.
fn sha256_hex(data: &str) -> String {
    Sha256::digest(data.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Registers `account` if it is new, logs in and reads the current user's name.
async fn log_in(base_url: &str, account: &str, password: &str) -> Result<String, ClientError> {
    // One client: its cookie store carries the session from the token to `me`.
    let client = UserApiClient::new(base_url)?;
    let digest = sha256_hex(password);
    let params = |password: String| {
        Json(UserParams {
            account: account.to_owned(),
            password,
        })
    };
    match client.register(params(digest.clone())).await {
        Ok(_) => {}
        // Declared by the route: the account exists, so log in to it.
        Err(ClientError::Status { status, .. }) if status == http::StatusCode::CONFLICT => {}
        Err(err) => return Err(err),
    }
    let token = client.login_token().await?.token;
    let proof = sha256_hex(&format!("{digest}{}", token.as_str()));
    client.login(params(proof)).await?;
    Ok(client.me().await?.name)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [base_url, account, password] = args.as_slice() else {
        eprintln!("usage: user_client <base URL> <account> <password>");
        return ExitCode::from(2);
    };
    match log_in(base_url, account, password).await {
        Ok(name) => {
            println!("logged in as {name}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("{err}");
            ExitCode::FAILURE
        }
    }
}

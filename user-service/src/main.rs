//! `user-service`: serve, or `user-service routes` to print the route table.

use std::process::ExitCode;

use user_service::{Config, Stores, build};

/// How long start-up waits for the stores before giving up.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

#[tokio::main]
async fn main() -> ExitCode {
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("user-service: {e}");
            return ExitCode::from(2);
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(&config.log))
        .init();
    let command = std::env::args().nth(1);
    // Printing routes needs no database: the table depends on the code only.
    let stores = if command.as_deref() == Some("routes") {
        Ok(Stores::in_memory())
    } else {
        tokio::time::timeout(CONNECT_TIMEOUT, Stores::connect(&config))
            .await
            .unwrap_or_else(|_| Err(format!("stores not reachable within {CONNECT_TIMEOUT:?}")))
    };
    let stores = match stores {
        Ok(stores) => stores,
        Err(e) => {
            eprintln!("user-service: {e}");
            return ExitCode::FAILURE;
        }
    };
    let description = stores.description.clone();
    let service = match build(&config, stores) {
        Ok(service) => service,
        Err(e) => {
            eprintln!("user-service: {e}");
            return ExitCode::FAILURE;
        }
    };
    match command.as_deref() {
        None | Some("serve") => {}
        Some("routes") => {
            print!("{}", service.route_table());
            return ExitCode::SUCCESS;
        }
        Some(other) => {
            eprintln!("user-service: unknown command `{other}`; expected `serve` or `routes`");
            return ExitCode::from(2);
        }
    }
    let listener = match tokio::net::TcpListener::bind(config.bind).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("user-service: cannot listen on {}: {e}", config.bind);
            return ExitCode::FAILURE;
        }
    };
    tracing::info!(address = %config.bind, stores = %description, "listening");
    match service.serve(listener).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("user-service: {e}");
            ExitCode::FAILURE
        }
    }
}

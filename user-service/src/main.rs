//! `user-service`: serve, or `user-service routes` to print the route table.

use std::process::ExitCode;

use user_service::{Config, Stores, build};

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
    let service = match build(&config, Stores::in_memory()) {
        Ok(service) => service,
        Err(e) => {
            eprintln!("user-service: {e}");
            return ExitCode::FAILURE;
        }
    };
    match std::env::args().nth(1).as_deref() {
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
    tracing::info!(address = %config.bind, users = "memory", sessions = "memory", "listening");
    match service.serve(listener).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("user-service: {e}");
            ExitCode::FAILURE
        }
    }
}

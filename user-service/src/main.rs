//! `user-service`: `serve` (the default), `routes` or `openapi`; `--help` lists them and the
//! settings.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use user_service::{Config, Stores, build};

/// How long start-up waits for the stores before giving up.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// The reference user service: register, get a login token, log in with a proof, read the
/// current user.
#[derive(Debug, Parser)]
#[command(
    name = "user-service",
    version,
    after_help = "Settings come from the environment (defaults in brackets): BIND [127.0.0.1:3000; \
unix:/path/to.sock; fd:0, a socket passed by systemd], \
DATABASE_URL [sqlite://users.db?mode=rwc; memory; postgres://…], DATABASE_MAX_CONNECTIONS [10], \
MEMORY_USERS [100000, with DATABASE_URL=memory], MEMORY_AVATAR_BYTES [67108864, with DATABASE_URL=memory], \
REDIS_URL [unset: sessions in memory], SESSION_KEY_PREFIX [session:], SESSION_STORE [server; cookie, with SESSION_KEY], TLS_CERT / TLS_KEY [unset: \
plain HTTP], TLS_CLIENT_CA [unset: no client certificates] / TLS_CLIENT_AUTH [required; optional], \
SESSION_SECURE [true with TLS, else false], \
CORS_ORIGINS [none], TRUST_PROXY [false], USER_STORE_KEY / USER_STORE_KEY_FILE / USER_STORE_PREVIOUS_KEYS, \
TOKEN_RATE_LIMIT [60/1m], LOGIN_RATE_LIMIT [60/1m], DRAIN_DELAY [0], TRUST_TRACES [true], \
RUST_LOG [info]. See the README."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve HTTP until SIGINT or SIGTERM (the default).
    Serve,
    /// Print the route table and exit, without connecting to any store.
    Routes,
    /// Print the OpenAPI document (as served at /openapi.json) and exit, without connecting to
    /// any store.
    Openapi,
}

/// The log filter from `RUST_LOG`, keeping the directives that parse; the others are returned
/// so the start-up can say which were ignored. With none valid, `info`.
fn log_filter(spec: &str) -> (tracing_subscriber::EnvFilter, Vec<String>) {
    use tracing_subscriber::filter::Directive;
    let mut valid = Vec::new();
    let mut ignored = Vec::new();
    for directive in spec.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        match directive.parse::<Directive>() {
            Ok(parsed) => valid.push(parsed),
            Err(_) => ignored.push(directive.to_owned()),
        }
    }
    if valid.is_empty() {
        valid.push(tracing::Level::INFO.into());
    }
    let filter = valid
        .into_iter()
        .fold(tracing_subscriber::EnvFilter::new(""), |f, d| {
            f.add_directive(d)
        });
    (filter, ignored)
}

/// What keeps the OTLP export running until the end of `main` (nothing without it).
#[cfg(feature = "otlp")]
type Export = Option<user_service::otlp::Export>;
#[cfg(not(feature = "otlp"))]
type Export = Option<std::convert::Infallible>;

/// Installs the log subscriber: formatted lines under `filter`, and with the `otlp` feature
/// and an OTLP endpoint configured, the spans exported too (whatever the filter says of them
/// at info level and above).
fn logging(filter: tracing_subscriber::EnvFilter) -> Result<Export, String> {
    use tracing_subscriber::prelude::*;
    let lines = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::stdout().is_terminal())
        .with_filter(filter);
    #[cfg(feature = "otlp")]
    {
        let (export_layer, export) = match user_service::otlp::layer()? {
            Some((layer, export)) => (Some(layer), Some(export)),
            None => (None, None),
        };
        tracing_subscriber::registry()
            .with(lines)
            .with(export_layer.with_filter(tracing_subscriber::filter::LevelFilter::INFO))
            .init();
        Ok(export)
    }
    #[cfg(not(feature = "otlp"))]
    {
        tracing_subscriber::registry().with(lines).init();
        Ok(None)
    }
}

fn main() -> ExitCode {
    // Before any thread starts: taking a supervisor's sockets (`BIND=fd:0`) changes the
    // environment, which only a process with one thread may do.
    framework::listener::take_inherited_sockets();
    match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime.block_on(serve()),
        Err(e) => {
            eprintln!("user-service: cannot start the runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve() -> ExitCode {
    // The command line first: `--help` works whatever the environment holds.
    let cli = Cli::parse();
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("user-service: {e}");
            return ExitCode::from(2);
        }
    };
    if matches!(cli.command, Some(Command::Openapi)) {
        use std::io::Write;
        let document = match user_service::openapi_document(&config) {
            Ok(document) => document,
            Err(e) => {
                eprintln!("user-service: {e}");
                return ExitCode::from(2);
            }
        };
        return match std::io::stdout().lock().write_all(&document) {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::FAILURE,
        };
    }
    let (filter, ignored) = log_filter(&config.log);
    let _export = match logging(filter) {
        Ok(export) => export,
        Err(e) => {
            eprintln!("user-service: {e}");
            return ExitCode::from(2);
        }
    };
    if !ignored.is_empty() {
        tracing::warn!(ignored = ?ignored, "RUST_LOG directives that do not parse were ignored");
    }
    let command = cli.command.unwrap_or(Command::Serve);
    // Printing routes needs no database: the table depends on the code only.
    let stores = if matches!(command, Command::Routes) {
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
    if matches!(command, Command::Routes) {
        print!("{}", service.route_table());
        return ExitCode::SUCCESS;
    }
    let listener = match config.bind.bind().await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("user-service: cannot listen on {}: {e}", config.bind);
            return ExitCode::FAILURE;
        }
    };
    // Where it is reached: the bound port for `BIND=127.0.0.1:0`, the socket's path, or the
    // inherited socket's address.
    let address = match listener.tcp_addr() {
        Some(addr) => addr.to_string(),
        None => listener.to_string(),
    };
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    tracing::info!(%address, bind = %config.bind, scheme, stores = %description, "listening");
    match service.serve(listener).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("user-service: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_filter_keeps_what_parses() {
        let (_, ignored) = log_filter("info,framework::access=debug");
        assert!(ignored.is_empty());
        let (_, ignored) = log_filter("info,x=[,framework=debug");
        assert_eq!(ignored, ["x=["]);
        let (filter, ignored) = log_filter("=bad");
        assert_eq!(ignored, ["=bad"]);
        assert_eq!(filter.to_string(), "info");
    }

    #[test]
    fn the_command_line() {
        assert!(
            Cli::try_parse_from(["user-service"])
                .unwrap()
                .command
                .is_none()
        );
        assert!(matches!(
            Cli::try_parse_from(["user-service", "routes"])
                .unwrap()
                .command,
            Some(Command::Routes)
        ));
        assert!(matches!(
            Cli::try_parse_from(["user-service", "serve"])
                .unwrap()
                .command,
            Some(Command::Serve)
        ));
        let unknown = Cli::try_parse_from(["user-service", "--frobnicate"]).unwrap_err();
        assert_eq!(unknown.kind(), clap::error::ErrorKind::UnknownArgument);
        assert!(
            unknown.to_string().contains("Usage: user-service"),
            "{unknown}"
        );
        let help = Cli::try_parse_from(["user-service", "--help"]).unwrap_err();
        assert!(help.to_string().contains("routes"), "{help}");
        assert!(help.to_string().contains("DATABASE_URL"), "{help}");
    }
}

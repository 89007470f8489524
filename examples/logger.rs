//! Logger: one access line per request, in a format of `{tags}` parsed once at start-up,
//! written to `tracing` (target `framework::access`).
//!
//! ```sh
//! cargo run -p examples --example logger
//! curl http://127.0.0.1:3000/hello
//! # GET /hello 200 5B - 0 ms      (on the server's terminal)
//! curl http://127.0.0.1:3000/health
//! # (no line: the logger is mounted with `use_when`, which passes the probe by)
//! ```

use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::logger::{LOGGER_TINY, Logger, LoggerConfig};
use framework::middleware::responder::Responder;
use framework::{App, Context, Result};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt().with_target(false).init();
    let logger = Logger::new(LoggerConfig::default().format(LOGGER_TINY.to_owned()));
    let service = App::new()
        // Outermost, so it sees the final status and size, errors included; the health probe
        // passes it by (any middleware is skipped this way: the chain does it).
        .use_when(|ctx: &Context| ctx.path() != "/health", logger)
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/hello", |_ctx: &mut Context| async { Result::Ok("hello") })
        .get("/health", |_ctx: &mut Context| async { Result::Ok("ok") })
        .build()
        .expect("valid routes");
    service.listen("127.0.0.1:3000").await
}

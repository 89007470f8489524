//! Compress: brotli or gzip, whichever the client prefers (by q-value), for bodies over the
//! threshold with a compressible type; `Vary: Accept-Encoding` is set. A body of 64 KiB or
//! more (`/export`, about 1 MiB) is compressed as a stream, a chunk at a time as the client
//! reads it, so it never holds up the other requests.
//!
//! ```sh
//! cargo run -p examples --example compress
//! curl -s -H 'accept-encoding: br' -o /dev/null -w '%{size_download} bytes\n' http://127.0.0.1:3000/report
//! curl -s -H 'accept-encoding: gzip' -D - -o /dev/null http://127.0.0.1:3000/report   # content-encoding: gzip
//! curl -s -o /dev/null -w '%{size_download} bytes\n' http://127.0.0.1:3000/report      # uncompressed
//! curl -s -H 'accept-encoding: br' -D - -o /dev/null http://127.0.0.1:3000/export      # no content-length
//! ```

use framework::middleware::compress::{Compress, CompressConfig};
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::{App, Context, Result};

async fn report(_ctx: &mut Context) -> Result<String> {
    Ok("All systems nominal.\n".repeat(500))
}

/// About a megabyte of CSV, made for each request.
async fn export(_ctx: &mut Context) -> Result<String> {
    Ok((0..40_000)
        .map(|i| format!("{i},sensor-{},{}.{}\n", i % 16, i % 97, i % 10))
        .collect())
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let compress = Compress::new(
        CompressConfig::default()
            // Fast rather than small, for answers made per request.
            .gzip_level(1),
    );
    let service = App::new()
        // Outside the responder: it compresses the bytes the responder produced.
        .use_middleware(compress)
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/report", report)
        .get("/export", export)
        .build()
        .expect("valid routes");
    let bind = std::env::var("BIND").unwrap_or_else(|_| "127.0.0.1:3000".to_owned());
    service.listen(&bind).await
}

//! Static files from a directory, streamed, with ETag, Last-Modified, ranges and conditional
//! requests; paths that could leave the root are refused.
//!
//! ```sh
//! cargo run -p examples --example static_files
//! curl -i http://127.0.0.1:3000/static/                  # examples/static/index.html
//! curl -i -H 'range: bytes=0-14' http://127.0.0.1:3000/static/index.html   # 206
//! curl -i --path-as-is http://127.0.0.1:3000/static/../Cargo.toml          # 400
//! ```

use std::time::Duration;

use framework::App;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::static_serve::{DirectorySource, StaticServe, StaticServeConfig};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/static");
    let files = StaticServe::new(
        DirectorySource::new(root)?,
        StaticServeConfig::default().max_age(Some(Duration::from_secs(60))),
    );
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        // The wildcard is the file's path under the root.
        .endpoint(http::Method::GET, "/static/*", files)
        .build()
        .expect("valid routes");
    service.listen("127.0.0.1:3000").await
}

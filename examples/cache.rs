//! Cache: GET answers kept in memory for as long as their `Cache-Control` allows; `X-Cache`
//! says `fetch`, `hit` or `hit-for-pass`, and a burst of misses runs the handler once.
//!
//! ```sh
//! cargo run -p examples --example cache
//! curl -i http://127.0.0.1:3000/slow     # x-cache: fetch, after a second
//! curl -i http://127.0.0.1:3000/slow     # x-cache: hit, at once, with age
//! curl -i http://127.0.0.1:3000/private  # never stored: x-cache: hit-for-pass the 2nd time
//! ```

use std::sync::Arc;
use std::time::Duration;

use framework::middleware::cache::{Cache, CacheConfig, MemoryCacheStore};
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::{App, Context, Result};
use http::HeaderValue;
use http::header::CACHE_CONTROL;

async fn slow(ctx: &mut Context) -> Result<String> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    // What makes an answer cacheable, and for how long.
    ctx.set_response_header(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=30"),
    );
    Ok("computed once every 30 seconds".to_owned())
}

async fn private(ctx: &mut Context) -> Result<String> {
    ctx.set_response_header(CACHE_CONTROL, HeaderValue::from_static("private"));
    Ok("for one client only".to_owned())
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let cache = Cache::new(Arc::new(MemoryCacheStore::new()), CacheConfig::default());
    let service = App::new()
        .use_middleware(cache)
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/slow", slow)
        .get("/private", private)
        .build()
        .expect("valid routes");
    service.listen("127.0.0.1:3000").await
}

//! Rate limit: at most 5 requests per 10 seconds per client IP; the 6th gets 429 with
//! `Retry-After` and `RateLimit-*` headers. `RedisRateStore` (feature `limiter-redis`) shares
//! the budget between instances.
//!
//! ```sh
//! cargo run -p examples --example rate_limit
//! for i in 1 2 3 4 5 6; do curl -s -o /dev/null -w '%{http_code} ' http://127.0.0.1:3000/; done   # 200 ×5, 429
//! ```

use std::time::Duration;

use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::rate_limiter::{
    MemoryRateStore, RateLimiter, RateLimiterConfig, RateQuota,
};
use framework::middleware::responder::Responder;
use framework::{App, Context, Result};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let quota = RateQuota::new(5, Duration::from_secs(10)).expect("a valid quota");
    let limiter = RateLimiter::new(RateLimiterConfig::new([":ip"], MemoryRateStore::new(quota)))
        .expect("valid keys");
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(limiter)
        .use_middleware(Responder::default())
        .get("/", |_ctx: &mut Context| async {
            Result::Ok("within budget")
        })
        .build()
        .expect("valid routes");
    service.listen("127.0.0.1:3000").await
}

//! Sessions: a per-client value kept between requests, in memory, identified by the `sid`
//! cookie. Swap `MemoryStore` for `RedisStore` (feature `session-redis`) to share sessions
//! between instances.
//!
//! ```sh
//! cargo run -p examples --example sessions
//! curl -c jar -b jar http://127.0.0.1:3000/visits      # {"visits":1}
//! curl -c jar -b jar http://127.0.0.1:3000/visits      # {"visits":2}
//! curl -c jar -b jar -X POST http://127.0.0.1:3000/forget   # a new session: back to 1
//! ```

use std::sync::Arc;

use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::middleware::session::{MemoryStore, SessionConfig, SessionExt, SessionMiddleware};
use framework::{App, Context, Group, Result};
use serde_json::{Value, json};

async fn visits(ctx: &mut Context) -> Result<Value> {
    let session = ctx.session()?;
    let visits = session.get::<u64>("visits").unwrap_or(0) + 1;
    session.set("visits", visits)?;
    Ok(json!({ "visits": visits }))
}

async fn forget(ctx: &mut Context) -> Result<Value> {
    let session = ctx.session()?;
    session.remove("visits");
    // A new session id, as after a login: the old cookie no longer names anything.
    session.regenerate();
    Ok(json!({ "forgotten": true }))
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let sessions = SessionMiddleware::new(Arc::new(MemoryStore::new()), SessionConfig::default());
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        // Only the routes that need a session load one.
        .group(
            Group::new("")
                .use_middleware(sessions)
                .get("/visits", visits)
                .post("/forget", forget),
        )
        .build()
        .expect("valid routes");
    service.listen("127.0.0.1:3000").await
}

//! Errors: `HttpError` for answers with a status, category and message; `?` on any other error
//! (a 500 marked as an exception); JSON for clients that accept it, text for the others.
//!
//! ```sh
//! cargo run -p examples --example errors
//! curl -i http://127.0.0.1:3000/items/7                          # 404 as text
//! curl -i -H 'accept: application/json' http://127.0.0.1:3000/items/7   # 404 as JSON
//! curl -i http://127.0.0.1:3000/items/x                          # 400: not a number
//! curl -i http://127.0.0.1:3000/broken                           # 500, exception: true
//! ```

use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::{App, Context, Error, HttpError, Result};
use http::StatusCode;

/// Category of this app's errors, so logs and clients can tell them from the framework's.
const CATEGORY: &str = "example-items";

async fn item(ctx: &mut Context) -> Result<String> {
    let raw = ctx.param("id").unwrap_or_default();
    let id: u32 = raw.parse().map_err(|_| {
        HttpError::with(
            StatusCode::BAD_REQUEST,
            CATEGORY,
            format!("{raw} is not a number"),
        )
    })?;
    if id != 1 {
        return Err(
            HttpError::with(StatusCode::NOT_FOUND, CATEGORY, format!("no item {id}")).into(),
        );
    }
    Ok("item 1".to_owned())
}

async fn broken(_ctx: &mut Context) -> Result<String> {
    // Any error type works with `?`: it becomes a 500 with `exception: true`, and is logged.
    let text = std::fs::read_to_string("/this/file/does/not/exist").map_err(Error::msg)?;
    Ok(text)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/items/{id}", item)
        .get("/broken", broken)
        .build()
        .expect("valid routes");
    service.listen("127.0.0.1:3000").await
}

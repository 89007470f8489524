//! Hello world: one route whose handler returns text.
//!
//! ```sh
//! cargo run -p examples --example hello
//! curl http://127.0.0.1:3000/            # Hello, world!
//! ```

use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::{App, Context, Result};

async fn hello(_ctx: &mut Context) -> Result<&'static str> {
    Ok("Hello, world!")
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let service = App::new()
        // The error handler turns errors into answers; the responder turns the handler's value
        // into the body. Almost every app starts with these two.
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/", hello)
        .build()
        .expect("valid routes");
    service.listen("127.0.0.1:3000").await
}

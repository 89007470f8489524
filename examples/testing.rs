//! Testing with `TestClient`: requests go straight into the built service, no socket, and
//! cookies are kept like a browser's. The app is built by one function that `main` serves and
//! the tests call.
//!
//! ```sh
//! cargo test -p examples --example testing       # runs the tests below
//! cargo run -p examples --example testing        # serves the same app
//! ```

use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::{App, Context, Result, Service};

async fn add(ctx: &mut Context) -> Result<i64> {
    let a: i64 = ctx.query("a").and_then(|v| v.parse().ok()).unwrap_or(0);
    let b: i64 = ctx.query("b").and_then(|v| v.parse().ok()).unwrap_or(0);
    Ok(a + b)
}

fn app() -> Service {
    App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/add", add)
        .build()
        .expect("valid routes")
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    app().listen("127.0.0.1:3000").await
}

#[cfg(test)]
mod tests {
    use framework::testing::TestClient;

    #[tokio::test]
    async fn adds_the_query_numbers() {
        let client = TestClient::new(super::app());
        let res = client.get("/add?a=2&b=40").send().await;
        assert_eq!(res.status, 200);
        assert_eq!(res.text(), "42");
    }

    #[tokio::test]
    async fn unknown_paths_are_404() {
        let client = TestClient::new(super::app());
        assert_eq!(client.get("/sub").send().await.status, 404);
    }
}

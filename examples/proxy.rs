//! Reverse proxy: `/api/*` is forwarded, bodies streamed both ways, to an upstream that this
//! program also starts (on 127.0.0.1:3001), with the `/api` prefix rewritten away.
//!
//! ```sh
//! cargo run -p examples --example proxy
//! curl -i http://127.0.0.1:3000/api/time      # answered by the upstream: x-upstream: yes
//! ```

use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::proxy::{Proxy, ProxyConfig};
use framework::middleware::responder::Responder;
use framework::{App, Context, Result};
use http::HeaderValue;

async fn time(ctx: &mut Context) -> Result<String> {
    ctx.set_response_header("x-upstream", HeaderValue::from_static("yes"));
    let forwarded_for = ctx
        .request_header("x-forwarded-for")
        .unwrap_or("-")
        .to_owned();
    Ok(format!(
        "upstream at {:?}, for {forwarded_for}",
        std::time::SystemTime::now()
    ))
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let upstream = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/time", time)
        .build()
        .expect("valid routes");
    tokio::spawn(upstream.listen("127.0.0.1:3001"));

    let proxy = Proxy::new(
        ProxyConfig::default()
            .target("http://127.0.0.1:3001".parse().expect("a URL"))
            // `/api/time` upstream is `/time`.
            .rewrites(vec!["/api/*:/$1".into()]),
    )
    .expect("valid proxy config");
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .any("/api/*", proxy)
        .build()
        .expect("valid routes");
    service.listen("127.0.0.1:3000").await
}

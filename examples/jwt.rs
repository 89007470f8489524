//! JWT: `/login` issues a signed token, `/api/*` requires it as `Authorization: Bearer`, and
//! handlers read the verified claims.
//!
//! ```sh
//! cargo run -p examples --example jwt
//! token=$(curl -s -X POST 'http://127.0.0.1:3000/login?user=alice' | tr -d '"')
//! curl -i http://127.0.0.1:3000/api/me                                   # 401
//! curl -s -H "authorization: Bearer $token" http://127.0.0.1:3000/api/me   # "alice"
//! ```

use std::time::Duration;

use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::jwt::{Jwt, JwtConfig, JwtIssuer, claims};
use framework::middleware::responder::Responder;
use framework::{App, Context, Group, Result};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct User {
    sub: String,
}

async fn me(ctx: &mut Context) -> Result<String> {
    Ok(claims::<User>(ctx)
        .map(|c| c.sub.clone())
        .unwrap_or_default())
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    // In a real service: a long random secret from the environment.
    let secret = b"an example secret, never a real one";
    let issuer = JwtIssuer::hs256(secret, Duration::from_secs(3600));
    let jwt = Jwt::<User>::new(JwtConfig::hs256(secret));
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .post("/login", move |ctx: &mut Context| {
            // A real login checks a password first.
            let sub = ctx.query("user").unwrap_or_default().into_owned();
            let token = issuer.issue(&User { sub });
            async move { token }
        })
        .group(Group::new("/api").use_middleware(jwt).get("/me", me))
        .build()
        .expect("valid routes");
    service.listen("127.0.0.1:3000").await
}

//! Basic auth: an internal tool's routes behind a user name and password, compared as
//! SHA-256 digests in constant time; a 401 asks the browser for credentials.
//!
//! ```sh
//! cargo run -p examples --example basic_auth
//! curl -i http://127.0.0.1:3000/admin                      # 401, www-authenticate: Basic realm="admin"
//! curl -i -u admin:s3cret http://127.0.0.1:3000/admin      # 200
//! curl -i http://127.0.0.1:3000/admin/                     # 404: the group's `/` route is `/admin`
//! curl -i http://127.0.0.1:3000/                           # public: 200
//! ```
//!
//! A group's `/` route is the prefix itself (`/admin`); `/admin/` follows the app's
//! `TrailingSlash` policy: 404 by default (strict), a 308 to `/admin` with
//! `TrailingSlash::Redirect`, the same page with `TrailingSlash::Ignore`.

use framework::middleware::basic_auth::{BasicAuth, BasicAuthConfig};
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::{App, Context, Group, Result};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    // In a real tool: the digest from configuration, never the password in the source.
    let expected = Sha256::digest(b"admin:s3cret");
    let auth = BasicAuth::new(
        BasicAuthConfig::from_fn(move |account, password, _ctx| {
            let given = Sha256::digest(format!("{account}:{password}").as_bytes());
            Ok(bool::from(given.ct_eq(&expected)))
        })
        .realm("admin"),
    );
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/", |_ctx: &mut Context| async { Result::Ok("public") })
        .group(
            Group::new("/admin")
                .use_middleware(auth)
                .get("/", |_ctx: &mut Context| async {
                    Result::Ok("the admin page")
                }),
        )
        .build()
        .expect("valid routes");
    service.listen("127.0.0.1:3000").await
}

// A route whose answer type has no `Deserialize`: the generated client cannot read it, and
// says so at the return type, with the fix.

use framework::{Result, api};
use serde::Serialize;

#[derive(Serialize)]
struct Secret {
    text: String,
}

#[api(prefix = "/secrets")]
trait SecretApi {
    #[get("/")]
    async fn secret(&self) -> Result<Secret>;
}

fn main() {}

// `errors(..)` on a route lists error statuses for the OpenAPI document: a number outside
// 400-599 (or not a number) is refused at its token.

use framework::{Context, Result, controller};

struct Notes;

#[controller(prefix = "/notes")]
impl Notes {
    #[post("/", errors(409, 302))]
    async fn create(&self, _ctx: &mut Context) -> Result {
        Ok(())
    }

    #[get("/", errors(too_many))]
    async fn list(&self, _ctx: &mut Context) -> Result {
        Ok(())
    }
}

fn main() {}

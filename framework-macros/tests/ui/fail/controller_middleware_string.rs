// A middleware written as a string, on the controller or on a route, is refused at the string
// with the bare name to write instead.

use framework::{Context, Result, controller};

struct Notes;

#[controller(prefix = "/notes", middleware("audit"))]
impl Notes {
    #[get("/", middleware(session, "audit"))]
    async fn list(&self, _ctx: &mut Context) -> Result<&'static str> {
        Ok("[]")
    }
}

fn main() {}

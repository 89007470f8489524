// A middleware named by a path is refused at the path, naming the method that registers names.

use framework::{Context, Result, controller};

struct Notes;

#[controller(prefix = "/notes", middleware(auth::session))]
impl Notes {
    #[get("/")]
    async fn list(&self, _ctx: &mut Context) -> Result<&'static str> {
        Ok("[]")
    }
}

fn main() {}

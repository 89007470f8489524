// A controller type without `FromState` is refused at the type with how to fix it.

use framework::{Context, controller};

struct Notes;

#[controller(prefix = "/notes")]
impl Notes {
    #[get("/")]
    async fn list(&self, _ctx: &mut Context) -> &'static str {
        "[]"
    }
}

fn main() {}

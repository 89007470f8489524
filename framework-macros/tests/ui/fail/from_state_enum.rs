// `FromState` on an enum is refused at its name, and only that: no follow-on error where the
// type is used as a controller.

use framework::{Context, FromState, controller};

#[derive(FromState)]
enum Notes {
    One,
}

#[controller(prefix = "/notes")]
impl Notes {
    #[get("/")]
    async fn list(&self, _ctx: &mut Context) -> &'static str {
        "[]"
    }
}

fn main() {}

// A handler returning a type that is neither `Serialize`, a `Result` nor `()` is refused at the
// handler's name with what a handler may return.

use framework::{Context, FromState, controller};

#[derive(FromState)]
struct Notes;

struct Secret;

#[controller(prefix = "/notes")]
impl Notes {
    #[get("/")]
    async fn secret(&self, _ctx: &mut Context) -> Secret {
        Secret
    }
}

fn main() {}

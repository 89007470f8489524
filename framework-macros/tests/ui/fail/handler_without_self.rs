// A handler takes `&self` first, then its arguments: not a free-standing `ctx`, not
// `&mut self`, not nothing at all.

use framework::{Context, Result, controller};

struct Users;

#[controller]
impl Users {
    #[get("/a")]
    async fn no_receiver(_ctx: &mut Context) -> Result {
        Ok(())
    }

    #[get("/b")]
    async fn mutable(&mut self, _ctx: &mut Context) -> Result {
        Ok(())
    }

    #[get("/c")]
    async fn no_arguments() -> Result {
        Ok(())
    }
}

fn main() {}

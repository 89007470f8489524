// A handler must be an `async fn`; the error is at `fn`. The impl block is still emitted, so
// the other method can be called.

use framework::{Context, Result, controller};

struct Users;

#[controller(prefix = "/users")]
impl Users {
    #[get("/")]
    fn list(&self, _ctx: &mut Context) -> Result {
        Ok(())
    }

    fn count(&self) -> usize {
        0
    }
}

fn main() {
    assert_eq!(Users.count(), 0);
}

// Route paths are checked at compile time, each error at its string; all are reported at once.

use framework::{Context, Result, controller};

struct Files;

#[controller(prefix = "/files")]
impl Files {
    #[get("list")]
    async fn list(&self, _ctx: &mut Context) -> Result {
        Ok(())
    }

    #[get("/*/meta")]
    async fn meta(&self, _ctx: &mut Context) -> Result {
        Ok(())
    }

    #[get("/by-id/:")]
    async fn by_id(&self, _ctx: &mut Context) -> Result {
        Ok(())
    }
}

fn main() {}

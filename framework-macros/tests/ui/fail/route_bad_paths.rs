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

    // Eight params pass; the prefix's count too, so nine in all is refused at the string.
    #[get("/:a/:b/:c/:d/:e/:f/:g/:h")]
    async fn eight(&self, _ctx: &mut Context) -> Result {
        Ok(())
    }
}

struct Orgs;

#[controller(prefix = "/orgs/:org")]
impl Orgs {
    #[get("/:a/:b/:c/:d/:e/:f/{g}/*rest")]
    async fn nine(&self, _ctx: &mut Context) -> Result {
        Ok(())
    }
}

fn main() {}

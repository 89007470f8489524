// `#[api]` goes on a trait; the impl of one takes no prefix and no route attributes (the
// trait declares them), and the trait's route methods keep the handler rules.

use framework::{Context, FromState, Result, api, controller};

#[api]
struct NotATrait;

#[api(prefix = "/notes")]
trait NotesApi {
    #[get("/")]
    fn not_async(&self) -> Result<String>;

    #[get("/{id}")]
    async fn not_a_param(&self, idd: u64) -> Result<String>;
}

#[api(prefix = "/other")]
trait OtherApi {
    #[get("/")]
    async fn list(&self, ctx: &mut Context) -> Result<String>;
}

#[derive(FromState)]
struct Other;

#[controller(prefix = "/again")]
impl OtherApi for Other {
    #[get("/")]
    async fn list(&self, _ctx: &mut Context) -> Result<String> {
        Ok(String::new())
    }
}

fn main() {}

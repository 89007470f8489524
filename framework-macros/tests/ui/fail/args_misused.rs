// Typed arguments misused, each refused at the argument: a plain value named like no path
// parameter, a second body, a second borrowed argument, a header attribute without a name.

use framework::extract::{Form, Json};
use framework::{Context, Result, controller};
use serde::Deserialize;

#[derive(Deserialize, framework::Validate)]
struct Note {
    text: String,
}

struct Notes;

#[controller(prefix = "/users/{user}")]
impl Notes {
    #[get("/notes/{id}")]
    async fn misnamed(&self, user: u32, idd: u64) -> Result {
        let _ = (user, idd);
        Ok(())
    }

    #[post("/notes")]
    async fn two_bodies(&self, a: Json<Note>, b: Form<Note>) -> Result {
        let _ = (a.text.len(), b.text.len());
        Ok(())
    }

    #[get("/ctx")]
    async fn two_borrowed(&self, a: &mut Context, b: &mut Context) -> Result {
        let _ = (a, b);
        Ok(())
    }

    #[get("/header")]
    async fn header_without_name(&self, #[header] key: String) -> Result {
        let _ = key;
        Ok(())
    }
}

fn main() {}

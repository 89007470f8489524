// Typed arguments misused, each refused at the argument: a plain value named like no path
// parameter, a second borrowed argument, a header attribute without a name. (A second body is
// refused by `build()`, which asks the arguments' types: tests/tests/body_read_twice.rs.)

use framework::{Context, Result, controller};

struct Notes;

#[controller(prefix = "/users/{user}")]
impl Notes {
    #[get("/notes/{id}")]
    async fn misnamed(&self, user: u32, idd: u64) -> Result {
        let _ = (user, idd);
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

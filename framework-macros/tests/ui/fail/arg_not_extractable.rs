// A type that cannot be an argument: not a path parameter, not made from the request. The
// error points at the argument's type.

use framework::{FromState, Result, controller};

struct Database;

#[derive(FromState)]
struct Notes;

#[controller]
impl Notes {
    #[get("/notes")]
    async fn list(&self, db: Database) -> Result {
        let _ = db;
        Ok(())
    }
}

fn main() {}

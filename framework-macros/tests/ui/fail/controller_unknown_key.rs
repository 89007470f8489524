// A misspelled controller key is an error at the key, and only that: the impl block is emitted
// again, so code using the controller's inherent methods still compiles.

use framework::{Context, Result, controller};

struct Users {
    count: usize,
}

#[controller(prefx = "/users")]
impl Users {
    fn new() -> Self {
        Users { count: 3 }
    }

    fn count(&self) -> usize {
        self.count
    }

    #[get("/")]
    async fn list(&self, _ctx: &mut Context) -> Result<usize> {
        Ok(self.count())
    }
}

fn main() {
    let users = Users::new();
    assert_eq!(users.count(), 3);
}

// `#[controller]` goes on an impl block. The struct is emitted again, so its uses still compile.

use framework::controller;

#[controller(prefix = "/users")]
struct Users {
    count: usize,
}

impl Users {
    fn count(&self) -> usize {
        self.count
    }
}

fn main() {
    assert_eq!(Users { count: 1 }.count(), 1);
}

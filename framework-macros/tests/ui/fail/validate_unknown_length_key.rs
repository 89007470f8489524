// `length` takes `min` and `max` only; the error is at the unknown key.

use framework::Validate;

#[derive(Validate)]
struct Params {
    #[validate(length(min = 2, maximum = 20))]
    account: String,
}

fn main() {}

// A misspelled built-in rule is named as an unknown rule, with the closest built-in, the list
// of built-ins and how a custom validator is written; there is no follow-on error where the
// struct's `validate` is called.

use framework::Validate;

#[derive(Validate)]
struct Params {
    #[validate(lenght(min = 2))]
    account: String,
}

fn main() {
    let _ = Params {
        account: String::new(),
    }
    .validate();
}

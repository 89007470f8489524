// A misspelled validator is a function that does not exist: the error is at the name.

use framework::Validate;

#[allow(non_snake_case)]
fn xUserAccount(value: &str) -> Result<(), &'static str> {
    if value.is_empty() {
        Err("required")
    } else {
        Ok(())
    }
}

#[derive(Validate)]
struct Params {
    #[validate(length(min = 2), xUserAcount)]
    account: String,
}

fn main() {
    let _ = Params {
        account: String::new(),
    }
    .validate();
}

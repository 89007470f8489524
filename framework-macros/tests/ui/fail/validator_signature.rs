// `#[validator]` checks its signature itself and says which one it wants, at the function:
// a `bool` return (rustc's own error would point at the derive and read backwards) and a value
// taken by value (rustc would suggest `.to_string()` at the derive, a wrong fix).

#[framework::validator]
fn xTitleBool(value: &str) -> bool {
    !value.is_empty()
}

#[framework::validator]
fn xTitleOwned(value: String) -> Result<(), &'static str> {
    if value.is_empty() { Err("empty") } else { Ok(()) }
}

#[framework::validator]
fn xCountOwned(value: u32) -> Result<(), &'static str> {
    if value == 0 { Err("zero") } else { Ok(()) }
}

fn main() {
    // The functions stay as written, so their callers still compile.
    let _ = xTitleBool("a");
    let _ = xTitleOwned(String::new());
    let _ = xCountOwned(1);
}

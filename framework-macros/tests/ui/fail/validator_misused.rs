// `#[validator]` refuses what cannot be a named validator, at the offending token: an unknown
// schema keyword, an `impl Display` error type (a function pointer cannot return it), a
// generic function, and a function without exactly one argument.

#[framework::validator(min_lenght = 2)]
fn xMisspelled(value: &str) -> Result<(), &'static str> {
    let _ = value;
    Ok(())
}

#[framework::validator(max_length = 3)]
fn xOpaque(value: &str) -> Result<(), impl std::fmt::Display> {
    if value.is_empty() { Err("empty") } else { Ok(()) }
}

#[framework::validator(minimum = 1)]
fn xGeneric<T: PartialOrd>(value: &T) -> Result<(), &'static str> {
    let _ = value;
    Ok(())
}

#[framework::validator(minimum = 1)]
fn xTwo(value: &u8, other: &u8) -> Result<(), &'static str> {
    let _ = (value, other);
    Ok(())
}

fn main() {
    // The functions stay as written, so their callers still compile.
    let _ = xMisspelled("a");
    let _ = xOpaque("a");
    let _ = xGeneric(&1);
    let _ = xTwo(&1, &2);
}

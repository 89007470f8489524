// A route attribute outside a `#[controller]` impl block is an error at the attribute; the
// function is emitted again.

use framework::{Context, Result, get};

#[get("/hello")]
async fn hello(_ctx: &mut Context) -> Result {
    Ok(())
}

fn main() {
    let _ = hello;
}

//! `arena`: the framework's HttpArena entry on port 8080 (see the library's documentation).

use arena::{Settings, app};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let service = app(&Settings::from_env())?
        .build()
        .map_err(std::io::Error::other)?;
    service.listen("0.0.0.0:8080").await
}

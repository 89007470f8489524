// Answers the generated client cannot read into a value (a redirect, server-sent events, JSON
// lines, a file), refused by their types, not by a list of names: each at its answer type.

use framework::reply::{JsonLines, NamedFile, Redirect, Sse};
use framework::{Result, api};

#[api(prefix = "/files")]
trait FilesApi {
    #[get("/elsewhere")]
    async fn elsewhere(&self) -> Result<Redirect>;

    #[get("/events")]
    async fn events(&self) -> Result<Sse>;

    #[get("/lines")]
    async fn lines(&self) -> Result<JsonLines<u32>>;

    #[get("/file")]
    async fn file(&self) -> Result<NamedFile>;
}

fn main() {}

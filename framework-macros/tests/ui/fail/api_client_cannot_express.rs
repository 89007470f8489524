// Routes the generated client cannot express: a multipart body to send, a redirect or a
// stream to read (server-sent events, JSON lines, a file). Each is refused at its token with
// the fix.

use framework::multipart::Multipart;
use framework::reply::{JsonLines, NamedFile, Redirect, Sse};
use framework::{Result, api};

#[api(prefix = "/files")]
trait FilesApi {
    #[put("/")]
    async fn upload(&self, form: Multipart) -> Result<()>;

    #[get("/elsewhere")]
    async fn elsewhere(&self) -> Result<Redirect>;

    #[get("/maybe")]
    async fn maybe(&self) -> Result<Option<String>>;

    #[get("/events")]
    async fn events(&self) -> Result<Sse>;

    #[get("/lines")]
    async fn lines(&self) -> Result<JsonLines>;

    #[get("/file")]
    async fn file(&self) -> Result<NamedFile>;

    #[get("/files/*")]
    async fn rest(&self) -> Result<String>;
}

fn main() {}

// Routes the generated client cannot express: a multipart body to send, a redirect or a
// stream to read. Each is refused at its token with the fix.

use framework::multipart::Multipart;
use framework::reply::Redirect;
use framework::{Result, api};

#[api(prefix = "/files")]
trait FilesApi {
    #[put("/")]
    async fn upload(&self, form: Multipart) -> Result<()>;

    #[get("/elsewhere")]
    async fn elsewhere(&self) -> Result<Redirect>;

    #[get("/maybe")]
    async fn maybe(&self) -> Result<Option<String>>;
}

fn main() {}

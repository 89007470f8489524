// Routes the generated client cannot express at expansion: a multipart body to send, an
// `Option` of text, a bare wildcard to fill. Each is refused at its token with the fix. (An
// answer with no value to read is refused by its type: api_answer_unreadable.rs.)

use framework::multipart::Multipart;
use framework::{Result, api};

#[api(prefix = "/files")]
trait FilesApi {
    #[put("/")]
    async fn upload(&self, form: Multipart) -> Result<()>;

    #[get("/maybe")]
    async fn maybe(&self) -> Result<Option<String>>;

    #[get("/files/*")]
    async fn rest(&self) -> Result<String>;
}

fn main() {}

// A type alias behaves as the type it names, and a reply type of the app's own is a reply:
// an aliased `Result` whose name does not end in `Result` (its error is no `Serialize`, so it
// compiles only as a `Result`), an aliased `Json` body, `Result<Json<T>, Rejection>`, an
// aliased `Created`, and a custom reply type.

use framework::extract::{Json, Rejection};
use framework::openapi::{DescribeReply, Operation};
use framework::reply::Created;
use framework::{Context, FromState, IntoReply, api, controller};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, framework::Validate)]
struct Note {
    text: String,
}

type Answer<T> = std::result::Result<T, framework::Error>;
type NewNote = Json<Note>;
type Made = Created<Note>;

struct Csv(String);

impl IntoReply for Csv {
    fn into_reply(self, ctx: &mut Context) {
        ctx.body_mut().set_bytes(framework::body::Bytes::from(self.0));
    }
}

impl DescribeReply for Csv {
    fn describe_reply(operation: &mut Operation<'_>) {
        operation.reply(200, Some("text/csv"), None);
    }
}

#[derive(FromState)]
struct Notes;

#[controller(prefix = "/notes")]
impl Notes {
    #[post("/")]
    async fn add(&self, note: NewNote) -> Answer<Made> {
        Ok(Created(note.0))
    }

    #[post("/lenient")]
    async fn lenient(&self, note: Result<Json<Note>, Rejection>) -> Answer<Option<Note>> {
        Ok(note.ok().map(|n| n.0))
    }

    #[get("/csv")]
    async fn csv(&self) -> Answer<Csv> {
        Ok(Csv("a,b".into()))
    }
}

#[api(prefix = "/api")]
trait NotesApi {
    #[post("/notes")]
    async fn add(&self, note: Json<Note>) -> framework::Result<Created<Note>>;
}

/// The client reads the `Created<Note>` as the `Note` inside.
#[allow(dead_code)]
async fn calls(client: NotesApiClient) -> Result<Note, framework::client::ClientError> {
    client.add(Json(Note { text: "a".into() })).await
}

fn main() {}

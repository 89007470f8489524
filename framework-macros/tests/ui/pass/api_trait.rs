// An `#[api]` trait with every argument source and answer kind the client reads, implemented
// by a controller; the client generated from it has one method per route.

use framework::client::{ApiClient, ClientError};
use framework::extract::{Form, Json, Path, Query};
use framework::reply::{Created, NoContent};
use framework::{Context, FromState, Result, Validate, api, controller};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Validate)]
struct Note {
    text: String,
}

#[derive(Serialize, Deserialize)]
struct Ids {
    id: u64,
}

/// The notes.
#[api(prefix = "/notes")]
trait NotesApi {
    /// One note.
    #[get("/{id}")]
    async fn one(&self, id: u64, #[header("x-tenant")] tenant: Option<String>) -> Result<Option<Note>>;
    /// A page.
    #[get("/", middleware(session))]
    async fn list(&self, page: Query<Note>, #[cookie("theme")] theme: String) -> Result<Vec<Note>>;
    /// Add.
    #[post("/", errors(409))]
    async fn add(&self, note: Json<Note>, ctx: &mut Context) -> Result<Created<Note>>;
    /// Add from a form.
    #[put("/{id}")]
    async fn put(&self, ids: Path<Ids>, note: Form<Note>) -> Result<NoContent>;
    /// As text.
    #[get("/{id}/text")]
    async fn text(&self, id: u64) -> String;
}

#[derive(FromState)]
struct Notes;

#[controller]
impl NotesApi for Notes {
    async fn one(&self, id: u64, tenant: Option<String>) -> Result<Option<Note>> {
        let _ = (id, tenant);
        Ok(None)
    }
    async fn list(&self, page: Query<Note>, theme: String) -> Result<Vec<Note>> {
        let _ = theme;
        Ok(vec![page.0])
    }
    async fn add(&self, note: Json<Note>, _ctx: &mut Context) -> Result<Created<Note>> {
        Ok(Created(note.0))
    }
    async fn put(&self, ids: Path<Ids>, note: Form<Note>) -> Result<NoContent> {
        let _ = (ids, note);
        Ok(NoContent)
    }
    async fn text(&self, id: u64) -> String {
        id.to_string()
    }
}

#[allow(dead_code)]
async fn calls(client: NotesApiClient) -> std::result::Result<(), ClientError> {
    let _: Option<Note> = client.one(1, Some("acme".to_owned())).await?;
    let _: Vec<Note> = client
        .list(Query(Note { text: "a".into() }), "dark".to_owned())
        .await?;
    let _: Note = client.add(Json(Note { text: "a".into() })).await?;
    let _: () = client
        .put(Path(Ids { id: 1 }), Form(Note { text: "a".into() }))
        .await?;
    let _: String = client.text(1).await?;
    Ok(())
}

fn main() {
    let client = NotesApiClient::new("http://127.0.0.1:1").unwrap();
    let _: &ApiClient = client.api_client();
}

// Typed arguments of every kind expand and compile: path parameters by name (plain and
// `Option`), `Json`, `Query`, `Path`, headers, cookies, state, the session, `&mut Context`
// in any position, and an argument type of the app's own.

use framework::extract::{FromRequest, Json, Path, Query};
use framework::middleware::session::Session;
use framework::{Context, FromState, HttpError, Result, controller};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, framework::Validate)]
struct Note {
    text: String,
}

#[derive(Deserialize, framework::Validate)]
struct Ids {
    id: u64,
}

struct Mine;

impl FromRequest for Mine {
    type Rejection = HttpError;

    fn from_request(_ctx: &mut Context) -> std::result::Result<Self, HttpError> {
        Ok(Mine)
    }
}

#[derive(FromState)]
struct Notes;

#[controller(prefix = "/notes")]
impl Notes {
    #[get("/{id}")]
    async fn one(&self, id: u64, ctx: &mut Context, ids: Path<Ids>) -> String {
        let _ = ctx.method();
        format!("{id} {}", ids.id)
    }

    #[post("/{id}")]
    async fn add(
        &self,
        id: Option<u64>,
        note: Json<Note>,
        page: Query<Ids>,
        #[header("x-key")] key: Option<String>,
        #[cookie("theme")] theme: String,
        #[state] shared: std::sync::Arc<str>,
        mine: Mine,
        session: &mut Session,
    ) -> Result<Json<Note>> {
        let _ = (id, page.id, key, theme, shared, mine, session.id());
        Ok(note)
    }

    #[get("/")]
    async fn nothing(&self) {}
}

fn main() {}

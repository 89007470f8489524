//! JSON in and out: a controller whose state comes from `#[derive(FromState)]`, a body bound
//! and validated with `#[derive(Validate)]`, built-in rules and a custom validator.
//!
//! ```sh
//! cargo run -p examples --example json_validate
//! curl -s -H 'content-type: application/json' -d '{"title":"milk","tag":"shopping"}' \
//!   http://127.0.0.1:3000/notes                        # 201 {"id":1,"title":"milk","tag":"shopping"}
//! curl -s -H 'content-type: application/json' -d '{"title":"","tag":"Shop!"}' \
//!   http://127.0.0.1:3000/notes                        # 400 naming the field and the rule
//! curl -s http://127.0.0.1:3000/notes                  # [{"id":1,...}]
//! ```

use std::sync::{Arc, Mutex};

use framework::middleware::body_parser::BodyParser;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::{App, Context, FromState, Result, Validate, controller};
use serde::{Deserialize, Serialize};

/// A custom validator: a function named in `#[validate(..)]`, returning why a value is wrong.
#[allow(non_snake_case)]
fn xTag(value: &str) -> std::result::Result<(), &'static str> {
    if value.bytes().all(|b| b.is_ascii_lowercase()) {
        Ok(())
    } else {
        Err("must be lowercase letters")
    }
}

#[derive(Deserialize, Validate)]
struct NewNote {
    #[validate(length(min = 1, max = 80))]
    title: String,
    #[validate(length(min = 2, max = 20), xTag)]
    tag: String,
}

#[derive(Clone, Serialize)]
struct Note {
    id: usize,
    title: String,
    tag: String,
}

/// The notes, shared by every request: registered once with `App::with_state`.
#[derive(Default)]
struct NoteStore(Mutex<Vec<Note>>);

#[derive(FromState)]
struct Notes {
    store: Arc<NoteStore>,
}

#[controller(prefix = "/notes")]
impl Notes {
    #[get("/")]
    async fn list(&self, _ctx: &mut Context) -> Vec<Note> {
        self.store.0.lock().expect("not poisoned").clone()
    }

    #[post("/")]
    async fn create(&self, ctx: &mut Context) -> Result<Note> {
        // Deserialises the parsed body and runs its validators: a 400 on the first failure.
        let new: NewNote = ctx.bind()?;
        let mut notes = self.store.0.lock().expect("not poisoned");
        let note = Note {
            id: notes.len() + 1,
            title: new.title,
            tag: new.tag,
        };
        notes.push(note.clone());
        ctx.set_status(http::StatusCode::CREATED);
        Ok(note)
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(BodyParser::default())
        .with_state(Arc::new(NoteStore::default()))
        .mount_controllers()
        .build()
        .expect("valid routes and state");
    service.listen("127.0.0.1:3000").await
}

//! Typed handlers and API docs: a controller whose methods take their input as typed arguments
//! (a path parameter by name, a `Query<T>`, a validated `Json<T>` body), an OpenAPI 3.1 document
//! built from those signatures, their `Validate` rules and doc comments, and Swagger UI over it,
//! compiled into the program.
//!
//! ```sh
//! cargo run -p examples --example openapi
//! curl -s -H 'content-type: application/json' -d '{"title":"Dune","year":1965}' \
//!   http://127.0.0.1:3000/books                       # 201 {"id":1,"title":"Dune","year":1965}
//! curl -s http://127.0.0.1:3000/books/1                # {"id":1,"title":"Dune","year":1965}
//! curl -s 'http://127.0.0.1:3000/books?since=1960'     # [{"id":1,...}]
//! curl -s http://127.0.0.1:3000/books/x                # 400 naming `id`
//! curl -s http://127.0.0.1:3000/openapi.json           # the document
//! # and http://127.0.0.1:3000/docs in a browser: Swagger UI, "Try it out" on each operation
//! ```

use std::sync::{Arc, Mutex};

use framework::extract::{Json, Query};
use framework::middleware::body_parser::BodyParser;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::reply::Created;
use framework::{App, FromState, HttpError, Result, Validate, controller};
use http::StatusCode;
use serde::{Deserialize, Serialize};

/// A named validator that declares its schema: the document says what it accepts.
#[framework::validator(min_length = 1, max_length = 80, pattern = "^\\S")]
fn xTitle(value: &str) -> std::result::Result<(), &'static str> {
    match value.chars().next() {
        Some(first) if !first.is_whitespace() && value.chars().count() <= 80 => Ok(()),
        _ => Err("must be 1-80 characters, not starting with a space"),
    }
}

/// A book to add.
#[derive(Deserialize, Validate, schemars::JsonSchema)]
struct NewBook {
    /// The title, as printed.
    #[validate(xTitle)]
    title: String,
    /// Year of first publication.
    #[validate(range(min = 1450, max = 2100))]
    year: u16,
}

/// A book on the shelf.
#[derive(Clone, Serialize, schemars::JsonSchema)]
struct Book {
    id: u64,
    title: String,
    year: u16,
}

/// Which books to list.
#[derive(Deserialize, Validate, schemars::JsonSchema)]
struct Since {
    /// Only books first published in or after this year.
    #[serde(default)]
    since: u16,
}

#[derive(Default)]
struct Shelf(Mutex<Vec<Book>>);

#[derive(FromState)]
struct Books {
    shelf: Arc<Shelf>,
}

#[controller(prefix = "/books")]
impl Books {
    /// Adds a book.
    ///
    /// 409 when a book with the same title is already on the shelf.
    #[post("/", errors(409))]
    async fn add(&self, book: Json<NewBook>) -> Result<Created<Book>> {
        let mut shelf = self.shelf.0.lock().expect("not poisoned");
        if shelf.iter().any(|b| b.title == book.title) {
            return Err(
                HttpError::with(StatusCode::CONFLICT, "books", "already on the shelf").into(),
            );
        }
        let book = Book {
            id: shelf.len() as u64 + 1,
            title: book.0.title,
            year: book.0.year,
        };
        shelf.push(book.clone());
        Ok(Created(book))
    }

    /// One book, by its id.
    #[get("/{id}", errors(404))]
    async fn one(&self, id: u64) -> Result<Book> {
        let shelf = self.shelf.0.lock().expect("not poisoned");
        shelf.iter().find(|b| b.id == id).cloned().ok_or_else(|| {
            HttpError::with(StatusCode::NOT_FOUND, "books", format!("no book {id}")).into()
        })
    }

    /// The books published since a year, oldest first.
    #[get("/")]
    async fn list(&self, filter: Query<Since>) -> Vec<Book> {
        let shelf = self.shelf.0.lock().expect("not poisoned");
        let mut books: Vec<Book> = shelf
            .iter()
            .filter(|b| b.year >= filter.since)
            .cloned()
            .collect();
        books.sort_by_key(|b| b.year);
        books
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let service = App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(BodyParser::default())
        .with_state(Arc::new(Shelf::default()))
        .mount_controllers()
        .openapi("/openapi.json")
        .openapi_docs("/docs")
        .openapi_info("books", "1.0.0")
        .build()
        .expect("valid routes and state");
    service.listen("127.0.0.1:3000").await
}

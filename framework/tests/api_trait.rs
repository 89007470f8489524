//! `#[api]` traits: the same routes declared on an impl block and on a trait implemented with
//! `#[controller] impl Trait for Type` give the same answers and the same OpenAPI operations.
//! Its own test binary, so these controllers do not leak into other tests.

use framework::extract::{Json, Query};
use framework::middleware::body_parser::BodyParser;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::reply::{Created, NoContent};
use framework::testing::TestClient;
use framework::{App, Context, FromState, HttpError, Next, Result, Validate, from_fn};
use serde::{Deserialize, Serialize};

/// A note to add.
#[derive(Debug, Clone, Deserialize, Serialize, Validate, schemars::JsonSchema)]
pub struct NewNote {
    /// Its text.
    #[validate(length(min = 1, max = 20))]
    pub text: String,
}

/// A stored note.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
pub struct Note {
    /// Its number.
    pub id: u64,
    /// Its text.
    pub text: String,
}

/// Paging of a list.
#[derive(Debug, Deserialize, Serialize, Validate, schemars::JsonSchema)]
pub struct Page {
    /// Notes per page.
    #[validate(range(min = 1, max = 50))]
    pub size: u32,
}

fn note(id: u64, text: &str) -> Note {
    Note {
        id,
        text: text.to_owned(),
    }
}

fn conflict() -> framework::Error {
    HttpError::with(http::StatusCode::CONFLICT, "notes", "note exists").into()
}

/// The routes written as an impl block.
mod by_impl {
    use super::*;

    #[derive(FromState)]
    pub(crate) struct Notes;

    #[framework::controller(prefix = "/impl", middleware(tag))]
    impl Notes {
        /// One note.
        ///
        /// 404 when there is none.
        #[get("/notes/{id}")]
        async fn one(&self, id: u64) -> Result<Option<Note>> {
            Ok((id == 1).then(|| note(1, "first")))
        }

        /// The notes, a page at a time.
        #[get("/notes")]
        async fn list(
            &self,
            page: Query<Page>,
            #[header("x-tenant")] tenant: Option<String>,
            #[cookie("theme")] theme: Option<String>,
        ) -> Result<Vec<Note>> {
            let text = format!(
                "{}:{}:{}",
                page.size,
                tenant.unwrap_or_default(),
                theme.unwrap_or_default()
            );
            Ok(vec![note(1, &text)])
        }

        /// Adds a note; 409 when its text is taken.
        #[post("/notes", middleware(route_tag), errors(409))]
        async fn add(&self, body: Json<NewNote>, ctx: &mut Context) -> Result<Created<Note>> {
            ctx.set_response_header("x-seen", http::HeaderValue::from_static("yes"));
            if body.text == "taken" {
                return Err(conflict());
            }
            Ok(Created(note(2, &body.text)))
        }

        /// Forgets a note.
        #[delete("/notes/{id}")]
        async fn forget(&self, id: u64) -> Result<NoContent> {
            let _ = id;
            Ok(NoContent)
        }
    }
}

/// The same routes declared on a trait.
mod by_trait {
    use super::*;

    /// The notes API.
    #[framework::api(prefix = "/trait")]
    pub(crate) trait NotesApi {
        /// One note.
        ///
        /// 404 when there is none.
        #[get("/notes/{id}")]
        async fn one(&self, id: u64) -> Result<Option<Note>>;

        /// The notes, a page at a time.
        #[get("/notes")]
        async fn list(
            &self,
            page: Query<Page>,
            #[header("x-tenant")] tenant: Option<String>,
            #[cookie("theme")] theme: Option<String>,
        ) -> Result<Vec<Note>>;

        /// Adds a note; 409 when its text is taken.
        #[post("/notes", middleware(route_tag), errors(409))]
        async fn add(&self, body: Json<NewNote>, ctx: &mut Context) -> Result<Created<Note>>;

        /// Forgets a note.
        #[delete("/notes/{id}")]
        async fn forget(&self, id: u64) -> Result<NoContent> {
            let _ = id;
            Ok(NoContent)
        }

        /// Not a route: a plain method of the trait.
        fn label(&self) -> &'static str {
            "notes"
        }
    }

    #[derive(FromState)]
    pub(crate) struct Notes;

    #[framework::controller(middleware(tag))]
    impl NotesApi for Notes {
        async fn one(&self, id: u64) -> Result<Option<Note>> {
            Ok((id == 1).then(|| note(1, "first")))
        }

        async fn list(
            &self,
            page: Query<Page>,
            tenant: Option<String>,
            theme: Option<String>,
        ) -> Result<Vec<Note>> {
            let text = format!(
                "{}:{}:{}",
                page.size,
                tenant.unwrap_or_default(),
                theme.unwrap_or_default()
            );
            Ok(vec![note(1, &text)])
        }

        async fn add(&self, body: Json<NewNote>, ctx: &mut Context) -> Result<Created<Note>> {
            ctx.set_response_header("x-seen", http::HeaderValue::from_static("yes"));
            if body.text == "taken" {
                return Err(conflict());
            }
            Ok(Created(note(2, &body.text)))
        }
    }
}

async fn tag(ctx: &mut Context, next: Next<'_>) -> Result {
    next.run(ctx).await?;
    ctx.set_response_header("x-tag", http::HeaderValue::from_static("group"));
    Ok(())
}

async fn route_tag(ctx: &mut Context, next: Next<'_>) -> Result {
    next.run(ctx).await?;
    ctx.set_response_header("x-route-tag", http::HeaderValue::from_static("route"));
    Ok(())
}

fn app() -> App {
    App::new()
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .use_middleware(BodyParser::default())
        .register_middleware("tag", from_fn(tag))
        .register_middleware("route_tag", from_fn(route_tag))
        .openapi("/openapi.json")
}

/// The answer to a request, as the two forms are compared: status, the headers the routes
/// and middleware set, and the body.
async fn answer(
    client: &TestClient,
    method: http::Method,
    uri: &str,
    body: Option<serde_json::Value>,
) -> (u16, Option<String>, Option<String>, Option<String>, String) {
    let mut request = client
        .request(method, uri)
        .header("accept", "application/json")
        .header("x-tenant", "acme")
        .header("cookie", "theme=dark");
    if let Some(body) = &body {
        request = request.json(body);
    }
    let res = request.send().await;
    (
        res.status.as_u16(),
        res.header("x-tag").map(str::to_owned),
        res.header("x-route-tag").map(str::to_owned),
        res.header("x-seen").map(str::to_owned),
        res.text(),
    )
}

#[tokio::test]
async fn the_trait_form_answers_as_the_impl_block_form() {
    let client = TestClient::new(app().build().unwrap());
    let cases: Vec<(http::Method, &str, Option<serde_json::Value>)> = vec![
        (http::Method::GET, "/notes/1", None),
        (http::Method::GET, "/notes/2", None),
        (http::Method::GET, "/notes/x", None),
        (http::Method::GET, "/notes?size=5", None),
        (http::Method::GET, "/notes?size=0", None),
        (http::Method::GET, "/notes", None),
        (
            http::Method::POST,
            "/notes",
            Some(serde_json::json!({"text": "hello"})),
        ),
        (
            http::Method::POST,
            "/notes",
            Some(serde_json::json!({"text": "taken"})),
        ),
        (
            http::Method::POST,
            "/notes",
            Some(serde_json::json!({"text": ""})),
        ),
        (http::Method::DELETE, "/notes/3", None),
    ];
    let mut statuses = Vec::new();
    for (method, path, body) in cases {
        let by_impl = answer(
            &client,
            method.clone(),
            &format!("/impl{path}"),
            body.clone(),
        )
        .await;
        let by_trait = answer(&client, method.clone(), &format!("/trait{path}"), body).await;
        assert_eq!(by_impl, by_trait, "{method} {path}");
        statuses.push(by_trait.0);
    }
    // The cases cover success, 404, validation and the declared error.
    assert_eq!(statuses, [200, 404, 400, 200, 400, 400, 201, 409, 400, 204]);
    // The trait's own method is an ordinary method.
    use by_trait::NotesApi as _;
    assert_eq!(by_trait::Notes.label(), "notes");
}

#[tokio::test]
async fn the_trait_form_lists_the_same_routes() {
    let service = app().build().unwrap();
    let table = service.route_table();
    for line in [
        "GET     /trait/notes/{id}  Notes::one",
        "GET     /trait/notes       Notes::list",
        "POST    /trait/notes       Notes::add",
        "DELETE  /trait/notes/{id}  Notes::forget",
    ] {
        assert!(table.contains(line), "{line}\n{table}");
    }
}

#[test]
fn the_trait_form_describes_the_same_operations() {
    let doc: serde_json::Value = serde_json::from_slice(&app().openapi_document()).unwrap();
    let paths = doc["paths"].as_object().unwrap();
    let mut compared = 0;
    for (path, by_impl) in paths {
        let Some(rest) = path.strip_prefix("/impl") else {
            continue;
        };
        let by_trait = &paths[&format!("/trait{rest}")];
        // Byte for byte: the same operations, in the same order.
        assert_eq!(
            serde_json::to_string_pretty(by_impl).unwrap(),
            serde_json::to_string_pretty(by_trait).unwrap(),
            "{rest}"
        );
        compared += by_impl.as_object().unwrap().len();
    }
    assert_eq!(compared, 4);
    // The doc comments of the trait's methods describe the operations.
    assert_eq!(
        doc["paths"]["/trait/notes/{id}"]["get"]["summary"],
        "One note."
    );
}

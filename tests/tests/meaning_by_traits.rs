//! What `#[controller]` makes of an argument or a return type is asked of the type, not read
//! off its spelling: an alias of `Json<T>` is a body (documented, and its route gets a body
//! parser from the default plan), an alias of a `Result` whose name does not end in `Result`
//! is a `Result` (its error answers with its status, `None` is a 404), a
//! `Result<Json<T>, Rejection>` argument hands the extractor's refusal to the method, and a
//! reply type of the app's own describes itself. Its own test binary, so these controllers
//! stay out of the other tests.

mod common;

use framework::extract::{Json, Rejection};
use framework::openapi::{DescribeReply, Operation};
use framework::{App, Context, FromState, HttpError, IntoReply, Validate, controller};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Deserialize, Serialize, Validate, schemars::JsonSchema)]
struct Note {
    #[validate(length(min = 1, max = 20))]
    text: String,
}

/// A body under another name.
type NewNote = Json<Note>;

/// A `Result` under a name that does not end in `Result`, with an error that is itself
/// `Serialize`: read by its name, it would have been sent as a 200 JSON body.
type Answer<T> = std::result::Result<T, HttpError>;

/// A reply of the app's own: CSV text, documented as `text/csv`.
struct Csv(String);

impl IntoReply for Csv {
    fn into_reply(self, ctx: &mut Context) {
        ctx.set_response_header(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/csv"),
        );
        ctx.body_mut()
            .set_bytes(framework::body::Bytes::from(self.0));
    }
}

impl DescribeReply for Csv {
    fn describe_reply(operation: &mut Operation<'_>) {
        operation.reply(200, Some("text/csv"), None);
    }
}

#[derive(FromState)]
struct ByTraits;

#[controller(prefix = "/t")]
impl ByTraits {
    /// The aliased body, echoed.
    #[post("/notes")]
    async fn add(&self, note: NewNote) -> Json<Note> {
        note
    }

    /// The body's refusal as a value: a body that is not JSON is answered here.
    #[post("/lenient")]
    async fn lenient(&self, note: Result<Json<Note>, Rejection>) -> String {
        match note {
            Ok(note) => note.0.text,
            Err(Rejection::UnsupportedMediaType { expected, .. }) => format!("send {expected}"),
            Err(other) => format!("refused: {}", other.status().as_u16()),
        }
    }

    /// `0` is none, `1` a note, anything else a 409.
    #[get("/answer/{id}")]
    async fn answer(&self, id: u32) -> Answer<Option<Note>> {
        match id {
            0 => Ok(None),
            1 => Ok(Some(Note { text: "one".into() })),
            _ => Err(HttpError::new("taken")
                .with_status(http::StatusCode::CONFLICT)
                .with_category("notes")),
        }
    }

    #[get("/csv")]
    async fn csv(&self) -> Csv {
        Csv("a,b\n1,2\n".into())
    }
}

#[tokio::test]
async fn aliases_and_rejections_behave_as_the_types_they_name() {
    let service = App::new()
        .mount_controllers()
        .openapi("/openapi.json")
        .build()
        .expect("the app builds: the default plan gives the aliased body a body parser");
    let server = common::start(service).await;
    let client = reqwest::Client::new();

    // The aliased body is parsed (without a body parser this would be a 500 naming it) and
    // validated.
    let added = client
        .post(server.url("/t/notes"))
        .json(&json!({"text": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(added.status(), 200);
    assert_eq!(added.json::<Value>().await.unwrap(), json!({"text": "hi"}));
    let invalid = client
        .post(server.url("/t/notes"))
        .json(&json!({"text": ""}))
        .send()
        .await
        .unwrap();
    assert_eq!(invalid.status(), 400);
    let plain = client
        .post(server.url("/t/notes"))
        .header("content-type", "text/plain")
        .body("hi")
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), 415);

    // The refusal reaches the method, which answers it.
    for (content_type, body, expected) in [
        ("text/plain", "hi", "send application/json"),
        ("application/json", r#"{"text":"ok"}"#, "ok"),
        ("application/json", r#"{"text":""}"#, "refused: 400"),
    ] {
        let answer = client
            .post(server.url("/t/lenient"))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{content_type} {body}");
        assert_eq!(answer.text().await.unwrap(), expected);
    }

    // The aliased `Result`: its error answers with its status, `None` is a 404.
    let found = client.get(server.url("/t/answer/1")).send().await.unwrap();
    assert_eq!(found.status(), 200);
    assert_eq!(found.json::<Value>().await.unwrap(), json!({"text": "one"}));
    let missing = client.get(server.url("/t/answer/0")).send().await.unwrap();
    assert_eq!(missing.status(), 404);
    let taken = client
        .get(server.url("/t/answer/2"))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(taken.status(), 409);
    let body: Value = taken.json().await.unwrap();
    assert_eq!(body["category"], "notes");

    let csv = client.get(server.url("/t/csv")).send().await.unwrap();
    assert_eq!(csv.status(), 200);
    assert_eq!(csv.headers()["content-type"], "text/csv");
    assert_eq!(csv.text().await.unwrap(), "a,b\n1,2\n");

    let doc: Value = client
        .get(server.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    common::validate_openapi(&doc, "meaning_by_traits");
    for path in ["/t/notes", "/t/lenient"] {
        let body = &doc["paths"][path]["post"]["requestBody"]["content"]["application/json"];
        assert_eq!(
            body["schema"]["$ref"], "#/components/schemas/Note",
            "{path}: {body}"
        );
    }
    assert_eq!(
        doc["components"]["schemas"]["Note"]["properties"]["text"]["maxLength"], 20,
        "the alias's rules are in the schema"
    );
    let csv = &doc["paths"]["/t/csv"]["get"]["responses"]["200"]["content"];
    assert!(csv["text/csv"].is_object(), "{csv}");
    server.stop().await;
}

//! Calls through the generated clients checked against the OpenAPI document the same
//! declarations give: every route of the user service's `UserApi`, and of a notes API that
//! uses the other argument sources (path parameters, query, header, cookie), is called
//! through its client in process; each request and answer is validated against its
//! operation in the document (parameters, request body, status, media type, body schema,
//! JSON Schema 2020-12), and the value the client decoded is compared with the answer's JSON.

use std::sync::{Arc, Mutex};

use framework::client::{ApiClient, Exchange};
use framework::extract::{Json, Query};
use framework::reply::NoContent;
use framework::testing::TestClient;
use framework::{FromState, HttpError, Result, Validate};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use user_api::{UserApiClient, UserParams};
use user_service::{Config, Stores};

/// A note.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Validate, schemars::JsonSchema)]
struct Note {
    /// Its text.
    #[validate(length(min = 1, max = 20))]
    text: String,
}

/// A page of a list.
#[derive(Debug, Deserialize, Serialize, Validate, schemars::JsonSchema)]
struct Page {
    /// Notes per page.
    #[validate(range(min = 1, max = 50))]
    size: u32,
}

/// Notes: path, query, header, cookie arguments; `Option` and `NoContent` answers.
#[framework::api(prefix = "/notes")]
trait NotesApi {
    /// One note; 404 when there is none.
    #[get("/{id}")]
    async fn one(&self, id: u64) -> Result<Option<Note>>;

    /// A page of notes for a tenant, in a theme.
    #[get("/")]
    async fn list(
        &self,
        page: Query<Page>,
        #[header("x-tenant")] tenant: String,
        #[cookie("theme")] theme: Option<String>,
    ) -> Result<Vec<Note>>;

    /// Replaces a note; 409 when its text is taken.
    #[put("/{id}", errors(409))]
    async fn put(&self, id: u64, note: Json<Note>) -> Result<NoContent>;
}

#[derive(FromState)]
struct Notes;

#[framework::controller]
impl NotesApi for Notes {
    async fn one(&self, id: u64) -> Result<Option<Note>> {
        Ok((id == 1).then(|| Note {
            text: "first".into(),
        }))
    }

    async fn list(
        &self,
        page: Query<Page>,
        tenant: String,
        theme: Option<String>,
    ) -> Result<Vec<Note>> {
        let text = format!("{tenant}:{}", theme.unwrap_or_default());
        Ok((0..page.size.min(3))
            .map(|_| Note { text: text.clone() })
            .collect())
    }

    async fn put(&self, _id: u64, note: Json<Note>) -> Result<NoContent> {
        if note.text == "taken" {
            return Err(HttpError::with(http::StatusCode::CONFLICT, "notes", "taken").into());
        }
        Ok(NoContent)
    }
}

/// One recorded call.
struct Call {
    method: String,
    route: String,
    target: String,
    request_type: Option<String>,
    request_body: Vec<u8>,
    request_headers: Vec<(String, String)>,
    status: u16,
    response_type: Option<String>,
    response_body: Vec<u8>,
}

impl Call {
    fn of(exchange: &Exchange<'_>) -> Self {
        let media = |headers: &http::HeaderMap| {
            headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        Call {
            method: exchange.method.as_str().to_ascii_lowercase(),
            route: exchange.route.to_owned(),
            target: exchange.target.to_owned(),
            request_type: media(exchange.request_headers),
            request_body: exchange.request_body.to_vec(),
            request_headers: exchange
                .request_headers
                .iter()
                .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
                .collect(),
            status: exchange.status.as_u16(),
            response_type: media(exchange.response_headers),
            response_body: exchange.response_body.to_vec(),
        }
    }

    fn response_json(&self) -> Value {
        if self.response_body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&self.response_body).expect("a JSON answer")
        }
    }
}

/// The document's path of a route template: `:id`, `*rest` and a bare `*` as `{id}`,
/// `{rest}`, `{*}`.
fn document_path(route: &str) -> String {
    route
        .split('/')
        .map(
            |part| match part.strip_prefix(':').or_else(|| part.strip_prefix('*')) {
                Some("") => "{*}".to_owned(),
                Some(name) => format!("{{{name}}}"),
                None => part.to_owned(),
            },
        )
        .collect::<Vec<_>>()
        .join("/")
}

/// What `instance` breaks of `schema`, references resolved in the document (JSON Schema
/// 2020-12).
fn schema_errors(doc: &Value, schema: &Value, instance: &Value, what: &str) -> Vec<String> {
    let mut root = schema.clone();
    if let Value::Object(map) = &mut root {
        map.insert("components".to_owned(), doc["components"].clone());
    }
    let validator = jsonschema::draft202012::new(&root)
        .unwrap_or_else(|e| panic!("{what}: the document's schema does not compile: {e}"));
    validator
        .iter_errors(instance)
        .map(|e| format!("{what}: {instance}: {e}"))
        .collect()
}

/// `instance` fits `schema`.
fn check_schema(doc: &Value, schema: &Value, instance: &Value, what: &str) {
    let errors = schema_errors(doc, schema, instance, what);
    assert!(errors.is_empty(), "{errors:?}");
}

/// A parameter's text as the JSON value its schema describes (numbers and booleans parsed).
fn parameter_value(schema: &Value, text: &str) -> Value {
    let parsed = match schema["type"].as_str() {
        Some("integer") => text.parse::<i64>().ok().map(Value::from),
        Some("number") => text.parse::<f64>().ok().map(Value::from),
        Some("boolean") => text.parse::<bool>().ok().map(Value::Bool),
        _ => None,
    };
    parsed.unwrap_or_else(|| json!(text))
}

/// Checks one call against its operation in the document; what the request breaks of it
/// (a call may send what the document refuses, to see the service refuse it too).
fn check_call(doc: &Value, call: &Call) -> Vec<String> {
    let mut refused = Vec::new();
    let path = document_path(&call.route);
    let what = format!(
        "{} {} -> {}",
        call.method.to_uppercase(),
        call.target,
        call.status
    );
    let operation = &doc["paths"][&path][&call.method];
    assert!(
        operation.is_object(),
        "{what}: no operation {path} in the document"
    );

    // Parameters: each sent one is declared, every required one is sent, each value fits.
    let (path_part, query) = call.target.split_once('?').unwrap_or((&call.target, ""));
    let template: Vec<&str> = path.split('/').collect();
    let segments: Vec<&str> = path_part.split('/').collect();
    assert_eq!(template.len(), segments.len(), "{what}: the path's shape");
    let mut sent: Vec<(String, String, String)> = Vec::new();
    for (part, value) in template.iter().zip(&segments) {
        if let Some(name) = part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            let value = percent_encoding::percent_decode_str(value).decode_utf8_lossy();
            sent.push(("path".into(), name.into(), value.into_owned()));
        } else {
            assert_eq!(part, value, "{what}: the path");
        }
    }
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        sent.push(("query".into(), name.into_owned(), value.into_owned()));
    }
    let parameters = operation["parameters"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (name, value) in &call.request_headers {
        if parameters
            .iter()
            .any(|p| p["in"] == "header" && p["name"] == name.as_str())
        {
            sent.push(("header".into(), name.clone(), value.clone()));
        }
        if name == "cookie" {
            for pair in value.split("; ") {
                if let Some((cookie, value)) = pair.split_once('=')
                    && parameters
                        .iter()
                        .any(|p| p["in"] == "cookie" && p["name"] == cookie)
                {
                    sent.push(("cookie".into(), cookie.into(), value.into()));
                }
            }
        }
    }
    for (location, name, value) in &sent {
        let declared = parameters
            .iter()
            .find(|p| p["in"] == location.as_str() && p["name"] == name.as_str())
            .unwrap_or_else(|| panic!("{what}: {location} parameter {name} is not declared"));
        let schema = &declared["schema"];
        refused.extend(schema_errors(
            doc,
            schema,
            &parameter_value(schema, value),
            &format!("{what}: {location} parameter {name}"),
        ));
    }
    for declared in &parameters {
        if declared["required"] == true {
            assert!(
                sent.iter()
                    .any(|(l, n, _)| declared["in"] == l.as_str() && declared["name"] == n.as_str()),
                "{what}: required parameter {} not sent",
                declared["name"]
            );
        }
    }

    // The request body: the media type the operation takes, the value its schema describes.
    match (&call.request_type, operation.get("requestBody")) {
        (Some(media), Some(body)) => {
            let content = &body["content"][media.as_str()];
            assert!(
                content.is_object(),
                "{what}: request media type {media} not in {body}"
            );
            let value: Value = serde_json::from_slice(&call.request_body).expect("JSON body");
            refused.extend(schema_errors(
                doc,
                &content["schema"],
                &value,
                &format!("{what}: request body"),
            ));
        }
        (None, None) => assert!(call.request_body.is_empty(), "{what}: a body not declared"),
        (sent, declared) => panic!("{what}: request body {sent:?} against {declared:?}"),
    }

    // The answer: a status the operation declares, its media type and schema.
    let response = &operation["responses"][call.status.to_string()];
    assert!(
        response.is_object(),
        "{what}: status {} not declared in {}",
        call.status,
        operation["responses"]
    );
    match response.get("content") {
        Some(content) => {
            let media = call.response_type.as_deref().expect("a Content-Type");
            let essence = media.split(';').next().unwrap_or(media).trim();
            let declared = content
                .as_object()
                .and_then(|c| {
                    c.iter()
                        .find(|(m, _)| m.split(';').next().unwrap_or(m).trim() == essence)
                })
                .unwrap_or_else(|| panic!("{what}: answer media type {media} not in {content}"));
            if essence == "application/json" {
                check_schema(
                    doc,
                    &declared.1["schema"],
                    &call.response_json(),
                    &format!("{what}: answer body"),
                );
            }
        }
        None => assert!(
            call.response_body.is_empty(),
            "{what}: an undeclared answer body"
        ),
    }
    // What the document refuses, the service refuses: a validation error.
    if !refused.is_empty() {
        assert_eq!(call.status, 400, "{what}: accepted {refused:?}");
    }
    refused
}

fn sha256_hex(data: &str) -> String {
    hex::encode(Sha256::digest(data.as_bytes()))
}

fn params(account: &str, password: &str) -> Json<UserParams> {
    Json(UserParams {
        account: account.to_owned(),
        password: password.to_owned(),
    })
}

/// The last recorded call's answer, for comparing with the decoded value.
fn last_answer(calls: &Mutex<Vec<Call>>) -> Value {
    calls
        .lock()
        .unwrap()
        .last()
        .expect("a call")
        .response_json()
}

#[tokio::test]
async fn every_route_round_trips_against_the_document() {
    let app = user_service::app(&Config::default(), Stores::in_memory())
        .expect("app")
        .openapi("/openapi.json");
    let doc: Value = serde_json::from_slice(&app.openapi_document()).expect("the document");
    let test_client = TestClient::new(app.build().expect("service"));
    // The document the test client is served is the one generated above.
    assert_eq!(test_client.get("/openapi.json").send().await.json(), doc);

    let calls: Arc<Mutex<Vec<Call>>> = Arc::default();
    let recorder = Arc::clone(&calls);
    let api = ApiClient::builder()
        .inspect(move |exchange| recorder.lock().unwrap().push(Call::of(exchange)))
        .in_process(&test_client);
    let users = UserApiClient::from_client(api.clone());
    let notes = NotesApiClient::from_client(api);

    // Users: every route, its success and its error answers.
    let digest = sha256_hex("pw");
    let me = users.me().await.unwrap();
    assert_eq!(serde_json::to_value(&me).unwrap(), last_answer(&calls));
    let user = users.register(params("carol_1", &digest)).await.unwrap();
    assert_eq!(serde_json::to_value(&user).unwrap(), last_answer(&calls));
    users
        .register(params("carol_1", &digest))
        .await
        .unwrap_err();
    users.register(params("c", &digest)).await.unwrap_err();
    let token = users.login_token().await.unwrap();
    assert_eq!(serde_json::to_value(&token).unwrap(), last_answer(&calls));
    users
        .login(params("carol_1", &"0".repeat(64)))
        .await
        .unwrap_err();
    let token = users.login_token().await.unwrap().token;
    let proof = sha256_hex(&format!("{digest}{}", token.as_str()));
    let user = users.login(params("carol_1", &proof)).await.unwrap();
    assert_eq!(serde_json::to_value(&user).unwrap(), last_answer(&calls));
    let me = users.me().await.unwrap();
    assert_eq!(me.name, "carol_1");
    assert_eq!(serde_json::to_value(&me).unwrap(), last_answer(&calls));

    // Notes: path, query, header and cookie parameters; a 404 and a 204.
    let one = notes.one(1).await.unwrap();
    assert_eq!(serde_json::to_value(&one).unwrap(), last_answer(&calls));
    assert_eq!(notes.one(2).await.unwrap(), None);
    let list = notes
        .list(Query(Page { size: 2 }), "acme".into(), Some("dark".into()))
        .await
        .unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].text, "acme:dark");
    assert_eq!(serde_json::to_value(&list).unwrap(), last_answer(&calls));
    notes
        .list(Query(Page { size: 0 }), "acme".into(), None)
        .await
        .unwrap_err();
    notes
        .put(7, Json(Note { text: "new".into() }))
        .await
        .unwrap();
    let err = notes
        .put(
            7,
            Json(Note {
                text: "taken".into(),
            }),
        )
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        framework::client::ClientError::Status { declared: true, .. }
    ));

    let calls = calls.lock().unwrap();
    let statuses: Vec<u16> = calls.iter().map(|c| c.status).collect();
    assert_eq!(
        statuses,
        [
            200, 201, 409, 400, 200, 400, 200, 200, 200, 200, 404, 200, 400, 204, 409
        ]
    );
    let refused: Vec<String> = calls
        .iter()
        .flat_map(|call| check_call(&doc, call))
        .collect();
    // The two calls sent to be refused (an account of one letter, a page of none) are the
    // ones the document refuses.
    assert_eq!(refused.len(), 2, "{refused:#?}");
    assert!(refused[0].contains("shorter than 2"), "{refused:?}");
    assert!(refused[1].contains("query parameter size"), "{refused:?}");
    // Every operation of both APIs was called.
    let mut called: Vec<(String, String)> = calls
        .iter()
        .map(|c| (document_path(&c.route), c.method.clone()))
        .collect();
    called.sort();
    called.dedup();
    let mut operations: Vec<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        // The routes of the two traits (the avatar routes are an impl block's).
        .filter(|(path, _)| {
            path.starts_with("/notes") || *path == "/users/v1/me" || *path == "/users/v1/login"
        })
        .flat_map(|(path, ops)| {
            ops.as_object()
                .unwrap()
                .keys()
                .map(move |method| (path.clone(), method.clone()))
        })
        .collect();
    operations.sort();
    assert_eq!(called, operations);
}

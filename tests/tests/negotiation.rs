//! Content negotiation and problem details over a real socket: a value goes out in the format
//! `Accept` prefers among JSON and a registered `text/csv` marshaller, with `Vary: Accept`,
//! and 406 when none fits; the OpenAPI document lists both formats; without a registered
//! format nothing is negotiated. Errors are RFC 9457 `application/problem+json` when the
//! error handler is configured for it and `Accept` asks, or always; the default shape stays.

mod common;

use framework::extract::Json;
use framework::middleware::error_handler::{ErrorHandler, ErrorHandlerConfig, Problem};
use framework::middleware::responder::{Format, Responder, ResponderConfig};
use framework::{App, Context, FromState, HttpError, Result, controller};
use http::StatusCode;
use serde::Serialize;
use serde_json::{Value, json};

#[derive(Serialize, schemars::JsonSchema)]
struct Row {
    id: u32,
    name: String,
}

#[derive(FromState)]
struct Rows;

#[controller(prefix = "/rows")]
impl Rows {
    /// The rows, in the format the client asks for.
    #[get("/")]
    async fn list(&self) -> Result<Json<Vec<Row>>> {
        Ok(Json(vec![
            Row {
                id: 1,
                name: "ada".into(),
            },
            Row {
                id: 2,
                name: "alan".into(),
            },
        ]))
    }
}

async fn missing(_ctx: &mut Context) -> Result<String> {
    Err(
        HttpError::with(StatusCode::NOT_FOUND, "rows", "no such row")
            .with_code("row-missing")
            .into(),
    )
}

/// An array of flat objects as CSV: a header line of the first object's keys, then a line each.
fn csv() -> Format {
    Format::new("text/csv; charset=utf-8", |value| {
        let rows = serde_json::to_value(value)?;
        let rows = rows.as_array().cloned().unwrap_or_default();
        let keys: Vec<String> = rows
            .first()
            .and_then(Value::as_object)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        let mut out = keys.join(",");
        out.push('\n');
        for row in &rows {
            let cells: Vec<String> = keys
                .iter()
                .map(|k| match &row[k] {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                })
                .collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        Ok(out.into_bytes())
    })
}

fn app(formats: Vec<Format>, problem: Problem) -> framework::Service {
    App::new()
        .use_middleware(ErrorHandler::new(
            ErrorHandlerConfig::default().problem(problem),
        ))
        .use_middleware(Responder::new(ResponderConfig::default().formats(formats)))
        .get("/missing", missing)
        .openapi("/openapi.json")
        .build()
        .unwrap()
}

async fn get(server: &common::Running, path: &str, accept: Option<&str>) -> common::RawResponse {
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    common::raw_request(
        server.addr,
        &format!("GET {path} HTTP/1.1\r\nHost: t\r\n{accept}Connection: close\r\n\r\n"),
    )
    .await
}

#[tokio::test]
async fn a_value_goes_out_in_the_format_accept_prefers() {
    let server = common::start(app(vec![csv()], Problem::Off)).await;
    let json_rows = json!([{"id": 1, "name": "ada"}, {"id": 2, "name": "alan"}]);
    for (accept, csv) in [
        (None, false),
        (Some("*/*"), false),
        (Some("application/json"), false),
        (Some("text/csv"), true),
        (Some("text/*"), true),
        (Some("text/csv;q=0.5, application/json;q=0.9"), false),
        (Some("text/csv;q=0.9, application/json;q=0.5"), true),
        (Some("text/csv, application/json"), false),
    ] {
        let res = get(&server, "/rows", accept).await;
        assert_eq!(res.status, 200, "{accept:?}: {}", res.head);
        assert_eq!(res.header("vary"), Some("accept"), "{accept:?}");
        if csv {
            assert_eq!(
                res.header("content-type"),
                Some("text/csv; charset=utf-8"),
                "{accept:?}"
            );
            assert_eq!(res.text(), "id,name\n1,ada\n2,alan\n", "{accept:?}");
        } else {
            assert_eq!(
                res.header("content-type"),
                Some("application/json; charset=utf-8"),
                "{accept:?}"
            );
            let body: Value = serde_json::from_slice(&res.body).unwrap();
            assert_eq!(body, json_rows, "{accept:?}");
        }
    }
    // Nothing the route can answer: 406, naming what it can.
    let res = get(&server, "/rows", Some("text/html")).await;
    assert_eq!(res.status, 406, "{}", res.head);
    assert!(
        res.text()
            .contains("application/json; charset=utf-8, text/csv; charset=utf-8"),
        "{}",
        res.text()
    );
    // The document lists both formats under the route's answer, and the 406.
    let doc: Value = serde_json::from_slice(&get(&server, "/openapi.json", None).await.body)
        .expect("a document");
    let answers = &doc["paths"]["/rows"]["get"]["responses"];
    let content = answers["200"]["content"].as_object().expect("content");
    assert!(content.contains_key("application/json"), "{content:?}");
    assert!(
        content.contains_key("text/csv; charset=utf-8"),
        "{content:?}"
    );
    assert!(answers.get("406").is_some(), "{answers}");
    server.stop().await;

    // No format registered: JSON whatever Accept says, no Vary, no 406.
    let server = common::start(app(Vec::new(), Problem::Off)).await;
    let res = get(&server, "/rows", Some("text/html")).await;
    assert_eq!(res.status, 200);
    assert_eq!(
        res.header("content-type"),
        Some("application/json; charset=utf-8")
    );
    assert_eq!(res.header("vary"), None);
    server.stop().await;
}

#[tokio::test]
async fn errors_are_problem_details_when_configured_and_asked() {
    let problem = json!({
        "type": "about:blank",
        "title": "Not Found",
        "status": 404,
        "detail": "no such row",
        "instance": "/missing",
        "category": "rows",
        "code": "row-missing",
    });
    let framework_object = |res: &common::RawResponse| {
        assert_eq!(
            res.header("content-type"),
            Some("application/json; charset=utf-8")
        );
        let body: Value = serde_json::from_slice(&res.body).unwrap();
        assert_eq!(body["statusCode"], 404, "{body}");
        assert_eq!(body["category"], "rows", "{body}");
    };
    let is_problem = |res: &common::RawResponse| {
        assert_eq!(res.header("content-type"), Some("application/problem+json"));
        let body: Value = serde_json::from_slice(&res.body).unwrap();
        assert_eq!(body, problem);
    };

    // Asked for: problem details; the framework's object for a JSON client; text for others.
    let server = common::start(app(Vec::new(), Problem::WhenAccepted)).await;
    let res = get(
        &server,
        "/missing?secret=1",
        Some("application/problem+json"),
    )
    .await;
    assert_eq!(res.status, 404);
    is_problem(&res);
    framework_object(&get(&server, "/missing", Some("application/json")).await);
    framework_object(
        &get(
            &server,
            "/missing",
            Some("application/json, application/problem+json;q=0.5"),
        )
        .await,
    );
    let text = get(&server, "/missing", None).await;
    assert!(text.text().starts_with("statusCode=404"), "{}", text.text());
    server.stop().await;

    // Always: every JSON error answer.
    let server = common::start(app(Vec::new(), Problem::Always)).await;
    is_problem(&get(&server, "/missing", Some("application/json")).await);
    server.stop().await;

    // The default: the framework's object, even for a client that asks for problem details.
    let server = common::start(app(Vec::new(), Problem::Off)).await;
    framework_object(&get(&server, "/missing", Some("application/problem+json")).await);
    server.stop().await;
}

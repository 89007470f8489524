//! The user service documents itself: `user-service openapi` prints the OpenAPI document
//! without connecting to any store (the stores named here do not exist), the running service
//! serves the same document at `/openapi.json`, and it describes the six endpoints from their
//! typed signatures.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;

use serde_json::{Value, json};

fn printed() -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_user-service"))
        .arg("openapi")
        // Nothing listens on port 1: a command that tried to connect would fail.
        .env("DATABASE_URL", "postgres://postgres@127.0.0.1:1/none")
        .env("REDIS_URL", "redis://127.0.0.1:1")
        .output()
        .expect("run user-service openapi");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the document is JSON")
}

fn served() -> Value {
    let (_service, address) = common::start();
    let mut stream = TcpStream::connect(&address).expect("connect");
    stream
        .write_all(b"GET /openapi.json HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n")
        .expect("write");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("read");
    let text = String::from_utf8(answer).expect("utf-8");
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    serde_json::from_str(body).expect("JSON")
}

#[test]
fn printed_and_served_documents_are_one_and_describe_the_endpoints() {
    let doc = printed();
    assert_eq!(doc, served(), "the command prints what the service serves");
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["title"], "user-service");
    let operations: Vec<String> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, ops)| {
            ops.as_object()
                .unwrap()
                .keys()
                .map(move |m| format!("{} {path}", m.to_uppercase()))
        })
        .collect();
    assert_eq!(
        operations,
        [
            "GET /users/v1/avatar/{account}",
            "GET /users/v1/login",
            "POST /users/v1/login",
            "GET /users/v1/me",
            "POST /users/v1/me",
            "PUT /users/v1/me/avatar",
        ]
    );
    let register = &doc["paths"]["/users/v1/me"]["post"];
    assert_eq!(
        register["requestBody"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/UserParams"
    );
    assert_eq!(
        register["responses"]["201"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/User"
    );
    assert_eq!(register["tags"], serde_json::json!(["UserController"]));
    // The stored digest never leaves the service, so the schema has no `password`.
    assert!(doc["components"]["schemas"]["User"]["properties"]["password"].is_null());
    assert_eq!(
        doc["components"]["schemas"]["Token"]["pattern"],
        "^[0-9a-f]{32}$"
    );
    // The named validators declare their rules (`#[framework::validator]`).
    let params = &doc["components"]["schemas"]["UserParams"]["properties"];
    assert_eq!(
        (
            &params["account"]["minLength"],
            &params["account"]["maxLength"],
            &params["account"]["pattern"],
        ),
        (&json!(2), &json!(20), &json!("^[A-Za-z0-9_]*$"))
    );
    assert_eq!(
        (
            &params["password"]["minLength"],
            &params["password"]["maxLength"]
        ),
        (&json!(64), &json!(64))
    );
    // Each operation lists what it can answer: the handler's own errors (409 for a taken
    // account, 507 for a full memory store, 429 from the failed-login throttle), the submit lock's and the rate limits'
    // 429, the body's 400/413/415, the request timeout's 503, CSRF's 403 on the POSTs; every route takes the optional session cookie.
    let statuses = |path: &str, method: &str| -> Vec<String> {
        doc["paths"][path][method]["responses"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    assert_eq!(
        statuses("/users/v1/me", "post"),
        [
            "201", "400", "403", "409", "413", "415", "429", "500", "503", "507"
        ]
    );
    assert_eq!(
        statuses("/users/v1/login", "post"),
        ["200", "400", "403", "413", "415", "429", "500", "503"]
    );
    assert_eq!(statuses("/users/v1/me", "get"), ["200", "500", "503"]);
    // The avatar: an upload is checked for CSRF (403), needs a login (401) and is a multipart body of one image part
    // (413, 415), 507 when the memory store is full; a read is 404 without an avatar, 400
    // for a name that is no account name, 412 and 416 from its preconditions and ranges.
    assert_eq!(
        statuses("/users/v1/me/avatar", "put"),
        [
            "200", "400", "401", "403", "413", "415", "500", "503", "507"
        ]
    );
    assert_eq!(
        statuses("/users/v1/avatar/{account}", "get"),
        ["200", "400", "404", "412", "416", "500", "503"]
    );
    let upload = &doc["paths"]["/users/v1/me/avatar"]["put"]["requestBody"]["content"];
    let form = &upload["multipart/form-data"];
    assert_eq!(form["schema"]["required"], json!(["avatar"]));
    assert_eq!(
        (
            &form["schema"]["properties"]["avatar"]["type"],
            &form["schema"]["properties"]["avatar"]["format"]
        ),
        (&json!("string"), &json!("binary"))
    );
    assert_eq!(
        form["encoding"]["avatar"]["contentType"],
        "image/png, image/jpeg, image/webp"
    );
    let account = &doc["paths"]["/users/v1/avatar/{account}"]["get"]["parameters"][0];
    assert_eq!(account["in"], "path");
    assert_eq!(
        doc["components"]["schemas"]["AccountName"]["pattern"],
        "^[A-Za-z0-9_]{2,20}$"
    );
    // Every route behind the session middleware takes the optional session cookie; reading
    // an avatar needs no session.
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            if path == "/users/v1/avatar/{account}" {
                assert!(op.get("security").is_none(), "{method} {path}");
                continue;
            }
            assert_eq!(
                op["security"],
                json!([{}, {"session": []}]),
                "{method} {path}"
            );
        }
    }
    assert_eq!(
        doc["components"]["securitySchemes"]["session"],
        json!({"type": "apiKey", "in": "cookie", "name": "sid"})
    );
}

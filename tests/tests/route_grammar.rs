//! One route grammar (the `route-pattern` crate) for the router, the OpenAPI document and the
//! typed client: a bare `*` wildcard is named `*` by all three, and a template the router
//! refuses is refused by the client with the router's words. Its own test binary, so its
//! controller does not leak into other tests.

use framework::client::{ApiClient, ClientError};
use framework::testing::TestClient;
use framework::{App, Context, Result, controller};
use http::Method;

/// Files under a bare wildcard.
#[derive(framework::FromState)]
pub struct Files;

#[controller(prefix = "/files")]
impl Files {
    /// The rest of the path after `/files/`.
    #[get("/*")]
    async fn rest(&self, ctx: &mut Context) -> Result<String> {
        Ok(format!("rest={}", ctx.params().raw("*").unwrap_or("none")))
    }
}

fn app() -> App {
    App::new().openapi("/openapi.json")
}

#[test]
fn the_document_names_a_bare_wildcard_as_the_router_does() {
    let doc: serde_json::Value = serde_json::from_slice(&app().openapi_document()).unwrap();
    let operation = &doc["paths"]["/files/{*}"]["get"];
    assert!(operation.is_object(), "{:#}", doc["paths"]);
    let names: Vec<&str> = operation["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["in"] == "path")
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["*"]);
}

#[tokio::test]
async fn the_client_fills_a_bare_wildcard_by_its_name_and_refuses_a_bad_template() {
    let server = TestClient::new(app().build().unwrap());
    let client = ApiClient::in_process(&server);
    // The wildcard keeps its slashes; other bytes are escaped as in a segment.
    let answer = client
        .request(Method::GET, "/files/*")
        .path_param("*", &"2024/a b.pdf")
        .send_text()
        .await
        .unwrap();
    assert_eq!(answer, "rest=2024/a%20b.pdf");
    // Without a value the call is not made (it went out as a literal `*` before).
    let missing = client
        .request(Method::GET, "/files/*")
        .send_text()
        .await
        .unwrap_err();
    assert!(
        matches!(&missing, ClientError::Request(m) if m == "no value for the path parameter *"),
        "{missing:?}"
    );
    // A template the router would refuse fails with the router's message.
    let refused = client
        .request(Method::GET, "/files/{name")
        .send_text()
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, ClientError::Request(m)
            if m == "route path `/files/{name`: bad segment `{name`"),
        "{refused:?}"
    );
}

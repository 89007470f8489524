//! A client generated from an `#[api]` trait carries, on the calls a server makes on a
//! request's behalf (`TracedClient::traced`), the request's id and a child of its trace.
//! Its own test binary: the app mounts every controller linked in, and only the echo
//! controller is.

use framework::client::ApiClient;
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::middleware::trace::{Trace, TraceConfig, TracedClient};
use framework::testing::TestClient;
use framework::{App, Context, FromState, Result};
use serde::{Deserialize, Serialize};

/// What the downstream service saw of a call.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct Seen {
    request_id: String,
    traceparent: String,
}

/// A downstream service that says what it was sent.
#[framework::api(prefix = "/echo")]
trait EchoApi {
    /// The request id and `traceparent` the call carried.
    #[get("/seen")]
    async fn seen(&self, ctx: &mut Context) -> Result<Seen>;
}

#[derive(FromState)]
struct Echo;

#[framework::controller]
impl EchoApi for Echo {
    async fn seen(&self, ctx: &mut Context) -> Result<Seen> {
        let header = |name| ctx.request_header(name).unwrap_or_default().to_owned();
        Ok(Seen {
            request_id: header("x-request-id"),
            traceparent: header("traceparent"),
        })
    }
}

#[tokio::test]
async fn calls_made_for_a_request_carry_its_id_and_trace() {
    // The downstream: the echo controller, in process.
    let downstream = TestClient::new(
        App::new()
            .use_middleware(ErrorHandler::default())
            .use_middleware(Responder::default())
            .build()
            .unwrap(),
    );
    let echo = ApiClient::in_process(&downstream);
    // The front: a route that calls the downstream on its request's behalf.
    let front = App::bare()
        .use_middleware(Trace::new(TraceConfig::default()))
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .with_state(echo)
        .get("/front", |ctx: &mut Context| {
            let echo = ctx.state().require::<ApiClient>().map(|c| c.traced(ctx));
            async move {
                let client = EchoApiClient::from_client(echo?);
                let seen = client
                    .seen()
                    .await
                    .map_err(|e| framework::Error::msg(e.to_string()))?;
                Ok::<_, framework::Error>(framework::extract::Json(seen))
            }
        })
        .build()
        .unwrap();
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let res = TestClient::new(front)
        .get("/front")
        .header("x-request-id", "req-42")
        .header("traceparent", &format!("00-{trace_id}-00f067aa0ba902b7-01"))
        .send()
        .await;
    assert_eq!(res.status, 200, "{}", res.text());
    let seen = res.json();
    assert_eq!(seen["request_id"], "req-42");
    let traceparent = seen["traceparent"].as_str().unwrap();
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    assert_eq!(parts[1], trace_id, "the same trace");
    assert_ne!(parts[2], "00f067aa0ba902b7", "a span of its own");
    assert_eq!(parts[3], "01");
}

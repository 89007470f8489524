//! Recover: a panic becomes a 500 and the app keeps answering.

use std::sync::{Arc, Mutex};

use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::recover::{Recover, RecoverConfig};
use framework::middleware::responder::Responder;
use framework::testing::TestClient;
use framework::{App, Context, Result};

async fn boom(ctx: &mut Context) -> Result {
    ctx.set_response_header("x-half-written", http::HeaderValue::from_static("1"));
    panic!("secret panic text");
}

async fn fine(_ctx: &mut Context) -> Result<&'static str> {
    Ok("fine")
}

#[tokio::test]
async fn panic_becomes_500_and_text_goes_to_the_hook_only() {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let hook_seen = Arc::clone(&seen);
    let service = App::new()
        .use_middleware(Recover::new(RecoverConfig::default().on_panic(Some(
            Arc::new(move |text, _ctx| {
                hook_seen.lock().unwrap().push(text.to_owned());
            }),
        ))))
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
        .get("/boom", boom)
        .get("/fine", fine)
        .build()
        .unwrap();
    let c = TestClient::new(service);
    let res = c
        .get("/boom")
        .header("accept", "application/json")
        .send()
        .await;
    assert_eq!(res.status, 500);
    assert_eq!(
        res.json(),
        serde_json::json!({
            "statusCode": 500, "category": "framework-recover",
            "message": "internal server error", "exception": true
        })
    );
    assert_eq!(res.header("x-half-written"), None);
    assert!(!res.text().contains("secret"));
    assert_eq!(*seen.lock().unwrap(), ["secret panic text"]);

    let res = c.get("/boom").send().await;
    assert_eq!(res.status, 500);
    assert_eq!(
        res.text(),
        "statusCode=500, category=framework-recover, message=internal server error"
    );
    assert_eq!(c.get("/fine").send().await.text(), "fine");
}

//! The `list` handler is not routed by the service; mounted here on purpose it always refuses.
//! Its own test binary, so the extra controller stays out of the other tests.

mod common;

use framework::{Context, FromState, Result, State, controller};
use serde_json::Value;
use user_service::controllers::user::UserController;
use user_service::{Config, Stores};

struct Admin {
    users: UserController,
}

impl FromState for Admin {
    fn from_state(state: &State) -> Result<Self> {
        Ok(Self {
            users: UserController::from_state(state)?,
        })
    }
}

#[controller(prefix = "/admin")]
impl Admin {
    #[get("/users")]
    async fn list(&self, ctx: &mut Context) -> Result {
        self.users.list(ctx).await
    }
}

#[tokio::test]
async fn list_is_a_plain_error_for_everyone() {
    let service = user_service::build(&Config::default(), Stores::in_memory()).unwrap();
    let server = common::start(service).await;
    let res = common::browser()
        .get(server.url("/admin/users"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 500);
    assert_eq!(
        res.json::<Value>().await.unwrap(),
        serde_json::json!({
            "statusCode": 500, "category": "framework-error",
            "message": "only administrators may access it", "exception": true
        })
    );
    server.stop().await;
}

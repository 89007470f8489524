// A controller using every route attribute, a route with its own middleware, handlers
// returning `Result<()>` and `Result<T: Serialize>`, and the generated route table.

use std::sync::atomic::{AtomicUsize, Ordering};

use framework::middleware::responder::Responder;
use framework::testing::TestClient;
use framework::{App, Context, FromState, Next, Result, State, controller, from_fn};
use serde::Serialize;

static AUDITED: AtomicUsize = AtomicUsize::new(0);

async fn audit(ctx: &mut Context, next: Next<'_>) -> Result {
    AUDITED.fetch_add(1, Ordering::SeqCst);
    next.run(ctx).await
}

#[derive(Serialize)]
struct Item {
    id: u32,
    name: String,
}

struct Items {
    name: &'static str,
}

impl FromState for Items {
    fn from_state(state: &State) -> Result<Self> {
        Ok(Items {
            name: state.require::<&'static str>()?,
        })
    }
}

#[controller(prefix = "/items")]
impl Items {
    #[get("/:id")]
    async fn show(&self, ctx: &mut Context) -> Result<Item> {
        let id = ctx.param("id").unwrap_or_default().parse().unwrap_or(0);
        Ok(Item {
            id,
            name: self.name.to_owned(),
        })
    }

    #[post("/")]
    async fn create(&self, _ctx: &mut Context) -> Result<Vec<u32>> {
        Ok(vec![1, 2])
    }

    #[put("/:id")]
    async fn replace(&self, ctx: &mut Context) -> Result<()> {
        ctx.set_status(framework::http::StatusCode::NO_CONTENT);
        Ok(())
    }

    #[patch("/:id")]
    async fn update(&self, ctx: &mut Context) -> Result {
        ctx.set_status(framework::http::StatusCode::NO_CONTENT);
        Ok(())
    }

    #[delete("/:id", middleware(audit))]
    async fn remove(&self, ctx: &mut Context) -> Result {
        ctx.set_status(framework::http::StatusCode::NO_CONTENT);
        Ok(())
    }

    #[head("/probe")]
    async fn probe(&self, ctx: &mut Context) -> Result {
        ctx.set_status(framework::http::StatusCode::NO_CONTENT);
        Ok(())
    }

    #[options("/")]
    async fn allowed(&self, _ctx: &mut Context) -> Result<&'static str> {
        Ok("GET, POST")
    }

    // Not a route: stays an ordinary inherent method.
    fn label(&self) -> &'static str {
        self.name
    }
}

fn main() {
    assert_eq!(Items { name: "x" }.label(), "x");

    let service = App::new()
        .use_middleware(Responder::default())
        .register_middleware("audit", from_fn(audit))
        .with_state::<&'static str>("widget")
        .mount_controllers()
        .build()
        .expect("routes are valid");

    let routes: Vec<(&str, &str, &str)> = service
        .routes()
        .iter()
        .map(|r| (r.method.as_str(), r.path.as_str(), r.handler.as_str()))
        .collect();
    assert_eq!(
        routes,
        [
            ("OPTIONS", "/items", "Items::allowed"),
            ("POST", "/items", "Items::create"),
            ("DELETE", "/items/:id", "Items::remove"),
            ("GET", "/items/:id", "Items::show"),
            ("PATCH", "/items/:id", "Items::update"),
            ("PUT", "/items/:id", "Items::replace"),
            ("HEAD", "/items/probe", "Items::probe"),
        ]
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let client = TestClient::new(service);

        let res = client.post("/items").send().await;
        assert_eq!(res.status, 200);
        assert_eq!(res.text(), "[1,2]");

        let res = client.get("/items/7").send().await;
        assert_eq!(res.status, 200);
        assert_eq!(res.json()["id"], 7);
        assert_eq!(res.json()["name"], "widget");

        let res = client.put("/items/7").send().await;
        assert_eq!(res.status, 204);
        assert_eq!(
            AUDITED.load(Ordering::SeqCst),
            0,
            "route middleware ran elsewhere"
        );

        let res = client.delete("/items/7").send().await;
        assert_eq!(res.status, 204);
        assert_eq!(
            AUDITED.load(Ordering::SeqCst),
            1,
            "route middleware did not run"
        );
    });
}

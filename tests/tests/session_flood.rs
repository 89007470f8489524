//! 200 000 anonymous token requests (each a new session) keep the in-memory session store
//! within its bound: the oldest sessions are evicted, memory does not grow with the flood.

use std::sync::Arc;

use framework::body::RequestBody;
use framework::middleware::session::MemoryStore;
use framework::testing::TEST_PEER;
use http::{Request, StatusCode};
use user_service::{Config, Stores};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_token_flood_stays_within_the_bound() {
    const CAPACITY: usize = 5_000;
    const REQUESTS: usize = 200_000;
    let sessions = Arc::new(MemoryStore::with_capacity(CAPACITY));
    let stores = Stores {
        sessions: Arc::clone(&sessions) as _,
        ..Stores::in_memory()
    };
    // The per-IP token limit would stop the flood first (every request comes from one peer);
    // this test is about the session store's own bound.
    let config = Config {
        token_rate: None,
        ..Config::default()
    };
    let service = Arc::new(user_service::build(&config, stores).unwrap());
    let tasks: Vec<_> = (0..2)
        .map(|_| {
            let service = Arc::clone(&service);
            tokio::spawn(async move {
                for _ in 0..REQUESTS / 2 {
                    let request = Request::get("/users/v1/login")
                        .header("host", "t")
                        .body(RequestBody::Empty)
                        .unwrap();
                    let response = service.handle(request, TEST_PEER).await;
                    assert_eq!(response.status(), StatusCode::OK);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    assert!(
        sessions.len() <= CAPACITY,
        "{} sessions held",
        sessions.len()
    );
    assert!(
        sessions.evicted() >= (REQUESTS - CAPACITY) as u64,
        "{} evicted",
        sessions.evicted()
    );
}

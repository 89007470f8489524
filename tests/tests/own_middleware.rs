//! A middleware of an app's own, written with the public API only, does what the built-in ones
//! do: it keeps a per-request value a handler reads (typed data behind an extension trait, as
//! the session does), holds a guard until a streamed body has been sent (as the logger does),
//! and counts requests in flight without a future of its own (as stats and the limiters do).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use framework::body::BodyStream;
use framework::middleware::responder::Responder;
use framework::slot::Slot;
use framework::{App, Before, Context, Middleware};
use futures_util::StreamExt;
use tokio::sync::{Notify, watch};

/// The tenant a request is for, from its `x-tenant` header.
struct Tenant(String);

/// How handlers read it: an extension trait over the context's typed data.
trait TenantExt {
    fn tenant(&self) -> &str;
}

impl TenantExt for Context {
    fn tenant(&self) -> &str {
        self.data::<Tenant>().map_or("none", |t| t.0.as_str())
    }
}

/// Counted on the way out: dropped when the request is over.
struct Finished(Arc<AtomicU32>);

impl Drop for Finished {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Keeps the tenant, counts requests in flight, and counts requests that are over: all in
/// `before`, with no future of its own.
struct Tenancy {
    in_flight: Arc<AtomicU32>,
    finished: Arc<AtomicU32>,
}

impl Middleware for Tenancy {
    fn before(&self, ctx: &mut Context) -> Before {
        let tenant = ctx
            .request_header("x-tenant")
            .unwrap_or("anonymous")
            .to_owned();
        ctx.insert_data(Tenant(tenant));
        ctx.hold(Slot::take(&self.in_flight));
        ctx.hold(Finished(Arc::clone(&self.finished)));
        Before::Pass
    }
}

/// Lets requests that wait on it go once it says `true`.
#[derive(Clone)]
struct Gate(watch::Receiver<bool>);

struct Counters {
    in_flight: Arc<AtomicU32>,
    finished: Arc<AtomicU32>,
}

fn service(gate: watch::Receiver<bool>, next_chunk: Arc<Notify>) -> (framework::Service, Counters) {
    let in_flight = Arc::new(AtomicU32::new(0));
    let finished = Arc::new(AtomicU32::new(0));
    let service = App::new()
        .with_state(Gate(gate))
        .use_middleware(Responder::default())
        .use_middleware(Tenancy {
            in_flight: Arc::clone(&in_flight),
            finished: Arc::clone(&finished),
        })
        .get("/whoami", |ctx: &mut Context| {
            let tenant = ctx.tenant().to_owned();
            async move { Ok(tenant) }
        })
        .get("/wait", |ctx: &mut Context| {
            let mut gate = ctx.state().get::<Gate>().expect("gate").0.clone();
            async move {
                gate.wait_for(|open| *open).await.expect("gate kept");
                Ok("done")
            }
        })
        .get("/stream", move |_ctx: &mut Context| {
            let next_chunk = Arc::clone(&next_chunk);
            async move {
                // Each chunk waits for the test to ask for it.
                let chunks = futures_util::stream::iter(0..3).then(move |i| {
                    let next_chunk = Arc::clone(&next_chunk);
                    async move {
                        next_chunk.notified().await;
                        Ok::<_, std::io::Error>(Bytes::from(format!("chunk {i};")))
                    }
                });
                Ok(BodyStream::from_stream(chunks))
            }
        })
        .build()
        .expect("valid app");
    (
        service,
        Counters {
            in_flight,
            finished,
        },
    )
}

async fn eventually(what: &str, check: impl Fn() -> bool) {
    for _ in 0..500 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what}: not within 5 s");
}

#[tokio::test]
async fn a_handler_reads_the_value_the_middleware_kept() {
    let (_open, gate) = watch::channel(false);
    let (service, _) = service(gate, Arc::new(Notify::new()));
    let server = common::start(service).await;
    let client = reqwest::Client::new();
    let res = client
        .get(server.url("/whoami"))
        .header("x-tenant", "acme")
        .send()
        .await
        .unwrap();
    assert_eq!(res.text().await.unwrap(), "acme");
    let res = client.get(server.url("/whoami")).send().await.unwrap();
    assert_eq!(res.text().await.unwrap(), "anonymous");
    server.stop().await;
}

#[tokio::test]
async fn requests_in_flight_are_counted_and_given_back() {
    let (open, gate) = watch::channel(false);
    let (service, counters) = service(gate, Arc::new(Notify::new()));
    let server = common::start(service).await;
    let client = reqwest::Client::new();
    let waiting: Vec<_> = (0..3)
        .map(|_| tokio::spawn(client.get(server.url("/wait")).send()))
        .collect();
    eventually("three requests in flight", || {
        counters.in_flight.load(Ordering::SeqCst) == 3
    })
    .await;
    assert_eq!(counters.finished.load(Ordering::SeqCst), 0);
    open.send(true).unwrap();
    for request in waiting {
        let res = request.await.unwrap().unwrap();
        assert_eq!(res.text().await.unwrap(), "done");
    }
    eventually("none in flight", || {
        counters.in_flight.load(Ordering::SeqCst) == 0
    })
    .await;
    assert_eq!(counters.finished.load(Ordering::SeqCst), 3);
    server.stop().await;
}

#[tokio::test]
async fn the_guard_is_held_until_the_streamed_body_has_been_sent() {
    let (_open, gate) = watch::channel(false);
    let next_chunk = Arc::new(Notify::new());
    let (service, counters) = service(gate, Arc::clone(&next_chunk));
    let server = common::start(service).await;
    let res = reqwest::Client::new()
        .get(server.url("/stream"))
        .send()
        .await
        .unwrap();
    // The head is in: the chain has returned, and the body is still to come.
    assert_eq!(res.status(), 200);
    let mut body = res.bytes_stream();
    let mut received = Vec::new();
    for i in 0..3 {
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert_eq!(counters.in_flight.load(Ordering::SeqCst), 1, "chunk {i}");
        assert_eq!(counters.finished.load(Ordering::SeqCst), 0, "chunk {i}");
        next_chunk.notify_one();
        received.extend_from_slice(&body.next().await.unwrap().unwrap());
    }
    assert!(body.next().await.is_none());
    assert_eq!(received, b"chunk 0;chunk 1;chunk 2;");
    eventually("the guards dropped with the body", || {
        counters.finished.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(counters.in_flight.load(Ordering::SeqCst), 0);
    server.stop().await;
}

//! Middleware written as synchronous `before`/`after` hooks, mixed with async middleware, over
//! real sockets: the onion order is kept, `Pass` skips the way out, `Answer` stops the chain
//! inside it, the default `handle` (what runs when a middleware is called on its own) does the
//! same as the hooks, chains longer than the 64 hook slots still run every middleware in order,
//! and a panic caught by recover (`Before::CatchPanic`) ends only the part of the chain inside it.

mod common;

use std::sync::{Arc, Mutex};

use framework::middleware::error_handler::{ErrorHandler, ErrorHandlerConfig};
use framework::middleware::recover::{Recover, RecoverConfig};
use framework::middleware::responder::{Responder, ResponderConfig};
use framework::{
    App, Before, BoxFuture, Context, Group, HttpError, Middleware, Next, Result, SharedMiddleware,
};
use http::{HeaderValue, StatusCode};

type Log = Arc<Mutex<Vec<String>>>;

/// Notes `in:<name>` and `out:<name>` in the log, and adds its name to `x-trail` on the way
/// out. `pass` makes it say [`Before::Pass`]; a request whose `x-stop` names it is answered
/// 403 by it.
struct Tag {
    name: &'static str,
    pass: bool,
    log: Log,
}

impl Middleware for Tag {
    fn before(&self, ctx: &mut Context) -> Before {
        self.log.lock().unwrap().push(format!("in:{}", self.name));
        if ctx.request_header("x-panic") == Some(self.name) {
            panic!("in {}", self.name);
        }
        if ctx.request_header("x-stop") == Some(self.name) {
            let refused = HttpError::with(StatusCode::FORBIDDEN, "test", "stopped");
            return Before::Answer(Err(refused.into()));
        }
        if self.pass {
            Before::Pass
        } else {
            Before::Continue
        }
    }

    fn after(&self, ctx: &mut Context, result: Result) -> Result {
        self.log.lock().unwrap().push(format!("out:{}", self.name));
        if ctx.request_header("x-panic-after") == Some(self.name) {
            panic!("out {}", self.name);
        }
        ctx.response_headers_mut().append(
            "x-trail",
            HeaderValue::from_str(self.name).expect("a plain name"),
        );
        result
    }
}

fn tag(name: &'static str, log: &Log) -> Arc<Tag> {
    Arc::new(Tag {
        name,
        pass: false,
        log: Arc::clone(log),
    })
}

/// An async middleware: notes `in:async` and `out:async` around the rest.
struct AsyncTag(Log);

impl Middleware for AsyncTag {
    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        Box::pin(async move {
            self.0.lock().unwrap().push("in:async".to_owned());
            let result = next.run(ctx).await;
            self.0.lock().unwrap().push("out:async".to_owned());
            result
        })
    }
}

/// Runs a hook middleware through its `handle`, as code that wraps another middleware would.
struct Wrapper(Arc<Tag>);

impl Middleware for Wrapper {
    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        self.0.handle(ctx, next)
    }
}

fn app(log: &Log) -> framework::Service {
    App::new()
        .with_state(Arc::clone(log))
        .use_middleware(tag("a", log))
        .use_middleware(Arc::new(AsyncTag(Arc::clone(log))))
        .use_middleware(Arc::new(Tag {
            name: "b",
            pass: true,
            log: Arc::clone(log),
        }))
        .use_middleware(Arc::new(Wrapper(tag("wrapped", log))))
        .use_middleware(tag("c", log))
        .use_middleware(Responder::default())
        .get("/", logged)
        .build()
        .expect("valid app")
}

async fn logged(ctx: &mut Context) -> Result<&'static str> {
    let log: &Log = ctx.state().require()?;
    log.lock().unwrap().push("handler".to_owned());
    Ok("done")
}

async fn deep(_ctx: &mut Context) -> Result<&'static str> {
    Ok("deep")
}

fn trail(response: &reqwest::Response) -> Vec<String> {
    response
        .headers()
        .get_all("x-trail")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn hooks_and_async_middleware_keep_the_onion_order() {
    let log = Log::default();
    let server = common::start(app(&log)).await;
    let response = reqwest::get(server.url("/")).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(trail(&response), ["c", "wrapped", "a"]);
    assert_eq!(response.text().await.unwrap(), "done");
    assert_eq!(
        *log.lock().unwrap(),
        [
            "in:a",
            "in:async",
            "in:b",
            "in:wrapped",
            "in:c",
            "handler",
            "out:c",
            "out:wrapped",
            "out:async",
            "out:a"
        ],
        "b passed: no way out for it"
    );
    server.stop().await;
}

#[tokio::test]
async fn an_answer_from_before_stops_the_chain_inside_it() {
    let log = Log::default();
    let server = common::start(app(&log)).await;
    let client = reqwest::Client::new();
    let response = client
        .get(server.url("/"))
        .header("x-stop", "c")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    // c answered: its own `after` does not run, the middleware outside it see the result.
    assert_eq!(trail(&response), ["wrapped", "a"]);
    assert_eq!(
        *log.lock().unwrap(),
        [
            "in:a",
            "in:async",
            "in:b",
            "in:wrapped",
            "in:c",
            "out:wrapped",
            "out:async",
            "out:a"
        ]
    );

    // The same answer from a hook middleware run through `handle`.
    log.lock().unwrap().clear();
    let response = client
        .get(server.url("/"))
        .header("x-stop", "wrapped")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    assert_eq!(trail(&response), ["a"]);
    assert_eq!(
        *log.lock().unwrap(),
        [
            "in:a",
            "in:async",
            "in:b",
            "in:wrapped",
            "out:async",
            "out:a"
        ]
    );
    server.stop().await;
}

#[tokio::test]
async fn a_chain_longer_than_the_hook_slots_runs_every_middleware_in_order() {
    // Names must be 'static: leak a few short strings, once per test run.
    let names: Vec<&'static str> = (0..70)
        .map(|i| &*Box::leak(i.to_string().into_boxed_str()))
        .collect();
    let log = Log::default();
    let mut app = App::new();
    for name in &names {
        app = app.use_middleware(tag(name, &log));
    }
    let service = app
        .use_middleware(Responder::default())
        .get("/", deep)
        .build()
        .expect("valid app");
    let server = common::start(service).await;
    let response = reqwest::get(server.url("/")).await.unwrap();
    assert_eq!(response.status(), 200);
    let expected: Vec<String> = names.iter().rev().map(|n| (*n).to_owned()).collect();
    assert_eq!(trail(&response), expected, "every after, innermost first");
    assert_eq!(response.text().await.unwrap(), "deep");
    server.stop().await;
    let log = log.lock().unwrap();
    let ins: Vec<&str> = log.iter().filter_map(|l| l.strip_prefix("in:")).collect();
    assert_eq!(ins, names, "every before, outermost first");
}

async fn refuse(_ctx: &mut Context) -> Result<&'static str> {
    Err(HttpError::with(StatusCode::CONFLICT, "test", "taken").into())
}

#[tokio::test]
async fn skipped_error_handler_and_responder_pass_requests_straight_on() {
    let not_raw = |ctx: &Context| !ctx.path().starts_with("/raw/");
    let service = App::new()
        .use_when(
            not_raw,
            ErrorHandler::new(ErrorHandlerConfig::default().json(true)),
        )
        .use_when(not_raw, Responder::new(ResponderConfig::default()))
        .get("/json/conflict", refuse)
        .get("/raw/conflict", refuse)
        .get("/json/deep", deep)
        .get("/raw/deep", deep)
        .build()
        .expect("valid app");
    let server = common::start(service).await;
    let handled = reqwest::get(server.url("/json/conflict")).await.unwrap();
    assert_eq!(handled.status(), 409);
    assert_eq!(
        handled.headers()["content-type"],
        "application/json; charset=utf-8"
    );
    let skipped = reqwest::get(server.url("/raw/conflict")).await.unwrap();
    assert_eq!(skipped.status(), 409);
    assert_eq!(
        skipped.headers()["content-type"],
        "text/plain; charset=utf-8"
    );

    let converted = reqwest::get(server.url("/json/deep")).await.unwrap();
    assert_eq!(converted.text().await.unwrap(), "deep");
    // No responder: the handler's value is never turned into bytes.
    let unconverted = reqwest::get(server.url("/raw/deep")).await.unwrap();
    assert_eq!(unconverted.status(), 200);
    assert_eq!(unconverted.text().await.unwrap(), "");
    server.stop().await;
}

/// Recover, noting `caught:<name>:<panic text>` in the log.
fn recover(name: &'static str, log: &Log) -> Recover {
    let log = Arc::clone(log);
    Recover::new(
        RecoverConfig::default().on_panic(Some(Arc::new(move |text, _ctx| {
            log.lock().unwrap().push(format!("caught:{name}:{text}"));
        }))),
    )
}

/// Runs any middleware through its `handle`.
struct Through(SharedMiddleware);

impl Middleware for Through {
    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        self.0.handle(ctx, next)
    }
}

async fn boom(_ctx: &mut Context) -> Result<&'static str> {
    panic!("boom");
}

#[tokio::test]
async fn a_caught_panic_ends_only_the_chain_inside_the_catcher() {
    let log = Log::default();
    let service = App::new()
        .use_middleware(tag("a", &log))
        .use_middleware(recover("outer", &log))
        .use_middleware(tag("b", &log))
        .get("/boom", boom)
        // A second recover inside the part the first one catches for (boxed).
        .group(
            Group::new("/inner")
                .use_middleware(recover("inner", &log))
                .use_middleware(tag("c", &log))
                .get("/boom", boom)
                .get("/fine", deep),
        )
        // Recover run through its `handle`, as a wrapping middleware would.
        .group(
            Group::new("/through")
                .use_middleware(Arc::new(Through(framework::share(recover(
                    "through", &log,
                )))))
                .use_middleware(tag("c", &log))
                .get("/boom", boom),
        )
        .build()
        .expect("valid app");
    let server = common::start(service).await;
    let client = reqwest::Client::new();
    // Path, a header that makes a middleware panic, the log, the `x-trail` answer header.
    type Case<'a> = (
        &'a str,
        Option<(&'a str, &'a str)>,
        &'a [&'a str],
        &'a [&'a str],
    );
    let cases: [Case<'_>; 7] = [
        (
            "/boom",
            None,
            &["in:a", "in:b", "caught:outer:boom", "out:a"],
            &["a"],
        ),
        (
            "/inner/boom",
            None,
            &[
                "in:a",
                "in:b",
                "in:c",
                "caught:inner:boom",
                "out:b",
                "out:a",
            ],
            &["b", "a"],
        ),
        (
            "/through/boom",
            None,
            &[
                "in:a",
                "in:b",
                "in:c",
                "caught:through:boom",
                "out:b",
                "out:a",
            ],
            &["b", "a"],
        ),
        // A panic in a `before`, and in an `after`, inside the first catcher (in place) and
        // inside the nested one (boxed).
        (
            "/boom",
            Some(("x-panic", "b")),
            &["in:a", "in:b", "caught:outer:in b", "out:a"],
            &["a"],
        ),
        (
            "/inner/fine",
            Some(("x-panic-after", "b")),
            &[
                "in:a",
                "in:b",
                "in:c",
                "out:c",
                "out:b",
                "caught:outer:out b",
                "out:a",
            ],
            &["a"],
        ),
        (
            "/inner/boom",
            Some(("x-panic", "c")),
            &[
                "in:a",
                "in:b",
                "in:c",
                "caught:inner:in c",
                "out:b",
                "out:a",
            ],
            &["b", "a"],
        ),
        (
            "/inner/fine",
            Some(("x-panic-after", "c")),
            &[
                "in:a",
                "in:b",
                "in:c",
                "out:c",
                "caught:inner:out c",
                "out:b",
                "out:a",
            ],
            &["b", "a"],
        ),
    ];
    for (path, header, expected_log, expected_trail) in cases {
        log.lock().unwrap().clear();
        let mut request = client.get(server.url(path));
        if let Some((name, value)) = header {
            request = request.header(name, value);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 500, "{path} {header:?}");
        assert_eq!(trail(&response), expected_trail, "{path} {header:?}");
        assert_eq!(
            response.text().await.unwrap(),
            "statusCode=500, category=framework-recover, message=internal server error"
        );
        assert_eq!(*log.lock().unwrap(), expected_log, "{path} {header:?}");
    }
    // The app keeps answering.
    let response = client.get(server.url("/inner/fine")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    server.stop().await;
}

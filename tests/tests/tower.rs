//! tower both ways over real sockets (feature `tower`): tower-http's layers inside a
//! controller's chain and on the app (the request they change reaches the handler, the
//! response they change reaches the client, their errors go through the error handler,
//! readiness is waited for); `ServeDir` and an axum `Router` mounted as endpoints; the app
//! nested in an axum `Router`, wrapped in tower-http layers and served by hyper-util.

mod common;

use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use framework::body::BodyStream;
use framework::client_ip::ClientIpExt;
use framework::http::{HeaderValue, StatusCode, header};
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::responder::Responder;
use framework::tower::{AppService, ConnectInfo, layer};
use framework::{App, Context, FromState, HttpError, Result, Service, controller};
use tower_http::compression::CompressionLayer;
use tower_http::cors::{Any, CorsLayer};
use tower_http::decompression::RequestDecompressionLayer;
use tower_http::set_header::SetRequestHeaderLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

/// The statuses the trace layer saw on its way out, in order.
type Seen = Arc<Mutex<Vec<StatusCode>>>;

/// Text long enough for the compression layer to compress.
fn long_text() -> String {
    "tower both ways; ".repeat(200)
}

#[derive(FromState)]
struct Layered;

/// Every route of this controller runs the tower-http layers registered under these names.
#[controller(
    prefix = "/layered",
    middleware(trace, cors, set_header, decompress, timeout, compress)
)]
impl Layered {
    /// The header the set-header layer put on the request.
    #[get("/header")]
    async fn header(&self, ctx: &mut Context) -> String {
        ctx.request_header("x-from-layer")
            .unwrap_or("none")
            .to_owned()
    }

    /// The request body as the handler reads it (after the decompression layer), and the
    /// `Content-Encoding` it still carries.
    #[post("/body")]
    async fn body(&self, ctx: &mut Context) -> Result<String> {
        let coding = ctx
            .request_header("content-encoding")
            .unwrap_or("identity")
            .to_owned();
        let bytes = ctx
            .take_raw_body()
            .read_limited(64 * 1024)
            .await
            .map_err(|e| HttpError::with(StatusCode::BAD_REQUEST, "test", format!("{e:?}")))?;
        Ok(format!("{coding}:{}", String::from_utf8_lossy(&bytes)))
    }

    /// Slower than the timeout layer allows.
    #[get("/slow")]
    async fn slow(&self) -> String {
        tokio::time::sleep(Duration::from_secs(5)).await;
        "late".to_owned()
    }

    /// A streamed body, which the compression layer compresses.
    #[get("/stream")]
    async fn stream(&self) -> BodyStream {
        let chunks = long_text()
            .into_bytes()
            .chunks(500)
            .map(|c| Ok::<_, std::io::Error>(Bytes::copy_from_slice(c)))
            .collect::<Vec<_>>();
        BodyStream::from_stream(futures_util::stream::iter(chunks))
    }

    /// An error, which the layers see as its status and the error handler answers.
    #[get("/fail")]
    async fn fail(&self) -> Result<String> {
        Err(HttpError::with(StatusCode::CONFLICT, "items", "taken").into())
    }
}

/// The app: the controller above with its layers registered by name, plus routes with
/// layers mounted on the app or with `use_when`.
fn app(seen: &Seen) -> App {
    let trace_seen = Arc::clone(seen);
    let trace = TraceLayer::new_for_http().on_response(
        move |response: &http::Response<_>, _latency: Duration, _span: &tracing::Span| {
            trace_seen
                .lock()
                .expect("not poisoned")
                .push(response.status());
        },
    );
    App::new()
        .register_middleware("trace", layer(trace))
        .register_middleware(
            "cors",
            layer(CorsLayer::new().allow_origin(Any).expose_headers(Any)),
        )
        .register_middleware(
            "set_header",
            layer(SetRequestHeaderLayer::overriding(
                header::HeaderName::from_static("x-from-layer"),
                HeaderValue::from_static("set-by-layer"),
            )),
        )
        .register_middleware("decompress", layer(RequestDecompressionLayer::new()))
        .register_middleware(
            "timeout",
            layer(TimeoutLayer::with_status_code(
                StatusCode::REQUEST_TIMEOUT,
                Duration::from_millis(200),
            )),
        )
        .register_middleware("compress", layer(CompressionLayer::new()))
}

/// An app without the controller above (`App::bare`), with `outer` mounted outside the error
/// handler and the responder, as `App::new` would place them.
fn plain(outer: impl FnOnce(App) -> App) -> App {
    outer(App::bare())
        .use_middleware(ErrorHandler::default())
        .use_middleware(Responder::default())
}

fn no_gzip_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_gzip()
        .build()
        .expect("client")
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("gzip");
    encoder.finish().expect("gzip")
}

fn gunzip(bytes: &[u8]) -> String {
    let mut text = String::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_string(&mut text)
        .expect("gzip body");
    text
}

#[tokio::test]
async fn a_layer_s_request_header_reaches_the_handler_and_its_response_headers_the_client() {
    let seen = Seen::default();
    let server = common::start(app(&seen).build().expect("builds")).await;
    let response = reqwest::Client::new()
        .get(server.url("/layered/header"))
        .header("origin", "https://app.example.com")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200);
    assert_eq!(
        response
            .headers()
            .get("access-control-allow-origin")
            .and_then(|v| v.to_str().ok()),
        Some("*"),
        "the CORS layer's header reaches the client"
    );
    assert!(
        response.headers().contains_key("x-request-id"),
        "the framework's own headers are kept"
    );
    assert_eq!(response.text().await.expect("body"), "set-by-layer");
    assert_eq!(*seen.lock().expect("seen"), [StatusCode::OK]);
    server.stop().await;
}

#[tokio::test]
async fn a_chain_error_passes_the_layers_and_is_answered_by_the_error_handler() {
    let seen = Seen::default();
    let server = common::start(app(&seen).build().expect("builds")).await;
    let response = common::browser()
        .get(server.url("/layered/fail"))
        .header("origin", "https://app.example.com")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 409);
    assert_eq!(
        response
            .headers()
            .get("access-control-allow-origin")
            .and_then(|v| v.to_str().ok()),
        Some("*"),
        "the layer's headers stay on the error's answer"
    );
    let body: serde_json::Value = response.json().await.expect("JSON error");
    assert_eq!(body["category"], "items");
    assert_eq!(body["message"], "taken");
    assert_eq!(
        *seen.lock().expect("seen"),
        [StatusCode::CONFLICT],
        "the trace layer saw the error's status"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_decompression_layer_hands_the_handler_the_decoded_body() {
    let seen = Seen::default();
    let server = common::start(app(&seen).build().expect("builds")).await;
    let response = reqwest::Client::new()
        .post(server.url("/layered/body"))
        .header("content-encoding", "gzip")
        .body(gzip(b"hello through the layer"))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.text().await.expect("body"),
        "identity:hello through the layer",
        "decoded, and Content-Encoding taken off by the layer"
    );
    // A coding the layer does not accept: its own 415, through the rest of the layers.
    let refused = reqwest::Client::new()
        .post(server.url("/layered/body"))
        .header("content-encoding", "x-unknown")
        .body("x")
        .send()
        .await
        .expect("request");
    assert_eq!(refused.status(), 415);
    // Not gzip at all: the body fails as it is read, which the handler answers.
    let corrupt = reqwest::Client::new()
        .post(server.url("/layered/body"))
        .header("content-encoding", "gzip")
        .body("not gzip")
        .send()
        .await
        .expect("request");
    assert_eq!(corrupt.status(), 400);
    server.stop().await;
}

#[tokio::test]
async fn a_timeout_layer_answers_for_a_slow_handler() {
    let seen = Seen::default();
    let server = common::start(app(&seen).build().expect("builds")).await;
    let started = std::time::Instant::now();
    let response = reqwest::get(server.url("/layered/slow"))
        .await
        .expect("request");
    assert_eq!(response.status(), 408);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "answered at the layer's deadline, not the handler's"
    );
    assert_eq!(*seen.lock().expect("seen"), [StatusCode::REQUEST_TIMEOUT]);
    server.stop().await;
}

#[tokio::test]
async fn a_compression_layer_compresses_a_streamed_body() {
    let seen = Seen::default();
    let server = common::start(app(&seen).build().expect("builds")).await;
    let response = no_gzip_client()
        .get(server.url("/layered/stream"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200);
    assert_eq!(
        response
            .headers()
            .get("content-encoding")
            .and_then(|v| v.to_str().ok()),
        Some("gzip")
    );
    let body = response.bytes().await.expect("body");
    assert!(body.len() < long_text().len());
    assert_eq!(gunzip(&body), long_text());
    server.stop().await;
}

/// On the app, outside the error handler and the responder: a handler's JSON value is
/// compressed, and a CORS preflight is answered by the layer alone.
#[tokio::test]
async fn layers_on_the_app_see_the_responder_s_bytes_and_answer_preflights() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let service = plain(|app| {
        app.use_middleware(layer(
            CorsLayer::new()
                .allow_origin(Any)
                .allow_methods([http::Method::GET, http::Method::PUT]),
        ))
        .use_middleware(layer(CompressionLayer::new()))
    })
    .get("/items", move |_ctx: &mut Context| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Ok(serde_json::json!({ "items": long_text() })) }
    })
    .put("/items", |_ctx: &mut Context| async { Ok("put") })
    .build()
    .expect("builds");
    let server = common::start(service).await;
    let response = no_gzip_client()
        .get(server.url("/items"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .expect("text")
            .starts_with("application/json")
    );
    assert_eq!(
        response
            .headers()
            .get("content-encoding")
            .map(|v| v.as_bytes()),
        Some(&b"gzip"[..])
    );
    let json: serde_json::Value =
        serde_json::from_str(&gunzip(&response.bytes().await.expect("body"))).expect("JSON");
    assert_eq!(json["items"], long_text());

    let preflight = reqwest::Client::new()
        .request(http::Method::OPTIONS, server.url("/items"))
        .header("origin", "https://app.example.com")
        .header("access-control-request-method", "PUT")
        .send()
        .await
        .expect("request");
    assert_eq!(preflight.status(), 200);
    let methods = preflight
        .headers()
        .get("access-control-allow-methods")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(methods.contains("PUT"), "{methods}");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "no handler ran for the preflight"
    );
    server.stop().await;
}

/// A layer's own error goes through the error handler: a plain error as a 500 in
/// `framework-tower`, an `HttpError` with its own status.
#[tokio::test]
async fn a_layer_s_error_is_answered_by_the_error_handler() {
    let slow = |_ctx: &mut Context| async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        Ok("late")
    };
    let service = plain(|app| app)
        .use_when(
            |ctx: &Context| ctx.path() == "/plain",
            layer(tower::timeout::TimeoutLayer::new(Duration::from_millis(
                100,
            ))),
        )
        .use_when(
            |ctx: &Context| ctx.path() == "/mapped",
            layer(
                tower::ServiceBuilder::new()
                    .map_err(|_: tower::BoxError| {
                        HttpError::with(StatusCode::GATEWAY_TIMEOUT, "deadline", "too slow")
                    })
                    .timeout(Duration::from_millis(100)),
            ),
        )
        .get("/plain", slow)
        .get("/mapped", slow)
        .build()
        .expect("builds");
    let server = common::start(service).await;
    let plain = common::browser()
        .get(server.url("/plain"))
        .send()
        .await
        .expect("request");
    assert_eq!(plain.status(), 500);
    let body: serde_json::Value = plain.json().await.expect("JSON error");
    assert_eq!(body["category"], "framework-tower");
    assert_eq!(body["message"], "request timed out");

    let mapped = common::browser()
        .get(server.url("/mapped"))
        .send()
        .await
        .expect("request");
    assert_eq!(mapped.status(), 504);
    let body: serde_json::Value = mapped.json().await.expect("JSON error");
    assert_eq!(body["category"], "deadline");
    server.stop().await;
}

/// A concurrency limit made once, at mount, is shared by every request: the second of two
/// requests waits for the first (readiness awaited, the worker free meanwhile: the server
/// task answers a third route while both are in flight).
#[tokio::test(flavor = "current_thread")]
async fn a_layer_s_readiness_is_awaited_without_blocking_the_worker() {
    let in_handler = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (counter, peak) = (Arc::clone(&in_handler), Arc::clone(&most));
    let service = plain(|app| app)
        .use_when(
            |ctx: &Context| ctx.path() == "/limited",
            layer(tower::limit::ConcurrencyLimitLayer::new(1)),
        )
        .get("/limited", move |_ctx: &mut Context| {
            let (counter, peak) = (Arc::clone(&counter), Arc::clone(&peak));
            async move {
                let now = counter.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(300)).await;
                counter.fetch_sub(1, Ordering::SeqCst);
                Ok("done")
            }
        })
        .get("/free", |_ctx: &mut Context| async { Ok("free") })
        .build()
        .expect("builds");
    let server = common::start(service).await;
    let client = reqwest::Client::new();
    let started = std::time::Instant::now();
    let first = tokio::spawn(client.get(server.url("/limited")).send());
    let second = tokio::spawn(client.get(server.url("/limited")).send());
    // One is in the handler; the other waits for the layer's readiness.
    assert!(common::eventually(|| in_handler.load(Ordering::SeqCst) == 1).await);
    let free = client.get(server.url("/free")).send().await.expect("free");
    assert_eq!(free.text().await.expect("body"), "free");
    assert!(
        started.elapsed() < Duration::from_millis(300),
        "the worker answered another route meanwhile"
    );
    for request in [first, second] {
        let response = request.await.expect("task").expect("request");
        assert_eq!(response.status(), 200);
    }
    assert_eq!(most.load(Ordering::SeqCst), 1, "one at a time");
    assert!(
        started.elapsed() >= Duration::from_millis(600),
        "the second waited"
    );
    server.stop().await;
}

/// Marks the answers it wraps.
async fn around(ctx: &mut Context, next: framework::Next<'_>) -> Result {
    next.run(ctx).await?;
    ctx.set_response_header("x-around", HeaderValue::from_static("app"));
    Ok(())
}

/// `ServeDir` and an axum `Router` as endpoints, with the route's middleware around them.
#[tokio::test]
async fn serve_dir_and_an_axum_router_are_endpoints() {
    let dir = common::temp_dir("tower-serve-dir");
    std::fs::write(dir.join("hello.txt"), "hello from ServeDir").expect("write");
    let axum_router = axum::Router::new()
        .route("/", axum::routing::get(|| async { "axum root" }))
        .route(
            "/users/{id}",
            axum::routing::get(
                |axum::extract::Path(id): axum::extract::Path<u32>| async move {
                    format!("axum user {id}")
                },
            )
            .post(|body: String| async move { format!("axum got {body}") }),
        );
    let service = plain(|app| app)
        .use_middleware(framework::from_fn(around))
        .nest_service("/static", tower_http::services::ServeDir::new(&dir))
        .nest_service("/axum", axum_router)
        .build()
        .expect("builds");
    let server = common::start(service).await;
    let client = reqwest::Client::new();

    let file = client
        .get(server.url("/static/hello.txt"))
        .send()
        .await
        .expect("file");
    assert_eq!(file.status(), 200);
    assert_eq!(
        file.headers()["x-around"],
        "app",
        "the app's middleware ran around it"
    );
    assert_eq!(file.text().await.expect("body"), "hello from ServeDir");
    let missing = client
        .get(server.url("/static/none.txt"))
        .send()
        .await
        .expect("missing");
    assert_eq!(missing.status(), 404);

    let user = client
        .get(server.url("/axum/users/7"))
        .send()
        .await
        .expect("user");
    assert_eq!(user.text().await.expect("body"), "axum user 7");
    let root = client.get(server.url("/axum")).send().await.expect("root");
    assert_eq!(root.text().await.expect("body"), "axum root");
    let posted = client
        .post(server.url("/axum/users/7"))
        .body("a body")
        .send()
        .await
        .expect("post");
    assert_eq!(posted.text().await.expect("body"), "axum got a body");
    let not_axum = client
        .get(server.url("/axum/nothing"))
        .send()
        .await
        .expect("404");
    assert_eq!(not_axum.status(), 404, "axum's own 404");
    server.stop().await;
    let _ = std::fs::remove_dir_all(dir);
}

/// A nested service's redirects stay under its prefix and on this site: `ServeDir` sees
/// `/sub` for `GET /files/sub` and answers `Location: /sub/`, which must reach the client as
/// `/files/sub/`; `GET /files//sub` must not become `//sub/`, the host `sub` to a browser.
#[tokio::test]
async fn a_nested_services_redirect_keeps_its_prefix_and_the_site() {
    let dir = common::temp_dir("tower-serve-dir-redirect");
    std::fs::create_dir_all(dir.join("sub")).expect("mkdir");
    std::fs::write(dir.join("sub/index.html"), "sub index").expect("write");
    let nested = plain(|app| app)
        .nest_service("/files", tower_http::services::ServeDir::new(&dir))
        .build()
        .expect("builds");
    let at_root = plain(|app| app)
        .nest_service("/", tower_http::services::ServeDir::new(&dir))
        .build()
        .expect("builds");
    for (service, cases) in [
        (
            nested,
            [
                ("/files/sub", "/files/sub/"),
                ("/files//sub", "/files/sub/"),
                ("/files/sub?x=1", "/files/sub/?x=1"),
            ],
        ),
        (
            at_root,
            [("/sub", "/sub/"), ("//sub", "/sub/"), ("///sub", "/sub/")],
        ),
    ] {
        let server = common::start(service).await;
        for (path, location) in cases {
            let res = common::raw_get(server.addr, path).await;
            assert!((300..400).contains(&res.status), "{path}: {}", res.head);
            assert_eq!(res.header("location"), Some(location), "{path}");
        }
        server.stop().await;
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The app with a JSON route and one that reports what it knows of the connection.
fn tower_app() -> Service {
    plain(|app| app)
        .get("/json", |_ctx: &mut Context| async {
            Ok(serde_json::json!({ "message": "Hello, World!", "padding": long_text() }))
        })
        .get("/peer", |ctx: &mut Context| {
            let peer = format!(
                "{} https={}",
                ctx.connection().remote_addr().ip(),
                ctx.is_https()
            );
            async move { Ok(peer) }
        })
        .build()
        .expect("builds")
}

/// The app nested in an axum `Router`, beside axum's own route, with a tower-http layer
/// around the whole.
#[tokio::test]
async fn the_app_is_nested_in_an_axum_router() {
    let router = axum::Router::new()
        .route("/axum", axum::routing::get(|| async { "axum" }))
        .nest_service("/fw", AppService::new(tower_app()))
        .layer(tower_http::set_header::SetResponseHeaderLayer::overriding(
            header::HeaderName::from_static("x-outer"),
            HeaderValue::from_static("axum"),
        ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = tokio::spawn(async move { axum::serve(listener, router).await });
    let client = no_gzip_client();

    let json = client
        .get(format!("http://{addr}/fw/json"))
        .send()
        .await
        .expect("json");
    assert_eq!(json.status(), 200);
    assert_eq!(json.headers()["x-outer"], "axum");
    assert!(
        json.headers().contains_key("x-request-id"),
        "answered by the app"
    );
    let value: serde_json::Value = json.json().await.expect("JSON");
    assert_eq!(value["message"], "Hello, World!");
    let own = client
        .get(format!("http://{addr}/axum"))
        .send()
        .await
        .expect("axum");
    assert_eq!(own.text().await.expect("body"), "axum");
    let missing = client
        .get(format!("http://{addr}/fw/none"))
        .send()
        .await
        .expect("404");
    assert_eq!(missing.status(), 404);
    assert!(
        missing.headers().contains_key("x-request-id"),
        "the app's 404"
    );
    let peer = client
        .get(format!("http://{addr}/fw/peer"))
        .send()
        .await
        .expect("peer");
    assert_eq!(
        peer.text().await.expect("body"),
        "0.0.0.0 https=false",
        "no connection facts given: the unspecified address"
    );
    server.abort();
}

/// The app served by hyper-util's server through its tower `Service`, wrapped in tower-http's
/// compression, with the connection's facts given as `ConnectInfo`.
#[tokio::test]
async fn the_app_wrapped_in_tower_http_layers_is_served_by_hyper_util() {
    let app = tower::ServiceBuilder::new()
        .layer(CompressionLayer::new())
        .service(AppService::new(tower_app()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = tokio::spawn(async move {
        loop {
            let Ok((stream, peer)) = listener.accept().await else {
                return;
            };
            let app = app.clone();
            tokio::spawn(async move {
                let service = tower::ServiceBuilder::new()
                    .map_request(move |mut request: http::Request<hyper::body::Incoming>| {
                        request.extensions_mut().insert(ConnectInfo {
                            remote_addr: peer,
                            tls: true,
                        });
                        request
                    })
                    .service(app);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(
                        hyper_util::rt::TokioIo::new(stream),
                        hyper_util::service::TowerToHyperService::new(service),
                    )
                    .await;
            });
        }
    });
    let client = no_gzip_client();
    let json = client
        .get(format!("http://{addr}/json"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .expect("json");
    assert_eq!(json.status(), 200);
    assert_eq!(json.headers()["content-encoding"], "gzip");
    let value: serde_json::Value =
        serde_json::from_str(&gunzip(&json.bytes().await.expect("body"))).expect("JSON");
    assert_eq!(value["message"], "Hello, World!");
    let peer = client
        .get(format!("http://{addr}/peer"))
        .send()
        .await
        .expect("peer");
    assert_eq!(peer.text().await.expect("body"), "127.0.0.1 https=true");
    let head = client
        .head(format!("http://{addr}/json"))
        .send()
        .await
        .expect("head");
    assert_eq!(head.status(), 200);
    assert!(head.headers().contains_key("content-length"));
    server.abort();
}

/// Reads the raw body (as the layers left it) within 1 KiB and answers its length; a body
/// over a limit is a 413.
async fn body_length(ctx: &mut Context) -> Result<String> {
    match ctx.take_raw_body().read_limited(1024).await {
        Ok(bytes) => Ok(bytes.len().to_string()),
        Err(framework::body::ReadError::TooLarge) => {
            Err(
                HttpError::with(StatusCode::PAYLOAD_TOO_LARGE, "test", "body over its limit")
                    .into(),
            )
        }
        Err(e) => Err(HttpError::with(StatusCode::BAD_REQUEST, "test", format!("{e:?}")).into()),
    }
}

/// What `/json` binds.
#[derive(serde::Deserialize, framework::Validate)]
struct Named {
    name: String,
}

/// A JSON body bound after the body parser read it.
async fn bound(ctx: &mut Context) -> Result<serde_json::Value> {
    let named: Named = ctx.bind()?;
    Ok(serde_json::json!({ "name": named.name }))
}

/// A body limit layer in front of the chain: a body of its limit passes, one byte more is
/// refused, by the layer when the length is announced and as the body is read when it is
/// chunked; a decompression layer outside the body parser hands it the decoded JSON.
#[tokio::test]
async fn body_layers_limit_and_decode_what_the_chain_reads() {
    let service = plain(|app| {
        app.use_when(
            |ctx: &Context| ctx.path() == "/limited",
            layer(tower_http::limit::RequestBodyLimitLayer::new(16)),
        )
        .use_when(
            |ctx: &Context| ctx.path() == "/json",
            layer(RequestDecompressionLayer::new()),
        )
    })
    .use_middleware(framework::middleware::body_parser::BodyParser::default())
    .post("/limited", body_length)
    .post("/json", bound)
    .build()
    .expect("builds");
    let server = common::start(service).await;
    let client = reqwest::Client::new();
    let send = |body: reqwest::Body| client.post(server.url("/limited")).body(body).send();

    let fits = send("0123456789abcdef".into()).await.expect("request");
    assert_eq!(fits.status(), 200);
    assert_eq!(fits.text().await.expect("body"), "16");
    let announced = send("0123456789abcdefg".into()).await.expect("request");
    assert_eq!(
        announced.status(),
        413,
        "refused by the layer on its Content-Length"
    );
    let chunk = |text: &'static str| Ok::<_, std::io::Error>(Bytes::from_static(text.as_bytes()));
    let chunked = send(reqwest::Body::wrap_stream(futures_util::stream::iter([
        chunk("0123456789"),
        chunk("abcdefg"),
    ])))
    .await
    .expect("request");
    assert_eq!(chunked.status(), 413, "cut as the chunked body is read");
    let chunked_fits = send(reqwest::Body::wrap_stream(futures_util::stream::iter([
        chunk("0123456789"),
        chunk("abcdef"),
    ])))
    .await
    .expect("request");
    assert_eq!(chunked_fits.text().await.expect("body"), "16");

    let json = client
        .post(server.url("/json"))
        .header("content-type", "application/json")
        .header("content-encoding", "gzip")
        .body(gzip(br#"{"name":"ada"}"#))
        .send()
        .await
        .expect("request");
    assert_eq!(json.status(), 200);
    let value: serde_json::Value = json.json().await.expect("JSON");
    assert_eq!(value["name"], "ada");
    server.stop().await;
}

/// tower's `Buffer` calls the rest of the chain from its own worker task: the request still
/// reaches the chain, and the chain's answer the client.
#[tokio::test]
async fn a_layer_that_calls_from_another_task_still_runs_the_chain() {
    let service = plain(|app| app.use_middleware(layer(tower::buffer::BufferLayer::new(8))))
        .get("/hello", |_ctx: &mut Context| async {
            Ok("through the buffer")
        })
        .build()
        .expect("builds");
    let server = common::start(service).await;
    for _ in 0..3 {
        let response = reqwest::get(server.url("/hello")).await.expect("request");
        assert_eq!(response.status(), 200);
        assert_eq!(response.text().await.expect("body"), "through the buffer");
    }
    server.stop().await;
}

/// The OpenAPI document still lists the controller's routes whose chain has tower layers.
#[tokio::test]
async fn the_openapi_document_describes_routes_with_tower_layers() {
    let seen = Seen::default();
    let server = common::start(app(&seen).openapi("/openapi.json").build().expect("builds")).await;
    let doc: serde_json::Value = reqwest::get(server.url("/openapi.json"))
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    for path in ["/layered/header", "/layered/body", "/layered/fail"] {
        assert!(doc["paths"][path].is_object(), "{path} in {}", doc["paths"]);
    }
    assert!(doc["paths"]["/layered/body"]["post"].is_object());
    server.stop().await;
}

/// A tonic gRPC health service beside REST routes on one port, over HTTP/2 with prior
/// knowledge, inside the app's default chain (`App::new`, with the controller above mounted):
/// a unary call whose `grpc-status`
/// comes in the response's trailers, an error status, a server-streaming call that sees a
/// change while it is open, and a REST route on the same port over the same protocol.
#[tokio::test]
async fn a_tonic_grpc_service_is_served_beside_rest_over_http2() {
    use tonic_health::ServingStatus;
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_check_response::ServingStatus as Answered;
    use tonic_health::pb::health_client::HealthClient;

    let (reporter, health) = tonic_health::server::health_reporter();
    reporter
        .set_service_status("users", ServingStatus::Serving)
        .await;
    let service = app(&Seen::default())
        .use_middleware(framework::from_fn(around))
        .get("/json", |_ctx: &mut Context| async {
            Ok(serde_json::json!({ "message": "Hello, World!" }))
        })
        .route_service("/grpc.health.v1.Health/*", health)
        .build()
        .expect("builds");
    let server = common::start(service).await;

    let channel = tonic::transport::Endpoint::from_shared(server.url(""))
        .expect("endpoint")
        .connect()
        .await
        .expect("connect over h2c");
    let mut grpc = HealthClient::new(channel);
    let check = |service: &str| HealthCheckRequest {
        service: service.to_owned(),
    };

    // Unary: the answer's status is in the trailers; tonic fails the call without them.
    let serving = grpc.check(check("users")).await.expect("check users");
    assert_eq!(serving.into_inner().status(), Answered::Serving);
    let unknown = grpc
        .check(check("nobody"))
        .await
        .expect_err("an unknown service");
    assert_eq!(unknown.code(), tonic::Code::NotFound, "{unknown:?}");

    // Server streaming: the first status at once, the next when it changes.
    let mut watch = grpc
        .watch(check("users"))
        .await
        .expect("watch")
        .into_inner();
    let first = watch.message().await.expect("first").expect("a message");
    assert_eq!(first.status(), Answered::Serving);
    reporter
        .set_service_status("users", ServingStatus::NotServing)
        .await;
    let second = tokio::time::timeout(Duration::from_secs(5), watch.message())
        .await
        .expect("the change arrives while the stream is open")
        .expect("second")
        .expect("a message");
    assert_eq!(second.status(), Answered::NotServing);
    drop(watch);

    // The same unary call on a bare HTTP/2 stream: the answer's status is in its trailers.
    let tcp = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    let (send, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    tokio::spawn(connection);
    let mut send = send.ready().await.expect("ready");
    let request = http::Request::post(server.url("/grpc.health.v1.Health/Check"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .expect("request");
    let (answer, mut body) = send.send_request(request, false).expect("send");
    // One uncompressed gRPC message: HealthCheckRequest { service: "users" } (field 1, 5 bytes).
    let message = b"\x0a\x05users";
    let mut framed = vec![0u8];
    framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
    framed.extend_from_slice(message);
    body.send_data(Bytes::from(framed), true)
        .expect("send body");
    let answer = answer.await.expect("answer");
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["content-type"], "application/grpc");
    assert!(
        !answer.headers().contains_key("grpc-status"),
        "a success's status comes after the message, in the trailers"
    );
    let mut answer = answer.into_body();
    let mut received = Vec::new();
    while let Some(chunk) = answer.data().await {
        let chunk = chunk.expect("data");
        let _ = answer.flow_control().release_capacity(chunk.len());
        received.extend_from_slice(&chunk);
    }
    // NotServing (2) since the watch above: field 1, varint 2.
    assert_eq!(received, b"\x00\x00\x00\x00\x02\x08\x02", "one message");
    let trailers = answer
        .trailers()
        .await
        .expect("trailers")
        .expect("the answer ends with trailers");
    assert_eq!(trailers["grpc-status"], "0");

    // REST on the same HTTP/2 connection as that gRPC call: another stream of it.
    let mut send = send.ready().await.expect("ready");
    let request = http::Request::get(server.url("/json"))
        .body(())
        .expect("request");
    let (json, _) = send.send_request(request, true).expect("send");
    let json = json.await.expect("answer");
    assert_eq!(json.status(), 200);
    assert_eq!(json.headers()["x-around"], "app");
    let mut body = json.into_body();
    let mut received = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.expect("data");
        let _ = body.flow_control().release_capacity(chunk.len());
        received.extend_from_slice(&chunk);
    }
    let value: serde_json::Value = serde_json::from_slice(&received).expect("json body");
    assert_eq!(value["message"], "Hello, World!");
    server.stop().await;
}

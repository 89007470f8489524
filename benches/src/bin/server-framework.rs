//! The benchmark routes on this framework: controller macros, responder, error handler, body
//! parser, and compress (gzip only, at the shared level) — the idiomatic way to write them —
//! plus `StaticServe` on `/static/*` and `Proxy` on `/proxy/*`. With `BENCH_METRICS=1` the
//! app also has the Prometheus metrics (`metrics.stats()` outermost, `/metrics`), to measure
//! what they cost a request. With `BENCH_TOWER=layer` the app's outermost middleware is a
//! no-op tower layer (`tower_layer::Identity` through `framework::tower::layer`), with
//! `BENCH_TOWER=native` the same no-op as a `from_fn` middleware: what the tower adapter
//! costs a request. With `BENCH_TOWER=app-service` the same app is served as a tower service
//! (`framework::tower::AppService`) by hyper's own HTTP/1.1 connection, as raw hyper's server
//! is, instead of by the framework's server: what the framework's server adds or saves.
//! Given a certificate (`BENCH_TLS_CERT`, `BENCH_TLS_KEY`), the same app also answers over TLS
//! (the framework's `Tls`: ALPN `h2` or `http/1.1`) on its port plus 1000.
//! Built with the feature `api-trait`, the routes but `/big` are declared on an `#[api]`
//! trait that `Bench` implements (`#[controller] impl BenchApi for Bench`) instead of on its
//! impl block: what the trait form costs a request. A build-time switch, since controllers
//! are registered when the program is linked.

use framework::extract::Json;
use framework::middleware::body_parser::BodyParser;
use framework::middleware::compress::{Compress, CompressConfig, Compressor, Gzip};
use framework::middleware::error_handler::ErrorHandler;
use framework::middleware::metrics::{Metrics, MetricsConfig};
use framework::middleware::proxy::{Proxy, ProxyConfig};
use framework::middleware::responder::Responder;
use framework::middleware::static_serve::{DirectorySource, StaticServe, StaticServeConfig};
use framework::{App, Context, FromState, Result, State, controller};

use benches::{Credentials, GZIP_LEVEL, Item, Message, PLAINTEXT, ServerArgs, big_document};

struct Bench {
    big: &'static [Item],
}

impl FromState for Bench {
    fn from_state(state: &State) -> Result<Self> {
        Ok(Self {
            big: state.require::<&'static [Item]>()?,
        })
    }
}

#[cfg(not(feature = "api-trait"))]
#[controller]
impl Bench {
    #[get("/plaintext")]
    async fn plaintext(&self, _ctx: &mut Context) -> Result<&'static str> {
        Ok(PLAINTEXT)
    }

    #[get("/json")]
    async fn json(&self, _ctx: &mut Context) -> Result<Message> {
        Ok(Message { message: PLAINTEXT })
    }

    #[post("/echo")]
    async fn echo(&self, ctx: &mut Context) -> Result<Credentials> {
        Ok(ctx.bind::<Credentials>()?)
    }

    /// `/echo` with a typed argument: the body is made before the method runs. The path is as
    /// long as `/echo`'s, since parsing the request target costs per byte.
    #[post("/ech2")]
    async fn echo_typed(&self, body: Json<Credentials>) -> Result<Credentials> {
        Ok(body.0)
    }
}

/// The same routes declared on a trait (feature `api-trait`).
#[cfg(feature = "api-trait")]
#[framework::api]
trait BenchApi {
    #[get("/plaintext")]
    async fn plaintext(&self, _ctx: &mut Context) -> Result<&'static str>;

    #[get("/json")]
    async fn json(&self, _ctx: &mut Context) -> Result<Message>;

    #[post("/echo")]
    async fn echo(&self, ctx: &mut Context) -> Result<Credentials>;

    /// `/echo` with a typed argument.
    #[post("/ech2")]
    async fn echo_typed(&self, body: Json<Credentials>) -> Result<Credentials>;
}

#[cfg(feature = "api-trait")]
#[controller]
impl BenchApi for Bench {
    async fn plaintext(&self, _ctx: &mut Context) -> Result<&'static str> {
        Ok(PLAINTEXT)
    }

    async fn json(&self, _ctx: &mut Context) -> Result<Message> {
        Ok(Message { message: PLAINTEXT })
    }

    async fn echo(&self, ctx: &mut Context) -> Result<Credentials> {
        Ok(ctx.bind::<Credentials>()?)
    }

    async fn echo_typed(&self, body: Json<Credentials>) -> Result<Credentials> {
        Ok(body.0)
    }
}

/// `/big` on the impl block in both builds.
#[controller]
impl Bench {
    #[get("/big")]
    async fn big(&self, _ctx: &mut Context) -> Result<&'static [Item]> {
        Ok(self.big)
    }
}

/// A middleware that does nothing but run the rest of the chain.
async fn pass(ctx: &mut Context, next: framework::Next<'_>) -> Result {
    next.run(ctx).await
}

/// `app` over TLS with the run's certificate.
#[cfg(feature = "tls")]
fn with_tls(app: App, cert: &std::path::Path, key: &std::path::Path) -> std::io::Result<App> {
    let tls = framework::tls::Tls::from_pem_files(cert, key).map_err(std::io::Error::other)?;
    Ok(app.tls(tls))
}

/// Without the `tls` feature there is no TLS port.
#[cfg(not(feature = "tls"))]
fn with_tls(_app: App, _cert: &std::path::Path, _key: &std::path::Path) -> std::io::Result<App> {
    Err(std::io::Error::other("built without the `tls` feature"))
}

/// The benchmark app; over TLS when given the certificate and key files.
fn build(
    big: &'static [Item],
    tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
) -> std::io::Result<framework::Service> {
    let gzip: std::sync::Arc<dyn Compressor> =
        std::sync::Arc::new(Gzip::default().level(GZIP_LEVEL).static_level(GZIP_LEVEL));
    let mut app = App::new().with_state(big);
    if let Some((cert, key)) = tls {
        app = with_tls(app, &cert, &key)?;
    }
    match std::env::var("BENCH_TOWER").as_deref() {
        Ok("layer") => {
            app = app.use_middleware(framework::tower::layer(tower_layer::Identity::new()));
        }
        Ok("native") => app = app.use_middleware(framework::from_fn(pass)),
        _ => {}
    }
    if std::env::var("BENCH_METRICS").is_ok_and(|v| v == "1") {
        let metrics = Metrics::new(MetricsConfig::default());
        app = app.use_middleware(metrics.stats()).endpoint(
            http::Method::GET,
            "/metrics",
            metrics.endpoint(),
        );
    }
    app.use_middleware(Compress::with_compressors(
        CompressConfig::default(),
        vec![gzip],
    ))
    .use_middleware(ErrorHandler::default())
    .use_middleware(Responder::default())
    .use_middleware(BodyParser::default())
    .mount_controllers()
    .endpoint(
        http::Method::GET,
        "/static/*",
        StaticServe::new(
            DirectorySource::new(benches::static_dir())?,
            StaticServeConfig::default(),
        ),
    )
    .any(
        "/proxy/*",
        Proxy::new(
            ProxyConfig::default()
                .target(
                    benches::upstream_url()
                        .parse()
                        .map_err(std::io::Error::other)?,
                )
                .rewrites(vec!["/proxy/*:/$1".into()]),
        )
        .map_err(std::io::Error::other)?,
    )
    .build()
    .map_err(std::io::Error::other)
}

fn main() -> std::io::Result<()> {
    let args = ServerArgs::from_env();
    let big: &'static [Item] = Box::leak(big_document().into_boxed_slice());
    let service = build(big, None)?;
    let tls = benches::tls_files()
        .map(|files| build(big, Some(files)))
        .transpose()?;
    let as_tower_service = std::env::var("BENCH_TOWER").is_ok_and(|v| v == "app-service");
    benches::runtime(args.threads).block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.addr()).await?;
        println!("listening on {}", args.addr());
        if let Some(tls) = tls {
            let tls_listener = tokio::net::TcpListener::bind(args.tls_addr()).await?;
            tokio::spawn(tls.serve(tls_listener));
        }
        if as_tower_service {
            serve_as_tower_service(framework::tower::AppService::new(service), listener).await
        } else {
            service.serve(listener).await
        }
    })
}

/// Serves `app` on hyper's HTTP/1.1 connections, each request through `AppService` with its
/// peer in a `ConnectInfo`, until Ctrl-C (as raw hyper's benchmark server does).
async fn serve_as_tower_service(
    app: framework::tower::AppService,
    listener: tokio::net::TcpListener,
) -> std::io::Result<()> {
    use framework::tower::ConnectInfo;
    let mut shutdown = std::pin::pin!(tokio::signal::ctrl_c());
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => accepted?,
            _ = &mut shutdown => return Ok(()),
        };
        stream.set_nodelay(true)?;
        let app = app.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(
                move |mut request: http::Request<hyper::body::Incoming>| {
                    request.extensions_mut().insert(ConnectInfo {
                        remote_addr: peer,
                        tls: false,
                    });
                    tower_service::Service::call(&mut app.clone(), request)
                },
            );
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

//! The benchmark routes on axum 0.8, written the idiomatic way: extractors, `Json`, and
//! tower-http's `CompressionLayer` (gzip at the shared level); tower-http's `ServeDir` on
//! `/static`, and a reverse proxy on `/proxy` with hyper-util's pooled client, as axum's own
//! reverse-proxy example writes it.

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::{Json, Router};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tower_http::CompressionLevel;
use tower_http::compression::CompressionLayer;
use tower_http::services::ServeDir;

use benches::{
    BODY_LIMIT, Credentials, GZIP_LEVEL, Item, Message, PLAINTEXT, ServerArgs, big_document,
};

async fn plaintext() -> &'static str {
    PLAINTEXT
}

async fn json() -> Json<Message> {
    Json(Message { message: PLAINTEXT })
}

async fn echo(Json(credentials): Json<Credentials>) -> Response {
    match credentials.check() {
        Ok(()) => Json(credentials).into_response(),
        Err(e) => (StatusCode::BAD_REQUEST, e).into_response(),
    }
}

async fn big(State(big): State<&'static [Item]>) -> Json<&'static [Item]> {
    Json(big)
}

type ProxyClient = Client<HttpConnector, Body>;

async fn proxy(State(client): State<ProxyClient>, mut request: Request) -> Response {
    let path = request.uri().path().trim_start_matches("/proxy");
    let path_and_query = match request.uri().query() {
        Some(query) => format!("{path}?{query}"),
        None => path.to_owned(),
    };
    let Ok(uri) = format!("{}{path_and_query}", benches::upstream_url()).parse() else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    *request.uri_mut() = uri;
    match client.request(request).await {
        Ok(response) => response.into_response(),
        Err(_) => StatusCode::BAD_GATEWAY.into_response(),
    }
}

#[cfg(feature = "tls")]
/// Serves the router over TLS on `listener` (ALPN `h2` or `http/1.1`), the way axum's
/// `low-level-rustls` example does: tokio-rustls, then hyper's connection with the router as
/// its service.
async fn serve_tls(
    listener: tokio::net::TcpListener,
    config: rustls::ServerConfig,
    app: Router,
) -> std::io::Result<()> {
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let (acceptor, app) = (acceptor.clone(), app.clone());
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(stream).await else {
                return;
            };
            let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
            let service = hyper_util::service::TowerToHyperService::new(app);
            let io = hyper_util::rt::TokioIo::new(tls);
            if h2 {
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(io, service)
                    .await;
            } else {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            }
        });
    }
}

fn main() -> std::io::Result<()> {
    let args = ServerArgs::from_env();
    let app = Router::new()
        .route("/plaintext", get(plaintext))
        .route("/json", get(json))
        .route("/echo", post(echo))
        .route("/big", get(big))
        .with_state(&*Box::leak(big_document().into_boxed_slice()))
        .nest_service("/static", ServeDir::new(benches::static_dir()))
        .route(
            "/proxy/{*rest}",
            axum::routing::any(proxy)
                .with_state(Client::builder(TokioExecutor::new()).build(HttpConnector::new())),
        )
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(
            CompressionLayer::new()
                .gzip(true)
                .quality(CompressionLevel::Precise(
                    i32::try_from(GZIP_LEVEL).unwrap_or(1),
                )),
        );
    benches::runtime(args.threads).block_on(async move {
        // TCP_NODELAY, as axum's own docs show and a deployment sets: without it a response
        // written in two pieces (head, then body) waits on Nagle's algorithm and the client's
        // delayed ACK, ~40 ms a keep-alive request.
        let listener = tokio::net::TcpListener::bind(args.addr())
            .await?
            .tap_io(|stream| {
                let _ = stream.set_nodelay(true);
            });
        println!("listening on {}", args.addr());
        #[cfg(feature = "tls")]
        if let Some(config) = benches::rustls_config()? {
            let tls_listener = tokio::net::TcpListener::bind(args.tls_addr()).await?;
            tokio::spawn(serve_tls(tls_listener, config, app.clone()));
        }
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
    })
}

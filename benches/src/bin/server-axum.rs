//! The benchmark routes on axum 0.8, written the idiomatic way: extractors, `Json`, and
//! tower-http's `CompressionLayer` (gzip at the shared level).

use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use tower_http::CompressionLevel;
use tower_http::compression::CompressionLayer;

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

fn main() -> std::io::Result<()> {
    let args = ServerArgs::from_env();
    let app = Router::new()
        .route("/plaintext", get(plaintext))
        .route("/json", get(json))
        .route("/echo", post(echo))
        .route("/big", get(big))
        .with_state(&*Box::leak(big_document().into_boxed_slice()))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(
            CompressionLayer::new()
                .gzip(true)
                .quality(CompressionLevel::Precise(
                    i32::try_from(GZIP_LEVEL).unwrap_or(1),
                )),
        );
    benches::runtime(args.threads).block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.addr()).await?;
        println!("listening on {}", args.addr());
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
    })
}

//! The benchmark routes on actix-web 4, written the idiomatic way: `web::Json`, `HttpResponse`,
//! and the `Compress` middleware (gzip; actix fixes its level at flate2's `fast()`);
//! `actix-files` on `/static`.

use actix_web::middleware::Compress;
use actix_web::{App, HttpResponse, HttpServer, web};

use benches::{BODY_LIMIT, Credentials, Item, Message, PLAINTEXT, ServerArgs, big_document};

async fn plaintext() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; charset=utf-8")
        .body(PLAINTEXT)
}

async fn json() -> HttpResponse {
    HttpResponse::Ok().json(Message { message: PLAINTEXT })
}

async fn echo(credentials: web::Json<Credentials>) -> HttpResponse {
    match credentials.check() {
        Ok(()) => HttpResponse::Ok().json(credentials.into_inner()),
        Err(e) => HttpResponse::BadRequest().body(e),
    }
}

async fn big(big: web::Data<Vec<Item>>) -> HttpResponse {
    HttpResponse::Ok().json(&**big)
}

fn main() -> std::io::Result<()> {
    let args = ServerArgs::from_env();
    let document = web::Data::new(big_document());
    let static_dir = benches::static_dir();
    let tls = benches::rustls_config()?;
    actix_web::rt::System::new().block_on(async move {
        let server = HttpServer::new(move || {
            App::new()
                .app_data(document.clone())
                .app_data(web::JsonConfig::default().limit(BODY_LIMIT))
                .wrap(Compress::default())
                .route("/plaintext", web::get().to(plaintext))
                .route("/json", web::get().to(json))
                .route("/echo", web::post().to(echo))
                .route("/big", web::get().to(big))
                .service(actix_files::Files::new("/static", &static_dir))
        })
        .workers(args.threads)
        // TCP_NODELAY, as a deployment sets it (see the axum server).
        .tcp_nodelay(true)
        // HTTP/1.1, and HTTP/2 with prior knowledge (h2c) on the same port, as the others.
        .bind_auto_h2c(args.addr())?;
        // And over TLS (ALPN h2 or http/1.1), given a certificate.
        let server = match tls {
            Some(config) => server.bind_rustls_0_23(args.tls_addr(), config)?,
            None => server,
        };
        println!("listening on {}", args.addr());
        server.run().await
    })
}

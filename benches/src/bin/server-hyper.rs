//! The benchmark routes on raw hyper 1.x: the floor every framework is measured against.
//! One `match` on method and path, no middleware, HTTP/1.1 keep-alive, `TCP_NODELAY`, and
//! HTTP/2 with prior knowledge on the same port (the connection's first bytes are peeked, once
//! per connection, so an HTTP/1.1 request costs what it did with `http1::Builder` alone).
//!
//! Given a certificate (`BENCH_TLS_CERT`, `BENCH_TLS_KEY`), it also answers over TLS on its
//! port plus 1000 (ALPN `h2` or `http/1.1`, tokio-rustls).
//!
//! With `BENCH_REQUEST_ID=1` every answer also carries an `X-Request-Id` of 128 random bits as
//! 32 hex characters, as the framework's do (DECISIONS.md): the work a hyper service does for
//! the same feature, written the plain way (a per-thread `SmallRng`, the `hex` crate, a header
//! value copied from the stack). It shows how much of the framework's distance from raw hyper
//! is that one required feature; the default run leaves it off.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};

use benches::{BODY_LIMIT, Credentials, Item, Message, PLAINTEXT, ServerArgs, big_document};

/// `X-Request-Id`, sent only with `BENCH_REQUEST_ID=1`.
const X_REQUEST_ID: http::HeaderName = http::HeaderName::from_static("x-request-id");

thread_local! {
    static IDS: std::cell::RefCell<rand::rngs::SmallRng> =
        std::cell::RefCell::new(rand::SeedableRng::from_os_rng());
}

/// 128 random bits as 32 lowercase hex characters.
fn request_id() -> HeaderValue {
    let bits: u128 = IDS.with(|rng| rand::Rng::random(&mut *rng.borrow_mut()));
    let mut hex = [0u8; 32];
    hex::encode_to_slice(bits.to_be_bytes(), &mut hex).unwrap_or_default();
    HeaderValue::from_bytes(&hex).unwrap_or(HeaderValue::from_static("0"))
}

const JSON: HeaderValue = HeaderValue::from_static("application/json");

fn respond(
    status: StatusCode,
    content_type: HeaderValue,
    body: impl Into<Bytes>,
) -> Response<Full<Bytes>> {
    let mut res = Response::new(Full::new(body.into()));
    *res.status_mut() = status;
    res.headers_mut().insert(CONTENT_TYPE, content_type);
    res
}

/// The answer to `req`; with `ID` (`BENCH_REQUEST_ID=1`) carrying an `X-Request-Id`. A
/// constant, so each setting has its own copy and the default one compiles as it did before
/// the option existed.
async fn handle<const ID: bool>(
    req: Request<Incoming>,
    big: Arc<Vec<Item>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let text = HeaderValue::from_static("text/plain; charset=utf-8");
    let mut res = 'answer: {
        match (req.method(), req.uri().path()) {
            (&Method::GET, "/plaintext") => respond(StatusCode::OK, text, PLAINTEXT),
            (&Method::GET, "/json") => {
                let body = serde_json::to_vec(&Message { message: PLAINTEXT }).unwrap_or_default();
                respond(StatusCode::OK, JSON, body)
            }
            (&Method::POST, "/echo") => {
                let Ok(body) = Limited::new(req.into_body(), BODY_LIMIT).collect().await else {
                    break 'answer respond(StatusCode::PAYLOAD_TOO_LARGE, text, "too large");
                };
                match serde_json::from_slice::<Credentials>(&body.to_bytes()) {
                    Ok(c) => match c.check() {
                        Ok(()) => respond(
                            StatusCode::OK,
                            JSON,
                            serde_json::to_vec(&c).unwrap_or_default(),
                        ),
                        Err(e) => respond(StatusCode::BAD_REQUEST, text, e),
                    },
                    Err(_) => respond(StatusCode::BAD_REQUEST, text, "invalid json"),
                }
            }
            (&Method::GET, "/big") => {
                let gzip = benches::accepts_gzip(
                    req.headers()
                        .get(ACCEPT_ENCODING)
                        .and_then(|v| v.to_str().ok()),
                );
                let body = serde_json::to_vec(&*big).unwrap_or_default();
                if gzip {
                    let mut res = respond(StatusCode::OK, JSON, benches::gzip(&body));
                    res.headers_mut()
                        .insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
                    res
                } else {
                    respond(StatusCode::OK, JSON, body)
                }
            }
            _ => respond(StatusCode::NOT_FOUND, text, "not found"),
        }
    };
    if ID {
        res.headers_mut().insert(X_REQUEST_ID, request_id());
    }
    Ok(res)
}

/// Whether the connection opens with the HTTP/2 preface: its first bytes, peeked (left in the
/// socket for the protocol to read).
async fn is_h2_preface(stream: &tokio::net::TcpStream) -> bool {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let mut buf = [0u8; PREFACE.len()];
    loop {
        match stream.peek(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) if n == buf.len() || buf[..n] != PREFACE[..n] => return buf[..n] == *PREFACE,
            // A preface in pieces: wait for the rest.
            Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(1)).await,
        }
    }
}

/// Serves one connection with [`handle`]: HTTP/2 when it opens with the preface, else
/// HTTP/1.1.
async fn serve<const ID: bool>(stream: tokio::net::TcpStream, big: Arc<Vec<Item>>) {
    let service = hyper::service::service_fn(move |req| handle::<ID>(req, Arc::clone(&big)));
    if is_h2_preface(&stream).await {
        let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
            .serve_connection(TokioIo::new(stream), service)
            .await;
    } else {
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(TokioIo::new(stream), service)
            .await;
    }
}

#[cfg(feature = "tls")]
/// Serves TLS connections on `listener`: HTTP/2 when ALPN chose `h2`, else HTTP/1.1.
async fn serve_tls(
    listener: tokio::net::TcpListener,
    config: rustls::ServerConfig,
    big: Arc<Vec<Item>>,
) -> std::io::Result<()> {
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let (acceptor, big) = (acceptor.clone(), Arc::clone(&big));
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(stream).await else {
                return;
            };
            let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
            let service =
                hyper::service::service_fn(move |req| handle::<false>(req, Arc::clone(&big)));
            if h2 {
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            } else {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            }
        });
    }
}

fn main() -> std::io::Result<()> {
    let args = ServerArgs::from_env();
    let big = Arc::new(big_document());
    let with_id = std::env::var("BENCH_REQUEST_ID").is_ok_and(|v| v == "1");
    #[cfg(feature = "tls")]
    let tls = benches::rustls_config()?;
    benches::runtime(args.threads).block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.addr()).await?;
        println!("listening on {}", args.addr());
        #[cfg(feature = "tls")]
        if let Some(config) = tls {
            let tls_listener = tokio::net::TcpListener::bind(args.tls_addr()).await?;
            tokio::spawn(serve_tls(tls_listener, config, Arc::clone(&big)));
        }
        let mut shutdown = std::pin::pin!(tokio::signal::ctrl_c());
        loop {
            let (stream, _) = tokio::select! {
                accepted = listener.accept() => accepted?,
                _ = &mut shutdown => return Ok(()),
            };
            stream.set_nodelay(true)?;
            let big = Arc::clone(&big);
            if with_id {
                tokio::spawn(serve::<true>(stream, big));
            } else {
                tokio::spawn(serve::<false>(stream, big));
            }
        }
    })
}

#[cfg(test)]
mod tests {
    /// An id is 32 lowercase hex characters (128 bits), and each is new.
    #[test]
    fn request_ids_are_32_lowercase_hex_characters_each_new() {
        let ids: Vec<_> = (0..100).map(|_| super::request_id()).collect();
        for id in &ids {
            let id = id.as_bytes();
            assert_eq!(id.len(), 32);
            assert!(id.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
        }
        let distinct: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len());
    }
}

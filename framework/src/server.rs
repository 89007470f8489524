//! Serving a [`Service`] on a TCP listener with hyper 1.x.
//!
//! HTTP/1.1 with keep-alive and HTTP/2 (prior knowledge) on the same port, through hyper-util's
//! auto builder. Accepted sockets set `TCP_NODELAY`, so small responses do not wait on Nagle's
//! algorithm. On the shutdown signal the server stops accepting, lets in-flight requests finish
//! for up to the app's shutdown timeout, then returns.
//!
//! An HTTP/1.1 request without exactly one `Host` header is answered 400 before it reaches the
//! app (RFC 9112 section 3.2: a server must refuse it; two `Host` headers let a proxy and the
//! app disagree about the target). HTTP/1.0 may omit it; HTTP/2 carries `:authority` instead.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

use crate::app::Service;
use crate::body::{RequestBody, ResponseBody};

impl Service {
    /// Serves until SIGINT or SIGTERM, then shuts down gracefully.
    pub async fn serve(self, listener: TcpListener) -> std::io::Result<()> {
        self.serve_with_shutdown(listener, shutdown_signal()).await
    }

    /// Serves until `signal` completes, then shuts down gracefully.
    pub async fn serve_with_shutdown(
        self,
        listener: TcpListener,
        signal: impl Future<Output = ()>,
    ) -> std::io::Result<()> {
        let timeout = self.shutdown_timeout;
        let service = Arc::new(self);
        let builder = auto::Builder::new(TokioExecutor::new());
        let graceful = GracefulShutdown::new();
        let mut signal = std::pin::pin!(signal);
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(pair) => pair,
                    Err(err) => {
                        // EMFILE and friends: back off instead of spinning or giving up.
                        tracing::warn!(%err, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = &mut signal => break,
            };
            if let Err(err) = stream.set_nodelay(true) {
                tracing::debug!(%err, "set TCP_NODELAY failed");
            }
            let service = Arc::clone(&service);
            let handler = hyper::service::service_fn(move |request: http::Request<Incoming>| {
                let service = Arc::clone(&service);
                async move {
                    if let Some(refused) = check_host(&request) {
                        return Ok::<_, Infallible>(refused);
                    }
                    let request = request.map(RequestBody::Incoming);
                    Ok::<_, Infallible>(service.handle(request, peer).await)
                }
            });
            let connection = builder
                .serve_connection_with_upgrades(TokioIo::new(stream), handler)
                .into_owned();
            let connection = graceful.watch(connection);
            tokio::spawn(async move {
                if let Err(err) = connection.await {
                    tracing::debug!(%err, "connection ended with an error");
                }
            });
        }
        drop(listener);
        tokio::select! {
            () = graceful.shutdown() => {}
            () = tokio::time::sleep(timeout) => {
                tracing::warn!(?timeout, "graceful shutdown timed out, dropping connections");
            }
        }
        Ok(())
    }
}

/// 400 for an HTTP/1.1 request whose `Host` header is missing or repeated.
fn check_host<B>(request: &http::Request<B>) -> Option<http::Response<ResponseBody>> {
    if request.version() != http::Version::HTTP_11 {
        return None;
    }
    let mut hosts = request.headers().get_all(http::header::HOST).iter();
    if hosts.next().is_some() && hosts.next().is_none() {
        return None;
    }
    let body =
        "statusCode=400, category=framework-server, message=exactly one host header is required";
    let mut response = http::Response::new(ResponseBody::full(bytes::Bytes::from_static(
        body.as_bytes(),
    )));
    *response.status_mut() = http::StatusCode::BAD_REQUEST;
    response
        .headers_mut()
        .insert(http::header::CONTENT_TYPE, crate::header::TEXT_UTF8);
    Some(response)
}

/// Completes on SIGINT (Ctrl-C) or, on Unix, SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}

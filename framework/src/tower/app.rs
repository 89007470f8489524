//! The built app as a tower service: [`AppService`], and [`ConnectInfo`], the connection facts
//! a host hands it.

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use http_body::Body;
use tower_service::Service;

use crate::body::{BoxError, RequestBody, ResponseBody};
use crate::handler::BoxFuture;

/// The built app ([`Service`](crate::Service)) as a tower [`Service`] of `http::Request<B>`,
/// for any body `B` of `Bytes`: wrap it in tower-http layers, nest it in an axum `Router`
/// (`Router::nest_service`), or serve it with hyper-util's server
/// (`TowerToHyperService`). Cloning it is a reference count, as tower hosts expect.
///
/// A request answered here goes through everything the framework's own server does after a
/// connection is read: routing, the chain, the response (HEAD, `X-Request-Id`, the draining
/// `Connection: close`). A hyper `Incoming` body keeps the app's body read timeout and
/// minimum rate ([`ServerLimits`](crate::ServerLimits)); any other body is read as it comes.
/// What a connection knows comes from the host, through the request's extensions:
///
/// - the peer address and whether the connection is TLS from a [`ConnectInfo`]; else the peer
///   address from a bare `SocketAddr` extension; else `0.0.0.0:0`, which
///   [`ConnectionInfo::remote_addr`](crate::connection::ConnectionInfo::remote_addr) and
///   [`real_ip`](crate::client_ip::ClientIpExt::real_ip) then report (axum's `ConnectInfo<SocketAddr>` is its
///   own type: a host inserts a `ConnectInfo` of this module, see the tower chapter);
/// - the server's connection limits, header timeouts and HTTP/2 settings are the host's.
///
/// The service is always ready; its error type is `Infallible` (an error is an answer).
///
/// ```
/// use framework::App;
/// use framework::tower::AppService;
///
/// let app = AppService::new(App::new().build().expect("app builds"));
/// let for_another_host = app.clone();
/// # let _ = for_another_host;
/// ```
#[derive(Clone)]
pub struct AppService {
    service: Arc<crate::Service>,
}

impl AppService {
    /// The built app as a tower service.
    pub fn new(service: crate::Service) -> Self {
        Self {
            service: Arc::new(service),
        }
    }

    /// The app, shared with another host (the framework's own server takes the same `Arc`).
    pub fn from_shared(service: Arc<crate::Service>) -> Self {
        Self { service }
    }

    /// The app inside.
    pub fn app(&self) -> &crate::Service {
        &self.service
    }
}

impl std::fmt::Debug for AppService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppService").finish_non_exhaustive()
    }
}

/// What a host knows of a request's connection, put in the request's extensions for
/// [`AppService`] to read: the peer's address (axum's `ConnectInfo`) and whether the connection
/// is TLS (so [`ClientIpExt::is_https`](crate::client_ip::ClientIpExt::is_https) and HSTS see it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectInfo {
    /// The peer's socket address.
    pub remote_addr: SocketAddr,
    /// The connection is TLS.
    pub tls: bool,
}

impl<B> Service<http::Request<B>> for AppService
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<ResponseBody>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let service = Arc::clone(&self.service);
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let limits = &service.limits;
            let body = match crate::downcast::try_downcast::<hyper::body::Incoming, B>(body) {
                Ok(incoming) => {
                    RequestBody::incoming(incoming, limits.body_read_timeout, limits.body_min_rate)
                }
                Err(body) => RequestBody::from_body(body),
            };
            let (remote_addr, tls) = match parts.extensions.get::<ConnectInfo>() {
                Some(info) => (info.remote_addr, info.tls),
                None => (
                    parts
                        .extensions
                        .get::<SocketAddr>()
                        .copied()
                        .unwrap_or(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))),
                    false,
                ),
            };
            let mut ctx = service.context(parts, body, remote_addr);
            ctx.set_remote(remote_addr, tls);
            Ok(service.respond(&mut ctx).await)
        })
    }
}

//! What the accept loop hands each new connection ([`Accepting`]): its registration, TLS, the
//! protocol, and the `Host` check of each request.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::sync::OwnedSemaphorePermit;

use crate::body::{RequestBody, ResponseBody};
use crate::service::Service;

use super::connection::{ConnBody, ConnState, Socket, TrackedStream};
use super::{ClientCertOf, Registry, ReleasePlace, Serving, Ticket, connection, reaper};

/// What the accept loop hands each new connection.
pub(super) struct Accepting {
    pub(super) service: Arc<Service>,
    pub(super) serving: Arc<Serving>,
    pub(super) registry: Arc<Registry>,
    pub(super) clock: Arc<reaper::Clock>,
    /// The server's TLS: a new connection takes the acceptor of the last reload.
    #[cfg(feature = "tls")]
    pub(super) tls: Option<crate::tls::Tls>,
}

impl Accepting {
    /// Registers the connection and spawns its task: TLS if configured, then HTTP/1 or
    /// HTTP/2, over a TCP or a Unix socket alike.
    pub(super) fn spawn<S: Socket>(
        &self,
        mut stream: S,
        peer: SocketAddr,
        unix_peer: Option<crate::connection::UnixPeer>,
        permit: OwnedSemaphorePermit,
    ) {
        let registry = &self.registry;
        let state = Arc::new(ConnState::new(Arc::clone(&self.clock)));
        let id = registry.next_id.fetch_add(1, Ordering::Relaxed);
        registry.lock().insert(id, Arc::clone(&state));
        let ticket = Arc::new(Ticket {
            id,
            registry: Arc::clone(registry),
            _permit: permit,
        });
        state.set_place(Arc::clone(&ticket) as Arc<dyn std::any::Any + Send + Sync>);
        // Gives the place kept in the state up when the connection's task ends, however it
        // ends (the state is in the registry, which the place's drop leaves).
        let release = ReleasePlace(Arc::clone(&state));
        let service = Arc::clone(&self.service);
        let conn_state = Arc::clone(&state);
        let limits = &self.serving.limits;
        let body_timeout = limits.body_read_timeout;
        let body_min_rate = limits.body_min_rate;
        // Made once the connection's TLS handshake (if any) has told who the client is and
        // which protocol it chose.
        #[cfg_attr(not(feature = "tls"), allow(unused_variables))]
        let handler = move |tls: Option<(ClientCertOf, Option<&[u8]>)>| {
            let connection = crate::connection::ConnectionInfo::new(peer);
            #[cfg(feature = "tls")]
            let (connection, client_cert) = match tls {
                Some((client_cert, alpn)) => (connection.with_tls(alpn), client_cert),
                None => (connection, None),
            };
            let connection = connection.with_facts(
                unix_peer,
                #[cfg(feature = "tls")]
                client_cert,
            );
            hyper::service::service_fn(move |request: http::Request<Incoming>| {
                let guard = conn_state.request_started();
                let service = Arc::clone(&service);
                // An `Arc` count, on a Unix socket or when the client showed a certificate.
                let connection = connection.clone();
                async move {
                    if let Some(refused) = check_host(&request) {
                        return Ok::<_, Infallible>(refused.map(|body| ConnBody::new(body, guard)));
                    }
                    // Taken apart here, not passed on whole: each move of a request copies
                    // a few hundred bytes.
                    let (mut parts, body) = request.into_parts();
                    // Only a request asking for an upgrade (hyper gave it an `OnUpgrade`)
                    // carries the connection's hold; for the others this looks at an empty
                    // map.
                    if parts
                        .extensions
                        .get::<hyper::upgrade::OnUpgrade>()
                        .is_some()
                    {
                        parts.extensions.insert(guard.upgrade_hold());
                    }
                    let body = RequestBody::incoming(body, body_timeout, body_min_rate);
                    let mut ctx = service.context(parts, body, connection);
                    // While draining, an HTTP/1 answer carries `Connection: close`: set where
                    // the response is made (`Context::take_response`), since changing it here
                    // would cost every request a move of the response.
                    let response = service.respond(&mut ctx).await;
                    Ok::<_, Infallible>(response.map(|body| ConnBody::new(body, guard)))
                }
            })
        };
        let serving = Arc::clone(&self.serving);
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.tls {
            let acceptor = tls.acceptor();
            let asks_for_client_certs = tls.asks_for_client_certs();
            tokio::spawn(async move {
                let socket = Arc::new(stream);
                let tracked = TrackedStream::new(
                    Arc::clone(&socket),
                    Arc::clone(&state),
                    bytes::Bytes::new(),
                    false,
                );
                if let Some((stream, http2)) =
                    connection::handshake(&acceptor, tracked, &state).await
                {
                    let http2 = serving.limits.http_versions.serves_http2(http2);
                    let client_cert = if asks_for_client_certs {
                        crate::tls::peer_identity(stream.get_ref().1)
                    } else {
                        Ok(None)
                    };
                    match client_cert {
                        // The watch sees the client's end of the socket under TLS too; a
                        // close_notify alert without it is left to hyper.
                        Ok(client_cert) => {
                            let alpn = stream.get_ref().1.alpn_protocol();
                            let handler = handler(Some((client_cert, alpn)));
                            serving
                                .run(TokioIo::new(stream), http2, handler, state, &*socket)
                                .await;
                        }
                        // Verified by rustls but not readable here: not served with no
                        // identity, which would pass it for a client that showed none.
                        Err(err) => tracing::warn!(%err, "client certificate refused"),
                    }
                }
                drop(release);
                drop(ticket);
            });
            return;
        }
        tokio::spawn(async move {
            if let Some((read_first, http2)) = connection::detect(&mut stream, &state).await {
                let http2 = serving.limits.http_versions.serves_http2(http2);
                let socket = Arc::new(stream);
                let io = TokioIo::new(TrackedStream::new(
                    Arc::clone(&socket),
                    Arc::clone(&state),
                    read_first,
                    http2,
                ));
                serving.run(io, http2, handler(None), state, &*socket).await;
            }
            drop(release);
            drop(ticket);
        });
    }
}

/// 400 for an HTTP/1.1 request whose `Host` header is missing or repeated.
fn check_host<B>(request: &http::Request<B>) -> Option<http::Response<ResponseBody>> {
    if request.version() != http::Version::HTTP_11 {
        return None;
    }
    // A scan of the few header names a request has costs less than hashing the name for a
    // lookup. When no name repeats (as many values as names), one `Host` name is one value.
    let headers = request.headers();
    let once = if headers.len() == headers.keys_len() {
        crate::header::has_any(headers, &[http::header::HOST])
    } else {
        let mut hosts = headers.get_all(http::header::HOST).iter();
        hosts.next().is_some() && hosts.next().is_none()
    };
    if once {
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

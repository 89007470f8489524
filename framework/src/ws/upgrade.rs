//! The handshake: [`WebSocketExt::websocket`] checks the upgrade request, answers it, and
//! starts the connection on a task of its own.

use http::header::{CONNECTION, HeaderValue, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
use http::{Method, StatusCode};
use std::future::Future;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

use super::CATEGORY;
use super::config::WsConfig;
use super::connection::drive;
use super::socket::{WebSocket, pair};
use crate::context::Context;
use crate::error::HttpError;

fn refuse(status: StatusCode, message: &'static str) -> HttpError {
    HttpError::with(status, CATEGORY, message)
}

/// Whether a comma-separated header names `token` (any case).
fn names(ctx: &Context, header: http::header::HeaderName, token: &str) -> bool {
    ctx.request_headers()
        .get_all(header)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// WebSockets on the context: `use framework::ws::WebSocketExt` (as the session's
/// [`SessionExt`](crate::middleware::session::SessionExt)), then `ctx.websocket(config,
/// handler)` in a route's handler.
pub trait WebSocketExt {
    /// Takes the connection over as a WebSocket: checks the handshake, answers 101, and once
    /// the client has the answer runs `handler` with the connection (on a task of its own).
    /// Call it from the route's handler and return its result; see [`crate::ws`] for the
    /// refusals and the limits `config` sets.
    fn websocket<F, Fut>(&mut self, config: WsConfig, handler: F) -> Result<Upgraded, HttpError>
    where
        F: FnOnce(WebSocket) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static;
}

impl WebSocketExt for Context {
    fn websocket<F, Fut>(&mut self, config: WsConfig, handler: F) -> Result<Upgraded, HttpError>
    where
        F: FnOnce(WebSocket) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        // HTTP/2: an extended CONNECT with `:protocol` websocket (RFC 8441), answered 200.
        let http2 = self.version() == http::Version::HTTP_2;
        if http2 {
            let websocket = self.method() == Method::CONNECT
                && self
                    .extensions()
                    .get::<hyper::ext::Protocol>()
                    .is_some_and(|p| p.as_str().eq_ignore_ascii_case("websocket"));
            if !websocket {
                return Err(refuse(
                    StatusCode::BAD_REQUEST,
                    "not a websocket (over HTTP/2: CONNECT with :protocol websocket)",
                ));
            }
        } else if self.method() != Method::GET
            || !names(self, UPGRADE, "websocket")
            || !names(self, CONNECTION, "upgrade")
        {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                "not a websocket upgrade (GET with Connection: upgrade, Upgrade: websocket)",
            ));
        }
        if self.request_header("sec-websocket-version").map(str::trim) != Some("13") {
            self.set_response_header(
                http::header::SEC_WEBSOCKET_VERSION,
                HeaderValue::from_static("13"),
            );
            return Err(refuse(
                StatusCode::UPGRADE_REQUIRED,
                "websocket version 13 is required",
            ));
        }
        if let Some(origin) = self.request_headers().get(http::header::ORIGIN)
            && !config.allowed_origins.allows(origin)
            && !crate::origin::is_same_origin(self, origin.as_bytes())
        {
            return Err(refuse(StatusCode::FORBIDDEN, "origin not allowed"));
        }
        if http2 {
            return take_over(self, StatusCode::OK, None, config, handler);
        }
        let key = self
            .request_headers()
            .get(SEC_WEBSOCKET_KEY)
            .filter(|key| {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD
                    .decode(key.as_bytes())
                    .is_ok_and(|bits| bits.len() == 16)
            })
            .ok_or_else(|| {
                refuse(
                    StatusCode::BAD_REQUEST,
                    "sec-websocket-key must be 16 bytes in base64",
                )
            })?;
        let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
        let accept = HeaderValue::from_str(&accept)
            .map_err(|_| refuse(StatusCode::INTERNAL_SERVER_ERROR, "bad accept key"))?;
        take_over(
            self,
            StatusCode::SWITCHING_PROTOCOLS,
            Some(accept),
            config,
            handler,
        )
    }
}

/// Answers the handshake (101 with `accept`, or an HTTP/2 200) and runs the connection.
fn take_over<F, Fut>(
    ctx: &mut Context,
    status: StatusCode,
    accept: Option<HeaderValue>,
    config: WsConfig,
    handler: F,
) -> Result<Upgraded, HttpError>
where
    F: FnOnce(WebSocket) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some(on_upgrade) = ctx.extensions_mut().remove::<hyper::upgrade::OnUpgrade>() else {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "a websocket needs a connection to take over (not an in-process test client)",
        ));
    };
    let hold = ctx.extensions_mut().remove::<crate::server::UpgradeHold>();
    ctx.set_status(status);
    if let Some(accept) = accept {
        ctx.set_response_header(UPGRADE, HeaderValue::from_static("websocket"));
        ctx.set_response_header(CONNECTION, HeaderValue::from_static("upgrade"));
        ctx.set_response_header(SEC_WEBSOCKET_ACCEPT, accept);
    }
    let draining = ctx.shutdown();
    tokio::spawn(async move {
        let upgraded = match on_upgrade.await {
            Ok(upgraded) => upgraded,
            Err(err) => {
                tracing::debug!(%err, "websocket upgrade failed");
                return;
            }
        };
        let _open =
            crate::telemetry::counters().connection_opened(crate::telemetry::Protocol::WebSocket);
        let io = hyper_util::rt::TokioIo::new(upgraded);
        let tungstenite_config = WebSocketConfig::default()
            .read_buffer_size(4096)
            .write_buffer_size(0)
            .max_message_size(Some(config.max_message_size))
            .max_frame_size(Some(config.max_frame_size));
        let socket =
            WebSocketStream::from_raw_socket(io, Role::Server, Some(tungstenite_config)).await;
        let (socket_of_handler, outgoing, deliver, too_slow) = pair(config.send_queue);
        let app = tokio::spawn(handler(socket_of_handler));
        drive(
            socket, &config, outgoing, deliver, &too_slow, hold, draining,
        )
        .await;
        // The handler sees `recv` end and its sends fail; it finishes on its own.
        drop(app);
    });
    Ok(Upgraded)
}

/// What [`WebSocketExt::websocket`] gives back once it has answered 101: a handler returns it
/// (`Result<Upgraded>`), and a controller method that does is documented with a **101**
/// success in the OpenAPI document. As a reply it adds nothing: the status and headers are set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Upgraded;

impl crate::IntoReply for Upgraded {
    const LEAVES_VALUE: bool = false;
    const STATUS: u16 = 101;
    fn into_reply(self, _ctx: &mut Context) {}
}

/// Documented as a 101 without a body.
impl crate::openapi::DescribeReply for Upgraded {
    fn describe_reply(operation: &mut crate::openapi::Operation<'_>) {
        operation.reply(101, None, None);
    }
}

//! WebSocket endpoints: a route's handler takes the connection over with
//! [`WebSocketExt::websocket`] (`ctx.websocket(..)`), after the route's middleware ran (session, jwt, basic auth, rate
//! limiter apply to the upgrade request as to any other), on
//! [tokio-tungstenite](https://docs.rs/tokio-tungstenite). [`Broadcast`] fans messages out to
//! the connections of one instance, or of every instance through Redis (feature `ws-redis`).
//!
//! - **The handshake**: a `GET` with `Connection: upgrade`, `Upgrade: websocket`,
//!   `Sec-WebSocket-Version: 13` and a `Sec-WebSocket-Key` of 16 bytes is answered **101**;
//!   anything else **400** (category `framework-websocket`), a different version **426** with
//!   `Sec-WebSocket-Version: 13`.
//! - **Origins**: a browser sends `Origin` with every upgrade, and the session cookie along
//!   with it, so a page of another site could otherwise open a connection as the visitor
//!   (cross-site WebSocket hijacking; CORS does not apply to WebSockets). An upgrade whose
//!   `Origin` is present and is not the request's own (scheme, host and port, see below) nor
//!   one of [`WsConfig::allowed_origins`] is refused with **403** `origin not allowed`, as Go's
//!   gorilla/websocket does. `null`, look-alikes (`http://127.0.0.1.evil.example`) and other
//!   ports of the same host are other origins; listed origins match exactly, byte for byte.
//!   An upgrade without `Origin` (a client that is not a browser) passes. The request's own
//!   origin is `https` when [`ClientIpExt::is_https`](crate::client_ip::ClientIpExt::is_https) (TLS here, or `X-Forwarded-Proto` from a
//!   trusted proxy), else `http`, with the host and port of `Host` (or a trusted proxy's
//!   `X-Forwarded-Host`): behind a proxy that rewrites `Host`, list the public origin.
//!   [`AllowOrigin::any`] turns the check off.
//! - Over HTTP/2, RFC 8441's extended `CONNECT` with
//!   `:protocol: websocket` (the server advertises it) reaches the same route as the `GET`
//!   and is answered **200**; the WebSocket is then that stream. An in-process test client
//!   gets a 400 (there is no connection to take over).
//! - **Messages**: text and binary reach the handler ([`WebSocket::recv`]); pings are answered
//!   and pongs taken by the connection itself; a close from the client ends `recv`. Every
//!   message the client sends reaches the handler in order, or the connection is closed with
//!   a code that says why; none is dropped behind a normal close.
//! - **Protocol violations** (RFC 6455 section 7.1.7: an unmasked frame, reserved bits,
//!   unknown opcodes, a fragmented or oversized control frame, a continuation with nothing to
//!   continue, a data frame inside a fragmented message, a one-byte close payload) are
//!   answered with a close frame **1002** (protocol error); text or a close reason that is not
//!   UTF-8 with **1007** (invalid payload data, section 8.1); then the TCP connection closes.
//! - **Size limits** ([`WsConfig::max_message_size`], [`WsConfig::max_frame_size`], 64 KiB
//!   each by default): a larger message or frame closes the connection with **1009** (message
//!   too big).
//! - **Idle connections**: with no frame from the client for [`WsConfig::ping_interval`] (30 s)
//!   the server pings; with none for [`WsConfig::idle_timeout`] (75 s) it closes with **1001**.
//! - **Backpressure**: what the handler sends waits in a queue of
//!   [`WsConfig::send_queue`] messages (64). [`WsSender::send`] waits for room, so a handler
//!   writing to a slow reader slows down with it; [`WsSender::try_send`] (for fan-out, where one
//!   slow client must not hold up the others) never waits: on a full queue the connection is
//!   closed with **1008** ("too slow") and the message dropped. Memory per connection is thus
//!   bounded by the queue, the read buffer (4 KiB) and the largest message. A handler that
//!   stops calling `recv` stops the connection reading (the client's sends back up in TCP),
//!   while what the handler sends still goes out: sending comes before reading.
//! - **A client that does not read**: a frame that cannot be written within
//!   [`WsConfig::send_timeout`] (5 s) closes the connection with **1008** ("too slow"), whether
//!   or not the client ever reads again; the close frame gets 1 s to go out, then the TCP
//!   connection is closed.
//! - **The connection limit and shutdown**: an upgraded connection keeps its place under
//!   [`ServerLimits::max_connections`](crate::ServerLimits); when a graceful shutdown begins
//!   (at the start of the drain, [`Context::shutdown`](crate::Context::shutdown), not after
//!   [`ServerLimits::drain_delay`](crate::ServerLimits::drain_delay)) it is closed with
//!   **1001** ("server shutting down"), so its client reconnects to another instance while
//!   this one still answers.
//!
//! ```no_run
//! use framework::ws::{Message, WebSocketExt, WsConfig};
//! use framework::{App, Context};
//!
//! let app = App::new().get("/echo", |ctx: &mut Context| {
//!     let upgraded = ctx.websocket(WsConfig::default(), |mut socket| async move {
//!         while let Some(message) = socket.recv().await {
//!             if socket.send(message).await.is_err() {
//!                 break;
//!             }
//!         }
//!     });
//!     async move { upgraded.map_err(Into::into) }
//! });
//! # let _ = app;
//! ```

//!
//! The module's files: [`WsConfig`] (`config.rs`); [`Message`], [`Closed`] and the
//! [`close_code`]s (`message.rs`); the handler's side, [`WebSocket`] and [`WsSender`]
//! (`socket.rs`); the handshake, [`WebSocketExt`] (`upgrade.rs`); a connection at work
//! (`connection.rs`); and [`Broadcast`] (`broadcast.rs`).

mod broadcast;
mod config;
mod connection;
mod message;
mod socket;
mod upgrade;

pub use broadcast::{Broadcast, PublishError};
pub use config::WsConfig;
pub use message::{Closed, Message, close_code};
pub use socket::{WebSocket, WsSender};
pub use upgrade::{Upgraded, WebSocketExt};

pub use crate::origin::AllowOrigin;

/// Category of refused upgrades.
pub const CATEGORY: &str = "framework-websocket";

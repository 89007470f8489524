//! WebSocket endpoints: a route's handler takes the connection over with
//! [`Context::websocket`], after the route's middleware ran (session, jwt, basic auth, rate
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
//!   origin is `https` when [`Context::is_https`] (TLS here, or `X-Forwarded-Proto` from a
//!   trusted proxy), else `http`, with the host and port of `Host` (or a trusted proxy's
//!   `X-Forwarded-Host`): behind a proxy that rewrites `Host`, list the public origin.
//!   [`AllowOrigin::Any`] turns the check off.
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
//!   (at the start of the drain, [`Context::shutdown`], not after
//!   [`ServerLimits::drain_delay`](crate::ServerLimits::drain_delay)) it is closed with
//!   **1001** ("server shutting down"), so its client reconnects to another instance while
//!   this one still answers.
//!
//! ```no_run
//! use framework::ws::{Message, WsConfig};
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

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::header::{CONNECTION, HeaderValue, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
use http::{Method, StatusCode};
use tokio::sync::{Notify, mpsc};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{self, Message as Frame};

use crate::context::Context;
use crate::error::HttpError;
pub use crate::origin::AllowOrigin;

/// Category of refused upgrades.
pub const CATEGORY: &str = "framework-websocket";

/// Limits of a WebSocket connection, and who may open one.
#[derive(Clone, Debug)]
pub struct WsConfig {
    /// The largest message the client may send. Default 64 KiB; above it: close 1009.
    pub max_message_size: usize,
    /// The largest frame the client may send. Default 64 KiB; above it: close 1009.
    pub max_frame_size: usize,
    /// Messages waiting to be sent. Default 64; see the [module](self) for what a full queue
    /// does.
    pub send_queue: usize,
    /// Ping the client after this long without a frame from it. Default 30 s.
    pub ping_interval: Duration,
    /// Close after this long without a frame from it (pongs count). Default 75 s.
    pub idle_timeout: Duration,
    /// How long writing one frame to the client may take. Default 5 s; past it: close 1008
    /// (a client that stopped reading).
    pub send_timeout: Duration,
    /// Origins besides the request's own that may open a connection: default none
    /// ([`AllowOrigin::list`] of nothing); [`AllowOrigin::Any`] turns the check off. See the
    /// [module](self).
    pub allowed_origins: AllowOrigin,
}

impl Default for WsConfig {
    fn default() -> Self {
        Self {
            max_message_size: 64 * 1024,
            max_frame_size: 64 * 1024,
            send_queue: 64,
            ping_interval: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(75),
            send_timeout: Duration::from_secs(5),
            allowed_origins: AllowOrigin::List(Vec::new()),
        }
    }
}

/// A message from or to the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// Text (UTF-8).
    Text(String),
    /// Bytes.
    Binary(Bytes),
}

impl From<&str> for Message {
    fn from(text: &str) -> Self {
        Message::Text(text.to_owned())
    }
}

impl From<String> for Message {
    fn from(text: String) -> Self {
        Message::Text(text)
    }
}

impl From<Bytes> for Message {
    fn from(bytes: Bytes) -> Self {
        Message::Binary(bytes)
    }
}

impl From<Vec<u8>> for Message {
    fn from(bytes: Vec<u8>) -> Self {
        Message::Binary(bytes.into())
    }
}

/// The connection is closed: nothing more can be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Closed;

impl std::fmt::Display for Closed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the websocket is closed")
    }
}

impl std::error::Error for Closed {}

/// What the handler asks the connection to do.
enum Out {
    Message(Message),
    Close(u16, String),
}

/// Sends to one client; cheap to clone (keep one per client in a fan-out).
#[derive(Clone)]
pub struct WsSender {
    queue: mpsc::Sender<Out>,
    /// Set when a `try_send` met a full queue: the connection closes with 1008.
    too_slow: Arc<TooSlow>,
}

/// A `try_send` met a full queue: a flag for the connection to read once the handler is
/// gone, and a wake-up for it while it runs.
#[derive(Default)]
struct TooSlow {
    flag: std::sync::atomic::AtomicBool,
    notify: Notify,
}

impl TooSlow {
    fn set(&self) {
        self.flag.store(true, std::sync::atomic::Ordering::Relaxed);
        // Kept as a permit if the connection is not waiting right now.
        self.notify.notify_one();
    }

    fn is_set(&self) -> bool {
        self.flag.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl WsSender {
    /// Queues `message`, waiting while the queue is full.
    pub async fn send(&self, message: impl Into<Message>) -> Result<(), Closed> {
        self.queue
            .send(Out::Message(message.into()))
            .await
            .map_err(|_| Closed)
    }

    /// Queues `message` without waiting. A full queue means the client does not keep up: the
    /// connection is closed with 1008 and the message dropped.
    pub fn try_send(&self, message: impl Into<Message>) -> Result<(), Closed> {
        match self.queue.try_send(Out::Message(message.into())) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.too_slow.set();
                Err(Closed)
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Err(Closed),
        }
    }

    /// Closes the connection with `code` (1000 normal, 4000-4999 the application's own) and
    /// `reason` (at most 123 bytes are sent).
    pub async fn close(&self, code: u16, reason: &str) {
        let mut reason = reason.to_owned();
        truncate_utf8(&mut reason, 123);
        let _ = self.queue.send(Out::Close(code, reason)).await;
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.queue.is_closed()
    }
}

/// One client's connection, as the handler sees it.
pub struct WebSocket {
    incoming: mpsc::Receiver<Message>,
    sender: WsSender,
}

impl WebSocket {
    /// The next message from the client; `None` once the connection has ended (the client
    /// closed it, a limit closed it, or the server is shutting down).
    pub async fn recv(&mut self) -> Option<Message> {
        self.incoming.recv().await
    }

    /// Sends `message`, waiting for room in the queue ([`WsSender::send`]).
    pub async fn send(&self, message: impl Into<Message>) -> Result<(), Closed> {
        self.sender.send(message).await
    }

    /// A sender for this client, to keep elsewhere (a fan-out).
    pub fn sender(&self) -> WsSender {
        self.sender.clone()
    }

    /// Closes the connection ([`WsSender::close`]).
    pub async fn close(&self, code: u16, reason: &str) {
        self.sender.close(code, reason).await;
    }
}

fn truncate_utf8(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

fn refuse(status: StatusCode, message: &'static str) -> HttpError {
    HttpError::with(status, CATEGORY, message)
}

/// Whether a comma-separated header names `token` (any case).
fn names(ctx: &Context, header: http::header::HeaderName, token: &str) -> bool {
    ctx.headers()
        .get_all(header)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

impl Context {
    /// Takes the connection over as a WebSocket: checks the handshake, answers 101, and once
    /// the client has the answer runs `handler` with the connection (on a task of its own).
    /// Call it from the route's handler and return its result; see [`crate::ws`] for the
    /// refusals and the limits `config` sets.
    pub fn websocket<F, Fut>(&mut self, config: WsConfig, handler: F) -> Result<Upgraded, HttpError>
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
        if self.header("sec-websocket-version").map(str::trim) != Some("13") {
            self.set_header(
                http::header::SEC_WEBSOCKET_VERSION,
                HeaderValue::from_static("13"),
            );
            return Err(refuse(
                StatusCode::UPGRADE_REQUIRED,
                "websocket version 13 is required",
            ));
        }
        if let Some(origin) = self.headers().get(http::header::ORIGIN)
            && !config.allowed_origins.allows(origin)
            && !crate::origin::is_same_origin(self, origin.as_bytes())
        {
            return Err(refuse(StatusCode::FORBIDDEN, "origin not allowed"));
        }
        if http2 {
            return self.take_over(StatusCode::OK, None, config, handler);
        }
        let key = self
            .headers()
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
        self.take_over(
            StatusCode::SWITCHING_PROTOCOLS,
            Some(accept),
            config,
            handler,
        )
    }

    /// Answers the handshake (101 with `accept`, or an HTTP/2 200) and runs the connection.
    fn take_over<F, Fut>(
        &mut self,
        status: StatusCode,
        accept: Option<HeaderValue>,
        config: WsConfig,
        handler: F,
    ) -> Result<Upgraded, HttpError>
    where
        F: FnOnce(WebSocket) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let Some(on_upgrade) = self.extensions_mut().remove::<hyper::upgrade::OnUpgrade>() else {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                "a websocket needs a connection to take over (not an in-process test client)",
            ));
        };
        let hold = self.extensions_mut().remove::<crate::server::UpgradeHold>();
        self.set_status(status);
        if let Some(accept) = accept {
            self.set_header(UPGRADE, HeaderValue::from_static("websocket"));
            self.set_header(CONNECTION, HeaderValue::from_static("upgrade"));
            self.set_header(SEC_WEBSOCKET_ACCEPT, accept);
        }
        let draining = self.shutdown();
        tokio::spawn(async move {
            let upgraded = match on_upgrade.await {
                Ok(upgraded) => upgraded,
                Err(err) => {
                    tracing::debug!(%err, "websocket upgrade failed");
                    return;
                }
            };
            let _open = crate::telemetry::counters()
                .connection_opened(crate::telemetry::Protocol::WebSocket);
            let io = hyper_util::rt::TokioIo::new(upgraded);
            let tungstenite_config = WebSocketConfig::default()
                .read_buffer_size(4096)
                .write_buffer_size(0)
                .max_message_size(Some(config.max_message_size))
                .max_frame_size(Some(config.max_frame_size));
            let socket =
                WebSocketStream::from_raw_socket(io, Role::Server, Some(tungstenite_config)).await;
            let (queue, outgoing) = mpsc::channel(config.send_queue.max(1));
            // One message waits for the handler (and one more in the connection): a client
            // that sends faster than the handler reads backs up in TCP, not in memory, and
            // a burst it sends reaches the handler no faster than the handler's answers
            // can leave.
            let (deliver, incoming) = mpsc::channel(1);
            let sender = WsSender {
                queue,
                too_slow: Arc::new(TooSlow::default()),
            };
            let too_slow = Arc::clone(&sender.too_slow);
            let app = tokio::spawn(handler(WebSocket { incoming, sender }));
            drive(
                socket, &config, outgoing, deliver, &too_slow, hold, draining,
            )
            .await;
            // The handler sees `recv` end and its sends fail; it finishes on its own.
            drop(app);
        });
        Ok(Upgraded)
    }
}

/// What [`Context::websocket`] gives back once it has answered 101: a handler returns it
/// (`Result<Upgraded>`), and a controller method that does is documented with a **101**
/// success in the OpenAPI document. As a reply it adds nothing: the status and headers are set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Upgraded;

impl crate::IntoReply for Upgraded {
    const LEAVES_VALUE: bool = false;
    fn into_reply(self, _ctx: &mut Context) {}
}

/// Close codes (RFC 6455 section 7.4.1): those this module sends, and 1011 for a handler
/// that cannot go on; 4000-4999 are the application's own.
pub mod close_code {
    /// The purpose of the connection was fulfilled.
    pub const NORMAL: u16 = 1000;
    /// The server is going away: shutting down, or the client was idle too long.
    pub const AWAY: u16 = 1001;
    /// The client broke the protocol.
    pub const PROTOCOL: u16 = 1002;
    /// A text message or close reason that is not UTF-8.
    pub const INVALID_PAYLOAD: u16 = 1007;
    /// The client broke a policy: here, it does not read fast enough.
    pub const POLICY: u16 = 1008;
    /// A message or frame over the size limit.
    pub const TOO_BIG: u16 = 1009;
    /// The server met a condition it cannot go on from.
    pub const ERROR: u16 = 1011;
}

/// The close frame a read failure is answered with: 1009 over a size limit, 1002 for a
/// protocol violation, 1007 for text that is not UTF-8; none when the connection itself
/// broke (there is nobody to tell).
fn failure_close(err: &tungstenite::Error) -> Ending {
    use tungstenite::error::ProtocolError;
    let (code, reason) = match err {
        tungstenite::Error::Capacity(_) => (close_code::TOO_BIG, "message too big"),
        tungstenite::Error::Protocol(ProtocolError::ResetWithoutClosingHandshake) => return None,
        tungstenite::Error::Protocol(_) => (close_code::PROTOCOL, "protocol error"),
        tungstenite::Error::Utf8(_) => (close_code::INVALID_PAYLOAD, "invalid utf-8"),
        _ => return None,
    };
    Some((code, Cow::Borrowed(reason)))
}

/// How a connection ends: the close code and reason to send, if any.
type Ending = Option<(u16, Cow<'static, str>)>;

/// What a write that could not finish within `send_timeout` means: the client stopped
/// reading.
const TOO_SLOW: (u16, Cow<'static, str>) = (close_code::POLICY, Cow::Borrowed("too slow"));

/// Runs the connection: frames in, queued messages out, pings, limits, shutdown.
///
/// The branches are polled in random order (no `biased`), so a handler that always has
/// something to send does not starve reading (the client's pongs and close), and a client
/// that always has something to say does not starve sending. A message read waits in
/// `inbound` until the handler has room for it; reading pauses meanwhile, sending does not.
/// Each write is bounded by `send_timeout`.
async fn drive<S>(
    socket: WebSocketStream<S>,
    config: &WsConfig,
    mut outgoing: mpsc::Receiver<Out>,
    deliver: mpsc::Sender<Message>,
    too_slow: &TooSlow,
    hold: Option<crate::server::UpgradeHold>,
    draining: impl Future<Output = ()>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::time::timeout;

    let (mut sink, mut stream) = socket.split();
    // The drain's start, or the server closing its connections (a shutdown that skipped the
    // drain, or a program that runs its own accept loop).
    let shutdown = async {
        let closing = async {
            match &hold {
                Some(hold) => hold.shutdown().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = closing => {}
            () = draining => {}
        }
    };
    let mut shutdown = std::pin::pin!(shutdown);
    let tick_every = config
        .ping_interval
        .min(config.idle_timeout)
        .max(Duration::from_millis(10));
    let mut tick = tokio::time::interval(tick_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_seen = tokio::time::Instant::now();
    // The handler ended: a normal close, unless it ended because a `try_send` found the
    // queue full.
    let handler_gone = || {
        if too_slow.is_set() {
            TOO_SLOW
        } else {
            (close_code::NORMAL, Cow::Borrowed(""))
        }
    };
    let mut inbound: Option<Message> = None;
    let ending: Ending = loop {
        tokio::select! {
            () = &mut shutdown => break Some((close_code::AWAY, "server shutting down".into())),
            () = too_slow.notify.notified() => break Some(TOO_SLOW),
            out = outgoing.recv() => match out {
                Some(first) => {
                    if let Err(ending) = send_queued(&mut sink, first, &mut outgoing, config).await {
                        break ending;
                    }
                }
                // Every sender is gone (the handler ended).
                None => break Some(handler_gone()),
            },
            permit = deliver.reserve(), if inbound.is_some() => match (permit, inbound.take()) {
                (Ok(permit), Some(message)) => permit.send(message),
                // The handler is gone: nobody reads.
                _ => break Some(handler_gone()),
            },
            frame = stream.next(), if inbound.is_none() => match frame {
                Some(Ok(Frame::Text(text))) => {
                    last_seen = tokio::time::Instant::now();
                    inbound = Some(Message::Text(text.as_str().to_owned()));
                }
                Some(Ok(Frame::Binary(bytes))) => {
                    last_seen = tokio::time::Instant::now();
                    inbound = Some(Message::Binary(bytes));
                }
                Some(Ok(Frame::Ping(_) | Frame::Pong(_) | Frame::Frame(_))) => {
                    last_seen = tokio::time::Instant::now();
                    // A ping's pong is queued by tungstenite: send it now.
                    match timeout(config.send_timeout, sink.flush()).await {
                        Ok(Ok(())) => {}
                        Ok(Err(_)) => break None,
                        Err(_) => break Some(TOO_SLOW),
                    }
                }
                // The client closed: tungstenite answers the close on the next flush.
                Some(Ok(Frame::Close(_))) => {
                    let _ = timeout(Duration::from_secs(1), sink.flush()).await;
                    break None;
                }
                Some(Err(err)) => {
                    tracing::debug!(%err, "websocket read failed");
                    break failure_close(&err);
                }
                None => break None,
            },
            _ = tick.tick() => {
                let quiet = last_seen.elapsed();
                if quiet >= config.idle_timeout {
                    break Some((close_code::AWAY, "idle timeout".into()));
                }
                if quiet >= config.ping_interval {
                    match timeout(config.send_timeout, sink.send(Frame::Ping(Bytes::new()))).await {
                        Ok(Ok(())) => {}
                        Ok(Err(_)) => break None,
                        Err(_) => break Some(TOO_SLOW),
                    }
                }
            }
        }
    };
    if let Some((code, reason)) = ending {
        close_handshake(&mut sink, &mut stream, code, reason).await;
    }
    // `hold` (the connection's place under the limit) goes when this returns.
}

/// Writes `first` and what else is queued by now (a queue's worth at most), then flushes,
/// all within `send_timeout`: a burst from the handler leaves in one turn of the connection,
/// not one turn per message. `Err` says how the connection ends: with the close the handler
/// asked for, with 1008 when the writes did not finish in time, or at once when the
/// connection broke.
async fn send_queued<S>(
    sink: &mut futures_util::stream::SplitSink<WebSocketStream<S>, Frame>,
    first: Out,
    outgoing: &mut mpsc::Receiver<Out>,
    config: &WsConfig,
) -> Result<(), Ending>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut asked_close = None;
    let write = async {
        let mut next = Some(first);
        let mut left = config.send_queue.max(1);
        while let Some(out) = next.take() {
            let frame = match out {
                Out::Message(Message::Text(text)) => Frame::Text(text.into()),
                Out::Message(Message::Binary(bytes)) => Frame::Binary(bytes),
                Out::Close(code, reason) => {
                    asked_close = Some((code, Cow::Owned(reason)));
                    break;
                }
            };
            sink.feed(frame).await?;
            left -= 1;
            if left > 0 {
                next = outgoing.try_recv().ok();
            }
        }
        sink.flush().await
    };
    match tokio::time::timeout(config.send_timeout, write).await {
        Ok(Ok(())) => asked_close.map_or(Ok(()), |close| Err(Some(close))),
        Ok(Err(_)) => Err(None),
        Err(_) => Err(Some(TOO_SLOW)),
    }
}

/// The closing handshake, briefly (a client that does not answer gets 1 s): send the close,
/// then read until the client's close comes back, so the socket is not shut with the
/// client's last frames unread (the kernel would answer them with a reset, and a reset can
/// discard the close before the client reads it).
async fn close_handshake<S>(
    sink: &mut futures_util::stream::SplitSink<WebSocketStream<S>, Frame>,
    stream: &mut futures_util::stream::SplitStream<WebSocketStream<S>>,
    code: u16,
    reason: Cow<'static, str>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let frame = Frame::Close(Some(CloseFrame {
        code: CloseCode::from(code),
        reason: reason.into_owned().into(),
    }));
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        if sink.send(frame).await.is_err() {
            return;
        }
        while let Some(Ok(frame)) = stream.next().await {
            if matches!(frame, Frame::Close(_)) {
                break;
            }
        }
    })
    .await;
    let _ = tokio::time::timeout(Duration::from_millis(100), sink.close()).await;
}

/// Messages fanned out to subscribers: the connections of one instance
/// ([`Broadcast::local`]), or of every instance on one Redis channel ([`Broadcast::redis`]).
///
/// A subscriber that falls more than `capacity` messages behind misses the oldest
/// ([`tokio::sync::broadcast`]'s `Lagged`); a WebSocket handler usually closes such a client
/// as too slow. Across instances delivery is Redis pub/sub's: at most once, and a message
/// published while an instance's subscription is reconnecting (after a Redis failure, retried
/// every [`RedisPolicy::probe_interval`](crate::redis_connection::RedisPolicy)) does not reach
/// that instance.
#[derive(Clone)]
pub struct Broadcast {
    inner: Arc<BroadcastInner>,
}

struct BroadcastInner {
    local: tokio::sync::broadcast::Sender<Bytes>,
    #[cfg(feature = "ws-redis")]
    redis: Option<(crate::redis_connection::RedisConnection, String)>,
    #[cfg(feature = "ws-redis")]
    subscriber: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for BroadcastInner {
    fn drop(&mut self) {
        #[cfg(feature = "ws-redis")]
        if let Some(task) = &self.subscriber {
            task.abort();
        }
    }
}

/// Why a message could not be published.
#[derive(Debug)]
pub enum PublishError {
    /// Redis refused or did not answer (within the policy's deadline).
    #[cfg(feature = "ws-redis")]
    Redis(crate::redis_connection::RedisFailure),
}

impl std::fmt::Display for PublishError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        #[cfg(feature = "ws-redis")]
        {
            let PublishError::Redis(e) = self;
            write!(f, "publish failed: {e}")
        }
        #[cfg(not(feature = "ws-redis"))]
        {
            let _ = f;
            match *self {}
        }
    }
}

impl std::error::Error for PublishError {}

impl Broadcast {
    /// Fan-out within this process; each subscriber may fall `capacity` messages behind.
    pub fn local(capacity: usize) -> Self {
        Self {
            inner: Arc::new(BroadcastInner {
                local: tokio::sync::broadcast::channel(capacity.max(1)).0,
                #[cfg(feature = "ws-redis")]
                redis: None,
                #[cfg(feature = "ws-redis")]
                subscriber: None,
            }),
        }
    }

    /// Fan-out across every instance subscribed to `channel` on this Redis: a message
    /// published on one reaches the subscribers of all. Returns once subscribed, so nothing
    /// published after it is missed; fails when Redis cannot be reached.
    #[cfg(feature = "ws-redis")]
    pub async fn redis(
        redis: crate::redis_connection::RedisConnection,
        channel: &str,
        capacity: usize,
    ) -> Result<Self, crate::redis_connection::RedisFailure> {
        let local = tokio::sync::broadcast::channel(capacity.max(1)).0;
        let first = redis.pubsub(channel).await?;
        let subscriber = tokio::spawn(subscribe(
            redis.clone(),
            channel.to_owned(),
            first,
            local.clone(),
        ));
        Ok(Self {
            inner: Arc::new(BroadcastInner {
                local,
                redis: Some((redis, channel.to_owned())),
                subscriber: Some(subscriber),
            }),
        })
    }

    /// Sends `message` to every subscriber (through Redis when there is one: this instance's
    /// subscribers get it back from there, in the same order as everyone else).
    pub async fn publish(&self, message: impl Into<Bytes>) -> Result<(), PublishError> {
        let message = message.into();
        #[cfg(feature = "ws-redis")]
        if let Some((redis, channel)) = &self.inner.redis {
            let mut publish = crate::redis_connection::redis::cmd("PUBLISH");
            publish.arg(channel).arg(message.as_ref());
            return redis
                .query::<i64>(&publish)
                .await
                .map(|_| ())
                .map_err(PublishError::Redis);
        }
        // No subscriber is not an error.
        let _ = self.inner.local.send(message);
        Ok(())
    }

    /// A new subscriber: every message published from now on.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Bytes> {
        self.inner.local.subscribe()
    }
}

/// Forwards the channel's messages to the local subscribers; resubscribes after a failure.
#[cfg(feature = "ws-redis")]
async fn subscribe(
    redis: crate::redis_connection::RedisConnection,
    channel: String,
    mut pubsub: redis::aio::PubSub,
    local: tokio::sync::broadcast::Sender<Bytes>,
) {
    loop {
        {
            let mut messages = pubsub.on_message();
            while let Some(message) = messages.next().await {
                let payload: Vec<u8> = message.get_payload().unwrap_or_default();
                let _ = local.send(Bytes::from(payload));
            }
        }
        tracing::warn!(channel, "redis subscription lost; resubscribing");
        pubsub = loop {
            tokio::time::sleep(redis.policy().probe_interval).await;
            match redis.pubsub(&channel).await {
                Ok(pubsub) => break pubsub,
                Err(err) => tracing::debug!(%err, channel, "resubscribe failed"),
            }
        };
    }
}

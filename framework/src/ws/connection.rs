//! A connection at work: frames in, queued messages out, pings, limits, shutdown, and the
//! closing handshake.

use std::borrow::Cow;
use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::config::WsConfig;
use super::message::{Message, Out, close_code};
use super::socket::TooSlow;

/// The close frame a read failure is answered with: 1009 over a size limit, 1002 for a
/// protocol violation, 1007 for text that is not UTF-8; none when the connection itself
/// broke (there is nobody to tell).
pub(super) fn failure_close(err: &tungstenite::Error) -> Ending {
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
pub(super) async fn drive<S>(
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
                Some(Ok(tungstenite::Message::Text(text))) => {
                    last_seen = tokio::time::Instant::now();
                    inbound = Some(Message::Text(text.as_str().to_owned()));
                }
                Some(Ok(tungstenite::Message::Binary(bytes))) => {
                    last_seen = tokio::time::Instant::now();
                    inbound = Some(Message::Binary(bytes));
                }
                Some(Ok(tungstenite::Message::Ping(_) | tungstenite::Message::Pong(_) | tungstenite::Message::Frame(_))) => {
                    last_seen = tokio::time::Instant::now();
                    // A ping's pong is queued by tungstenite: send it now.
                    match timeout(config.send_timeout, sink.flush()).await {
                        Ok(Ok(())) => {}
                        Ok(Err(_)) => break None,
                        Err(_) => break Some(TOO_SLOW),
                    }
                }
                // The client closed: tungstenite answers the close on the next flush.
                Some(Ok(tungstenite::Message::Close(_))) => {
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
                    match timeout(config.send_timeout, sink.send(tungstenite::Message::Ping(Bytes::new()))).await {
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
    sink: &mut futures_util::stream::SplitSink<WebSocketStream<S>, tungstenite::Message>,
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
                Out::Message(Message::Text(text)) => tungstenite::Message::Text(text.into()),
                Out::Message(Message::Binary(bytes)) => tungstenite::Message::Binary(bytes),
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
    sink: &mut futures_util::stream::SplitSink<WebSocketStream<S>, tungstenite::Message>,
    stream: &mut futures_util::stream::SplitStream<WebSocketStream<S>>,
    code: u16,
    reason: Cow<'static, str>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let frame = tungstenite::Message::Close(Some(CloseFrame {
        code: CloseCode::from(code),
        reason: reason.into_owned().into(),
    }));
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        if sink.send(frame).await.is_err() {
            return;
        }
        while let Some(Ok(frame)) = stream.next().await {
            if matches!(frame, tungstenite::Message::Close(_)) {
                break;
            }
        }
    })
    .await;
    let _ = tokio::time::timeout(Duration::from_millis(100), sink.close()).await;
}

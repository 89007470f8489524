//! The handler's side of a connection: [`WebSocket`] and [`WsSender`].

use std::sync::Arc;

use tokio::sync::{Notify, mpsc};

use super::message::{Closed, Message, Out};

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
pub(super) struct TooSlow {
    flag: std::sync::atomic::AtomicBool,
    pub(super) notify: Notify,
}

impl TooSlow {
    pub(super) fn set(&self) {
        self.flag.store(true, std::sync::atomic::Ordering::Relaxed);
        // Kept as a permit if the connection is not waiting right now.
        self.notify.notify_one();
    }

    pub(super) fn is_set(&self) -> bool {
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

/// A new connection's two sides: the handler's [`WebSocket`], and what the connection keeps,
/// the queue of what the handler sends (at most `send_queue` messages), the way to deliver
/// the client's messages, and the too-slow flag [`WsSender::try_send`] sets.
///
/// One message waits for the handler (and one more in the connection): a client that sends
/// faster than the handler reads backs up in TCP, not in memory, and a burst it sends reaches
/// the handler no faster than the handler's responses can leave.
pub(super) fn pair(
    send_queue: usize,
) -> (
    WebSocket,
    mpsc::Receiver<Out>,
    mpsc::Sender<Message>,
    Arc<TooSlow>,
) {
    let (queue, outgoing) = mpsc::channel(send_queue.max(1));
    let (deliver, incoming) = mpsc::channel(1);
    let too_slow = Arc::new(TooSlow::default());
    let sender = WsSender {
        queue,
        too_slow: Arc::clone(&too_slow),
    };
    (WebSocket { incoming, sender }, outgoing, deliver, too_slow)
}

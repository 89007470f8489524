//! What goes over a connection: [`Message`], the [`Closed`] error, and the close codes.

use bytes::Bytes;

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
pub(super) enum Out {
    Message(Message),
    Close(u16, String),
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

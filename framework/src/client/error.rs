//! What a client call can fail with: the service's error answer, or a failure to reach it.

use std::fmt;

use http::StatusCode;
use serde::Deserialize;

/// The error object the service's error handler writes
/// ([`error_handler`](crate::middleware::error_handler)): `statusCode`, `category`, `code`,
/// `message`, and the optional `title`, `exception` and `extra`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct ErrorObject {
    /// The status, as the body states it.
    pub status_code: u16,
    /// The error's category (`validate`, `user`, `framework-<component>`, ...).
    pub category: String,
    /// The error's code (the validator's name for a validation error); often empty.
    pub code: String,
    /// A title; often empty.
    pub title: String,
    /// The message.
    pub message: String,
    /// Whether the error is an unexpected failure of the service (a 500).
    pub exception: bool,
    /// Details, such as the failing field.
    pub extra: Option<serde_json::Value>,
}

/// Why a client call failed. The service's answers (an error status, with its error object
/// when the body is one) are apart from failures to get an answer at all.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientError {
    /// The service answered with an error status, or a redirect (`3xx`: the client follows
    /// none, and no route's answer is a redirect).
    Status {
        /// The answer's status.
        status: StatusCode,
        /// The error object of the body, when it is one (the error handler writes it as JSON
        /// for a client that accepts JSON, as this one does).
        error: Option<ErrorObject>,
        /// Whether the route declares the status (`errors(..)` on its attribute).
        declared: bool,
    },
    /// No answer: the connection could not be made, or failed (HTTP, TLS or I/O), or the
    /// answer was not HTTP. Its message ends with the chain of causes (hyper's own message,
    /// such as `invalid HTTP version parsed` or `message head is too large`, and the I/O
    /// error under it), so [`Error::source`](std::error::Error::source) gives none: the
    /// error itself is the variant's field.
    Transport(Box<dyn std::error::Error + Send + Sync>),
    /// An answer whose body is longer than the client's limit
    /// ([`ClientBuilder::max_answer_bytes`](super::ClientBuilder::max_answer_bytes)); the
    /// rest of it was not read.
    TooLarge {
        /// The answer's status.
        status: StatusCode,
        /// The limit, in bytes.
        limit: usize,
    },
    /// No answer within the client's timeout.
    Timeout,
    /// A success whose body is not the route's answer type.
    Decode {
        /// The answer's status.
        status: StatusCode,
        /// What did not fit.
        message: String,
    },
    /// The request could not be made from the arguments (a base URL, header value or body
    /// that cannot be written).
    Request(String),
}

impl ClientError {
    /// The answer's status: of an error answer, or of a success that did not decode.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            ClientError::Status { status, .. }
            | ClientError::Decode { status, .. }
            | ClientError::TooLarge { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The service's error object, when it answered with one.
    pub fn error_object(&self) -> Option<&ErrorObject> {
        match self {
            ClientError::Status { error, .. } => error.as_ref(),
            _ => None,
        }
    }

    /// Whether the call got no answer (transport failure or timeout): a retry may succeed.
    pub fn is_transport(&self) -> bool {
        matches!(self, ClientError::Transport(_) | ClientError::Timeout)
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Status {
                status,
                error: Some(error),
                ..
            } => write!(
                f,
                "{status}: {} (category {}{}{})",
                error.message,
                error.category,
                if error.code.is_empty() { "" } else { ", code " },
                error.code
            ),
            ClientError::Status { status, .. } => write!(f, "{status}"),
            ClientError::Transport(err) => {
                write!(f, "transport: {err}")?;
                let mut cause = err.source();
                while let Some(err) = cause {
                    write!(f, ": {err}")?;
                    cause = err.source();
                }
                Ok(())
            }
            ClientError::TooLarge { status, limit } => write!(
                f,
                "{status}: the answer's body is over the client's limit of {limit} bytes"
            ),
            ClientError::Timeout => f.write_str("no answer within the timeout"),
            ClientError::Decode { status, message } => {
                write!(f, "{status}: the answer is not the route's type: {message}")
            }
            ClientError::Request(message) => write!(f, "the request cannot be made: {message}"),
        }
    }
}

/// No source: a transport failure's causes are in its message.
impl std::error::Error for ClientError {}

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
    /// The service answered with an error status.
    Status {
        /// The answer's status.
        status: StatusCode,
        /// The error object of the body, when it is one (the error handler writes it as JSON
        /// for a client that accepts JSON, as this one does).
        error: Option<ErrorObject>,
        /// Whether the route declares the status (`errors(..)` on its attribute).
        declared: bool,
    },
    /// No answer: the connection could not be made, or failed (HTTP, TLS or I/O).
    Transport(Box<dyn std::error::Error + Send + Sync>),
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
            ClientError::Status { status, .. } | ClientError::Decode { status, .. } => {
                Some(*status)
            }
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
            ClientError::Transport(err) => write!(f, "transport: {err}"),
            ClientError::Timeout => f.write_str("no answer within the timeout"),
            ClientError::Decode { status, message } => {
                write!(f, "{status}: the answer is not the route's type: {message}")
            }
            ClientError::Request(message) => write!(f, "the request cannot be made: {message}"),
        }
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClientError::Transport(err) => Some(&**err),
            _ => None,
        }
    }
}

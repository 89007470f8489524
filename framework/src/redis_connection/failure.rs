//! What a Redis-backed component does when Redis fails ([`RedisPolicy`]), the failure it
//! reports ([`RedisFailure`]), and how a Redis error is classified.

use std::time::Duration;

use redis::RedisError;

/// Timeouts and the probe interval of a [`RedisConnection`](super::RedisConnection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RedisPolicy {
    /// How long one command (or pipeline, or script) may take. Default 1 s.
    pub command_timeout: Duration,
    /// How long one connection attempt may take. Default 1 s.
    pub connect_timeout: Duration,
    /// How often a server that counts as down is probed. Default 1 s.
    pub probe_interval: Duration,
}

impl Default for RedisPolicy {
    fn default() -> Self {
        Self {
            command_timeout: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(1),
            probe_interval: Duration::from_secs(1),
        }
    }
}

/// Why a Redis command failed.
#[derive(Debug)]
pub enum RedisFailure {
    /// The server counts as down after an earlier failure; nothing was sent. It is probed in the
    /// background and used again once a probe succeeds.
    Unavailable,
    /// No answer within the command timeout (or no connection within the connect timeout).
    Timeout,
    /// The connection failed (refused, reset, closed) and so did the retry.
    Connection(RedisError),
    /// The server answered with an error (a wrong type, a script error, a malformed URL).
    Server(RedisError),
}

impl std::fmt::Display for RedisFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unavailable => f.write_str("redis is unavailable"),
            Self::Timeout => f.write_str("redis timed out"),
            Self::Connection(e) => write!(f, "redis connection failed: {e}"),
            Self::Server(e) => write!(f, "redis error: {e}"),
        }
    }
}

impl std::error::Error for RedisFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Connection(e) | Self::Server(e) => Some(e),
            Self::Unavailable | Self::Timeout => None,
        }
    }
}

impl RedisFailure {
    /// True when the server could not be reached or did not answer (as opposed to an error
    /// answer): the failures that mark it down.
    pub fn is_unavailable(&self) -> bool {
        !matches!(self, Self::Server(_))
    }
}

/// How a connection's failure is handled.
pub(super) enum Fault {
    /// The server answered with an error: the connection is fine.
    Answer(RedisError),
    /// The connection broke (reset, closed, refused): worth one retry on a new one.
    Broken(RedisError),
    /// The server is there but not answering, or not ready (`LOADING`): down at once.
    Down(RedisFailure),
}

pub(super) fn classify(err: RedisError) -> Fault {
    if err.kind() == redis::ErrorKind::BusyLoadingError {
        Fault::Down(RedisFailure::Connection(err))
    } else if err.is_timeout() {
        Fault::Down(RedisFailure::Timeout)
    } else if err.is_io_error() || err.is_unrecoverable_error() {
        Fault::Broken(err)
    } else {
        Fault::Answer(err)
    }
}

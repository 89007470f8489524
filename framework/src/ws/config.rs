//! [`WsConfig`]: a connection's limits, and who may open one.

use std::time::Duration;

use crate::origin::AllowOrigin;

/// Limits of a WebSocket connection, and who may open one.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct WsConfig {
    /// The largest message the client may send. Default 64 KiB; above it: close 1009.
    pub max_message_size: usize,
    /// The largest frame the client may send. Default 64 KiB; above it: close 1009.
    pub max_frame_size: usize,
    /// Messages waiting to be sent. Default 64; see the [module](super) for what a full queue
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
    /// ([`AllowOrigin::list`] of nothing); [`AllowOrigin::any`] turns the check off. See the
    /// [module](super).
    pub allowed_origins: AllowOrigin,
}

crate::config::setters!(WsConfig {
    max_message_size: usize,
    max_frame_size: usize,
    send_queue: usize,
    ping_interval: Duration,
    idle_timeout: Duration,
    send_timeout: Duration,
    allowed_origins: AllowOrigin,
});

impl Default for WsConfig {
    fn default() -> Self {
        Self {
            max_message_size: 64 * 1024,
            max_frame_size: 64 * 1024,
            send_queue: 64,
            ping_interval: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(75),
            send_timeout: Duration::from_secs(5),
            allowed_origins: AllowOrigin::default(),
        }
    }
}

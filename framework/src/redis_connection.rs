//! The Redis connection every Redis-backed component uses (sessions, locks): one place for the
//! timeouts and the reconnect policy.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

/// How long one connection attempt or one command may take before it counts as failed.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(2);

/// A connection manager on `url` (e.g. `redis://127.0.0.1:6379/0`) that reconnects by itself;
/// fails when Redis cannot be reached now, so a misconfigured service stops at start-up.
pub(crate) async fn connect(url: &str) -> redis::RedisResult<ConnectionManager> {
    let client = redis::Client::open(url)?;
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(TIMEOUT)
        .set_response_timeout(TIMEOUT)
        .set_number_of_retries(2)
        .set_factor(100)
        .set_max_delay(1000);
    ConnectionManager::new_with_config(client, config).await
}

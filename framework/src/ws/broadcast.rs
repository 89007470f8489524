//! [`Broadcast`]: messages fanned out to the connections of one instance, or of every
//! instance through Redis.

use std::sync::Arc;

use bytes::Bytes;
#[cfg(feature = "ws-redis")]
use futures_util::StreamExt;

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

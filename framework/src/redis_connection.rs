//! The one Redis connection policy every Redis-backed component uses: sessions, the cache, the
//! concurrent limiter's locks, the rate limiter's budgets, and any store of an application
//! (the user service's failed-login counts).
//!
//! A [`RedisConnection`] is one multiplexed connection shared by everything that clones it,
//! under a [`RedisPolicy`]:
//! - **a deadline on every command** ([`command_timeout`](RedisPolicy::command_timeout),
//!   default 1 s) and on every connection attempt
//!   ([`connect_timeout`](RedisPolicy::connect_timeout), default 1 s);
//! - **at most one retry**, on a fresh connection, of a command whose connection turned out to be
//!   broken (Redis restarted while the connection was idle: the first command after a restart
//!   does not fail). A command that *timed out* is not retried: a server that does not answer
//!   within the deadline is counted down at once, so a paused Redis costs a request one
//!   deadline, not two;
//! - **fail-fast while down**: after a failure the server counts as down, and every command fails
//!   at once with [`RedisFailure::Unavailable`] (no wait, no connection attempt) until a
//!   background probe (connect + `PING`, at most once per
//!   [`probe_interval`](RedisPolicy::probe_interval), default 1 s) succeeds. The first
//!   successful probe brings the server back for everybody. A server still loading its data set
//!   after a restart (`LOADING`) counts as down too. A **Redis Cluster** counts as up again only
//!   when every master of its slot map answers and reports `cluster_state:ok`: with one master
//!   dead or hung, the slots it serves would otherwise make every request that touches them
//!   wait out a deadline again after each probe.
//!
//! Requests open a connection one at a time (the others wait for that attempt's outcome, at most
//! the connect timeout), so a Redis that just restarted is not met by one connection per request
//! in flight.
//!
//! No backoff grows beyond the probe interval, and no request ever waits on a reconnect loop: a
//! request that meets a Redis fault costs at most `connect_timeout + command_timeout` (about
//! 2 s with the defaults), the requests after it nothing.
//!
//! Each component turns a [`RedisFailure`] into its own answer: the session store a 500
//! `framework-session`, the concurrent limiter a 500 `framework-concurrent-limiter`, the cache a
//! bypass, the rate limiter a request let through (each documented on the component).
//!
//! ```no_run
//! # async fn run() -> Result<(), framework::redis_connection::RedisFailure> {
//! use std::sync::Arc;
//! use framework::middleware::concurrent_limiter::RedisLock;
//! use framework::middleware::session::RedisStore;
//! use framework::redis_connection::{RedisConnection, RedisPolicy};
//!
//! // One connection (and one idea of whether Redis is up) for every store.
//! let redis = RedisConnection::connect("redis://127.0.0.1:6379", RedisPolicy::default()).await?;
//! let sessions = RedisStore::new(redis.clone(), "session:");
//! let locks = RedisLock::new(redis.clone(), "lock:");
//! # let _ = (sessions, locks);
//! # Ok(())
//! # }
//! ```

use std::future::Future;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use redis::cluster::ClusterClient;
use redis::{AsyncConnectionConfig, Client, FromRedisValue, RedisError, RedisResult};

/// The `redis` crate this module is built on, so a store of your own names its commands at the
/// same version (`framework::redis_connection::redis::cmd("GET")`).
pub use redis;

mod failure;
#[cfg(any(feature = "session-redis", feature = "cache-redis"))]
mod key_value;
mod link;

use failure::{Fault, classify};
pub use failure::{RedisFailure, RedisPolicy};
#[cfg(any(feature = "session-redis", feature = "cache-redis"))]
pub(crate) use key_value::KeyValue;
pub use link::RedisLink;
use link::{cluster_masters, cluster_nodes};

/// `ttl` in whole milliseconds for `PX`, at least 1 (0 is an error in Redis).
#[cfg(any(
    feature = "session-redis",
    feature = "cache-redis",
    feature = "limiter-redis"
))]
pub(crate) fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// One Redis server under the [policy](RedisPolicy): cheap to clone, every clone shares the
/// connection and the up/down state.
#[derive(Clone)]
pub struct RedisConnection {
    shared: Arc<Shared>,
}

struct Shared {
    client: Backend,
    policy: RedisPolicy,
    config: AsyncConnectionConfig,
    state: Mutex<State>,
    /// One connection attempt at a time from requests: the others wait for its outcome (at
    /// most the connect timeout) instead of each opening a connection of their own.
    opening: tokio::sync::Mutex<()>,
}

/// What connections are opened to.
enum Backend {
    /// One server.
    Single(Client),
    /// A Redis Cluster, and a client of its first node for subscriptions (a message published
    /// anywhere in a cluster reaches the subscribers of every node).
    Cluster(Box<ClusterClient>, Client),
}

#[derive(Default)]
struct State {
    /// The connection in use and its number (a failure only drops the connection it met).
    connection: Option<(u64, RedisLink)>,
    next_number: u64,
    /// Counted down: commands fail at once until a probe succeeds.
    down: bool,
    /// A probe task is running.
    probing: bool,
}

impl std::fmt::Debug for RedisConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConnection")
            .field("policy", &self.shared.policy)
            .field("up", &self.is_up())
            .finish_non_exhaustive()
    }
}

impl RedisConnection {
    /// Connects to `url` now: fails when the URL is malformed or the server cannot be reached
    /// within the connect timeout, so a misconfigured service stops at start-up.
    ///
    /// `url` names one server, `redis://[:password@]host:port[/db]`, or a **Redis Cluster**:
    /// several node URLs separated by commas (`redis://10.0.0.1:7000,redis://10.0.0.2:7000`),
    /// or `redis+cluster://host:port[,host:port…]`. The nodes are where the cluster is first
    /// asked for its slots; every command then goes to the node holding its key, and slot
    /// moves and failovers are followed. Each store's command or script touches one key, so
    /// no key needs a hash tag to share a slot with another.
    pub async fn connect(url: &str, policy: RedisPolicy) -> Result<Self, RedisFailure> {
        let client = match cluster_nodes(url) {
            None => Backend::Single(Client::open(url).map_err(RedisFailure::Server)?),
            Some(nodes) => {
                let first = Client::open(nodes[0].as_str()).map_err(RedisFailure::Server)?;
                let cluster = ClusterClient::builder(nodes)
                    .connection_timeout(policy.connect_timeout)
                    .response_timeout(policy.command_timeout)
                    .build()
                    .map_err(RedisFailure::Server)?;
                Backend::Cluster(Box::new(cluster), first)
            }
        };
        // The command timeout is applied around each command (`attempt`), not by the client.
        let config = AsyncConnectionConfig::new().set_connection_timeout(policy.connect_timeout);
        let connection = Self {
            shared: Arc::new(Shared {
                client,
                policy,
                config,
                state: Mutex::default(),
                opening: tokio::sync::Mutex::new(()),
            }),
        };
        let first = connection.open().await?;
        connection.install(first);
        Ok(connection)
    }

    /// A connection of its own subscribed to `channel` (a subscribed connection can do
    /// nothing else), within the connect and command deadlines.
    pub async fn pubsub(&self, channel: &str) -> Result<redis::aio::PubSub, RedisFailure> {
        let policy = self.shared.policy;
        let client = match &self.shared.client {
            Backend::Single(client) | Backend::Cluster(_, client) => client,
        };
        let mut pubsub = tokio::time::timeout(policy.connect_timeout, client.get_async_pubsub())
            .await
            .map_err(|_| RedisFailure::Timeout)?
            .map_err(RedisFailure::Connection)?;
        tokio::time::timeout(policy.command_timeout, pubsub.subscribe(channel))
            .await
            .map_err(|_| RedisFailure::Timeout)?
            .map_err(RedisFailure::Connection)?;
        Ok(pubsub)
    }

    /// The policy it runs under.
    pub fn policy(&self) -> RedisPolicy {
        self.shared.policy
    }

    /// False while the server counts as down (commands fail at once).
    pub fn is_up(&self) -> bool {
        !self.state().down
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs one command.
    pub async fn query<T: FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, RedisFailure> {
        self.run(|mut c| async move { cmd.query_async(&mut c).await })
            .await
    }

    /// Runs `op` on the connection under the policy: the command timeout, one retry on a fresh
    /// connection when the connection turns out broken, fail-fast while the server is down.
    /// `op` may run twice, so it must be safe to send twice (make a lock's `SET NX` a script
    /// that also accepts its own token, count an `INCR` twice on the safe side).
    pub async fn run<T, F, Fut>(&self, mut op: F) -> Result<T, RedisFailure>
    where
        F: FnMut(RedisLink) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        // The whole call, retry included, stays within one connect and one command deadline.
        let policy = self.shared.policy;
        let deadline =
            tokio::time::Instant::now() + policy.connect_timeout + policy.command_timeout;
        let (number, connection) = self.connection().await?;
        let err = match self.attempt(op(connection)).await {
            Ok(value) => return Ok(value),
            Err(err) => err,
        };
        match classify(err) {
            Fault::Broken(err) => {
                self.drop_connection(number);
                let (number, connection) = self.connection().await?;
                if tokio::time::Instant::now() + policy.command_timeout > deadline {
                    // No time left for a whole command: the retry would break the budget.
                    return Err(RedisFailure::Connection(err));
                }
                match self.attempt(op(connection)).await {
                    Ok(value) => Ok(value),
                    Err(err) => Err(self.settle(number, classify(err))),
                }
            }
            fault => Err(self.settle(number, fault)),
        }
    }

    /// The failure a call ends with after `fault` on connection `number`: an error answer as
    /// it is; anything else (no answer, a broken connection with no retry left) counts the
    /// server down.
    fn settle(&self, number: u64, fault: Fault) -> RedisFailure {
        match fault {
            Fault::Answer(err) => RedisFailure::Server(err),
            Fault::Down(failure) => self.mark_down(number, failure),
            Fault::Broken(err) => self.mark_down(number, RedisFailure::Connection(err)),
        }
    }

    async fn attempt<T>(&self, op: impl Future<Output = RedisResult<T>>) -> RedisResult<T> {
        match tokio::time::timeout(self.shared.policy.command_timeout, op).await {
            Ok(result) => result,
            Err(_) => Err(RedisError::from(std::io::Error::from(
                std::io::ErrorKind::TimedOut,
            ))),
        }
    }

    /// The connection to use now: the current one, or a new one when there is none (the
    /// server is not known to be down); fails at once while it is down.
    async fn connection(&self) -> Result<(u64, RedisLink), RedisFailure> {
        if let Some(ready) = self.current() {
            return ready;
        }
        let _opening = self.shared.opening.lock().await;
        // Whoever opened before us may have succeeded (or failed: then it is down).
        if let Some(ready) = self.current() {
            return ready;
        }
        match self.open().await {
            Ok(connection) => Ok(self.install(connection)),
            Err(failure) => Err(self.mark_down(u64::MAX, failure)),
        }
    }

    /// The current connection, a failure while down, or `None` when one must be opened.
    fn current(&self) -> Option<Result<(u64, RedisLink), RedisFailure>> {
        let state = self.state();
        if state.down {
            return Some(Err(RedisFailure::Unavailable));
        }
        let (number, connection) = state.connection.as_ref()?;
        Some(Ok((*number, connection.clone())))
    }

    /// A new connection within the connect timeout.
    async fn open(&self) -> Result<RedisLink, RedisFailure> {
        let shared = &self.shared;
        let opening = async {
            match &shared.client {
                Backend::Single(client) => client
                    .get_multiplexed_async_connection_with_config(&shared.config)
                    .await
                    .map(RedisLink::Single),
                Backend::Cluster(client, _) => {
                    client.get_async_connection().await.map(RedisLink::Cluster)
                }
            }
        };
        match tokio::time::timeout(shared.policy.connect_timeout, opening).await {
            Ok(Ok(connection)) => Ok(connection),
            Ok(Err(err)) if err.is_timeout() => Err(RedisFailure::Timeout),
            Ok(Err(err)) => Err(RedisFailure::Connection(err)),
            Err(_) => Err(RedisFailure::Timeout),
        }
    }

    /// Makes `connection` the current one (unless another request installed one meanwhile,
    /// which is kept) and counts the server up.
    fn install(&self, connection: RedisLink) -> (u64, RedisLink) {
        install_in(&mut self.state(), connection)
    }

    /// [`install`](Self::install) and the end of the probe, in one step.
    fn install_after_probe(&self, connection: RedisLink) {
        let mut state = self.state();
        state.probing = false;
        install_in(&mut state, connection);
    }

    fn drop_connection(&self, number: u64) {
        let mut state = self.state();
        if state.connection.as_ref().is_some_and(|(n, _)| *n == number) {
            state.connection = None;
        }
    }

    /// Counts the server down after `failure` on connection `number`, starts the probe, and
    /// gives the failure back. A failure on a connection that was already replaced changes
    /// nothing (the server answered another request since).
    fn mark_down(&self, number: u64, failure: RedisFailure) -> RedisFailure {
        let (was_up, start_probe) = {
            let mut state = self.state();
            let current = state.connection.as_ref().map(|(n, _)| *n);
            if current.is_some() && current != Some(number) {
                return failure;
            }
            state.connection = None;
            let was_up = !std::mem::replace(&mut state.down, true);
            (was_up, !std::mem::replace(&mut state.probing, true))
        };
        if was_up {
            tracing::warn!(error = %failure, "redis counts as down; commands fail at once until a probe succeeds");
        }
        if start_probe {
            self.spawn_probe();
        }
        failure
    }

    /// Probes the server every probe interval until a connection answers `PING`, then counts
    /// it up. Stops when every clone of the connection is gone.
    fn spawn_probe(&self) {
        let weak: Weak<Shared> = Arc::downgrade(&self.shared);
        let interval = self.shared.policy.probe_interval;
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // No runtime to probe on: the next command tries to connect instead.
            let mut state = self.state();
            state.probing = false;
            state.down = false;
            return;
        };
        let interval = interval.max(Duration::from_millis(10));
        runtime.spawn(async move {
            // The first probe goes at once: a lone slow answer (the server is there) costs the
            // requests after it a probe's round trip, not a whole interval.
            loop {
                let Some(shared) = weak.upgrade() else { return };
                let this = RedisConnection { shared };
                if let Ok(connection) = this.open().await
                    && answers(connection.clone(), this.shared.policy.command_timeout).await
                {
                    this.install_after_probe(connection);
                    tracing::info!("redis answers again");
                    return;
                }
                drop(this);
                tokio::time::sleep(interval).await;
            }
        });
    }
}

/// Whether the server behind a fresh `connection` answers, each command within `deadline`:
/// one server answers `PING`; a cluster answers only when **every master** of its slot map
/// answers `CLUSTER INFO` with `cluster_state:ok`. A `PING` through a cluster connection would
/// not do: it goes to the masters the connection reached and passes over one that is down, so
/// a dead master would count as up after every probe and each command for its slots would wait
/// out the deadline again.
async fn answers(connection: RedisLink, deadline: Duration) -> bool {
    // The answer, if one came in time.
    async fn within<T>(
        deadline: Duration,
        answer: impl Future<Output = RedisResult<T>>,
    ) -> Option<T> {
        tokio::time::timeout(deadline, answer).await.ok()?.ok()
    }
    match connection {
        RedisLink::Single(mut c) => {
            let ping = redis::cmd("PING");
            within(deadline, ping.query_async::<String>(&mut c))
                .await
                .is_some()
        }
        RedisLink::Cluster(c) => {
            use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
            let slots = redis::cmd("CLUSTER").arg("SLOTS").clone();
            let random = RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random);
            let mut any = c.clone();
            let Some(slots) = within(deadline, any.route_command(&slots, random)).await else {
                return false;
            };
            let masters = cluster_masters(&slots);
            if masters.is_empty() {
                return false;
            }
            let checks = masters.into_iter().map(|(host, port)| {
                let mut c = c.clone();
                async move {
                    let info = redis::cmd("CLUSTER").arg("INFO").clone();
                    let node =
                        RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress { host, port });
                    within(deadline, c.route_command(&info, node))
                        .await
                        .and_then(|info| String::from_redis_value(&info).ok())
                        .is_some_and(|info| info.contains("cluster_state:ok"))
                }
            });
            futures_util::future::join_all(checks)
                .await
                .into_iter()
                .all(|ok| ok)
        }
    }
}

/// Makes `connection` the current one in `state` unless there is one already (which is kept
/// and returned), and counts the server up.
fn install_in(state: &mut State, connection: RedisLink) -> (u64, RedisLink) {
    state.down = false;
    if let Some((number, current)) = &state.connection {
        return (*number, current.clone());
    }
    state.next_number += 1;
    let number = state.next_number;
    state.connection = Some((number, connection.clone()));
    (number, connection)
}

#[cfg(test)]
mod tests;

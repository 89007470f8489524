//! The connections a [`RedisConnection`](super::RedisConnection) holds: one server's, or a cluster's ([`RedisLink`]),
//! the cluster's node URLs, and the masters a cluster names.

use redis::FromRedisValue;
use redis::aio::MultiplexedConnection;
use redis::cluster_async::ClusterConnection;

/// A connection of a [`RedisConnection`](super::RedisConnection), handed to [`RedisConnection::run`](super::RedisConnection::run): one server's
/// multiplexed connection, or a cluster connection that sends each command to the node that
/// holds its key's slot (following `MOVED` and `ASK` redirections while slots move). Both are
/// a [`redis::aio::ConnectionLike`], so commands, pipelines and scripts run on either.
#[derive(Clone)]
pub enum RedisLink {
    /// A single server's connection.
    Single(MultiplexedConnection),
    /// A cluster's connection.
    Cluster(ClusterConnection),
}

impl redis::aio::ConnectionLike for RedisLink {
    fn req_packed_command<'a>(
        &'a mut self,
        cmd: &'a redis::Cmd,
    ) -> redis::RedisFuture<'a, redis::Value> {
        match self {
            RedisLink::Single(c) => c.req_packed_command(cmd),
            RedisLink::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<redis::Value>> {
        match self {
            RedisLink::Single(c) => c.req_packed_commands(cmd, offset, count),
            RedisLink::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            RedisLink::Single(c) => c.get_db(),
            RedisLink::Cluster(c) => c.get_db(),
        }
    }
}

/// The node URLs of a cluster address: several `redis://` URLs separated by commas, or one
/// `redis+cluster://` URL (its scheme read as `redis://`); `None` for a single server's URL.
pub(super) fn cluster_nodes(url: &str) -> Option<Vec<String>> {
    if let Some(rest) = url.strip_prefix("redis+cluster://") {
        return Some(
            rest.split(',')
                .map(|node| format!("redis://{}", node.trim().trim_start_matches("redis://")))
                .collect(),
        );
    }
    url.contains(',')
        .then(|| url.split(',').map(|node| node.trim().to_owned()).collect())
}

/// The masters' addresses in a `CLUSTER SLOTS` answer: each range is `[start, end, [host,
/// port, id, …], replicas…]`.
pub(super) fn cluster_masters(slots: &redis::Value) -> Vec<(String, u16)> {
    let redis::Value::Array(ranges) = slots else {
        return Vec::new();
    };
    let mut masters: Vec<(String, u16)> = ranges
        .iter()
        .filter_map(|range| match range {
            redis::Value::Array(fields) => match fields.get(2)? {
                redis::Value::Array(node) => Some((
                    String::from_redis_value(node.first()?).ok()?,
                    u16::from_redis_value(node.get(1)?).ok()?,
                )),
                _ => None,
            },
            _ => None,
        })
        .collect();
    masters.sort();
    masters.dedup();
    masters
}

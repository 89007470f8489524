//! Budgets in Redis (feature `limiter-redis`): every instance spends the same budget.

use std::time::Duration;

use async_trait::async_trait;
use redis::Script;
use redis::aio::ConnectionManager;

use super::{Decision, RateQuota, RateStore};
use crate::error::Result;

/// GCRA in one atomic script, on Redis's own clock (instances' clocks may differ). The key holds
/// the theoretical arrival time (TAT) in microseconds and expires when the bucket is full again.
///
/// KEYS[1] the key; ARGV[1] the refill interval (µs); ARGV[2] the burst.
/// Returns {allowed (0/1), remaining, reset (µs), retry after (µs)}.
const GCRA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]))
if not tat or tat < now then tat = now end
local tolerance = interval * (burst - 1)
if now < tat - tolerance then
  return {0, 0, tat - now, tat - tolerance - now}
end
local new_tat = tat + interval
local reset = new_tat - now
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.ceil(reset / 1000))
return {1, burst - math.ceil(reset / interval), reset, 0}
";

/// Budgets as Redis keys `<prefix><key>` (prefix `rate:` by default), checked and updated by
/// one Lua script (`EVALSHA`, loaded on first use) per request.
#[derive(Clone)]
pub struct RedisRateStore {
    connection: ConnectionManager,
    prefix: String,
    quota: RateQuota,
    script: Script,
}

impl std::fmt::Debug for RedisRateStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisRateStore")
            .field("prefix", &self.prefix)
            .field("quota", &self.quota)
            .finish_non_exhaustive()
    }
}

impl RedisRateStore {
    /// Connects to `url`; fails when Redis cannot be reached. Keys are `rate:<key>`.
    pub async fn connect(url: &str, quota: RateQuota) -> redis::RedisResult<Self> {
        let connection = crate::redis_connection::connect(url).await?;
        Ok(Self::from_manager(connection, quota))
    }

    /// A store on an existing connection manager (e.g. the session store's).
    pub fn from_manager(connection: ConnectionManager, quota: RateQuota) -> Self {
        Self {
            connection,
            prefix: "rate:".into(),
            quota,
            script: Script::new(GCRA),
        }
    }

    /// The same connection with another quota (one connection for several limiters; give each
    /// its own [prefix](Self::with_prefix)).
    #[must_use]
    pub fn with_quota(mut self, quota: RateQuota) -> Self {
        self.quota = quota;
        self
    }

    /// Sets the key prefix (to keep two limiters' budgets apart on one Redis).
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }
}

fn micros(us: i64) -> Duration {
    Duration::from_micros(u64::try_from(us).unwrap_or(0))
}

#[async_trait]
impl RateStore for RedisRateStore {
    async fn check(&self, key: String) -> Result<Decision> {
        let mut connection = self.connection.clone();
        let interval = u64::try_from(self.quota.interval().as_micros()).unwrap_or(u64::MAX);
        let mut invocation = self.script.key(format!("{}{key}", self.prefix));
        invocation.arg(interval).arg(self.quota.burst());
        // A connection that broke while idle is only noticed by the next command: try once
        // more, so the first request after a Redis restart is counted.
        let (allowed, remaining, reset, retry): (i64, i64, i64, i64) =
            match invocation.invoke_async(&mut connection).await {
                Err(err) if crate::redis_connection::is_stale_connection(&err) => {
                    invocation.invoke_async(&mut connection).await?
                }
                other => other?,
            };
        Ok(Decision {
            allowed: allowed == 1,
            limit: self.quota.burst(),
            remaining: u32::try_from(remaining.max(0)).unwrap_or(0),
            reset: micros(reset),
            retry_after: micros(retry),
        })
    }
}

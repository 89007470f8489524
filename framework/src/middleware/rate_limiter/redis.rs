//! Budgets in Redis (feature `limiter-redis`): every instance spends the same budget.

use std::time::Duration;

use async_trait::async_trait;
use redis::Script;

use super::{Decision, RateQuota, RateStore};
use crate::error::Result;
use crate::redis_connection::{RedisConnection, RedisFailure, RedisPolicy};

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
/// one Lua script (`EVALSHA`, loaded on first use) per request. The connection follows the
/// shared [Redis policy](crate::redis_connection); while Redis fails, requests are let through
/// (see the [rate limiter](super)).
#[derive(Clone)]
pub struct RedisRateStore {
    connection: RedisConnection,
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
    /// Connects to `url` with the default policy; fails when Redis cannot be reached. Keys are
    /// `rate:<key>`.
    pub async fn connect(url: &str, quota: RateQuota) -> Result<Self, RedisFailure> {
        let connection = RedisConnection::connect(url, RedisPolicy::default()).await?;
        Ok(Self::new(connection, quota))
    }

    /// A store on a shared connection (e.g. the session store's).
    pub fn new(connection: RedisConnection, quota: RateQuota) -> Self {
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
        let interval = u64::try_from(self.quota.interval().as_micros()).unwrap_or(u64::MAX);
        let mut invocation = self.script.key(format!("{}{key}", self.prefix));
        invocation.arg(interval).arg(self.quota.burst());
        // Sent twice at most (the policy's retry after a broken connection): a lost answer
        // may spend one unit of the budget twice, which errs on the safe side.
        let (allowed, remaining, reset, retry): (i64, i64, i64, i64) = self
            .connection
            .run(|mut c| {
                let invocation = &invocation;
                async move { invocation.invoke_async(&mut c).await }
            })
            .await?;
        Ok(Decision {
            allowed: allowed == 1,
            limit: self.quota.burst(),
            remaining: u32::try_from(remaining.max(0)).unwrap_or(0),
            reset: micros(reset),
            retry_after: micros(retry),
        })
    }
}

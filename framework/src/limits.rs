//! The server's connection limits: [`ServerLimits`].

use std::time::Duration;

/// How long the server waits for slow or idle clients, and how many connections it keeps open.
///
/// Set with [`App::server_limits`](crate::App::server_limits). Every limit closes the
/// connection (nothing else can be answered on it); the request body timeout first answers
/// **408**. The defaults suit a service behind nothing at all, exposed to slow and idle clients.
///
/// | limit | default | what it bounds |
/// |---|---|---|
/// | `header_read_timeout` | 10 s | from a connection's accept, or from the first byte of a later request on it, until its whole head is in (slowloris) |
/// | `keep_alive_timeout` | 60 s | an open connection with no request in progress and no byte of a new one |
/// | `body_read_timeout` | 30 s | the wait for the next chunk of a request body once a handler reads it: then 408 and close |
/// | `body_min_rate` | 240 bytes/s after a 5 s grace | a body that trickles in (one byte every 3 s): 408 and close once the bytes received fall behind the rate over the time spent waiting for them (Kestrel's defaults) |
/// | `http2_keep_alive_interval` | 30 s | how often an HTTP/2 connection is pinged |
/// | `http2_keep_alive_timeout` | 20 s | how long a ping may go unanswered before the connection is closed |
/// | `max_connections` | ¾ of the open-file limit (`ulimit -n`), 10 000 where unknown | connections open at once; above it new ones wait in the listen backlog |
/// | `drain_delay` | 0 | on shutdown, how long the server goes on serving (and accepting) while it says it is draining: readiness probes get 503 ([`Context::is_draining`](crate::Context::is_draining), the health component's `/readyz`) and HTTP/1 answers carry `Connection: close`, so a load balancer takes the instance out before connections are refused. Set it to the balancer's probe period times its failure threshold (e.g. 5 s behind Kubernetes) |
/// | `shutdown_timeout` | 30 s | on shutdown, after the drain delay, how long requests being handled may finish; idle and half-received connections close at once |
///
/// The head and idle timeouts are checked by one sweep per server on a clock that ticks every
/// tenth of the shorter of the two (between 5 ms and 250 ms): a connection closes at most about
/// two ticks after its limit, and not before it while the sweep's thread runs on time.
///
/// A request being handled (its handler running, or its response being sent, for as long as a
/// stream lasts) is never cut by these timers: the idle and head timers start again when it
/// ends. On HTTP/2 the head timer covers the first request only (a multiplexed connection reads
/// frames all the time); pings and the idle timer cover the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerLimits {
    /// From accept, or from the first byte of a later request, until the request head is in.
    pub header_read_timeout: Duration,
    /// An open connection with no request in progress is closed after this long.
    pub keep_alive_timeout: Duration,
    /// The longest wait for the next chunk of a request body (408, then the connection closes).
    pub body_read_timeout: Duration,
    /// The slowest a request body may arrive, counted over the time reads wait for it; `None`
    /// checks only the gap between chunks.
    pub body_min_rate: Option<MinDataRate>,
    /// HTTP/2 ping interval; `None` sends no pings.
    pub http2_keep_alive_interval: Option<Duration>,
    /// How long an HTTP/2 ping may go unanswered.
    pub http2_keep_alive_timeout: Duration,
    /// Connections open at once; above it, new connections wait in the listen backlog.
    pub max_connections: usize,
    /// On shutdown, how long the server goes on serving while it says it is draining.
    pub drain_delay: Duration,
    /// On shutdown, how long requests being handled may finish.
    pub shutdown_timeout: Duration,
    /// The HTTP versions the server speaks: both by default (HTTP/2 by prior knowledge or
    /// ALPN `h2`, else HTTP/1.1). See [`HttpVersions`].
    pub http_versions: HttpVersions,
}

/// The HTTP versions a server speaks on its connections ([`ServerLimits::http_versions`]).
///
/// - `Both` (the default): a cleartext connection that opens with HTTP/2's preface is HTTP/2,
///   any other HTTP/1.1; over TLS, ALPN offers `h2` and `http/1.1`.
/// - `Http1Only`: every connection is HTTP/1.1 (an HTTP/2 preface is answered as a bad
///   HTTP/1.1 request); ALPN offers `http/1.1` only.
/// - `Http2Only`: every connection is HTTP/2, cleartext ones by prior knowledge (h2c), so an
///   HTTP/1.1 request is refused with HTTP/2's `GOAWAY` (a protocol error) and no HTTP/1.1
///   answer; ALPN offers `h2` only.
///
/// One server speaks one choice; an app that serves several (a port for each, as HttpArena's
/// entries do) builds a service per port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpVersions {
    /// HTTP/1.1 and HTTP/2.
    #[default]
    Both,
    /// HTTP/1.1 only.
    Http1Only,
    /// HTTP/2 only.
    Http2Only,
}

impl HttpVersions {
    /// Whether a connection is served as HTTP/2, given what it looked like (`http2`: the
    /// cleartext preface, or ALPN `h2`).
    #[cfg(feature = "server")]
    pub(crate) fn serves_http2(self, http2: bool) -> bool {
        match self {
            HttpVersions::Both => http2,
            HttpVersions::Http1Only => false,
            HttpVersions::Http2Only => true,
        }
    }
}

crate::config::setters!(ServerLimits {
    header_read_timeout: Duration,
    keep_alive_timeout: Duration,
    body_read_timeout: Duration,
    body_min_rate: Option<MinDataRate>,
    http2_keep_alive_interval: Option<Duration>,
    http2_keep_alive_timeout: Duration,
    max_connections: usize,
    drain_delay: Duration,
    shutdown_timeout: Duration,
    http_versions: HttpVersions,
});

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            keep_alive_timeout: Duration::from_secs(60),
            body_read_timeout: Duration::from_secs(30),
            body_min_rate: Some(MinDataRate::default()),
            http2_keep_alive_interval: Some(Duration::from_secs(30)),
            http2_keep_alive_timeout: Duration::from_secs(20),
            max_connections: default_max_connections(),
            drain_delay: Duration::ZERO,
            shutdown_timeout: Duration::from_secs(30),
            http_versions: HttpVersions::Both,
        }
    }
}

/// A minimum data rate for request bodies: after `grace` of waiting, the bytes received must be
/// at least `bytes_per_second` × the time spent waiting for them. The defaults (240 bytes/s, 5 s)
/// are ASP.NET Kestrel's `MinRequestBodyDataRate`: any real client is far above them, a body
/// trickled a byte at a time to hold the connection is far below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinDataRate {
    /// Bytes per second, on average over the time spent waiting.
    pub bytes_per_second: u32,
    /// Waiting time before the rate is enforced.
    pub grace: Duration,
}

impl Default for MinDataRate {
    fn default() -> Self {
        Self {
            bytes_per_second: 240,
            grace: Duration::from_secs(5),
        }
    }
}

/// Three quarters of the soft open-file limit: the rest is left for files, database pools and
/// upstream connections, so the limit is reached before `accept` fails with "too many open
/// files". 10 000 where the limit cannot be read or is unlimited; at least 16.
pub fn default_max_connections() -> usize {
    #[cfg(unix)]
    if let Ok((soft, _)) = rlimit::getrlimit(rlimit::Resource::NOFILE)
        && soft != rlimit::INFINITY
    {
        let three_quarters = usize::try_from(soft / 4 * 3).unwrap_or(usize::MAX);
        return three_quarters.clamp(16, 1_000_000);
    }
    10_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_max_connections_is_below_the_descriptor_limit() {
        let max = default_max_connections();
        assert!(max >= 16);
        #[cfg(unix)]
        if let Ok((soft, _)) = rlimit::getrlimit(rlimit::Resource::NOFILE)
            && soft != rlimit::INFINITY
        {
            assert!((max as u64) < soft.max(17));
        }
    }
}

//! Memory: what an idle connection costs each server, what an idle session and a stored
//! account cost the user service, and the user service's peak under a flood of new sessions
//! at its default capacity.
//!
//! Resident memory is read from `/proc/PID/status` (`VmRSS`, `VmHWM`): the difference before
//! and after holding N more of a thing, divided by N. Pages the allocator keeps after a free
//! count too, so a figure is what the process holds, not what the type's `size_of` says.

use std::net::SocketAddr;
use std::time::Duration;

use crate::load::{Route, SendRequest, connect};
use crate::servers::{Server, ServerKind};

/// Idle connections opened per server for the per-connection figure.
pub(crate) const IDLE_CONNECTIONS: usize = 1000;

/// New sessions the flood sends: three times the memory store's default capacity, so the
/// store fills and evicts.
pub(crate) const FLOOD_SESSIONS: u64 =
    3 * framework::middleware::session::DEFAULT_MEMORY_CAPACITY as u64;

/// Sessions counted for the per-session figure: well under the capacity, so nothing is
/// evicted while they are counted.
const COUNTED_SESSIONS: u64 = 40_000;

/// The user service's figures.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionFlood {
    /// Resident memory once started and warmed up (KiB).
    pub(crate) start_kib: u64,
    /// Bytes each of [`COUNTED_SESSIONS`] new sessions added.
    pub(crate) per_session: f64,
    /// Peak resident memory after [`FLOOD_SESSIONS`] new sessions (KiB).
    pub(crate) peak_kib: u64,
}

/// `VmRSS` of a process, in KiB.
pub(crate) fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// Bytes each of [`IDLE_CONNECTIONS`] kept-alive connections holds in `server`, after one
/// `GET /json` each (the buffers a served connection keeps), in bytes.
pub(crate) async fn per_idle_connection(server: &Server) -> std::io::Result<f64> {
    // The first connections after a load may reuse memory the load left free: a few hundred
    // first, then the counted ones.
    // The user service has no `/json`: its own cheapest route.
    let route = if server.kind == ServerKind::UserService {
        Route::UserLogin
    } else {
        Route::Json
    };
    let _warm = open_idle(server.addr(), route, 100).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = rss_kib(server.pid());
    let held = open_idle(server.addr(), route, IDLE_CONNECTIONS).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = rss_kib(server.pid());
    drop(held);
    Ok(after.saturating_sub(before) as f64 * 1024.0 / IDLE_CONNECTIONS as f64)
}

async fn open_idle(addr: SocketAddr, route: Route, n: usize) -> std::io::Result<Vec<SendRequest>> {
    let mut held = Vec::with_capacity(n);
    for _ in 0..n {
        let mut sender = connect(addr, false)
            .await
            .ok_or_else(|| std::io::Error::other("cannot connect"))?;
        exchange(&mut sender, route).await?;
        held.push(sender);
    }
    Ok(held)
}

/// One request to `route`, which must be answered as the route answers.
async fn exchange(sender: &mut SendRequest, route: Route) -> std::io::Result<()> {
    crate::load::fetch(sender, route).await
}

/// `total` requests to `route`, from `connections` connections.
async fn send_count(
    addr: SocketAddr,
    route: Route,
    connections: u64,
    total: u64,
) -> std::io::Result<()> {
    let tasks: Vec<_> = (0..connections)
        .map(|i| {
            let count = total / connections + u64::from(i < total % connections);
            tokio::spawn(async move {
                let mut sender = connect(addr, false)
                    .await
                    .ok_or_else(|| std::io::Error::other("cannot connect"))?;
                for _ in 0..count {
                    exchange(&mut sender, route).await?;
                }
                Ok::<_, std::io::Error>(())
            })
        })
        .collect();
    for task in tasks {
        task.await.map_err(std::io::Error::other)??;
    }
    Ok(())
}

/// A fresh user service (in-memory stores, default session capacity): its size warmed up, the
/// bytes per new session, and its peak after [`FLOOD_SESSIONS`] new sessions.
pub(crate) async fn session_flood(server: &mut Server) -> std::io::Result<SessionFlood> {
    server.wait_ready(Duration::from_secs(10)).await?;
    let addr = server.addr();
    send_count(addr, Route::UserLogin, 32, 2_000).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let start_kib = rss_kib(server.pid());
    send_count(addr, Route::UserLogin, 32, COUNTED_SESSIONS).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let counted = rss_kib(server.pid());
    let rest = FLOOD_SESSIONS - COUNTED_SESSIONS - 2_000;
    send_count(addr, Route::UserLogin, 32, rest).await?;
    Ok(SessionFlood {
        start_kib,
        per_session: counted.saturating_sub(start_kib) as f64 * 1024.0 / COUNTED_SESSIONS as f64,
        peak_kib: server.peak_rss_kib()?,
    })
}

//! The cross-check: the same servers, routes and load shape driven by independent load tools,
//! wrk for HTTP/1.1 and h2load (nghttp2) for HTTP/2, with the server's CPU per answered
//! request read the same way as for the harness's own runs. When the two disagree by more
//! than their spread, the harness (its client, its connection handling, its CPU attribution)
//! is what to doubt first.
//!
//! The shape matches the harness's: `connections` keep-alive connections for HTTP/1.1, and for
//! HTTP/2 `connections / H2_STREAMS` connections with [`H2_STREAMS`] streams in flight on each,
//! one client thread. The tools do not check bodies; the harness checked every answer of the
//! same server on the same route just before ([`crate::load::Route::check_answer`]), and a tool
//! run counts only the answers with a 2xx status (wrk's "Non-2xx" and socket errors, h2load's
//! "failed" and "errored" are errors).
//!
//! The tools are Debian's `wrk` and `nghttp2-client`: when one is missing and the harness runs
//! as root, it installs them with apt-get; otherwise it says what to install.

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use crate::load::{H2_STREAMS, Route};

/// What a tool run answered.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolRun {
    pub(crate) ok: u64,
    pub(crate) errors: u64,
}

/// The routes cross-checked: the side-by-side rows with raw hyper in them.
pub(crate) fn checks(route: Route) -> bool {
    matches!(
        route,
        Route::Plaintext
            | Route::Json
            | Route::JsonH2
            | Route::JsonH2Tls
            | Route::Echo
            | Route::Big
    )
}

/// The tool that drives `route`.
pub(crate) fn tool(route: Route) -> &'static str {
    if route.is_h2() { "h2load" } else { "wrk" }
}

/// Installs wrk and h2load when either is missing (as root, with apt-get).
pub(crate) fn ensure_tools() -> std::io::Result<()> {
    let present = |tool: &str| {
        Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success() || !o.stdout.is_empty() || !o.stderr.is_empty())
    };
    if present("wrk") && present("h2load") {
        return Ok(());
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0"));
    if !root {
        return Err(std::io::Error::other(
            "--cross-check needs wrk and h2load: apt-get install wrk nghttp2-client",
        ));
    }
    eprintln!("installing wrk and h2load (apt-get install wrk nghttp2-client)");
    let _ = Command::new("apt-get").args(["update", "-qq"]).status()?;
    let status = Command::new("apt-get")
        .args(["install", "-y", "-qq", "wrk", "nghttp2-client"])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()?;
    if status.success() && present("wrk") && present("h2load") {
        Ok(())
    } else {
        Err(std::io::Error::other(
            "apt-get install wrk nghttp2-client failed",
        ))
    }
}

/// wrk's Lua script for `POST /echo`: the harness's body and content type.
fn echo_script() -> std::io::Result<std::path::PathBuf> {
    let path = std::env::temp_dir().join("bench-crosscheck-echo.lua");
    let body = crate::load::ECHO_BODY.replace('\'', "\\'");
    std::fs::write(
        &path,
        format!(
            "wrk.method = \"POST\"\nwrk.body = '{body}'\n\
             wrk.headers[\"Content-Type\"] = \"application/json\"\n"
        ),
    )?;
    Ok(path)
}

/// Drives `route` on `addr` with its tool for `duration`.
pub(crate) fn run(
    route: Route,
    addr: SocketAddr,
    connections: usize,
    duration: Duration,
) -> std::io::Result<ToolRun> {
    let secs = duration.as_secs().max(1).to_string();
    let scheme = if route.is_tls() { "https" } else { "http" };
    let url = |path: &str| format!("{scheme}://{addr}{path}");
    let output = if route.is_h2() {
        Command::new("h2load")
            .args(["-t1", "-c"])
            .arg(connections.div_ceil(H2_STREAMS).to_string())
            .arg("-m")
            .arg(H2_STREAMS.to_string())
            .args(["-D", &secs])
            .arg(url(route.path()))
            .output()?
    } else {
        let mut cmd = Command::new("wrk");
        cmd.args(["-t1", "-c"])
            .arg(connections.to_string())
            .arg("-d")
            .arg(format!("{secs}s"));
        match route {
            Route::Big => {
                cmd.args(["-H", "Accept-Encoding: gzip"]);
            }
            Route::Echo => {
                cmd.arg("-s").arg(echo_script()?);
            }
            _ => {}
        }
        cmd.arg(url(route.path())).output()?
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let parsed = if route.is_h2() {
        parse_h2load(&text)
    } else {
        parse_wrk(&text)
    };
    parsed.ok_or_else(|| {
        std::io::Error::other(format!(
            "{} gave no figures: {text}{}",
            tool(route),
            String::from_utf8_lossy(&output.stderr)
        ))
    })
}

/// wrk's `N requests in …`, less its non-2xx answers and socket errors.
fn parse_wrk(text: &str) -> Option<ToolRun> {
    let total: u64 = text
        .lines()
        .find(|l| l.contains(" requests in "))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let non_2xx: u64 = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Non-2xx or 3xx responses:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    // `Socket errors: connect 0, read 0, write 0, timeout 0`
    let socket: u64 = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Socket errors:"))
        .map_or(0, |rest| {
            rest.split(',')
                .filter_map(|part| part.split_whitespace().last()?.parse::<u64>().ok())
                .sum()
        });
    Some(ToolRun {
        ok: total.saturating_sub(non_2xx),
        errors: non_2xx + socket,
    })
}

/// h2load's `requests: N total, N started, N done, N succeeded, F failed, E errored, T timeout`.
fn parse_h2load(text: &str) -> Option<ToolRun> {
    let line = text.lines().find(|l| l.starts_with("requests:"))?;
    let field = |name: &str| -> Option<u64> {
        line.split(',')
            .find(|part| part.trim().ends_with(name))?
            .split_whitespace()
            .find_map(|w| w.parse().ok())
    };
    Some(ToolRun {
        ok: field("succeeded")?,
        errors: field("failed")? + field("errored")? + field("timeout").unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrk_and_h2load_outputs_are_read() {
        let wrk = "Running 4s test @ http://127.0.0.1:9102/json\n  1 threads and 32 connections\n\
                   817744 requests in 4.00s, 150.00MB read\n  Non-2xx or 3xx responses: 44\n\
                   Socket errors: connect 0, read 2, write 0, timeout 1\nRequests/sec: 204436.00\n";
        let run = parse_wrk(wrk).expect("figures");
        assert_eq!((run.ok, run.errors), (817_700, 47));
        let clean = parse_wrk("  12 requests in 1.00s, 1.00KB read\n").expect("figures");
        assert_eq!((clean.ok, clean.errors), (12, 0));
        let h2 = "finished in 4.00s, 1000.00 req/s\nrequests: 665804 total, 665804 started, \
                  665804 done, 665800 succeeded, 4 failed, 0 errored, 0 timeout\n";
        let run = parse_h2load(h2).expect("figures");
        assert_eq!((run.ok, run.errors), (665_800, 4));
        assert!(parse_wrk("unable to connect").is_none());
        assert!(parse_h2load("").is_none());
    }
}

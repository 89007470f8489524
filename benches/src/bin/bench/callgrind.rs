//! Instructions per request under callgrind: a figure that does not move with machine load.
//!
//! Each server runs under `valgrind --tool=callgrind` twice, answering `n1` then `n2`
//! requests to one route, sent one after another on one connection. The difference of the two
//! totals divided by `n2 - n1` is the cost of a request with start-up and shutdown cancelled
//! out.
//!
//! With `BENCH_CALLGRIND_KEEP=<dir>` set, each callgrind output file is copied to
//! `<dir>/<server>.<route>.<requests>.out` before it is removed, for `callgrind_annotate`.

use std::time::Duration;

use crate::load::Route;
use crate::servers::{Server, ServerKind};

/// `(server, instructions per request)` for `route`; servers that could not be measured are
/// left out.
pub(crate) fn measure_all(
    runtime: &tokio::runtime::Runtime,
    route: Route,
    (n1, n2): (u64, u64),
    options: &crate::options::Options,
) -> std::io::Result<Vec<(ServerKind, f64)>> {
    let mut out = Vec::new();
    // Raw hyper with request ids right after raw hyper, so the table reads from the floor up.
    for kind in [ServerKind::Hyper, ServerKind::HyperId]
        .into_iter()
        .chain(ServerKind::PEERS.into_iter().skip(1))
        .chain([ServerKind::UserService])
        .filter(|k| k.serves(route) && options.wants_server(k.name()))
    {
        let first = total_instructions(runtime, kind, route, n1)?;
        let second = total_instructions(runtime, kind, route, n2)?;
        match (first, second) {
            (Some(a), Some(b)) if b > a => {
                let per_request = (b - a) as f64 / (n2 - n1) as f64;
                eprintln!(
                    "callgrind {:<9} {:<10} {per_request:>10.0} instructions/request",
                    route.name(),
                    kind.name()
                );
                out.push((kind, per_request));
            }
            _ => eprintln!("callgrind {}: no usable totals", kind.name()),
        }
    }
    Ok(out)
}

fn total_instructions(
    runtime: &tokio::runtime::Runtime,
    kind: ServerKind,
    route: Route,
    requests: u64,
) -> std::io::Result<Option<u64>> {
    // Named after this process too: two runs at once never share an output file.
    let out = std::env::temp_dir().join(format!(
        "callgrind.{}.{}.{requests}.out",
        std::process::id(),
        kind.name()
    ));
    let wrapper = vec![
        "valgrind".to_owned(),
        "--tool=callgrind".to_owned(),
        format!("--callgrind-out-file={}", out.display()),
    ];
    // No TLS port: every route measured here is plain, and the framework's TLS watches its
    // certificate files on a 5 s tick, a timer in tokio's wheel that made each park (one per
    // request when they come one at a time, as here) some 170 instructions dearer, which the
    // plain path of a server without TLS does not pay.
    let child = kind
        .command(1, &wrapper)
        .env_remove("BENCH_TLS_CERT")
        .env_remove("BENCH_TLS_KEY")
        .spawn()?;
    let mut server = Server::from_child(kind, child);
    runtime.block_on(server.wait_ready(Duration::from_secs(120)))?;
    runtime.block_on(async {
        let (mut sender, driver) = crate::load::connect_driven(server.addr(), route.is_h2())
            .await
            .ok_or_else(|| std::io::Error::other("cannot connect"))?;
        let mut sent = 0;
        while sent < requests {
            if route.is_h2() {
                // Batches of `H2_STREAMS` requests in flight at once on the one connection, as
                // a multiplexing client sends them.
                let now = (crate::load::H2_STREAMS as u64).min(requests - sent);
                let mut streams = tokio::task::JoinSet::new();
                for _ in 0..now {
                    let mut stream = sender.stream().expect("an HTTP/2 connection");
                    streams.spawn(async move { crate::load::fetch(&mut stream, route).await });
                }
                while let Some(done) = streams.join_next().await {
                    done.map_err(std::io::Error::other)??;
                }
                sent += now;
            } else {
                crate::load::fetch(&mut sender, route).await?;
                sent += 1;
            }
        }
        drop(sender);
        let _ = driver.await;
        Ok::<_, std::io::Error>(())
    })?;
    server.stop();
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    // Set but empty is unset: keeping into the working directory is never what was meant.
    if let Some(dir) = std::env::var_os("BENCH_CALLGRIND_KEEP").filter(|d| !d.is_empty()) {
        let keep = std::path::Path::new(&dir).join(format!(
            "{}.{}.{requests}.out",
            kind.name(),
            route.name()
        ));
        std::fs::create_dir_all(&dir)?;
        std::fs::copy(&out, keep)?;
    }
    let _ = std::fs::remove_file(&out);
    Ok(text
        .lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.split_whitespace().next()?.parse().ok()))
}

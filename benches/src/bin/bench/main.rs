//! The load benchmark: this framework beside raw hyper, axum and actix-web, plus the user
//! service's own flows, with a report written to `BENCHMARKS.md`.
//!
//! ```sh
//! cargo run --release -p benches --bin bench            # full run, several minutes
//! cargo run --release -p benches --bin bench -- --quick # under a minute
//! cargo run --release -p benches --bin bench -- --cross-check --routes json-h2,big+gzip
//! cargo run --release -p benches --no-default-features --bin bench -- --callgrind-check
//! ```
//!
//! `--callgrind-check` is the regression check CI runs: see [`check`]. `--cross-check` runs
//! wrk and h2load beside the harness on the same servers and prints both ([`crosscheck`]); a
//! full run does it too and reports it.
//!
//! Each server gets the same number of worker threads (1 by default) so the load generator has
//! the other core. Servers run side by side for the whole benchmark and are measured in turn,
//! interleaved A B C D A B C D for several rounds, so drift on a noisy machine hits all of them
//! alike. The figure ratios are judged on is server CPU time per request (from
//! `/proc/PID/stat`), since requests/s on this machine moves with whatever else runs, and the
//! load generator itself saturates its core on the lightest routes.

mod callgrind;
mod check;
mod crosscheck;
mod load;
mod machine;
mod memory;
mod options;
mod report;
mod servers;

use std::time::Duration;

use options::Options;

/// Clients downloading the docs bundle while `/livez` is timed.
const LIVEZ_DOWNLOADERS: usize = 6;
use report::{FlowRow, LoadRow, Report, Summary};
use servers::{Server, ServerKind};

fn main() -> std::io::Result<()> {
    let options = Options::from_args();
    servers::build_binaries(&options)?;
    if options.callgrind_check {
        return check::run(&options);
    }
    if options.cross_check {
        crosscheck::ensure_tools()?;
    }
    // The servers also listen over TLS, with a certificate made for this run.
    #[cfg(feature = "tls")]
    load::trust_certificate(servers::make_certificate()?)?;
    let started = std::time::Instant::now();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;

    let mut peers: Vec<Server> = ServerKind::PEERS
        .iter()
        .map(|kind| Server::start(*kind, options.threads))
        .collect::<std::io::Result<_>>()?;
    let mut service = Server::start(ServerKind::UserService, options.threads)?;
    for server in peers.iter_mut().chain(std::iter::once(&mut service)) {
        runtime.block_on(server.wait_ready(Duration::from_secs(10)))?;
    }

    let mut rows = Vec::new();
    let routes = if options.callgrind_only {
        &[][..]
    } else {
        &load::Route::ALL[..]
    };
    let routes = routes.iter().copied().filter(|route| {
        options.wants_route(route.name())
            && (!options.cross_check_only || crosscheck::checks(*route))
    });
    for route in routes {
        let servers: Vec<&Server> = peers.iter().filter(|s| s.kind.serves(route)).collect();
        for server in &servers {
            runtime.block_on(load::run(
                server.addr_for(route),
                load::Work::Route(route),
                options.connections,
                options.warmup,
            ));
        }
        let mut samples: Vec<Vec<load::Sample>> = vec![Vec::new(); servers.len()];
        // The same server measured by wrk or h2load right after the harness, each round.
        let cross_check = options.cross_check && crosscheck::checks(route);
        let mut tool_samples: Vec<Vec<load::Sample>> = vec![Vec::new(); servers.len()];
        for round in 0..route.rounds(options.rounds) {
            for (i, server) in servers.iter().enumerate() {
                let before = server.cpu_ticks()?;
                let run = runtime.block_on(load::run(
                    server.addr_for(route),
                    load::Work::Route(route),
                    options.connections,
                    options.duration,
                ));
                let ticks = server.cpu_ticks()? - before;
                samples[i].push(load::Sample::new(&run, ticks, options.duration));
                eprintln!(
                    "{:>10} {:<10} round {}: {:>8.0} req/s, {:>6.1} µs CPU/req, {} errors",
                    route.name(),
                    server.kind.name(),
                    round + 1,
                    run.ok as f64 / options.duration.as_secs_f64(),
                    samples[i].last().map_or(0.0, |s| s.cpu_us_per_request),
                    run.errors
                );
                if cross_check {
                    let before = server.cpu_ticks()?;
                    let tool = crosscheck::run(
                        route,
                        server.addr_for(route),
                        options.connections,
                        options.duration,
                    )?;
                    let ticks = server.cpu_ticks()? - before;
                    let sample =
                        load::Sample::from_counts(tool.ok, tool.errors, ticks, options.duration);
                    eprintln!(
                        "{:>10} {:<10} round {}: {:>8.0} req/s, {:>6.1} µs CPU/req, {} errors ({})",
                        route.name(),
                        server.kind.name(),
                        round + 1,
                        sample.requests_per_second,
                        sample.cpu_us_per_request,
                        tool.errors,
                        crosscheck::tool(route)
                    );
                    tool_samples[i].push(sample);
                }
            }
        }
        for ((server, samples), tool) in servers.iter().zip(samples).zip(tool_samples) {
            rows.push(LoadRow {
                route,
                server: server.kind,
                summary: Summary::new(&samples),
                tool: (!tool.is_empty()).then(|| Summary::new(&tool)),
            });
        }
    }
    if options.cross_check_only {
        // A check, not a report: the comparison on stdout, BENCHMARKS.md left alone.
        let mut text = String::new();
        report::render_cross_check(&rows, &mut text);
        println!("{text}");
        for server in peers.iter_mut().chain(std::iter::once(&mut service)) {
            server.stop();
        }
        return Ok(());
    }

    let mut flows = Vec::new();
    let flow_list = if options.callgrind_only {
        &[][..]
    } else {
        &load::Flow::ALL[..]
    };
    // Accounts the register flow made, and the resident memory they added.
    let mut accounts = None;
    for &flow in flow_list {
        let rss_before = memory::rss_kib(service.pid());
        let warm = runtime.block_on(load::run(
            service.addr(),
            load::Work::Flow(flow, 0),
            options.connections,
            options.warmup,
        ));
        let mut made = warm.ok;
        let mut samples = Vec::new();
        for round in 0..options.rounds {
            let before = service.cpu_ticks()?;
            let run = runtime.block_on(load::run(
                service.addr(),
                load::Work::Flow(flow, round + 1),
                options.connections,
                options.duration,
            ));
            let ticks = service.cpu_ticks()? - before;
            made += run.ok;
            samples.push(load::Sample::new(&run, ticks, options.duration));
        }
        if flow == load::Flow::RegisterLogin && made > 0 {
            let added = memory::rss_kib(service.pid()).saturating_sub(rss_before);
            accounts = Some((added as f64 * 1024.0 / made as f64, made));
        }
        flows.push(FlowRow {
            flow,
            summary: Summary::new(&samples),
        });
    }

    // The health probe while six clients download the docs bundle with brotli.
    let livez = if options.callgrind_only {
        None
    } else {
        Some(runtime.block_on(load::livez_while_downloading(
            service.addr(),
            LIVEZ_DOWNLOADERS,
            options.duration,
        )))
    };

    let mut peak_rss = Vec::new();
    let mut per_connection = Vec::new();
    for server in peers.iter_mut().chain(std::iter::once(&mut service)) {
        peak_rss.push((server.kind, server.peak_rss_kib()?));
        if !options.callgrind_only {
            per_connection.push((
                server.kind,
                runtime.block_on(memory::per_idle_connection(server))?,
            ));
        }
        server.stop();
    }
    // A fresh user service for the flood, at its default capacity.
    let flood = if options.callgrind_only {
        None
    } else {
        let mut fresh = Server::start(ServerKind::UserService, options.threads)?;
        let flood = runtime.block_on(memory::session_flood(&mut fresh))?;
        fresh.stop();
        Some(flood)
    };
    let memory = report::Memory {
        peak_rss,
        per_connection,
        accounts,
        flood,
    };

    let mut instructions = Vec::new();
    if options.callgrind {
        for (route, counts) in [
            (load::Route::Plaintext, options.callgrind_requests),
            (load::Route::Json, options.callgrind_requests),
            (load::Route::JsonH2, options.callgrind_requests),
            (load::Route::UserLogin, options.callgrind_requests),
            // The same echo written against the context and with a typed argument.
            (load::Route::Echo, options.callgrind_requests),
            (load::Route::EchoTyped, options.callgrind_requests),
            // Each /big request costs ~30x a /json one under valgrind: fewer of them.
            (
                load::Route::Big,
                (
                    options.callgrind_requests.0 / 20,
                    options.callgrind_requests.1 / 20,
                ),
            ),
        ] {
            if !options.wants_route(route.name()) {
                continue;
            }
            instructions.push((
                route,
                counts,
                callgrind::measure_all(&runtime, route, counts, &options)?,
            ));
        }
    }
    if options.callgrind_only {
        // A check, not a report: print the counts, leave BENCHMARKS.md alone.
        return Ok(());
    }
    let allocations = servers::run_allocs();
    let micro = if options.micro {
        servers::run_micro()
    } else {
        Vec::new()
    };

    let report = Report {
        options: &options,
        machine: machine::describe(),
        rows,
        flows,
        livez: livez.map(|(probes, downloads)| report::Livez {
            downloaders: LIVEZ_DOWNLOADERS,
            probes,
            downloads,
        }),
        memory,
        instructions,
        allocations,
        micro,
        elapsed: started.elapsed(),
    };
    let text = report.render();
    std::fs::write(&options.out, &text)?;
    println!("{text}");
    eprintln!("wrote {}", options.out.display());
    Ok(())
}

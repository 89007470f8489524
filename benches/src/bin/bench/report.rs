//! `BENCHMARKS.md`: the table and ratios, written by the harness, never by hand.

use std::fmt::Write;
use std::time::Duration;

use crate::load::{Flow, Route, Sample};
use crate::options::Options;
use crate::servers::ServerKind;

/// Median and relative spread (half the min-max range over the median, in %) of a series.
fn median_spread(values: &[f64]) -> (f64, f64) {
    let mut sorted: Vec<f64> = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = match sorted.len() {
        0 => return (0.0, 0.0),
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    };
    let spread = if median > 0.0 {
        (sorted[sorted.len() - 1] - sorted[0]) / 2.0 / median * 100.0
    } else {
        0.0
    };
    (median, spread)
}

fn median_u64(values: impl Iterator<Item = u64>) -> f64 {
    let v: Vec<f64> = values.map(|x| x as f64).collect();
    median_spread(&v).0
}

/// Figures over all rounds: medians, spreads and the error total.
pub(crate) struct Summary {
    rps: (f64, f64),
    cpu: (f64, f64),
    /// CPU µs per request of each round, in round order, for [`paired_ratio`].
    cpu_rounds: Vec<f64>,
    p50: f64,
    p99: f64,
    errors: u64,
}

impl Summary {
    pub(crate) fn new(samples: &[Sample]) -> Self {
        let rps: Vec<f64> = samples.iter().map(|s| s.requests_per_second).collect();
        let cpu: Vec<f64> = samples.iter().map(|s| s.cpu_us_per_request).collect();
        Self {
            rps: median_spread(&rps),
            cpu: median_spread(&cpu),
            cpu_rounds: cpu,
            p50: median_u64(samples.iter().map(|s| s.p50_us)),
            p99: median_u64(samples.iter().map(|s| s.p99_us)),
            errors: samples.iter().map(|s| s.errors).sum(),
        }
    }
}

/// Median and spread of the per-round ratios `a / b` of CPU per request: round *i* of `a`
/// against round *i* of `b`. Servers are measured one after the other within a round, so a
/// round's two figures were taken seconds apart under the same machine load, and the ratio of
/// each pair cancels the drift between rounds that the ratio of the two medians keeps (on a
/// noisy machine that drift is ±7% while the gap it judges is 2%). `None` when the two series
/// do not have the same number of rounds.
fn paired_ratio(a: &Summary, b: &Summary) -> Option<(f64, f64)> {
    if a.cpu_rounds.is_empty() || a.cpu_rounds.len() != b.cpu_rounds.len() {
        return None;
    }
    let ratios: Vec<f64> = a
        .cpu_rounds
        .iter()
        .zip(&b.cpu_rounds)
        .map(|(a, b)| a / b)
        .collect();
    Some(median_spread(&ratios))
}

/// One route on one server.
pub(crate) struct LoadRow {
    pub(crate) route: Route,
    pub(crate) server: ServerKind,
    pub(crate) summary: Summary,
    /// The same server and route driven by wrk or h2load ([`crate::crosscheck`]).
    pub(crate) tool: Option<Summary>,
}

/// The cross-check table: each cross-checked row's server CPU per request under the harness
/// and under wrk or h2load, their ratio, and whether they agree within their spread.
pub(crate) fn render_cross_check(rows: &[LoadRow], s: &mut String) {
    if rows.iter().all(|r| r.tool.is_none()) {
        return;
    }
    let _ = writeln!(
        s,
        "\n## Cross-check: the harness beside wrk and h2load\n\n\
         The same servers and routes driven by independent load tools, right after each harness \
         run in every round, in the same shape: wrk (`-t1`, one connection per request in \
         flight) for HTTP/1.1, h2load (`-t1 -m{}`) for HTTP/2 with prior knowledge. Server CPU \
         per answered request is read the same way (utime+stime from `/proc/PID/stat`); the \
         tools count only 2xx answers, and the harness checked the bodies of the same server's \
         answers just before (`/big` decoded and compared with the document). The ratio columns \
         are to raw hyper under the same tool, and *agree* compares them: the two ratios within \
         10% of each other, or within the sum of the spreads behind them. The absolute figures \
         need not agree, as a server's cost per request depends on its client (how requests, \
         acknowledgements and window updates reach it, packet by packet); what must agree is \
         where each server stands against raw hyper under the same client.\n\n\
         | route | server | tool | harness CPU µs/req | ± | tool CPU µs/req | ± | tool / harness | agree | harness vs hyper | tool vs hyper | tool errors |\n\
         |---|---|---|---:|---:|---:|---:|---:|:---:|---:|---:|---:|",
        crate::load::H2_STREAMS
    );
    for row in rows {
        let Some(tool) = &row.tool else {
            continue;
        };
        let hyper = rows
            .iter()
            .find(|r| r.route == row.route && r.server == ServerKind::Hyper);
        let harness_ratio = hyper.map_or(f64::NAN, |h| row.summary.cpu.0 / h.summary.cpu.0);
        let tool_ratio = hyper
            .and_then(|h| h.tool.as_ref())
            .map_or(f64::NAN, |h| tool.cpu.0 / h.cpu.0);
        let (a, b) = (row.summary.cpu, tool.cpu);
        // Judged on the ratios to raw hyper, as the side-by-side table is: within 10%, or
        // within the four spreads that make them.
        let spreads = a.1
            + b.1
            + hyper.map_or(0.0, |h| {
                h.summary.cpu.1 + h.tool.as_ref().map_or(0.0, |t| t.cpu.1)
            });
        let gap = (harness_ratio - tool_ratio).abs() / harness_ratio.min(tool_ratio) * 100.0;
        let agree = gap <= spreads.max(10.0);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.1} | {:.0}% | {:.1} | {:.0}% | {:.2}× | {} | {harness_ratio:.2}× | {tool_ratio:.2}× | {} |",
            row.route.describe(),
            row.server.name(),
            crate::crosscheck::tool(row.route),
            a.0,
            a.1,
            b.0,
            b.1,
            b.0 / a.0,
            if agree { "yes" } else { "**no**" },
            tool.errors
        );
    }
}

/// One user service flow.
pub(crate) struct FlowRow {
    pub(crate) flow: Flow,
    pub(crate) summary: Summary,
}

/// Callgrind figures of one route: the request counts (n1, n2) and, per server, instructions
/// per request.
pub(crate) type InstructionCounts = (Route, (u64, u64), Vec<(ServerKind, f64)>);

/// Memory figures: peak RSS per server, bytes per idle connection, and the user service's
/// accounts and session flood ([`crate::memory`]).
pub(crate) struct Memory {
    pub(crate) peak_rss: Vec<(ServerKind, u64)>,
    pub(crate) per_connection: Vec<(ServerKind, f64)>,
    /// Bytes per account and accounts made, from the register flow.
    pub(crate) accounts: Option<(f64, u64)>,
    pub(crate) flood: Option<crate::memory::SessionFlood>,
}

/// Everything the report shows.
/// `/livez` timed while clients download the docs bundle.
pub(crate) struct Livez {
    pub(crate) downloaders: usize,
    pub(crate) probes: crate::load::Run,
    pub(crate) downloads: crate::load::Run,
}

pub(crate) struct Report<'a> {
    pub(crate) options: &'a Options,
    pub(crate) machine: Vec<String>,
    pub(crate) rows: Vec<LoadRow>,
    pub(crate) flows: Vec<FlowRow>,
    pub(crate) livez: Option<Livez>,
    pub(crate) memory: Memory,
    pub(crate) instructions: Vec<InstructionCounts>,
    pub(crate) allocations: Vec<String>,
    pub(crate) micro: Vec<(String, String)>,
    pub(crate) elapsed: Duration,
}

impl Report<'_> {
    /// Instructions per request of `server` on `route`, from the callgrind runs.
    fn instructions_of(&self, route: Route, server: ServerKind) -> Option<f64> {
        self.instructions
            .iter()
            .find(|(r, _, _)| *r == route)
            .and_then(|(_, _, counts)| counts.iter().find(|(k, _)| *k == server))
            .map(|(_, n)| *n)
    }

    /// The hot-path goals (issues 34 and 51) beside this run's figures.
    fn render_goals(&self, s: &mut String) {
        let ratio = |route: Route, server: ServerKind, base: ServerKind| {
            Some(self.instructions_of(route, server)? / self.instructions_of(route, base)?)
        };
        let peak = |kind: ServerKind| {
            self.memory
                .peak_rss
                .iter()
                .find(|(k, _)| *k == kind)
                .map(|(_, kib)| *kib as f64 / 1024.0)
        };
        let mut rows: Vec<(String, Option<String>, String, Option<bool>)> = Vec::new();
        // Instruction ratios: (goal, route, the reference server on the same route, limit).
        // Every framework answer carries a request id, so the hot path is judged against raw
        // hyper sending one too (`hyper-id`); HTTP/2 has no such server and is judged against
        // raw hyper. The user service's login is not a goal: its side-by-side rows show it.
        for (goal, route, base, limit) in [
            (
                "`GET /json`: framework vs hyper-id",
                Route::Json,
                ServerKind::HyperId,
                1.08,
            ),
            (
                "`GET /plaintext`: framework vs hyper-id",
                Route::Plaintext,
                ServerKind::HyperId,
                1.08,
            ),
            (
                "`GET /json` over HTTP/2: framework vs raw hyper",
                Route::JsonH2,
                ServerKind::Hyper,
                1.2,
            ),
        ] {
            let r = ratio(route, ServerKind::Framework, base);
            rows.push((
                format!("{goal}, instructions"),
                r.map(|r| format!("{r:.3}×")),
                format!("≤ {limit:.2}×"),
                r.map(|r| r <= limit),
            ));
        }
        // CPU per request against actix-web, the fastest peer on these rows (issue 56).
        for (route, tool) in [
            (Route::JsonH2, false),
            (Route::JsonH2Tls, false),
            (Route::Echo, false),
            (Route::JsonH2, true),
            (Route::JsonH2Tls, true),
            (Route::Echo, true),
        ] {
            let summary = |kind: ServerKind| {
                let row = self.row(route, kind)?;
                if tool {
                    row.tool.as_ref()
                } else {
                    Some(&row.summary)
                }
            };
            let r = summary(ServerKind::Framework)
                .zip(summary(ServerKind::Actix))
                .and_then(|(f, a)| paired_ratio(f, a));
            rows.push((
                format!(
                    "{}: framework vs actix-web, CPU µs/req ({}, median of per-round ratios)",
                    route.describe(),
                    if tool {
                        crate::crosscheck::tool(route)
                    } else {
                        "harness"
                    }
                ),
                r.map(|(r, spread)| format!("{r:.2}× ±{spread:.0}%")),
                "≤ 1.00×".into(),
                r.map(|(r, _)| r <= 1.0),
            ));
        }
        let (framework, axum) = (peak(ServerKind::Framework), peak(ServerKind::Axum));
        rows.push((
            "peak RSS of the benchmark server: framework vs axum".into(),
            framework
                .zip(axum)
                .map(|(f, a)| format!("{f:.1} vs {a:.1} MiB")),
            "≤ axum's".into(),
            framework.zip(axum).map(|(f, a)| f <= a),
        ));
        let flood = self.memory.flood.map(|f| f.peak_kib as f64 / 1024.0);
        rows.push((
            "user service's peak under the session flood, default capacity".into(),
            flood.map(|f| format!("{f:.1} MiB")),
            "≤ 64 MiB".into(),
            flood.map(|f| f <= 64.0),
        ));
        if rows.iter().all(|r| r.1.is_none()) {
            return;
        }
        let _ = writeln!(
            s,
            "## Goals\n\nThe hot-path goals beside this run's figures (callgrind ratios from the \
             instructions table, CPU per request from the side-by-side and cross-check tables, \
             memory from the memory section). A CPU goal against actix-web is judged on the \
             median of the per-round ratios: round *i* of the framework against round *i* of \
             actix-web, measured seconds apart, so drift between rounds cancels; ± is half the \
             min–max range of those ratios.\n\n\
             | goal | this run | target | met |\n|---|---:|---:|:---:|"
        );
        for (goal, figure, target, met) in rows {
            let _ = writeln!(
                s,
                "| {goal} | {} | {target} | {} |",
                figure.unwrap_or_else(|| "not measured".into()),
                match met {
                    Some(true) => "yes",
                    Some(false) => "**no**",
                    None => "–",
                }
            );
        }
        // The request id is the one required feature raw hyper lacks: the framework beside a
        // raw hyper that sends it too.
        let beside_id = [Route::Plaintext, Route::Json].map(|route| {
            let framework = self.instructions_of(route, ServerKind::Framework)?;
            let with_id = self.instructions_of(route, ServerKind::HyperId)?;
            let hyper = self.instructions_of(route, ServerKind::Hyper)?;
            Some(format!(
                "`/{}`: raw hyper {hyper:.0}, with the id {with_id:.0} (+{:.0}), the framework \
                 {framework:.0}, {:.3}× that",
                route.name(),
                with_id - hyper,
                framework / with_id
            ))
        });
        if beside_id.iter().all(Option::is_some) {
            let _ = writeln!(
                s,
                "\nEvery framework answer carries an `X-Request-Id` (128 random bits as hex, \
                 DECISIONS.md); raw hyper's do not. The `hyper-id` row of the instructions table \
                 is raw hyper's server sending one too, written the plain way \
                 (`BENCH_REQUEST_ID=1`: a per-thread `SmallRng`, the `hex` crate, a header value \
                 copied from the stack). Instructions per request:\n"
            );
            for line in beside_id.into_iter().flatten() {
                let _ = writeln!(s, "- {line}");
            }
        }
        let _ = writeln!(s);
    }

    fn render_memory(&self, s: &mut String) {
        let m = &self.memory;
        let _ = writeln!(
            s,
            "\n## Memory\n\n\
             Peak RSS (`VmHWM`) over the whole run above; per idle connection: the growth of \
             resident memory (`VmRSS`) while {} more keep-alive HTTP/1.1 connections are held \
             open after one request each (`GET /json`; the user service's `GET \
             /users/v1/login`), divided by their number.\n\n\
             | server | peak RSS | per idle connection |\n|---|---:|---:|",
            crate::memory::IDLE_CONNECTIONS
        );
        for (kind, kib) in &m.peak_rss {
            let per = m
                .per_connection
                .iter()
                .find(|(k, _)| k == kind)
                .map_or_else(|| "–".to_owned(), |(_, b)| format!("{:.1} KiB", b / 1024.0));
            let _ = writeln!(
                s,
                "| {} | {:.1} MiB | {per} |",
                kind.name(),
                *kib as f64 / 1024.0
            );
        }
        if let Some((per, made)) = m.accounts {
            let _ = writeln!(
                s,
                "\n- User service, accounts: the register flow made {made} accounts in its \
                 memory store (started with `MEMORY_USERS=4000000` so that it can: the \
                 default bound is far lower); resident memory grew {per:.0} bytes per account. \
                 Its peak RSS above holds them."
            );
        }
        if let Some(flood) = m.flood {
            let _ = writeln!(
                s,
                "- User service, session flood: a fresh instance (in-memory stores, default \
                 session capacity {}) answered {} `GET /users/v1/login` without a cookie, each \
                 a new session: {:.1} MiB warmed up, {:.0} bytes per new session (the first \
                 40 000), **peak {:.1} MiB** (target: at most 64 MiB).",
                framework::middleware::session::DEFAULT_MEMORY_CAPACITY,
                crate::memory::FLOOD_SESSIONS,
                flood.start_kib as f64 / 1024.0,
                flood.per_session,
                flood.peak_kib as f64 / 1024.0
            );
        }
    }

    fn row(&self, route: Route, server: ServerKind) -> Option<&LoadRow> {
        self.rows
            .iter()
            .find(|r| r.route == route && r.server == server)
    }

    /// Static files and the proxy, against each framework's own component: axum with
    /// tower-http's `ServeDir` and a hyper-util proxy, actix-web with `actix-files`.
    fn render_components(&self, s: &mut String) {
        if !self.rows.iter().any(|r| r.route.is_component()) {
            return;
        }
        let _ = writeln!(
            s,
            "\n## Static files and the proxy\n\n\
             Each framework's own component on the same files: this framework's `StaticServe` \
             (directory source), axum with tower-http's `ServeDir`, actix-web with \
             `actix-files`. `/proxy/json` forwards to raw hyper's `/json` (a separate process, \
             not counted) through this framework's `Proxy` and through an axum handler on \
             hyper-util's pooled client. CPU ratios are to axum.\n\n\
             | route | server | req/s | ± | MB/s | p50 µs | p99 µs | CPU µs/req | ± | CPU vs axum | errors |\n\
             |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for row in self.rows.iter().filter(|r| r.route.is_component()) {
            let axum = self.row(row.route, ServerKind::Axum);
            let ratio = axum.map_or(f64::NAN, |a| row.summary.cpu.0 / a.summary.cpu.0);
            let mb = row.route.body_bytes().map_or_else(
                || "–".to_owned(),
                |b| format!("{:.0}", row.summary.rps.0 * b as f64 / 1e6),
            );
            let _ = writeln!(
                s,
                "| {} | {} | {:.0} | {:.0}% | {mb} | {:.0} | {:.0} | {:.1} | {:.0}% | {ratio:.2}× | {} |",
                row.route.describe(),
                row.server.name(),
                row.summary.rps.0,
                row.summary.rps.1,
                row.summary.p50,
                row.summary.p99,
                row.summary.cpu.0,
                row.summary.cpu.1,
                row.summary.errors
            );
        }
        for server in [ServerKind::Framework, ServerKind::Axum] {
            if let (Some(proxied), Some(direct)) = (
                self.row(Route::ProxyJson, server),
                self.row(Route::Json, server),
            ) {
                let _ = writeln!(
                    s,
                    "\n- Proxy hop on {}: {:.1} µs CPU/request through the proxy vs {:.1} µs \
                     answering `/json` itself: the hop adds {:.1} µs.",
                    server.name(),
                    proxied.summary.cpu.0,
                    direct.summary.cpu.0,
                    proxied.summary.cpu.0 - direct.summary.cpu.0
                );
            }
        }
    }

    pub(crate) fn render(&self) -> String {
        let o = self.options;
        let mut s = String::new();
        let _ = writeln!(s, "# Benchmarks\n");
        let _ = writeln!(
            s,
            "Written by the benchmark harness (`benches/src/bin/bench`); do not edit by hand. \
             Reproduce with:\n\n```sh\n{}\n```\n",
            o.command()
        );
        self.render_goals(&mut s);
        let _ = writeln!(s, "## Machine and method\n");
        for line in &self.machine {
            let _ = writeln!(s, "- {line}");
        }
        let _ = writeln!(
            s,
            "- Each server: {} tokio worker thread(s) (actix-web: {} worker(s)); the load generator \
             (Rust, hyper client, in this repo) runs on one thread, so it has the other core.\n\
             - {} keep-alive HTTP/1.1 connections, {:?} per run after a {:?} warm-up, {} rounds \
             ({} on `POST /echo`) interleaved hyper → framework → axum → actix-web per route; figures are the median \
             over rounds, spread is ± half the min–max range.\n\
             - CPU µs/req is the server process's utime+stime over the run (all its threads, from \
             `/proc/PID/stat`) divided by the requests answered. Ratios are judged on it: \
             requests/s on this machine moves with everything else that runs, and on the \
             lightest routes the one-thread load generator is the bottleneck, not the server.\n\
             - Compression on `/big`: gzip level {} on every server (actix-web's `Compress` is fixed \
             at flate2's `fast()`, level 1, so the others are set to it); the client accepts gzip \
             only. Run took {:.0} s.\n",
            o.threads,
            o.threads,
            o.connections,
            o.duration,
            o.warmup,
            o.rounds,
            Route::Echo.rounds(o.rounds),
            ServerKind::Framework.gzip_level(),
            self.elapsed.as_secs_f64()
        );

        let _ = writeln!(s, "## Side by side\n");
        let _ = writeln!(
            s,
            "| route | server | req/s | ± | p50 µs | p99 µs | CPU µs/req | ± | CPU vs hyper | req/s vs hyper | errors |\n\
             |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for row in self.rows.iter().filter(|r| !r.route.is_component()) {
            let hyper = self
                .rows
                .iter()
                .find(|r| r.route == row.route && r.server == ServerKind::Hyper);
            let (cpu_ratio, rps_ratio) = hyper.map_or((f64::NAN, f64::NAN), |h| {
                (
                    row.summary.cpu.0 / h.summary.cpu.0,
                    row.summary.rps.0 / h.summary.rps.0,
                )
            });
            let _ = writeln!(
                s,
                "| {} | {} | {:.0} | {:.0}% | {:.0} | {:.0} | {:.1} | {:.0}% | {:.2}× | {:.2}× | {} |",
                row.route.describe(),
                row.server.name(),
                row.summary.rps.0,
                row.summary.rps.1,
                row.summary.p50,
                row.summary.p99,
                row.summary.cpu.0,
                row.summary.cpu.1,
                cpu_ratio,
                rps_ratio,
                row.summary.errors
            );
        }

        render_cross_check(&self.rows, &mut s);
        self.render_components(&mut s);

        let _ = writeln!(s, "\n## The user service's own flows\n");
        let _ = writeln!(
            s,
            "In-memory stores (`DATABASE_URL=memory`, no `REDIS_URL`), so the figure is the \
             service and the framework, not a database.\n\n\
             | flow | per s | ± | p50 µs | p99 µs | CPU µs/flow | ± | errors |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|"
        );
        for f in &self.flows {
            let _ = writeln!(
                s,
                "| {} | {:.0} | {:.0}% | {:.0} | {:.0} | {:.1} | {:.0}% | {} |",
                f.flow.describe(),
                f.summary.rps.0,
                f.summary.rps.1,
                f.summary.p50,
                f.summary.p99,
                f.summary.cpu.0,
                f.summary.cpu.1,
                f.summary.errors
            );
        }

        if let Some(livez) = &self.livez {
            let quantile = |q: f64| livez.probes.latency.value_at_quantile(q) as f64 / 1000.0;
            let _ = writeln!(
                s,
                "\n`GET /livez` on one connection while {} connections download the docs bundle \
                 with `br` (the bundle's compressed form is kept, so each download is a copy of \
                 it): p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms over {} probes ({} errors), beside \
                 {} downloads ({} errors).",
                livez.downloaders,
                quantile(0.5),
                quantile(0.9),
                quantile(0.99),
                livez.probes.ok,
                livez.probes.errors,
                livez.downloads.ok,
                livez.downloads.errors
            );
        }

        self.render_memory(&mut s);

        let _ = writeln!(s, "\n## Instructions per request (callgrind)\n");
        if self.instructions.is_empty() {
            let _ = writeln!(
                s,
                "Not measured in this run (`--quick` or `--no-callgrind`)."
            );
        } else {
            let _ = writeln!(
                s,
                "Each route sent n1 and then n2 times, one request after another on one \
                 connection, each server under `valgrind --tool=callgrind` with one worker; the \
                 difference divided by n2 − n1 cancels start-up and shutdown. Repeatable to the \
                 instruction for the same binaries, so this is the figure that does not move \
                 with the machine (the CPU-time column above does: this is a VM whose two vCPUs \
                 share a host we cannot see). The user service's row is compared with raw hyper's \
                 `/json`; `/ech2` (the echo handler taking a typed `Json<T>` argument) with raw \
                 hyper's `/echo`, so the two framework echo rows side by side show what typed \
                 arguments cost.\n\n| route | n1 → n2 | server | instructions/request | vs hyper |\n|---|---|---|---:|---:|"
            );
            // The user service has no hyper twin: it is compared with raw hyper's /json.
            let hyper_json = self
                .instructions
                .iter()
                .filter(|(route, _, _)| *route == Route::Json)
                .flat_map(|(_, _, rows)| rows)
                .find(|(k, _)| *k == ServerKind::Hyper)
                .map(|(_, v)| *v);
            // The typed echo is compared with raw hyper's /echo.
            let hyper_echo = self
                .instructions
                .iter()
                .filter(|(route, _, _)| *route == Route::Echo)
                .flat_map(|(_, _, rows)| rows)
                .find(|(k, _)| *k == ServerKind::Hyper)
                .map(|(_, v)| *v);
            for (route, (n1, n2), rows) in &self.instructions {
                let hyper = rows
                    .iter()
                    .find(|(k, _)| *k == ServerKind::Hyper)
                    .map(|(_, v)| *v)
                    .or(hyper_json.filter(|_| *route == Route::UserLogin))
                    .or(hyper_echo.filter(|_| *route == Route::EchoTyped));
                for (kind, per_request) in rows {
                    let ratio = hyper.map_or(f64::NAN, |h| per_request / h);
                    let _ = writeln!(
                        s,
                        "| {} | {n1} → {n2} | {} | {per_request:.0} | {ratio:.2}× |",
                        route.describe(),
                        kind.name()
                    );
                }
            }
        }

        // Measured with the benchmark server's `BENCH_TOWER` modes, not by a full run.
        let _ = write!(s, "\n{}", include_str!("tower.md"));
        // Measured with the benchmark server built with and without `api-trait`.
        let _ = write!(s, "{}", include_str!("api_trait.md"));
        let _ = writeln!(s, "\n## Allocations per request (dhat)\n");
        let _ = writeln!(
            s,
            "`cargo run --release -p benches --bin allocs`, in process, no socket:\n"
        );
        for line in &self.allocations {
            let _ = writeln!(s, "- `{line}`");
        }

        let _ = writeln!(s, "\n## Micro benchmarks (criterion)\n");
        if self.micro.is_empty() {
            let _ = writeln!(
                s,
                "Not run in this run; `cargo bench -p benches --bench router`, `--bench chain` and `--bench middleware`."
            );
        } else {
            let _ = writeln!(
                s,
                "`cargo bench -p benches --bench router|chain|middleware -- --warm-up-time 1 --measurement-time 3`; \
                 `[low estimate high]` per iteration (router: the 4 static or the 8 dynamic lookups per iteration; chain: one \
                 in-process request through N pass-through middlewares; middleware: one in-process \
                 request through one component, to compare with `pass-through`).\n\n| benchmark | time |\n|---|---|"
            );
            for (name, time) in &self.micro {
                let _ = writeln!(s, "| {name} | {time} |");
            }
        }
        s.push_str(include_str!("fast_paths.md"));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(cpu: &[f64]) -> Summary {
        let samples: Vec<Sample> = cpu
            .iter()
            .map(|&cpu_us_per_request| Sample {
                requests_per_second: 1.0,
                p50_us: 0,
                p99_us: 0,
                cpu_us_per_request,
                errors: 0,
            })
            .collect();
        Summary::new(&samples)
    }

    #[test]
    fn paired_ratio_cancels_drift_between_rounds() {
        // The machine's speed moves ±30% between rounds, and in each round the framework is 2%
        // under actix-web: each server's own spread is ±30%, the pairs' is none.
        let actix = summary(&[10.0, 12.0, 9.0, 14.0, 8.0]);
        let framework = summary(&[9.8, 11.76, 8.82, 13.72, 7.84]);
        let (ratio, spread) = paired_ratio(&framework, &actix).unwrap();
        assert!((ratio - 0.98).abs() < 1e-9, "{ratio}");
        assert!(spread < 1e-6, "{spread}");
        // A real difference of rounds still shows as spread.
        let uneven = summary(&[9.0, 12.0, 9.0, 14.0, 8.8]);
        let (ratio, spread) = paired_ratio(&uneven, &actix).unwrap();
        assert!((ratio - 1.0).abs() < 1e-9, "{ratio}");
        assert!((spread - 10.0).abs() < 1e-6, "{spread}");
    }

    #[test]
    fn paired_ratio_needs_the_same_rounds() {
        assert!(paired_ratio(&summary(&[1.0, 2.0]), &summary(&[1.0])).is_none());
        assert!(paired_ratio(&summary(&[]), &summary(&[])).is_none());
    }
}

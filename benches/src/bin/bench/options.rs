//! Command-line options.

use std::path::PathBuf;
use std::time::Duration;

/// What to run and for how long.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) quick: bool,
    pub(crate) rounds: usize,
    pub(crate) duration: Duration,
    pub(crate) warmup: Duration,
    pub(crate) connections: usize,
    pub(crate) threads: usize,
    pub(crate) callgrind: bool,
    pub(crate) callgrind_only: bool,
    /// `--callgrind-check`: framework and hyper on `/json` only, compared with the committed
    /// baseline; exit status 1 when the framework's figure is over it by more than 5%.
    pub(crate) callgrind_check: bool,
    /// `--servers a,b`: only these peers under callgrind (names as in the report).
    pub(crate) servers: Option<Vec<String>>,
    /// `--routes a,b`: only these routes under callgrind (`plaintext`, `json`, `big+gzip`).
    pub(crate) routes: Option<Vec<String>>,
    pub(crate) callgrind_requests: (u64, u64),
    pub(crate) micro: bool,
    /// wrk and h2load beside the harness on the cross-checked routes ([`crate::crosscheck`]):
    /// on in a full run (`--no-cross-check` leaves them out), and `--cross-check` alone runs
    /// only those routes and prints the comparison, leaving BENCHMARKS.md alone.
    pub(crate) cross_check: bool,
    pub(crate) cross_check_only: bool,
    pub(crate) out: PathBuf,
}

impl Options {
    /// `--quick`, `--rounds N`, `--duration SECS`, `--connections N`, `--threads N`,
    /// `--no-callgrind`, `--callgrind-only` (instruction counts printed, no load, no report),
    /// `--callgrind-check` (GET /json at most 1.08× `hyper-id`'s instructions),
    /// `--servers a,b` (a callgrind subset), `--routes a,b` (the routes measured, under load and
    /// callgrind), `--no-micro`, `--cross-check` (only the cross-check, printed),
    /// `--no-cross-check`, `--out FILE`.
    pub(crate) fn from_args() -> Self {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let has = |flag: &str| args.iter().any(|a| a == flag);
        let value = |flag: &str| {
            args.iter()
                .position(|a| a == flag)
                .and_then(|i| args.get(i + 1))
                .map(|v| {
                    v.parse::<f64>()
                        .unwrap_or_else(|_| panic!("{flag} takes a number"))
                })
        };
        let quick = has("--quick");
        let list = |flag: &str| {
            args.iter()
                .position(|a| a == flag)
                .and_then(|i| args.get(i + 1))
                .map(|v| v.split(',').map(str::to_owned).collect::<Vec<_>>())
        };
        let default_out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../BENCHMARKS.md");
        Self {
            quick,
            rounds: value("--rounds").map_or(if quick { 2 } else { 5 }, |v| v as usize),
            duration: Duration::from_secs_f64(value("--duration").unwrap_or(if quick {
                1.0
            } else {
                5.0
            })),
            warmup: Duration::from_millis(if quick { 200 } else { 1000 }),
            connections: value("--connections").map_or(32, |v| v as usize),
            threads: value("--threads").map_or(1, |v| v as usize),
            callgrind: has("--callgrind-only") || (!quick && !has("--no-callgrind")),
            callgrind_only: has("--callgrind-only"),
            callgrind_check: has("--callgrind-check"),
            servers: list("--servers"),
            routes: list("--routes"),
            callgrind_requests: if quick && !has("--callgrind-only") {
                (200, 2200)
            } else {
                (2000, 22000)
            },
            micro: !quick && !has("--no-micro") && !has("--cross-check"),
            cross_check: has("--cross-check") || (!quick && !has("--no-cross-check")),
            cross_check_only: has("--cross-check"),
            out: args
                .iter()
                .position(|a| a == "--out")
                .and_then(|i| args.get(i + 1))
                .map_or(default_out, PathBuf::from),
        }
    }

    /// True when `--servers` is absent or names `server`.
    pub(crate) fn wants_server(&self, server: &str) -> bool {
        self.servers
            .as_ref()
            .is_none_or(|list| list.iter().any(|s| s == server))
    }

    /// True when `--routes` is absent or names `route`.
    pub(crate) fn wants_route(&self, route: &str) -> bool {
        self.routes
            .as_ref()
            .is_none_or(|list| list.iter().any(|r| r == route))
    }

    /// The command that reproduces this run.
    pub(crate) fn command(&self) -> String {
        let mut cmd = "cargo run --release -p benches --bin bench --".to_owned();
        if self.quick {
            cmd.push_str(" --quick");
        }
        cmd
    }
}

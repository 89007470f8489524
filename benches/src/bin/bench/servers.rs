//! Starting, watching and stopping the server processes, and running the sibling tools.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::load::Route;

/// The servers under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServerKind {
    Hyper,
    Framework,
    Axum,
    Actix,
    UserService,
    /// Raw hyper's server with `BENCH_REQUEST_ID=1`: every answer also carries an
    /// `X-Request-Id`, the one feature DECISIONS.md asks of every framework answer that raw
    /// hyper lacks. Measured under callgrind on `/plaintext` and `/json` only, as a second
    /// reference: what hyper pays for the same feature.
    HyperId,
}

impl ServerKind {
    /// Whether this server answers `route`: raw hyper answers the core routes only; actix-web
    /// has no proxy here; the user service answers its own route only; raw hyper with request
    /// ids is measured on `/plaintext` and `/json` (HTTP/1.1) only.
    pub(crate) fn serves(self, route: Route) -> bool {
        if (route == Route::UserLogin) != (self == ServerKind::UserService) {
            return false;
        }
        if self == ServerKind::HyperId {
            return matches!(route, Route::Plaintext | Route::Json);
        }
        if route.is_tls() && !cfg!(feature = "tls") {
            return false;
        }
        match route {
            Route::EchoTyped => self == ServerKind::Framework,
            Route::StaticSmall | Route::StaticLarge => self != ServerKind::Hyper,
            Route::ProxyJson => matches!(self, ServerKind::Framework | ServerKind::Axum),
            _ => true,
        }
    }

    /// The peers compared route by route; raw hyper first, as the reference.
    pub(crate) const PEERS: [ServerKind; 4] =
        [Self::Hyper, Self::Framework, Self::Axum, Self::Actix];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Hyper => "hyper",
            Self::Framework => "framework",
            Self::Axum => "axum",
            Self::Actix => "actix-web",
            Self::UserService => "user-service",
            Self::HyperId => "hyper-id",
        }
    }

    fn binary(self) -> &'static str {
        match self {
            Self::Hyper | Self::HyperId => "server-hyper",
            Self::Framework => "server-framework",
            Self::Axum => "server-axum",
            Self::Actix => "server-actix",
            Self::UserService => "user-service",
        }
    }

    /// Its port in this run: one of six consecutive ports from [`port_base`].
    pub(crate) fn port(self) -> u16 {
        let offset = match self {
            Self::Hyper => 0,
            Self::Framework => 1,
            Self::Axum => 2,
            Self::Actix => 3,
            Self::UserService => 4,
            Self::HyperId => 5,
        };
        port_base() + offset
    }

    /// gzip level on `/big`, for the parity column.
    pub(crate) fn gzip_level(self) -> &'static str {
        match self {
            Self::Actix => "1 (flate2 fast, fixed)",
            _ => "1",
        }
    }

    /// The command that starts it (optionally under another program, e.g. valgrind).
    pub(crate) fn command(self, threads: usize, wrapper: &[String]) -> Command {
        let binary = sibling(self.binary());
        let mut cmd = match wrapper.split_first() {
            Some((program, args)) => {
                let mut cmd = Command::new(program);
                cmd.args(args).arg(binary);
                cmd
            }
            None => Command::new(binary),
        };
        if self == Self::UserService {
            cmd.env("BIND", format!("127.0.0.1:{}", self.port()))
                .env("DATABASE_URL", "memory")
                .env("TOKIO_WORKER_THREADS", threads.to_string())
                // The load comes from one IP: the per-IP limits would measure 429 answers.
                .env("TOKEN_RATE_LIMIT", "off")
                .env("LOGIN_RATE_LIMIT", "off")
                // The register flow makes some 650 000 accounts in a full run, past the memory
                // store's default bound (100 000): room for them, so the flow measures
                // registrations rather than 507 answers.
                .env("MEMORY_USERS", "4000000")
                .env("RUST_LOG", "warn");
        } else {
            cmd.args([
                "--port",
                &self.port().to_string(),
                "--threads",
                &threads.to_string(),
            ]);
        }
        if self == Self::HyperId {
            cmd.env("BENCH_REQUEST_ID", "1");
        }
        if let Some((cert, key)) = TLS_FILES.get() {
            cmd.env("BENCH_TLS_CERT", cert).env("BENCH_TLS_KEY", key);
        }
        // The static files exist before the server starts (see `benches::static_dir`).
        cmd.env("BENCH_UPSTREAM_PORT", Self::Hyper.port().to_string())
            .env("BENCH_STATIC_DIR", benches::static_dir());
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        cmd
    }
}

/// The first of this run's six ports: `BENCH_PORT_BASE` when set, else a block of six ports
/// free when the run starts, from a random place in 20 000–55 999. Two runs at once (two
/// sessions, CI beside a developer) thus never send requests to each other's servers, which
/// once gave the callgrind check a false figure.
fn port_base() -> u16 {
    static BASE: std::sync::OnceLock<u16> = std::sync::OnceLock::new();
    *BASE.get_or_init(|| {
        if let Some(base) = std::env::var("BENCH_PORT_BASE")
            .ok()
            .and_then(|b| b.parse().ok())
        {
            return base;
        }
        // No random crate needed: the clock's nanoseconds and the process id differ per run.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let start = ((nanos ^ std::process::id()) % 6_000) as u16;
        (0..6_000u16)
            .map(|i| 20_000 + ((start + i) % 6_000) * 6)
            .find(|base| {
                // The plain ports and the TLS ones above them.
                (0..6).all(|o| {
                    [0, benches::TLS_PORT_OFFSET].iter().all(|tls| {
                        std::net::TcpListener::bind(("127.0.0.1", base + o + tls)).is_ok()
                    })
                })
            })
            .unwrap_or(18_101)
    })
}

/// A binary next to this one (same target profile directory), or in `$BENCH_SERVER_DIR`
/// when set (to measure another build of the servers, e.g. before and after a change).
pub(crate) fn sibling(name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os("BENCH_SERVER_DIR") {
        return PathBuf::from(dir).join(name);
    }
    let exe = std::env::current_exe().expect("own path");
    exe.parent().expect("exe directory").join(name)
}

/// Under `cargo run`, builds the servers and tools so the siblings are current: for the
/// callgrind check only the framework's and raw hyper's servers.
pub(crate) fn build_binaries(options: &crate::options::Options) -> std::io::Result<()> {
    let Ok(cargo) = std::env::var("CARGO") else {
        return Ok(());
    };
    let release = sibling("bench")
        .parent()
        .is_some_and(|d| d.ends_with("release"));
    if !release {
        eprintln!("warning: not a release build; run with --release for meaningful figures");
    }
    // One cargo invocation per package: built together, cargo would unify the framework's
    // features, and the benchmark server would carry the user service's (TLS, embedded
    // files, the docs page), which it does not use and a deployment of it would not build.
    // That code showed in its memory: 0.4 MB more resident at start (`VmRSS`, idle).
    let builds: &[&[&str]] = if options.callgrind_check {
        &[&[
            "build",
            "-p",
            "benches",
            "--no-default-features",
            "--bin",
            "server-framework",
            "--bin",
            "server-hyper",
        ]]
    } else {
        &[
            &["build", "-p", "benches", "--bins"],
            // Its own invocation, so actix-web's features stay in its own build.
            &["build", "-p", "bench-actix"],
            &["build", "-p", "user-service"],
        ]
    };
    for args in builds {
        let mut cmd = Command::new(&cargo);
        cmd.args(*args);
        if release {
            cmd.arg("--release");
        }
        if !cmd.status()?.success() {
            return Err(std::io::Error::other("building the servers failed"));
        }
    }
    Ok(())
}

/// The run's certificate and key files, once [`make_certificate`] made them: given to every
/// server started after, which then also listens over TLS.
static TLS_FILES: std::sync::OnceLock<(PathBuf, PathBuf)> = std::sync::OnceLock::new();

#[cfg(feature = "tls")]
/// Makes a self-signed certificate for `localhost` and 127.0.0.1 (rcgen) for the servers'
/// TLS ports, and returns it (DER) for the harness's client to trust.
pub(crate) fn make_certificate() -> std::io::Result<Vec<u8>> {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .map_err(std::io::Error::other)?;
    let dir = std::env::temp_dir().join(format!("bench-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, certified.cert.pem())?;
    std::fs::write(&key, certified.key_pair.serialize_pem())?;
    let _ = TLS_FILES.set((cert, key));
    Ok(certified.cert.der().to_vec())
}

/// A running server process.
pub(crate) struct Server {
    pub(crate) kind: ServerKind,
    child: Child,
}

impl Server {
    pub(crate) fn start(kind: ServerKind, threads: usize) -> std::io::Result<Self> {
        let child = kind.command(threads, &[]).spawn()?;
        Ok(Self { kind, child })
    }

    pub(crate) fn from_child(kind: ServerKind, child: Child) -> Self {
        Self { kind, child }
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.kind.port()))
    }

    /// Where it answers over TLS (when started with the run's certificate).
    pub(crate) fn tls_addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.kind.port() + benches::TLS_PORT_OFFSET))
    }

    /// Where `route` is sent: the TLS port for a TLS route.
    pub(crate) fn addr_for(&self, route: Route) -> SocketAddr {
        if route.is_tls() {
            self.tls_addr()
        } else {
            self.addr()
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until the port accepts connections; fails when the process exits first (its port
    /// was taken), so a run never measures another process's server.
    pub(crate) async fn wait_ready(&mut self, timeout: Duration) -> std::io::Result<()> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                return Err(std::io::Error::other(format!(
                    "{} exited ({status}) before listening on {}",
                    self.kind.name(),
                    self.addr()
                )));
            }
            if tokio::net::TcpStream::connect(self.addr()).await.is_ok() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(std::io::Error::other(format!(
            "{} did not listen on {} within {timeout:?}",
            self.kind.name(),
            self.addr()
        )))
    }

    /// User plus system CPU time so far, in clock ticks (all threads).
    pub(crate) fn cpu_ticks(&self) -> std::io::Result<u64> {
        crate::machine::cpu_ticks(self.pid())
    }

    /// Peak resident set size so far, in KiB.
    pub(crate) fn peak_rss_kib(&self) -> std::io::Result<u64> {
        crate::machine::peak_rss_kib(self.pid())
    }

    /// Asks for a graceful stop (SIGINT, repeated every 5 s: under valgrind one can get lost)
    /// and waits for the exit. A server killed outright would leave no callgrind totals, so
    /// SIGKILL is the last resort after a minute.
    pub(crate) fn stop(&mut self) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut next_signal = Instant::now();
        while Instant::now() < deadline {
            if Instant::now() >= next_signal {
                let _ = Command::new("kill")
                    .args(["-INT", &self.pid().to_string()])
                    .status();
                next_signal = Instant::now() + Duration::from_secs(5);
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        self.child.wait().ok()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs the `allocs` tool and keeps its result lines.
pub(crate) fn run_allocs() -> Vec<String> {
    let output = Command::new(sibling("allocs")).output();
    match output {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("allocs "))
            .map(str::to_owned)
            .collect(),
        Ok(out) => vec![format!(
            "allocs failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )],
        Err(e) => vec![format!("allocs could not run: {e}")],
    }
}

/// Runs the criterion micro benchmarks with short settings and keeps `name: time` lines.
pub(crate) fn run_micro() -> Vec<(String, String)> {
    let Ok(cargo) = std::env::var("CARGO") else {
        return Vec::new();
    };
    let mut rows = Vec::new();
    for bench in ["router", "chain", "middleware"] {
        let output = Command::new(&cargo)
            .args(["bench", "-p", "benches", "--bench", bench, "--"])
            .args(["--warm-up-time", "1", "--measurement-time", "3", "--noplot"])
            .stderr(Stdio::null())
            .output();
        let Ok(output) = output else { continue };
        let text = String::from_utf8_lossy(&output.stdout);
        // A result is `<name> time: [..]`, or the name alone on a line (long names) followed
        // by an indented `time:` line. Indented `time:` lines under `change:` are ignored.
        let mut pending: Option<String> = None;
        for line in text.lines() {
            let indented = line.starts_with(' ');
            let trimmed = line.trim();
            match trimmed.split_once("time:") {
                Some((head, time)) if !indented && !head.trim().is_empty() => {
                    rows.push((head.trim().to_owned(), time.trim().to_owned()));
                    pending = None;
                }
                Some((_, time)) => {
                    if let Some(name) = pending.take() {
                        rows.push((name, time.trim().to_owned()));
                    }
                }
                None if !indented && !trimmed.is_empty() && !trimmed.contains(' ') => {
                    pending = Some(trimmed.to_owned());
                }
                None => {}
            }
        }
    }
    rows
}

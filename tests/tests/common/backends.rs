//! Backends a test owns: its own `redis-server` and its own PostgreSQL cluster (`initdb` in a
//! temp dir, on a free port), and user-service processes, so a test can kill, stop and pause
//! them (SIGKILL, stop/restart, SIGSTOP/SIGCONT) without touching the shared servers on 5432
//! and 6379. Everything started here is killed and its directory removed on drop.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use framework::redis_connection::{RedisConnection, RedisPolicy};

/// A port nobody listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Sends `signal` (`KILL`, `STOP`, `CONT`, `TERM`) to `pid`.
pub fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal} {pid}");
}

/// SIGKILL to `child`, if there is one, and waits for it to be gone.
fn kill_child(child: &mut Option<Child>) {
    if let Some(mut child) = child.take() {
        let _ = child.kill();
        let _ = child.wait();
    }
}

fn wait_until(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < limit, "{what} not ready in {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn answers(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// Runs `start` until it succeeds, up to five times, telling it (`true`) to pick new ports
/// before each retry: a port picked free may be taken before the server binds it (another
/// test's server, or the local end of some connection), and the server then exits.
fn on_free_ports<T>(what: &str, mut start: impl FnMut(bool) -> Result<T, String>) -> T {
    let mut failure = String::new();
    for attempt in 0..5 {
        match start(attempt > 0) {
            Ok(started) => return started,
            Err(err) => failure = err,
        }
    }
    panic!("{what} on free ports in five tries: {failure}");
}

/// Waits until the `redis-server` `child` answers on `port`; false when it exits first (the
/// port was taken: a port picked free may be bound by another test's server, or be the local
/// end of some connection, before the server binds it). Ready means this process answers (its
/// `process_id`), so a server that took the port meanwhile is not mistaken for it, and has
/// loaded its data (`loading:0`; until then commands get `LOADING`).
fn redis_ready(child: &mut Child, port: u16) -> bool {
    let me = format!("process_id:{}\r", child.id());
    let start = Instant::now();
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        let info = Command::new("redis-cli")
            .args(["-p", &port.to_string(), "info"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        if info.contains(&me) && info.contains("\nloading:0\r") {
            return true;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "redis-server on port {port} not ready in 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A `redis-server` of the test's own, with AOF persistence (`appendfsync always`), so data
/// survives a SIGKILL as it would in a deployment that keeps sessions across restarts.
pub struct RedisServer {
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts it on a free port (another, up to five tries, when the port is taken before
    /// the server binds it) and waits until it answers.
    pub fn start() -> Self {
        let mut server = Self {
            port: free_port(),
            dir: super::temp_dir("redis"),
            child: None,
        };
        on_free_ports("redis-server", |retry| {
            if retry {
                server.port = free_port();
            }
            if server.spawn() {
                Ok(())
            } else {
                Err(format!("it exited on port {}", server.port))
            }
        });
        server
    }

    /// Starts the server on its port and waits until it answers; false when it exits first.
    fn spawn(&mut self) -> bool {
        let mut child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server (apt-get install redis-server)");
        // A server that exited is not kept: its pid may be another process's by the time
        // this one is dropped (which signals it).
        let ready = redis_ready(&mut child, self.port);
        if ready {
            self.child = Some(child);
        }
        ready
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// SIGKILL, and waits for the process to be gone.
    pub fn kill(&mut self) {
        kill_child(&mut self.child);
    }

    /// Starts it again on the same port and directory (its AOF reloaded).
    pub fn restart(&mut self) {
        assert!(
            self.spawn(),
            "redis-server exited on restart: its port was taken"
        );
    }

    /// SIGSTOP: connections are accepted by the kernel, nothing is answered.
    pub fn pause(&self) {
        signal(self.pid(), "STOP");
    }

    /// SIGCONT.
    pub fn resume(&self) {
        signal(self.pid(), "CONT");
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status();
        }
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A Redis Cluster of the test's own: `masters` `redis-server --cluster-enabled yes` processes
/// on free ports (and free cluster bus ports), joined by `redis-cli --cluster create` with no
/// replicas, each node holding a third of the slots.
pub struct RedisCluster {
    pub ports: Vec<u16>,
    /// Each node's cluster bus port, kept across a restart.
    bus_ports: Vec<u16>,
    dir: PathBuf,
    children: Vec<Option<Child>>,
}

impl RedisCluster {
    /// Starts the nodes, creates the cluster and waits until every node says `cluster_state:ok`.
    pub fn start(masters: usize) -> Self {
        let mut cluster = Self {
            ports: (0..masters).map(|_| free_port()).collect(),
            bus_ports: (0..masters).map(|_| free_port()).collect(),
            dir: super::temp_dir("redis-cluster"),
            children: Vec::new(),
        };
        for i in 0..masters {
            let child = on_free_ports("a cluster node", |retry| {
                if retry {
                    cluster.ports[i] = free_port();
                    cluster.bus_ports[i] = free_port();
                }
                cluster
                    .spawn(i)
                    .ok_or_else(|| format!("it exited on port {}", cluster.ports[i]))
            });
            cluster.children.push(Some(child));
        }
        let nodes: Vec<String> = cluster
            .ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&nodes)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli --cluster create");
        assert!(
            out.status.success(),
            "cluster create: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        cluster.wait_ok();
        cluster
    }

    /// [`RedisCluster::start`] off the async runtime (it waits on processes).
    pub async fn start_async(masters: usize) -> Self {
        tokio::task::spawn_blocking(move || Self::start(masters))
            .await
            .expect("start the cluster")
    }

    /// Starts node `i` and waits until it answers ([`redis_ready`]); `None` when it exits
    /// first (one of its ports was taken).
    fn spawn(&self, i: usize) -> Option<Child> {
        let port = self.ports[i];
        let dir = self.dir.join(port.to_string());
        std::fs::create_dir_all(&dir).expect("node dir");
        let mut child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
            ])
            .args(["--cluster-port", &self.bus_ports[i].to_string()])
            .args(["--cluster-node-timeout", "2000"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server (apt-get install redis-server)");
        redis_ready(&mut child, port).then_some(child)
    }

    /// SIGKILL to node `i`: its slots are not served until it is back.
    pub fn kill(&mut self, i: usize) {
        kill_child(&mut self.children[i]);
    }

    /// Starts node `i` again on its ports and directory: it rejoins from its `nodes.conf`
    /// (its keys are gone: no persistence), and the cluster is ok again.
    pub fn restart(&mut self, i: usize) {
        let child = self.spawn(i);
        assert!(
            child.is_some(),
            "node {i} exited on restart: its port was taken"
        );
        self.children[i] = child;
        self.wait_ok();
    }

    /// SIGSTOP to node `i`: connections are accepted by the kernel, nothing is answered.
    pub fn pause(&self, i: usize) {
        signal(self.children[i].as_ref().expect("running").id(), "STOP");
    }

    /// SIGCONT to node `i`.
    pub fn resume(&self, i: usize) {
        signal(self.children[i].as_ref().expect("running").id(), "CONT");
    }

    /// `redis-cli -p <node i's port> <args…>`, its output.
    pub fn cli(&self, i: usize, args: &[&str]) -> String {
        Command::new("redis-cli")
            .args(["-p", &self.ports[i].to_string()])
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// Waits until every node sees the cluster as ok (all slots served).
    pub fn wait_ok(&self) {
        wait_until("redis cluster", Duration::from_secs(30), || {
            (0..self.ports.len()).all(|i| {
                self.cli(i, &["cluster", "info"])
                    .contains("cluster_state:ok")
            })
        });
    }

    /// The node URLs, comma-separated: how a service is told to use the cluster.
    pub fn url(&self) -> String {
        self.ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Node `i`'s cluster id.
    pub fn node_id(&self, i: usize) -> String {
        self.cli(i, &["cluster", "myid"]).trim().to_owned()
    }

    /// Moves `slots` slots from node `from` to node `to` with `redis-cli --cluster reshard`
    /// (keys migrate one by one while clients are redirected with `ASK`/`MOVED`).
    pub fn move_slots(&self, from: usize, to: usize, slots: usize) {
        let out = Command::new("redis-cli")
            .args([
                "--cluster",
                "reshard",
                &format!("127.0.0.1:{}", self.ports[0]),
            ])
            .args(["--cluster-from", &self.node_id(from)])
            .args(["--cluster-to", &self.node_id(to)])
            .args(["--cluster-slots", &slots.to_string()])
            .args(["--cluster-yes", "--cluster-pipeline", "10"])
            .output()
            .expect("redis-cli --cluster reshard");
        assert!(
            out.status.success(),
            "reshard: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        self.wait_ok();
    }
}

/// The Redis a store test runs on: the machine's server (`TEST_REDIS_URL`), or a 3-master
/// cluster of the test's own, so one test body checks a store on both.
pub enum TestRedis {
    Server(String),
    Cluster(RedisCluster),
}

impl TestRedis {
    /// The machine's server, from `TEST_REDIS_URL`.
    pub fn server() -> Self {
        Self::Server(super::store_url("TEST_REDIS_URL"))
    }

    /// A 3-master cluster of the test's own, started off the async runtime.
    pub async fn cluster() -> Self {
        Self::Cluster(RedisCluster::start_async(3).await)
    }

    /// The URL a service is given: the server's, or the cluster's nodes comma-separated.
    pub fn url(&self) -> String {
        match self {
            Self::Server(url) => url.clone(),
            Self::Cluster(cluster) => cluster.url(),
        }
    }

    /// A connection as the stores make one: on a cluster it follows the redirections, so any
    /// single-key command goes to the key's master.
    pub async fn connection(&self) -> RedisConnection {
        RedisConnection::connect(&self.url(), RedisPolicy::default())
            .await
            .expect("redis")
    }

    /// The keys starting with `prefix`, from every master.
    pub async fn keys(&self, prefix: &str) -> Vec<String> {
        let nodes = match self {
            Self::Server(url) => vec![url.clone()],
            Self::Cluster(cluster) => cluster.url().split(',').map(str::to_owned).collect(),
        };
        let mut keys = Vec::new();
        for node in nodes {
            let client = redis::Client::open(node.as_str()).expect("redis url");
            let mut conn = client
                .get_multiplexed_async_connection()
                .await
                .expect("redis");
            let found: Vec<String> = redis::cmd("KEYS")
                .arg(format!("{prefix}*"))
                .query_async(&mut conn)
                .await
                .expect("keys");
            keys.extend(found);
        }
        keys
    }

    /// Removes the keys starting with `prefix`.
    pub async fn remove_keys(&self, prefix: &str) {
        let conn = self.connection().await;
        for key in self.keys(prefix).await {
            let _: i64 = conn.query(redis::cmd("DEL").arg(key)).await.expect("del");
        }
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for child in self.children.iter().flatten() {
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status();
        }
        for child in &mut self.children {
            kill_child(child);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The directory of PostgreSQL's server programs: where `initdb` is on `PATH`, else Debian's
/// `/usr/lib/postgresql/<version>/bin` (the newest).
fn postgres_bin() -> PathBuf {
    if let Ok(out) = Command::new("sh")
        .args(["-c", "command -v initdb"])
        .output()
        && out.status.success()
    {
        let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        let path = std::fs::canonicalize(&path).unwrap_or(path);
        if let Some(dir) = path.parent() {
            return dir.to_path_buf();
        }
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL's server programs (apt-get install postgresql)")
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop().expect("initdb under /usr/lib/postgresql")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// A PostgreSQL cluster of the test's own: `initdb` in a temp dir (as the `postgres` user when
/// the test runs as root, since PostgreSQL refuses to run as root), trust authentication, on a
/// free port of 127.0.0.1, with the database `test`.
pub struct Postgres {
    pub port: u16,
    dir: PathBuf,
    bin: PathBuf,
    as_postgres: bool,
}

impl Postgres {
    /// Creates the cluster, starts it and creates the database `test`.
    pub fn start() -> Self {
        let dir = super::temp_dir("postgres");
        let as_postgres = is_root();
        if as_postgres {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&dir)
                .status()
                .expect("chown");
            assert!(status.success(), "chown the cluster directory to postgres");
        }
        let mut pg = Self {
            port: free_port(),
            dir,
            bin: postgres_bin(),
            as_postgres,
        };
        let data = pg.data();
        let out = pg
            .command("initdb")
            .args(["-A", "trust", "-U", "postgres", "--no-sync", "-D"])
            .arg(&data)
            .output()
            .expect("run initdb");
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // `pg_ctl -w` waits for this server, not any on the port: a taken port fails the start.
        on_free_ports("postgres", |retry| {
            if retry {
                pg.port = free_port();
            }
            pg.try_begin()
        });
        let out = Command::new(pg.bin.join("psql"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &pg.port.to_string(),
                "-U",
                "postgres",
            ])
            .args(["-c", "CREATE DATABASE test"])
            .output()
            .expect("run psql");
        assert!(
            out.status.success(),
            "create database: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        pg
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// A command of PostgreSQL's `program`, run as `postgres` when we are root.
    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(path);
            command
        } else {
            Command::new(path)
        }
    }

    /// `postgres://postgres@127.0.0.1:<port>/test`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/test", self.port)
    }

    fn begin(&self) {
        self.try_begin()
            .unwrap_or_else(|failure| panic!("{failure}"));
    }

    /// Starts the server on its port; the failure names `pg_ctl`'s output and the log.
    fn try_begin(&self) -> Result<(), String> {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=off -c max_connections=100",
            self.port,
            self.dir.display()
        );
        let out = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-o", &options, "-l"])
            .arg(self.dir.join("log"))
            .args(["-w", "start"])
            .output()
            .expect("run pg_ctl start");
        if !out.status.success() {
            return Err(format!(
                "pg_ctl start on port {}: {}{}",
                self.port,
                String::from_utf8_lossy(&out.stdout),
                std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
            ));
        }
        let port = self.port;
        wait_until("postgres", Duration::from_secs(30), || answers(port));
        Ok(())
    }

    /// `pg_ctl stop -m fast`: connections are closed, new ones refused.
    pub fn stop(&self) {
        let out = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "fast", "-w", "stop"])
            .output()
            .expect("run pg_ctl stop");
        assert!(out.status.success(), "pg_ctl stop");
    }

    /// Starts it again after [`stop`](Self::stop).
    pub fn restart(&self) {
        self.begin();
    }

    /// The postmaster and every process it started (backends, writer, checkpointer...).
    fn processes(&self) -> Vec<u32> {
        let pid_file =
            std::fs::read_to_string(self.data().join("postmaster.pid")).expect("postmaster.pid");
        let postmaster: u32 = pid_file
            .lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .expect("postmaster pid");
        let children = Command::new("pgrep")
            .args(["-P", &postmaster.to_string()])
            .output()
            .expect("run pgrep");
        let mut pids = vec![postmaster];
        pids.extend(
            String::from_utf8_lossy(&children.stdout)
                .lines()
                .filter_map(|l| l.trim().parse::<u32>().ok()),
        );
        pids
    }

    /// SIGSTOP to the whole cluster, postmaster first (so it forks nothing new): it hangs as a
    /// frozen machine would, connections accepted by the kernel and never answered.
    pub fn pause(&self) {
        for pid in self.processes() {
            signal(pid, "STOP");
        }
    }

    /// SIGCONT to the whole cluster.
    pub fn resume(&self) {
        for pid in self.processes().into_iter().rev() {
            signal(pid, "CONT");
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if self.data().join("postmaster.pid").exists() {
            for pid in self.processes() {
                let _ = Command::new("kill")
                    .args(["-CONT", &pid.to_string()])
                    .status();
            }
            let _ = self
                .command("pg_ctl")
                .arg("-D")
                .arg(self.data())
                .args(["-m", "immediate", "-w", "stop"])
                .output();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The `user-service` binary beside this test's executable (`target/<profile>/user-service`),
/// which the workspace's `cargo test` builds (user-service has integration tests of its own).
pub fn service_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps");
    let binary = profile_dir.join("user-service");
    assert!(
        binary.exists(),
        "{} is missing: run the workspace's `cargo test`, or `cargo build -p user-service` first",
        binary.display()
    );
    binary
}

/// A user-service process on a fixed port, so it can be killed and started again at the same
/// address.
pub struct Instance {
    pub port: u16,
    env: Vec<(String, String)>,
    child: Option<Child>,
}

impl Instance {
    /// Starts the binary with `env` on a free port and waits until it accepts connections.
    pub fn start(env: &[(&str, String)]) -> Self {
        let mut instance = Self {
            port: free_port(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
            child: None,
        };
        instance.spawn();
        instance
    }

    fn spawn(&mut self) {
        let child = Command::new(service_binary())
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("BIND", format!("127.0.0.1:{}", self.port))
            .stdout(if std::env::var_os("FAULTS_LOG").is_some() {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start user-service");
        self.child = Some(child);
        let port = self.port;
        wait_until("user-service", Duration::from_secs(30), || answers(port));
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// SIGKILL: no graceful shutdown, its locks are left to expire.
    pub fn kill(&mut self) {
        kill_child(&mut self.child);
    }

    /// Starts it again on the same port.
    pub fn restart(&mut self) {
        self.spawn();
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Waits (up to `limit`) for the process to exit after a signal, and says how it exited.
    pub fn wait_exit(&mut self, limit: Duration) -> std::process::ExitStatus {
        let child = self.child.as_mut().expect("running");
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                self.child = None;
                return status;
            }
            assert!(
                start.elapsed() < limit,
                "user-service still runs after {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.kill();
    }
}

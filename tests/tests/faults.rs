//! Fault injection: two user-service processes on a PostgreSQL cluster and a `redis-server` of
//! this test's own (never the shared servers), 32 clients doing register → token → login → me
//! with the session cookie moving between the instances, while the backends fail one after the
//! other: Redis killed (SIGKILL, restarted with its AOF), PostgreSQL stopped and started, one
//! instance killed and started again, Redis paused (SIGSTOP/SIGCONT), PostgreSQL paused.
//!
//! The service runs with its defaults, rate limits included; clients behave as people do: a
//! flow starts at most every [`FLOW_EVERY`] (under the 60 tokens and logins a minute each
//! address may have), and a failed step is tried again after half a second (a login after a
//! new token), so a lock that nobody holds any more would show as a 429 after the fault.
//! Asserted, row by row of the README's "Backend faults" table: every error inside a fault
//! window (the fault plus 5 s after the backend is back) is the one the table names (a 500
//! with the store's category, or for a killed instance a failed connection to it) and comes
//! within the table's deadline; while PostgreSQL is down, tokens and `me` keep working; no
//! request takes longer than the database deadline plus a Redis deadline; no error outside a
//! fault window; every fault is followed by a return to the pre-fault rate within 10 s; every
//! registered account logs in afterwards on both instances. The table of each fault is
//! printed (`--nocapture`).
//!
//! The Redis faults are also run against a Redis Cluster of three masters (one master killed
//! and restarted, then paused), with the same load and the same assertions.
//!
//! The default durations keep CI short (about two minutes); `FAULTS_FULL=1` runs the
//! operator's scenario: Redis down 10 s, PostgreSQL down 10 s, Redis paused 15 s, PostgreSQL
//! paused 40 s.
//!
//! Run alone: `cargo build -p user-service && cargo test -p e2e-tests --test faults --
//! --nocapture` (the test starts the binary the build left in `target/debug`). To see what
//! the instances log, set `FAULTS_LOG` to their `RUST_LOG` filter (e.g.
//! `FAULTS_LOG=warn,framework::redis_connection=info`): their output is shown then.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::backends::{Instance, Postgres, RedisCluster, RedisServer};
use futures_util::StreamExt;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const CLIENTS: usize = 32;
/// How often each client starts a flow at most: one token and one login a flow stays under
/// the default 60 a minute per address.
const FLOW_EVERY: Duration = Duration::from_millis(1200);
/// The deadlines of the README's "Backend faults" table: a database call's, the pool's wait
/// for a connection, and Redis' worst (a command's deadline, then one retry on a fresh
/// connection, whose connect has the same deadline).
const DATABASE_DEADLINE: Duration = Duration::from_secs(5);
const POOL_ACQUIRE: Duration = Duration::from_secs(2);
const REDIS_WORST: Duration = Duration::from_secs(2);
/// What a debug build on two loaded cores may add to a deadline before its answer is read.
const SLACK: Duration = Duration::from_millis(500);
/// The longest any request may take (README: the database deadline plus at most one Redis
/// command and its retry).
const BUDGET: Duration = DATABASE_DEADLINE
    .saturating_add(REDIS_WORST)
    .saturating_add(SLACK);
/// Errors are allowed until this long after the backend is back.
const GRACE: Duration = Duration::from_secs(5);
/// The rate must be back within this long after the backend is back.
const RECOVERY: Duration = Duration::from_secs(10);

/// One request as the client saw it.
#[derive(Debug, Clone)]
struct Sample {
    /// Seconds since the load started, when the request was sent.
    sent: f64,
    took: Duration,
    step: &'static str,
    /// The status, or `None` for a transport failure (refused, reset, timed out).
    status: Option<u16>,
    /// An error answer's `category`.
    category: Option<String>,
    /// Which instance it was sent to (0 or 1).
    instance: usize,
    ok: bool,
}

/// Which backend a fault breaks, and so which errors the README allows while it lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Broken {
    /// Killed, restarting or paused: 500 with a Redis user's category, within a command's
    /// deadline and one retry's.
    Redis,
    /// Stopped: 500 `user-store` within the pool's wait for a connection (refused, retried).
    Postgres,
    /// Paused: 500 `user-store` after the database deadline.
    PostgresPaused,
    /// An instance killed: requests to it fail to connect (or are cut), and the submit locks it
    /// held refuse their accounts' retries until they expire.
    Instance(usize),
}

/// The categories of a request that needs Redis and did not get it (README: sessions, submit
/// locks, failed-login counts).
const REDIS_CATEGORIES: [&str; 3] = [
    "framework-session",
    "framework-concurrent-limiter",
    "user-login-throttle",
];

impl Broken {
    /// Why `sample`, a failure inside this fault's window, is not what the README says this
    /// fault does; `None` when it is.
    fn unexpected(self, sample: &Sample) -> Option<String> {
        let category = sample.category.as_deref();
        // A submit lock its holder could not release (its instance died, or Redis failed when
        // the release was sent) refuses its account's retries until it expires (5 s).
        let locked = sample.status == Some(429) && category == Some("framework-concurrent-limiter");
        let (allowed, within) = match self {
            // Its in-flight requests fail.
            Self::Instance(which) => {
                let refused = sample.status.is_none() && sample.instance == which;
                return (!refused && !locked).then(|| {
                    format!("neither a failed connection to instance {which} nor a lock left")
                });
            }
            Self::Redis => (
                locked
                    || sample.status == Some(500)
                        && category.is_some_and(|c| REDIS_CATEGORIES.contains(&c)),
                REDIS_WORST,
            ),
            // Refused: the pool's connections are gone and new ones are refused until its wait
            // for a connection ends.
            Self::Postgres => (
                sample.status == Some(500) && category == Some("user-store"),
                POOL_ACQUIRE,
            ),
            Self::PostgresPaused => (
                sample.status == Some(500) && category == Some("user-store"),
                DATABASE_DEADLINE,
            ),
        };
        if !allowed {
            return Some(format!(
                "not the 500 this fault gives ({:?} {category:?})",
                sample.status
            ));
        }
        (sample.took > within + SLACK)
            .then(|| format!("took {:?}, over the {within:?} deadline", sample.took))
    }

    /// Whether tokens and `me` must keep working meanwhile (they need no database).
    fn spares_sessions(self) -> bool {
        matches!(self, Self::Postgres | Self::PostgresPaused)
    }
}

/// One fault: when it began and when its backend was back.
#[derive(Debug, Clone)]
struct Window {
    name: &'static str,
    broken: Broken,
    start: f64,
    end: f64,
}

impl Window {
    /// Whether `sample` was in flight during the fault or its grace period.
    fn holds(&self, sample: &Sample) -> bool {
        sample.sent + sample.took.as_secs_f64() >= self.start
            && sample.sent < self.end + GRACE.as_secs_f64()
    }
}

#[derive(Clone, Copy)]
struct Durations {
    warmup: Duration,
    redis_down: Duration,
    postgres_down: Duration,
    instance_down: Duration,
    redis_pause: Duration,
    postgres_pause: Duration,
    settle: Duration,
}

fn durations() -> Durations {
    let full = std::env::var("FAULTS_FULL").is_ok_and(|v| v == "1");
    let s = Duration::from_secs;
    if full {
        Durations {
            warmup: s(10),
            redis_down: s(10),
            postgres_down: s(10),
            instance_down: s(5),
            redis_pause: s(15),
            postgres_pause: s(40),
            settle: s(20),
        }
    } else {
        Durations {
            warmup: s(6),
            redis_down: s(4),
            postgres_down: s(4),
            instance_down: s(3),
            redis_pause: s(5),
            postgres_pause: s(8),
            settle: s(12),
        }
    }
}

fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Where a flow stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Step {
    Register,
    Token,
    Login,
    Me,
}

struct Load {
    started: Instant,
    samples: Mutex<Vec<Sample>>,
    /// Accounts whose registration was answered 201 (or 409 after an unanswered attempt), with
    /// their digests.
    registered: Mutex<Vec<(String, String)>>,
    stop: AtomicBool,
    ports: [u16; 2],
}

impl Load {
    fn record(
        &self,
        sent: Instant,
        step: &'static str,
        instance: usize,
        answer: Option<&(u16, Value)>,
        ok: bool,
    ) {
        let sample = Sample {
            sent: (sent - self.started).as_secs_f64(),
            took: sent.elapsed(),
            step,
            status: answer.map(|(status, _)| *status),
            category: answer.and_then(|(_, body)| body["category"].as_str().map(str::to_owned)),
            instance: instance % 2,
            ok,
        };
        self.samples.lock().unwrap().push(sample);
    }

    fn url(&self, instance: usize, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.ports[instance % 2])
    }
}

/// Sends one request; its status and JSON body, or `None` when the transport failed.
async fn send(request: reqwest::RequestBuilder) -> Option<(u16, Value)> {
    let response = request.send().await.ok()?;
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(Value::Null);
    Some((status, body))
}

/// One client: flows of register → token → login → me, each step on the other instance than
/// the one before, until told to stop.
async fn client(load: Arc<Load>, id: usize) {
    let http = client_for(id);
    let mut flow = 0usize;
    let mut next_flow = Instant::now();
    while !load.stop.load(Ordering::Relaxed) {
        tokio::time::sleep_until(next_flow.into()).await;
        next_flow = Instant::now() + FLOW_EVERY;
        flow += 1;
        let account = format!("c{id}f{flow}");
        let digest = sha256_hex(&format!("pw-{account}"));
        let mut step = Step::Register;
        let mut hop = id + flow;
        let mut unanswered_register = false;
        let mut token = String::new();
        while !load.stop.load(Ordering::Relaxed) {
            hop += 1;
            let sent = Instant::now();
            let (name, outcome) = match step {
                Step::Register => {
                    let body = json!({"account": account, "password": digest});
                    let answer = send(http.post(load.url(hop, "/users/v1/me")).json(&body)).await;
                    let ok = match &answer {
                        Some((201, _)) => true,
                        // Its earlier attempt was stored after all.
                        Some((409, _)) => unanswered_register,
                        _ => false,
                    };
                    if ok {
                        load.registered
                            .lock()
                            .unwrap()
                            .push((account.clone(), digest.clone()));
                    } else if answer.as_ref().is_none_or(|(s, _)| *s >= 500) {
                        unanswered_register = true;
                    }
                    ("register", (answer, ok, Step::Token))
                }
                Step::Token => {
                    let answer = send(http.get(load.url(hop, "/users/v1/login"))).await;
                    let ok = match &answer {
                        Some((200, body)) => match body["token"].as_str() {
                            Some(t) => {
                                token = t.to_owned();
                                true
                            }
                            None => false,
                        },
                        _ => false,
                    };
                    ("token", (answer, ok, Step::Login))
                }
                Step::Login => {
                    let proof = sha256_hex(&format!("{digest}{token}"));
                    let body = json!({"account": account, "password": proof});
                    let answer =
                        send(http.post(load.url(hop, "/users/v1/login")).json(&body)).await;
                    let ok = matches!(answer, Some((200, _)));
                    ("login", (answer, ok, Step::Me))
                }
                Step::Me => {
                    let answer = send(http.get(load.url(hop, "/users/v1/me"))).await;
                    let ok = matches!(&answer, Some((200, body)) if body["name"] == account);
                    ("me", (answer, ok, Step::Register))
                }
            };
            let (answer, ok, next) = outcome;
            load.record(sent, name, hop, answer.as_ref(), ok);
            if ok {
                if next == Step::Register {
                    break;
                }
                step = next;
            } else {
                // Try again as a person would; a login or a lost session needs a new token.
                if matches!(step, Step::Login | Step::Me) {
                    step = Step::Token;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

/// A client with a cookie jar, sending from `127.0.0.<2 + id>`: every client has an address
/// of its own, as people behind a load balancer do (the per-IP limits count each apart).
fn client_for(id: usize) -> reqwest::Client {
    let address = std::net::Ipv4Addr::new(127, 0, 0, u8::try_from(2 + id).expect("id < 250"));
    // Errors as JSON, with their category.
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::ACCEPT,
        reqwest::header::HeaderValue::from_static("application/json"),
    );
    reqwest::Client::builder()
        .default_headers(headers)
        .cookie_store(true)
        .local_address(std::net::IpAddr::V4(address))
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// The client of the `n`th checker: its own address in 127.1.0.0/16.
fn checker_client(n: usize) -> reqwest::Client {
    let [hi, lo] = u16::try_from(n + 1).expect("fewer checkers").to_be_bytes();
    reqwest::Client::builder()
        .cookie_store(true)
        .local_address(std::net::IpAddr::V4(std::net::Ipv4Addr::new(
            127, 1, hi, lo,
        )))
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// A new token and a login with it, on `instance`.
async fn log_in(
    http: &reqwest::Client,
    load: &Load,
    instance: usize,
    account: &str,
    digest: &str,
) -> Result<(), String> {
    let (status, body) = send(http.get(load.url(instance, "/users/v1/login")))
        .await
        .ok_or("token: no answer")?;
    let token = body["token"]
        .as_str()
        .ok_or_else(|| format!("token: {status} {body}"))?;
    let proof = sha256_hex(&format!("{digest}{token}"));
    let body = json!({"account": account, "password": proof});
    let (status, body) = send(http.post(load.url(instance, "/users/v1/login")).json(&body))
        .await
        .ok_or("login: no answer")?;
    if status == 200 {
        Ok(())
    } else {
        Err(format!("login: {status} {body}"))
    }
}

/// What one fault did to the clients.
#[derive(Debug)]
struct Report {
    name: &'static str,
    errors: usize,
    first_success: Option<f64>,
    full_rate: Option<f64>,
    slowest: Duration,
}

/// Successes per second completed in `[from, to)`.
fn rate(samples: &[Sample], from: f64, to: f64) -> f64 {
    let done = samples
        .iter()
        .filter(|s| s.ok)
        .map(|s| s.sent + s.took.as_secs_f64())
        .filter(|t| *t >= from && *t < to)
        .count();
    done as f64 / (to - from)
}

fn report(samples: &[Sample], window: &Window) -> Report {
    let errors = samples.iter().filter(|s| !s.ok && window.holds(s)).count();
    let slowest = samples
        .iter()
        .filter(|s| window.holds(s))
        .map(|s| s.took)
        .max()
        .unwrap_or_default();
    let first_success = samples
        .iter()
        .filter(|s| s.ok && s.sent >= window.end)
        .map(|s| s.sent + s.took.as_secs_f64() - window.end)
        .reduce(f64::min);
    // The rate of the 5 s before the fault; back when a 1 s step after the return reaches 80%
    // of it.
    let before = rate(samples, window.start - 5.0, window.start);
    let full_rate = (0..200).map(|i| f64::from(i) * 0.25).find(|offset| {
        let from = window.end + offset;
        rate(samples, from, from + 1.0) >= 0.8 * before
    });
    Report {
        name: window.name,
        errors,
        first_success,
        full_rate: full_rate.map(|o| o + 1.0),
        slowest,
    }
}

/// One fault of a plan: its name, how long the backend stays down, and how to break and mend
/// it (run on a thread of their own: they block on processes).
struct Fault {
    name: &'static str,
    broken: Broken,
    down: Duration,
    start: Box<dyn FnMut() + Send>,
    end: Box<dyn FnMut() + Send>,
}

impl Fault {
    fn new(
        name: &'static str,
        broken: Broken,
        down: Duration,
        start: impl FnMut() + Send + 'static,
        end: impl FnMut() + Send + 'static,
    ) -> Self {
        Self {
            name,
            broken,
            down,
            start: Box::new(start),
            end: Box::new(end),
        }
    }
}

/// `act` on a backend the plan shares, as a fault's start or end.
fn on<T: Send + 'static>(
    backend: &Arc<Mutex<T>>,
    act: fn(&mut T),
) -> impl FnMut() + Send + 'static {
    let backend = Arc::clone(backend);
    move || act(&mut backend.lock().unwrap())
}

/// The service's settings for the fault runs: the stores and a shared sealing key; everything
/// else (rate limits, failed-login limits, deadlines) is the default.
fn service_env(database_url: String, redis_url: String) -> Vec<(&'static str, String)> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).unwrap();
    vec![
        ("DATABASE_URL", database_url),
        ("REDIS_URL", redis_url),
        ("USER_STORE_KEY", hex::encode(key)),
        (
            "RUST_LOG",
            std::env::var("FAULTS_LOG").unwrap_or_else(|_| "error".to_owned()),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    any(no_test_redis, no_test_database),
    ignore = "needs redis-server and PostgreSQL's programs: set TEST_REDIS_URL and TEST_DATABASE_URL"
)]
async fn two_instances_ride_out_backend_faults() {
    let d = durations();
    let (redis, postgres) =
        tokio::task::spawn_blocking(|| (RedisServer::start(), Postgres::start()))
            .await
            .unwrap();
    let env = service_env(postgres.url(), redis.url());
    let (redis, postgres) = (Arc::new(Mutex::new(redis)), Arc::new(Mutex::new(postgres)));
    let plan = vec![
        Fault::new(
            "Redis killed (SIGKILL), restarted",
            Broken::Redis,
            d.redis_down,
            on(&redis, RedisServer::kill),
            on(&redis, RedisServer::restart),
        ),
        Fault::new(
            "PostgreSQL stopped, started",
            Broken::Postgres,
            d.postgres_down,
            on(&postgres, |p| p.stop()),
            on(&postgres, |p| p.restart()),
        ),
        Fault::new(
            "Redis paused (SIGSTOP/SIGCONT)",
            Broken::Redis,
            d.redis_pause,
            on(&redis, |r| r.pause()),
            on(&redis, |r| r.resume()),
        ),
        Fault::new(
            "PostgreSQL paused (SIGSTOP/SIGCONT)",
            Broken::PostgresPaused,
            d.postgres_pause,
            on(&postgres, |p| p.pause()),
            on(&postgres, |p| p.resume()),
        ),
    ];
    ride_out(env, plan, true).await;
    drop((redis, postgres));
}

/// The Redis faults on a Redis Cluster of three masters: one master killed and restarted (its
/// slots are unserved until it is back: the cluster says `CLUSTERDOWN`), then one paused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    any(no_test_redis, no_test_database),
    ignore = "needs redis-server, redis-cli and PostgreSQL's programs: set TEST_REDIS_URL and TEST_DATABASE_URL"
)]
async fn two_instances_on_a_redis_cluster_ride_out_redis_faults() {
    let d = durations();
    let (cluster, postgres) =
        tokio::task::spawn_blocking(|| (RedisCluster::start(3), Postgres::start()))
            .await
            .unwrap();
    let env = service_env(postgres.url(), cluster.url());
    let cluster = Arc::new(Mutex::new(cluster));
    let plan = vec![
        Fault::new(
            "Redis Cluster master killed (SIGKILL), restarted",
            Broken::Redis,
            d.redis_down,
            on(&cluster, |c| c.kill(1)),
            on(&cluster, |c| c.restart(1)),
        ),
        Fault::new(
            "Redis Cluster master paused (SIGSTOP/SIGCONT)",
            Broken::Redis,
            d.redis_pause,
            on(&cluster, |c| c.pause(1)),
            on(&cluster, |c| c.resume(1)),
        ),
    ];
    ride_out(env, plan, false).await;
    drop((cluster, postgres));
}

/// Two instances under the load of [`CLIENTS`] clients while the faults of `plan` happen one
/// after the other (with an instance killed and restarted after the first when
/// `instance_fault`), then the checks of the module docs.
async fn ride_out(env: Vec<(&'static str, String)>, plan: Vec<Fault>, instance_fault: bool) {
    // One load at a time: two on the machine's two cores would each measure the other.
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _alone = ONE_AT_A_TIME.lock().await;
    let d = durations();
    let (a, b) =
        tokio::task::spawn_blocking(move || (Instance::start(&env), Instance::start(&env)))
            .await
            .unwrap();
    let load = Arc::new(Load {
        started: Instant::now(),
        samples: Mutex::default(),
        registered: Mutex::default(),
        stop: AtomicBool::new(false),
        ports: [a.port, b.port],
    });
    let clients: Vec<_> = (0..CLIENTS)
        .map(|id| tokio::spawn(client(Arc::clone(&load), id)))
        .collect();

    // The faults, one after the other, on a thread of their own (they block on processes).
    let schedule_load = Arc::clone(&load);
    let (windows, a, b) = tokio::task::spawn_blocking(move || {
        let (a, b) = (a, Arc::new(Mutex::new(b)));
        let now = || schedule_load.started.elapsed().as_secs_f64();
        let mut plan = plan;
        if instance_fault {
            plan.insert(
                plan.len().min(2),
                Fault::new(
                    "instance killed (SIGKILL), restarted",
                    Broken::Instance(1),
                    d.instance_down,
                    on(&b, Instance::kill),
                    on(&b, Instance::restart),
                ),
            );
        }
        let mut windows = Vec::new();
        std::thread::sleep(d.warmup.saturating_sub(d.settle));
        for mut fault in plan {
            std::thread::sleep(d.settle);
            let begin = now();
            (fault.start)();
            std::thread::sleep(fault.down);
            (fault.end)();
            windows.push(Window {
                name: fault.name,
                broken: fault.broken,
                start: begin,
                end: now(),
            });
        }
        std::thread::sleep(d.settle);
        (windows, a, b)
    })
    .await
    .unwrap();
    load.stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.await.unwrap();
    }

    let samples = load.samples.lock().unwrap().clone();
    let total = samples.len();
    let failed = samples.iter().filter(|s| !s.ok).count();
    println!(
        "\n{total} requests, {failed} failed, 2 instances, {CLIENTS} clients, {:.0} s\n",
        load.started.elapsed().as_secs_f64()
    );
    println!(
        "| fault | down for | errors in window | time to first success | time to full rate | slowest request |"
    );
    println!("|---|---|---|---|---|---|");
    let reports: Vec<Report> = windows.iter().map(|w| report(&samples, w)).collect();
    for (r, w) in reports.iter().zip(&windows) {
        let secs = |v: Option<f64>| v.map_or("never".to_owned(), |v| format!("{v:.1} s"));
        println!(
            "| {} | {:.1} s | {} | {} | {} | {:.2} s |",
            r.name,
            w.end - w.start,
            r.errors,
            secs(r.first_success),
            secs(r.full_rate),
            r.slowest.as_secs_f64()
        );
    }
    for step in ["register", "token", "login", "me"] {
        let of_step = samples.iter().filter(|s| s.step == step);
        let failed = of_step.clone().filter(|s| !s.ok).count();
        println!("{step}: {} requests, {failed} failed", of_step.count());
    }
    let outside: Vec<&Sample> = samples
        .iter()
        .filter(|s| !s.ok)
        .filter(|s| !windows.iter().any(|w| w.holds(s)))
        .collect();
    // Inside a window: only the errors its row of the table names, within its deadline.
    let unexpected: Vec<String> = samples
        .iter()
        .filter(|s| !s.ok)
        .filter_map(|s| {
            let holding: Vec<&Window> = windows.iter().filter(|w| w.holds(s)).collect();
            let why: Vec<String> = holding
                .iter()
                .map(|w| {
                    w.broken
                        .unexpected(s)
                        .map(|why| format!("{}: {why}", w.name))
                })
                .collect::<Option<_>>()?;
            (!holding.is_empty()).then(|| format!("{} {:?}: {}", s.step, s, why.join("; ")))
        })
        .collect();
    // While PostgreSQL is down, tokens and `me` keep working.
    let sessions_failed: Vec<String> = samples
        .iter()
        .filter(|s| !s.ok && matches!(s.step, "token" | "me"))
        .filter_map(|s| {
            windows
                .iter()
                .find(|w| w.broken.spares_sessions() && s.sent >= w.start && s.sent < w.end)
                .map(|w| format!("{}: {} {s:?}", w.name, s.step))
        })
        .collect();
    println!(
        "errors inside the windows not as the table says: {}; tokens and `me` failed while \
         PostgreSQL was down: {}",
        unexpected.len(),
        sessions_failed.len()
    );
    let slowest = samples.iter().map(|s| s.took).max().unwrap_or_default();
    println!(
        "\nerrors outside the windows: {} (429: {}); slowest request overall {:.2} s",
        outside.len(),
        outside.iter().filter(|s| s.status == Some(429)).count(),
        slowest.as_secs_f64()
    );

    // Every registered account logs in afterwards, on both instances: checkers of
    // `CHECKED_EACH` accounts each, with an address of their own (127.1.0.0/16, apart from the
    // clients'), so that none asks for more tokens or logins than the default 60 a minute.
    const CHECKED_EACH: usize = 25;
    let registered = load.registered.lock().unwrap().clone();
    let checkers = registered
        .chunks(CHECKED_EACH)
        .enumerate()
        .map(|(checker, accounts)| {
            let load = Arc::clone(&load);
            let accounts = accounts.to_vec();
            async move {
                let http = checker_client(checker);
                let mut lost = Vec::new();
                for (account, digest) in accounts {
                    for instance in 0..2 {
                        if let Err(why) = log_in(&http, &load, instance, &account, &digest).await {
                            lost.push(format!("{account} on instance {instance}: {why}"));
                        }
                    }
                }
                lost
            }
        });
    let lost: Vec<String> = futures_util::stream::iter(checkers)
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .flatten()
        .collect();
    println!(
        "{} accounts registered; {} failed to log in afterwards",
        registered.len(),
        lost.len()
    );
    drop((a, b));

    assert!(
        outside.is_empty(),
        "errors outside the fault windows: {:?}",
        &outside[..outside.len().min(20)]
    );
    assert!(
        unexpected.is_empty(),
        "errors the table does not name: {:?}",
        &unexpected[..unexpected.len().min(20)]
    );
    assert!(
        sessions_failed.is_empty(),
        "tokens or `me` failed while PostgreSQL was down: {:?}",
        &sessions_failed[..sessions_failed.len().min(20)]
    );
    assert!(
        slowest <= BUDGET,
        "a request took {slowest:?} (budget {BUDGET:?})"
    );
    for r in &reports {
        assert!(
            r.first_success.is_some(),
            "{}: no success after the fault",
            r.name
        );
        assert!(
            r.full_rate.is_some_and(|t| t <= RECOVERY.as_secs_f64()),
            "{}: the rate was not back within {RECOVERY:?}: {r:?}",
            r.name
        );
    }
    assert!(!registered.is_empty(), "no account was registered");
    assert!(
        lost.is_empty(),
        "accounts that no longer log in: {:?}",
        &lost[..lost.len().min(20)]
    );
}

//! Two user-service processes behind a small load balancer written here, the way one in front
//! of a fleet works: it polls each instance's `/readyz` every 100 ms and takes an instance out
//! of rotation after two answers other than 200 in a row. One instance gets SIGTERM in the
//! middle of the load. With `DRAIN_DELAY=1s` (well beyond two poll periods) its readiness turns
//! 503 while it still serves, the balancer stops sending to it, and no request fails; with
//! `DRAIN_DELAY=0` (the control) it stops accepting while the balancer still sends to it, and
//! requests fail. As the README says.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::backends::{Instance, signal};

/// What the balancer knows of each instance: its base URL and whether it is in rotation.
struct Pool {
    urls: Vec<String>,
    ready: Vec<AtomicBool>,
    next: AtomicUsize,
}

impl Pool {
    /// The next instance in rotation, round robin.
    fn pick(&self) -> Option<usize> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        (0..self.urls.len())
            .map(|k| (start + k) % self.urls.len())
            .find(|i| self.ready[*i].load(Ordering::SeqCst))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_test_redis, ignore = "needs Redis: set TEST_REDIS_URL")]
async fn sigterm_under_load_loses_no_request_behind_a_readiness_aware_balancer() {
    let (failures, seen_a) = sigterm_under_load("1s").await;
    assert!(failures.is_empty(), "failed requests: {failures:?}");
    assert_eq!(
        &seen_a[..2],
        [200, 503],
        "A said 503 (draining) before it stopped answering: {seen_a:?}"
    );
}

/// The control: without a drain delay the balancer keeps sending to the stopped instance
/// until two polls have failed, and those requests fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_test_redis, ignore = "needs Redis: set TEST_REDIS_URL")]
async fn without_a_drain_delay_requests_fail() {
    let (failures, _) = sigterm_under_load("0").await;
    assert!(
        failures.iter().any(|f| f.starts_with("instance 0")),
        "no request failed without a drain delay: {failures:?}"
    );
}

/// Two instances with `DRAIN_DELAY=<drain>` behind the balancer, under load; SIGTERM to the
/// first. The failed requests, and the first instance's readiness as the balancer saw it.
async fn sigterm_under_load(drain: &str) -> (Vec<String>, Vec<u16>) {
    // One fleet at a time: two on the machine's two cores would slow each other's polls.
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _alone = ONE_AT_A_TIME.lock().await;
    let env = [
        ("DATABASE_URL", "memory".to_owned()),
        ("REDIS_URL", common::store_url("TEST_REDIS_URL")),
        ("SESSION_KEY_PREFIX", common::unique("fleet:")),
        ("DRAIN_DELAY", drain.to_owned()),
        ("TOKEN_RATE_LIMIT", "off".to_owned()),
        ("RUST_LOG", "error".to_owned()),
    ];
    let (mut a, b) =
        tokio::task::spawn_blocking(move || (Instance::start(&env), Instance::start(&env)))
            .await
            .unwrap();
    let pool = Arc::new(Pool {
        urls: vec![a.url(""), b.url("")],
        ready: vec![AtomicBool::new(true), AtomicBool::new(true)],
        next: AtomicUsize::new(0),
    });
    let stop = Arc::new(AtomicBool::new(false));
    // What the poller saw of instance A's readiness, in order (status codes, repeats merged).
    let seen_a = Arc::new(Mutex::new(Vec::<u16>::new()));
    let poller = {
        let (pool, stop, seen_a) = (Arc::clone(&pool), Arc::clone(&stop), Arc::clone(&seen_a));
        tokio::spawn(async move {
            let client = reqwest::Client::builder()
                .timeout(Duration::from_secs(1))
                .build()
                .unwrap();
            // Out of rotation after two answers other than 200 in a row (a failure threshold,
            // as Kubernetes and most balancers have: one slow probe on a loaded machine does
            // not take a healthy instance out), back in after one 200.
            let mut misses = vec![0u32; pool.urls.len()];
            while !stop.load(Ordering::SeqCst) {
                for (i, url) in pool.urls.iter().enumerate() {
                    let status = match client.get(format!("{url}/readyz")).send().await {
                        Ok(answer) => answer.status().as_u16(),
                        Err(_) => 0,
                    };
                    misses[i] = if status == 200 { 0 } else { misses[i] + 1 };
                    pool.ready[i].store(misses[i] < 2, Ordering::SeqCst);
                    if i == 0 {
                        let mut seen = seen_a.lock().unwrap();
                        if seen.last() != Some(&status) {
                            seen.push(status);
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let served = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (pool, stop, served, failures) = (
                Arc::clone(&pool),
                Arc::clone(&stop),
                Arc::clone(&served),
                Arc::clone(&failures),
            );
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                while !stop.load(Ordering::SeqCst) {
                    let Some(i) = pool.pick() else {
                        failures
                            .lock()
                            .unwrap()
                            .push("no instance in rotation".into());
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    };
                    let url = format!("{}/users/v1/login", pool.urls[i]);
                    match client.get(&url).send().await {
                        Ok(answer) if answer.status() == 200 => {
                            served[i].fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(answer) => failures
                            .lock()
                            .unwrap()
                            .push(format!("instance {i}: {}", answer.status())),
                        Err(err) => failures
                            .lock()
                            .unwrap()
                            .push(format!("instance {i}: {err}")),
                    }
                }
            })
        })
        .collect();

    tokio::time::sleep(Duration::from_secs(1)).await;
    let a_before = served[0].load(Ordering::Relaxed);
    assert!(a_before > 0, "A served requests before the signal");
    signal(a.pid(), "TERM");
    let exit = tokio::task::spawn_blocking(move || {
        let exit = a.wait_exit(Duration::from_secs(10));
        (a, exit)
    });
    let (a, exit) = exit.await.unwrap();
    // Load goes on against B alone for a while after A is gone.
    let b_at_exit = served[1].load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::SeqCst);
    for client in clients {
        client.await.unwrap();
    }
    poller.await.unwrap();

    let failures = failures.lock().unwrap().clone();
    let seen_a = seen_a.lock().unwrap().clone();
    println!(
        "served: A {} (before SIGTERM {a_before}), B {}; A's readiness: {seen_a:?}; A exited {exit}",
        served[0].load(Ordering::Relaxed),
        served[1].load(Ordering::Relaxed),
    );
    assert!(exit.success(), "A stopped cleanly: {exit}");
    assert!(
        served[1].load(Ordering::Relaxed) > b_at_exit,
        "B took the load"
    );
    drop((a, b));
    (failures, seen_a)
}

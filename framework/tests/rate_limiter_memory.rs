//! The in-memory rate store's heap stays flat however many distinct keys arrive: it stops at
//! its key bound (the sweep of idle keys is tested in the unit tests and `tests/rate_limit.rs`,
//! with short quotas). Counted with dhat's heap profiler in testing mode,
//! in its own test binary so no other test allocates meanwhile.

use std::time::Duration;

use framework::middleware::rate_limiter::{MemoryRateStore, RateQuota, RateStore};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn heap() -> usize {
    dhat::HeapStats::get().curr_bytes
}

#[tokio::test(flavor = "current_thread")]
async fn heap_is_flat_over_distinct_keys() {
    let _profiler = dhat::Profiler::builder().testing().build();
    // Keys stay active for minutes: no sweep frees anything while the test runs.
    let quota = RateQuota::new(1, Duration::from_secs(60)).expect("quota");
    let store = MemoryRateStore::with_max_keys(quota, 100_000);
    let start = heap();
    for i in 0..100_000 {
        store
            .check(format!("203.0.{}.{}", i / 256, i % 256))
            .await
            .expect("check");
    }
    let full = heap() - start;
    // 200 000 more distinct keys while the table is full: nothing more is kept.
    for i in 0..200_000 {
        store
            .check(format!(
                "198.{}.{}.{}",
                i / 65_536,
                (i / 256) % 256,
                i % 256
            ))
            .await
            .expect("check");
    }
    let after_flood = heap() - start;
    eprintln!(
        "100 000 keys: {full} bytes ({} per key); after 200 000 more: {after_flood} bytes",
        full / 100_000
    );
    assert_eq!(store.len(), 100_000);
    assert!(
        after_flood <= full + full / 100,
        "heap grew: {full} -> {after_flood}"
    );
}

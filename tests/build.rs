//! Decides, from the environment `cargo test` runs in, which store-backed tests can run.
//!
//! A test that needs PostgreSQL or Redis carries
//! `#[cfg_attr(no_test_redis, ignore = "needs Redis: set TEST_REDIS_URL")]`, so without the
//! variable it is reported as `ignored` with that reason and counted in the summary line, instead
//! of passing without having run. With the variable set the test runs, and an unreachable server
//! fails it: a configured store is never skipped. Cargo reruns this script when either variable
//! changes. `REQUIRE_STORE_TESTS=1` (set by `.ci/run`) turns a missing variable into a build
//! error, so CI cannot silently lose these tests.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(no_test_database)");
    println!("cargo::rustc-check-cfg=cfg(no_test_redis)");
    println!("cargo::rerun-if-env-changed=REQUIRE_STORE_TESTS");
    let required = std::env::var("REQUIRE_STORE_TESTS").is_ok_and(|v| v == "1");
    for (name, cfg) in [
        ("TEST_DATABASE_URL", "no_test_database"),
        ("TEST_REDIS_URL", "no_test_redis"),
    ] {
        println!("cargo::rerun-if-env-changed={name}");
        let set = std::env::var(name).is_ok_and(|v| !v.is_empty());
        if !set {
            assert!(
                !required,
                "REQUIRE_STORE_TESTS=1 but {name} is not set: the store tests would be skipped"
            );
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}

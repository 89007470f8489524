//! Decides, from the environment `cargo test` runs in, which tests that need an outside
//! program (PostgreSQL, Redis, Chromium's WebDriver) can run.
//!
//! A test that needs PostgreSQL, Redis or a browser carries
//! `#[cfg_attr(no_test_redis, ignore = "needs Redis: set TEST_REDIS_URL")]`, so without the
//! variable it is reported as `ignored` with that reason and counted in the summary line, instead
//! of passing without having run. With the variable set the test runs, and an unreachable server
//! fails it: a configured dependency is never skipped. Cargo reruns this script when a variable
//! changes. `REQUIRE_ALL_TESTS=1` (set by `.ci/run`) turns a missing variable into a build
//! error, so CI cannot silently lose these tests. The variables: `TEST_DATABASE_URL`,
//! `TEST_REDIS_URL` and `TEST_CHROMEDRIVER` (the path of `chromedriver`, with Chromium
//! installed beside it).
//!
//! The HPACK test's client is Python's `h2` library: whether `python3 -c 'import h2'` works is
//! looked at here too (`no_test_python_h2`), and decided again when `PATH` changes (after
//! `pip install h2`, `touch tests/build.rs` has it looked at again).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(no_test_database)");
    println!("cargo::rustc-check-cfg=cfg(no_test_redis)");
    println!("cargo::rustc-check-cfg=cfg(no_test_browser)");
    println!("cargo::rustc-check-cfg=cfg(no_test_python_h2)");
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-env-changed=REQUIRE_ALL_TESTS");
    let required = std::env::var("REQUIRE_ALL_TESTS").is_ok_and(|v| v == "1");
    for (name, cfg) in [
        ("TEST_DATABASE_URL", "no_test_database"),
        ("TEST_REDIS_URL", "no_test_redis"),
        ("TEST_CHROMEDRIVER", "no_test_browser"),
    ] {
        println!("cargo::rerun-if-env-changed={name}");
        let set = std::env::var(name).is_ok_and(|v| !v.is_empty());
        if !set {
            assert!(
                !required,
                "REQUIRE_ALL_TESTS=1 but {name} is not set: its tests would be skipped"
            );
            println!("cargo::rustc-cfg={cfg}");
        }
    }
    let python_h2 = std::process::Command::new("python3")
        .args(["-c", "import h2, hpack"])
        .output()
        .is_ok_and(|out| out.status.success());
    if !python_h2 {
        assert!(
            !required,
            "REQUIRE_ALL_TESTS=1 but python3 cannot import h2 (pip install h2): the HPACK test \
             would be skipped"
        );
        println!("cargo::rustc-cfg=no_test_python_h2");
    }
}

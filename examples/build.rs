//! Whether the chat example's two-instance test can run: it needs Redis (`TEST_REDIS_URL`).
//! Without it the test carries `#[cfg_attr(no_test_redis, ignore = ..)]` and is reported as
//! `ignored`, never as a pass; `REQUIRE_ALL_TESTS=1` (set by `.ci/run`) turns a missing
//! variable into a build error, as in `tests/build.rs`.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(no_test_redis)");
    println!("cargo::rerun-if-env-changed=REQUIRE_ALL_TESTS");
    println!("cargo::rerun-if-env-changed=TEST_REDIS_URL");
    if std::env::var("TEST_REDIS_URL").is_ok_and(|v| !v.is_empty()) {
        return;
    }
    assert!(
        !std::env::var("REQUIRE_ALL_TESTS").is_ok_and(|v| v == "1"),
        "REQUIRE_ALL_TESTS=1 but TEST_REDIS_URL is not set: the chat test would be skipped"
    );
    println!("cargo::rustc-cfg=no_test_redis");
}

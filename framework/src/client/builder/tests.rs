use std::time::Duration;

use super::ClientBuilder;
use crate::client::DEFAULT_MAX_ANSWER_BYTES;

/// The defaults the builder's documentation gives.
#[test]
fn the_defaults_are_the_documented_ones() {
    let builder = ClientBuilder::default();
    assert_eq!(builder.timeout, Some(Duration::from_secs(30)));
    assert_eq!(builder.connect_timeout, Duration::from_secs(10));
    assert_eq!(builder.pool_idle_timeout, Duration::from_secs(90));
    assert!(builder.cookie_store);
    assert_eq!(builder.max_answer_bytes, DEFAULT_MAX_ANSWER_BYTES);
    assert_eq!(DEFAULT_MAX_ANSWER_BYTES, 16 * 1024 * 1024);
}

//! Cache-aside reads in a handler ([`read_through`]), on the same stores as the HTTP cache.

use std::future::Future;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{CacheStore, STORE_ERROR_CATEGORY};
use crate::error::Result;

/// Where a [`read_through`] found its value: in the store, or by loading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheRead {
    /// The store had it.
    Hit,
    /// It was loaded (and stored).
    Miss,
}

impl CacheRead {
    /// `HIT` or `MISS`, as an `X-Cache` header says it.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheRead::Hit => "HIT",
            CacheRead::Miss => "MISS",
        }
    }
}

/// Cache-aside: the value under `key` in `store`; else what `load` finds, stored as JSON for
/// `ttl` from now (an absolute expiry: reads do not extend it). `load`'s `None` (no such
/// record) is not stored, so a record created later is found at once; its error is the
/// caller's. A store that fails is bypassed, as the cache middleware bypasses it: the value is
/// loaded, the failure counted under `framework-cache` and logged, never the answer. A stored
/// value that no longer reads as `T` (a type that changed) is loaded again. Invalidate with
/// [`CacheStore::delete`] when the record changes.
///
/// ```
/// use std::time::Duration;
/// use framework::middleware::cache::{CacheRead, MemoryCacheStore, read_through};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryCacheStore::new();
/// let load = || async { Ok(Some(42_u32)) };
/// let first = read_through(&store, "answer", Duration::from_secs(1), load).await.unwrap();
/// assert_eq!(first, Some((42, CacheRead::Miss)));
/// let again = read_through(&store, "answer", Duration::from_secs(1), load).await.unwrap();
/// assert_eq!(again, Some((42, CacheRead::Hit)));
/// # });
/// ```
pub async fn read_through<T, F, Fut>(
    store: &(dyn CacheStore + '_),
    key: &str,
    ttl: Duration,
    load: F,
) -> Result<Option<(T, CacheRead)>>
where
    T: Serialize + DeserializeOwned,
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    match store.get(key).await {
        Ok(Some(bytes)) => {
            if let Ok(value) = serde_json::from_slice(&bytes) {
                return Ok(Some((value, CacheRead::Hit)));
            }
        }
        Ok(None) => {}
        Err(err) => failed("read", &err),
    }
    let Some(value) = load().await? else {
        return Ok(None);
    };
    match serde_json::to_vec(&value) {
        Ok(bytes) => {
            if let Err(err) = store.set(key, bytes.into(), ttl).await {
                failed("write", &err);
            }
        }
        Err(err) => tracing::warn!(error = %err, key, "a cache-aside value did not serialise"),
    }
    Ok(Some((value, CacheRead::Miss)))
}

fn failed(what: &str, err: &crate::Error) {
    crate::telemetry::counters().store_error(STORE_ERROR_CATEGORY);
    tracing::warn!(error = %err, "a cache-aside {what} failed; the store is bypassed");
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::middleware::cache::MemoryCacheStore;

    #[tokio::test]
    async fn a_value_is_loaded_once_per_ttl_and_none_is_not_stored() {
        let store = MemoryCacheStore::new();
        let loads = AtomicUsize::new(0);
        let load = || async {
            loads.fetch_add(1, Ordering::Relaxed);
            Ok(Some("v".to_owned()))
        };
        let ttl = Duration::from_millis(50);
        assert_eq!(
            read_through(&store, "k", ttl, load).await.unwrap(),
            Some(("v".to_owned(), CacheRead::Miss))
        );
        assert_eq!(
            read_through(&store, "k", ttl, load).await.unwrap(),
            Some(("v".to_owned(), CacheRead::Hit))
        );
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert_eq!(
            read_through(&store, "k", ttl, load)
                .await
                .unwrap()
                .map(|(_, l)| l),
            Some(CacheRead::Miss),
            "past its TTL the value is loaded again"
        );
        assert_eq!(loads.load(Ordering::Relaxed), 2);
        let none = || async { Ok(None::<String>) };
        assert_eq!(read_through(&store, "gone", ttl, none).await.unwrap(), None);
        assert!(store.get("gone").await.unwrap().is_none());
        store.delete("k").await.unwrap();
        assert_eq!(
            read_through(&store, "k", ttl, load)
                .await
                .unwrap()
                .map(|(_, l)| l),
            Some(CacheRead::Miss),
            "a deleted value is loaded again"
        );
    }
}

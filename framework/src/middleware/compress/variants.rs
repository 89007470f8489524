//! Compressed forms of static bodies, made once on tokio's blocking pool and kept.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};

use super::Compressor;

/// Compressions that may run on the blocking pool at once. A static body asked for while
/// that many run is compressed as a dynamic one this time: the first requests for a site's
/// assets cannot occupy every core.
const MAX_IN_FLIGHT: usize = 2;

/// The kept variants' bytes, keyed by body and encoding.
#[derive(Clone)]
struct Weight;

/// Per entry beyond its bytes: the key and the cache's own bookkeeping, roughly.
const ENTRY_OVERHEAD: u64 = 64;

/// A static body's digest (its first 128 bits) and an encoding.
type Key = (u128, &'static str);

impl quick_cache::Weighter<Key, Option<Bytes>> for Weight {
    fn weight(&self, _key: &Key, value: &Option<Bytes>) -> u64 {
        ENTRY_OVERHEAD + value.as_ref().map_or(0, |b| b.len() as u64)
    }
}

/// A compression under way: its result, for every request that waits for it.
pub(super) type Making = Shared<BoxFuture<'static, Option<Bytes>>>;

/// Where a static body's variant stands.
pub(super) enum Variant {
    /// Kept: send it.
    Kept(Bytes),
    /// Being made (by this request or an earlier one): its bytes once ready, `None` if the
    /// compression failed.
    Making(Making),
    /// Its compression failed: the body goes out as it is.
    Failed,
    /// Too many compressions run: compress this answer as a dynamic one.
    Busy,
}

/// The compressed variants of static bodies: bounded by their total size (the least recently
/// used go first; a variant larger than the bound is not kept), each made once, on the
/// blocking pool, at most [`MAX_IN_FLIGHT`] at once. A failed compression is kept as `None`,
/// so it is not tried again for every request.
pub(super) struct StaticVariants {
    kept: quick_cache::sync::Cache<Key, Option<Bytes>, Weight>,
    in_flight: Mutex<Vec<(Key, Making)>>,
    /// Compressions started, for tests and the benchmark's count.
    started: AtomicU64,
}

/// Removes a compression from the in-flight list when it ends, however it ends (a compressor
/// that panics included), after its result is kept.
struct InFlight {
    variants: Arc<StaticVariants>,
    key: Key,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut in_flight = self
            .variants
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        in_flight.retain(|(key, _)| *key != self.key);
    }
}

impl StaticVariants {
    pub(super) fn new(capacity_bytes: usize) -> Self {
        Self {
            kept: quick_cache::sync::Cache::with_weighter(
                64,
                (capacity_bytes as u64).max(1),
                Weight,
            ),
            in_flight: Mutex::new(Vec::with_capacity(MAX_IN_FLIGHT)),
            started: AtomicU64::new(0),
        }
    }

    fn kept(&self, key: &Key) -> Option<Variant> {
        self.kept
            .get(key)
            .map(|kept| kept.map_or(Variant::Failed, Variant::Kept))
    }

    /// The variant of `body` (whose digest is `digest`) in `compressor`'s encoding; its
    /// compression starts on the
    /// blocking pool when it is neither kept nor being made (and fewer than
    /// [`MAX_IN_FLIGHT`] run). The compression goes on, and its result is kept, even when
    /// every request that waits for it has gone.
    pub(super) fn get_or_start(
        self: &Arc<Self>,
        digest: u128,
        compressor: &Arc<dyn Compressor>,
        body: &Bytes,
    ) -> Variant {
        let key = (digest, compressor.encoding());
        if let Some(variant) = self.kept(&key) {
            return variant;
        }
        let mut in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((_, making)) = in_flight.iter().find(|(k, _)| *k == key) {
            return Variant::Making(making.clone());
        }
        // Kept between the first look and the lock: the compression has just ended.
        if let Some(variant) = self.kept(&key) {
            return variant;
        }
        if in_flight.len() >= MAX_IN_FLIGHT {
            return Variant::Busy;
        }
        self.started.fetch_add(1, Ordering::Relaxed);
        let guard = InFlight {
            variants: Arc::clone(self),
            key,
        };
        let compressor = Arc::clone(compressor);
        let body = body.clone();
        let task = tokio::task::spawn_blocking(move || {
            let variant = match compressor.compress_static(&body) {
                Ok(compressed) => Some(Bytes::from(compressed)),
                Err(err) => {
                    tracing::warn!(encoding = key.1, %err, "compressing a static body failed; it goes out as it is");
                    None
                }
            };
            guard.variants.kept.insert(key, variant.clone());
            drop(guard);
            variant
        });
        let making: Making = async move { task.await.ok().flatten() }.boxed().shared();
        in_flight.push((key, making.clone()));
        Variant::Making(making)
    }

    /// How many compressions have been started.
    pub(super) fn started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts its calls; leaves the bytes as they are.
    struct Counted(std::sync::atomic::AtomicUsize);

    impl Compressor for Counted {
        fn encoding(&self) -> &'static str {
            "gzip"
        }
        fn compress(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(data.to_vec())
        }
    }

    /// The variant, waiting for it when it is being made.
    async fn variant(
        variants: &Arc<StaticVariants>,
        mark: u128,
        c: &Arc<dyn Compressor>,
        body: &Bytes,
    ) -> Option<Bytes> {
        match variants.get_or_start(mark, c, body) {
            Variant::Kept(bytes) => Some(bytes),
            Variant::Making(making) => making.await,
            Variant::Failed | Variant::Busy => None,
        }
    }

    #[tokio::test]
    async fn a_body_is_compressed_once_and_the_bound_holds() {
        let counted = Arc::new(Counted(std::sync::atomic::AtomicUsize::new(0)));
        let compressor: Arc<dyn Compressor> = counted.clone();
        let variants = Arc::new(StaticVariants::new(10_000));
        let body = Bytes::from(vec![b'a'; 4000]);
        let mark = 1;
        // Three asking at once share one compression.
        let (a, b, c) = tokio::join!(
            variant(&variants, mark, &compressor, &body),
            variant(&variants, mark, &compressor, &body),
            variant(&variants, mark, &compressor, &body),
        );
        assert_eq!(
            (a.as_ref(), b.as_ref(), c.as_ref()),
            (Some(&body), Some(&body), Some(&body))
        );
        for _ in 0..100 {
            assert!(matches!(
                variants.get_or_start(mark, &compressor, &body),
                Variant::Kept(_)
            ));
        }
        assert_eq!(counted.0.load(Ordering::SeqCst), 1);
        assert_eq!(variants.started(), 1);
        // Three more bodies of 4 000 bytes cannot all stay under 10 000 bytes.
        for i in 2..5u8 {
            variant(&variants, u128::from(i), &compressor, &body).await;
        }
        assert!(
            variants.kept.weight() <= 10_000,
            "{}",
            variants.kept.weight()
        );
        assert!(variants.kept.len() < 4);
        // A variant larger than the bound is made, sent, and not kept.
        let huge = Bytes::from(vec![b'b'; 20_000]);
        let mark = 9;
        assert_eq!(
            variant(&variants, mark, &compressor, &huge).await,
            Some(huge.clone())
        );
        assert!(variants.kept.get(&(mark, "gzip")).is_none());
    }

    /// A compression goes on when its requests are gone, and at most two run at once.
    #[tokio::test]
    async fn compressions_outlive_their_requests_and_are_few_at_once() {
        struct Slow;
        impl Compressor for Slow {
            fn encoding(&self) -> &'static str {
                "gzip"
            }
            fn compress(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
                std::thread::sleep(std::time::Duration::from_millis(100));
                Ok(data.to_vec())
            }
        }
        let slow: Arc<dyn Compressor> = Arc::new(Slow);
        let variants = Arc::new(StaticVariants::new(1 << 20));
        let body = Bytes::from_static(b"body");
        let marks: Vec<u128> = (0..3).collect();
        // Asked for, and the waiting dropped at once.
        assert!(matches!(
            variants.get_or_start(marks[0], &slow, &body),
            Variant::Making(_)
        ));
        assert!(matches!(
            variants.get_or_start(marks[1], &slow, &body),
            Variant::Making(_)
        ));
        assert!(matches!(
            variants.get_or_start(marks[2], &slow, &body),
            Variant::Busy
        ));
        assert!(matches!(
            variants.get_or_start(marks[0], &slow, &body),
            Variant::Making(_)
        ));
        for _ in 0..200 {
            if variants.in_flight.lock().unwrap().is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert!(matches!(
            variants.get_or_start(marks[0], &slow, &body),
            Variant::Kept(_)
        ));
        assert!(matches!(
            variants.get_or_start(marks[1], &slow, &body),
            Variant::Kept(_)
        ));
        assert_eq!(variants.started(), 2);
    }
}

//! An HTTP cache for GET and HEAD answers, in memory or in Redis, with request coalescing.
//!
//! Each key's entry moves through the states of the seed's section 3.2:
//! - **fetch** (no entry): the handler runs. A cacheable answer is stored (the key is then a
//!   **hit**); any other answer stores a **hit-for-pass** marker for `hit_for_pass_ttl` (5
//!   minutes by default), so the next requests go straight to the handler without waiting on
//!   each other. The answer carries `X-Cache: fetch`.
//! - **hit**: the stored answer is sent without running the handler, with `X-Cache: hit` and
//!   `Age` (seconds since it was stored). The entry expires after its TTL and the key is a
//!   fetch again.
//! - **hit-for-pass**: the handler runs, `X-Cache: hit-for-pass`, nothing is stored; the marker
//!   expires after its TTL.
//!
//! **Cacheable**: status 200 with its bytes in memory (not a stream); no `Set-Cookie`; a
//! `Cache-Control` without `no-cache`, `no-store` or `private` that gives `s-maxage` or
//! `max-age` > 0 (the TTL: `s-maxage` first, as this is a shared cache); a `Vary` naming at most
//! `Accept-Encoding` (any other `Vary`, `*` included, is never stored: a cache keyed without
//! that header would serve one client's variant to another); and when the request carried
//! `Authorization`, a `Cache-Control` with `public` or `s-maxage` (RFC 9111 section 3.5).
//!
//! **Key**: `<METHOD> <host> <request-target>` by default, so two virtual hosts never share an
//! entry; configurable ([`CacheConfig::key`]). A request with `Cache-Control: no-cache` or
//! `no-store` is not answered from the cache (it fetches, and may refresh the entry).
//!
//! **Stored**: status, headers minus `Content-Length`, `Content-Encoding`, `Date`,
//! `Connection`, `X-Cache`, `Age`, `X-Request-Id`, and the body. A body of at least 1 024 bytes
//! with a compressible type is stored compressed once, at a high level since every hit
//! amortises it (gzip 9 by default, brotli configurable): a client that accepts that encoding
//! gets the stored bytes (`Content-Encoding`, `Vary: Accept-Encoding`, the `ETag` weakened), any
//! other client gets them decompressed.
//!
//! **Coalescing**: while one request fetches a key, other requests for the same key in this
//! instance wait for it and then read the entry it stored, so a burst of misses runs the handler
//! once. When the fetch ends (stored, not cacheable, failed, panicked), its guard releases the
//! waiters: a waiter that then finds no entry runs the handler itself, so nobody hangs and a
//! failing handler is not retried by one waiter after another. When the fetch is *abandoned*
//! (its client went away before the handler finished, so the request was dropped), the lead
//! passes to one waiter, which fetches and stores for the others: a burst whose first client
//! leaves still runs the handler twice at most, not once per waiter. The in-flight table holds
//! one entry per key being fetched, so it is bounded by the requests in flight.
//!
//! **Store errors** never fail a request: the error is logged and the cache is bypassed.
//!
//! **In a handler**: the same stores serve cache-aside reads of records ([`read_through`]: the
//! stored value, else the loaded one stored for a TTL, told apart by [`CacheRead`]), invalidated
//! with [`CacheStore::delete`] when a record changes. The memory store's bounds hold for
//! them too.
//!
//! Where: outside etag and the error handler (so the stored answer is final, with its tag),
//! inside fresh and compress (so a hit can still be a 304, and compress leaves an encoded hit
//! alone): recover, logger, compress, fresh, **cache**, etag, error handler, responder.
//!
//! ```
//! use std::sync::Arc;
//! use framework::middleware::cache::{Cache, CacheConfig, MemoryCacheStore};
//!
//! let cache = Cache::new(Arc::new(MemoryCacheStore::new()), CacheConfig::default());
//! let app = framework::App::new().use_middleware(cache);
//! # let _ = app;
//! ```

mod aside;
mod entry;
mod memory;
mod policy;
#[cfg(feature = "cache-redis")]
mod redis;

use crate::telemetry::{CacheOutcome, counters};
use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use bytes::Bytes;
use http::header::{
    AGE, CONNECTION, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, DATE, HeaderName,
};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use tokio::sync::watch;

use crate::context::Context;
use crate::error::Result;
use crate::handler::{BoxFuture, Middleware, Next};
use crate::header::X_REQUEST_ID;
use crate::middleware::compress::is_compressible;
use crate::negotiation::encoding_quality;
use entry::{Entry, Stored};

pub use aside::{CacheRead, read_through};
pub use memory::{DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES, MemoryCacheStore};
use policy::{
    add_vary_accept_encoding, cacheable, decompress, default_key, request_bypasses, set_x_cache,
    weaken,
};
#[cfg(feature = "cache-redis")]
pub use redis::RedisCacheStore;

/// `X-Cache`: `fetch`, `hit` or `hit-for-pass`.
pub const X_CACHE: HeaderName = HeaderName::from_static("x-cache");

/// The category its store failures are counted under ([`crate::telemetry`]); a failing store
/// is bypassed, never an error answer.
const STORE_ERROR_CATEGORY: &str = "framework-cache";

/// Where entries live.
#[async_trait]
pub trait CacheStore: Send + Sync {
    /// The value under `key`, if any and not expired.
    async fn get(&self, key: &str) -> Result<Option<Bytes>>;
    /// Stores `value` under `key` for `ttl`.
    async fn set(&self, key: &str, value: Bytes, ttl: Duration) -> Result;
    /// Removes `key`.
    async fn delete(&self, key: &str) -> Result;
}

/// How cacheable bodies are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredCompression {
    /// As they are.
    None,
    /// gzip at this level (0-9).
    Gzip(u32),
    /// brotli at this quality (0-11).
    #[cfg(feature = "compress-br")]
    Brotli(u32),
}

/// Builds a request's cache key.
pub type CacheKey = Arc<dyn Fn(&Context) -> String + Send + Sync>;

/// Cache settings.
#[derive(Clone)]
#[non_exhaustive]
pub struct CacheConfig {
    /// How long a not-cacheable key goes straight to the handler. Default 5 minutes.
    pub hit_for_pass_ttl: Duration,
    /// Stored encoding of compressible bodies. Default gzip 9.
    pub compression: StoredCompression,
    /// Smallest body stored compressed. Default 1 024 bytes.
    pub min_compress_length: usize,
    /// The key; default `<METHOD> <host> <request-target>`.
    pub key: Option<CacheKey>,
}

crate::config::setters!(CacheConfig {
    hit_for_pass_ttl: Duration,
    compression: StoredCompression,
    min_compress_length: usize,
    key: Option<CacheKey>,
});

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            hit_for_pass_ttl: Duration::from_secs(300),
            compression: StoredCompression::Gzip(9),
            min_compress_length: 1024,
            key: None,
        }
    }
}

/// Keys being fetched, each with the receiver its waiters clone: `true` once the fetch ended.
type Flights = Arc<Mutex<HashMap<String, watch::Receiver<bool>>>>;

/// The cache middleware.
pub struct Cache {
    store: Arc<dyn CacheStore>,
    config: CacheConfig,
    flights: Flights,
}

/// Releases a fetch's waiters when dropped (the sender goes with it): as *ended* after
/// [`Flight::end`] or a panic, as *abandoned* otherwise (the request was dropped mid-fetch).
struct Flight {
    key: String,
    flights: Flights,
    done: watch::Sender<bool>,
}

impl Flight {
    /// The fetch ended (whatever its outcome): waiters read the entry or run the handler.
    fn end(self) {
        self.done.send_replace(true);
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        // A panicking handler is not handed to a waiter to panic again.
        if std::thread::panicking() {
            self.done.send_replace(true);
        }
        self.flights
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.key);
    }
}

enum Lookup {
    Hit(Entry),
    Pass,
    Miss,
    Failed,
}

impl Cache {
    /// A cache on `store`.
    pub fn new(store: Arc<dyn CacheStore>, config: CacheConfig) -> Self {
        Self {
            store,
            config,
            flights: Arc::default(),
        }
    }

    async fn lookup(&self, key: &str) -> Lookup {
        match self.store.get(key).await {
            Ok(None) => Lookup::Miss,
            Ok(Some(raw)) => match Entry::decode(raw) {
                Some(Entry::Pass) => Lookup::Pass,
                Some(entry) => Lookup::Hit(entry),
                None => {
                    tracing::warn!(key, "cache entry does not decode; treated as a miss");
                    Lookup::Miss
                }
            },
            Err(err) => {
                counters().store_error(STORE_ERROR_CATEGORY);
                tracing::warn!(key, error = %err.into_http().message(), "cache store failed; bypassed");
                Lookup::Failed
            }
        }
    }

    /// Sends a stored answer; false when its body cannot be decoded (then the caller fetches).
    fn serve(ctx: &mut Context, entry: Entry) -> bool {
        let Entry::Response {
            stored_at,
            status,
            encoding,
            mut headers,
            body,
        } = entry
        else {
            return false;
        };
        let body = match encoding.token() {
            Some(token) if encoding_quality(ctx.request_headers(), token) > 0.0 => {
                headers.insert(CONTENT_ENCODING, HeaderValue::from_static(token));
                weaken(&mut headers);
                body
            }
            _ => match decompress(encoding, &body) {
                Ok(plain) => Bytes::from(plain),
                Err(err) => {
                    tracing::warn!(%err, "a stored cache body does not decode; fetching");
                    return false;
                }
            },
        };
        if encoding != Stored::Identity {
            add_vary_accept_encoding(&mut headers);
        }
        let age = SystemTime::now()
            .duration_since(stored_at)
            .map_or(0, |d| d.as_secs());
        headers.insert(AGE, HeaderValue::from(age));
        headers.insert(X_CACHE, HeaderValue::from_static("hit"));
        ctx.set_status(status);
        ctx.response_headers_mut().extend(headers);
        ctx.body_mut().set_bytes(body);
        true
    }

    /// Stores the answer just fetched (or a hit-for-pass marker).
    async fn store(&self, ctx: &mut Context, key: &str) {
        let now = SystemTime::now();
        let (entry, ttl) = match cacheable(ctx) {
            Some(ttl) => match self.entry(ctx, now) {
                Some(entry) => (entry, ttl),
                None => (Entry::Pass, self.config.hit_for_pass_ttl),
            },
            None => (Entry::Pass, self.config.hit_for_pass_ttl),
        };
        if let Err(err) = self.store.set(key, entry.encode(now), ttl).await {
            counters().store_error(STORE_ERROR_CATEGORY);
            tracing::warn!(key, error = %err.into_http().message(), "cache store failed; not stored");
        }
    }

    /// The entry for a cacheable answer; `None` when its encoding is one we do not know.
    fn entry(&self, ctx: &Context, now: SystemTime) -> Option<Entry> {
        let body = ctx.body().bytes().cloned().unwrap_or_default();
        let mut headers = ctx.response_headers().clone();
        let existing = headers.remove(CONTENT_ENCODING);
        for name in [CONTENT_LENGTH, DATE, CONNECTION, X_CACHE, AGE, X_REQUEST_ID] {
            headers.remove(name);
        }
        let (encoding, body) = match existing.as_ref().map(HeaderValue::as_bytes) {
            Some(b"gzip") => (Stored::Gzip, body),
            Some(b"br") => (Stored::Brotli, body),
            Some(b"identity") | None => self.compress(&headers, body),
            Some(_) => return None,
        };
        Some(Entry::Response {
            stored_at: now,
            status: ctx.status().unwrap_or(StatusCode::OK),
            encoding,
            headers,
            body,
        })
    }

    fn compress(&self, headers: &HeaderMap, body: Bytes) -> (Stored, Bytes) {
        let compressible = body.len() >= self.config.min_compress_length
            && headers
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(is_compressible);
        if !compressible {
            return (Stored::Identity, body);
        }
        let compressed = match self.config.compression {
            StoredCompression::None => return (Stored::Identity, body),
            StoredCompression::Gzip(level) => {
                let mut encoder = flate2::write::GzEncoder::new(
                    Vec::with_capacity(body.len() / 3),
                    flate2::Compression::new(level.min(9)),
                );
                encoder
                    .write_all(&body)
                    .and_then(|()| encoder.finish())
                    .map(|c| (Stored::Gzip, c))
            }
            #[cfg(feature = "compress-br")]
            StoredCompression::Brotli(quality) => {
                let mut out = Vec::with_capacity(body.len() / 3);
                let params = brotli::enc::BrotliEncoderParams {
                    quality: i32::try_from(quality.min(11)).unwrap_or(11),
                    ..Default::default()
                };
                brotli::BrotliCompress(&mut &body[..], &mut out, &params)
                    .map(|_| (Stored::Brotli, out))
            }
        };
        match compressed {
            Ok((encoding, bytes)) => (encoding, Bytes::from(bytes)),
            Err(err) => {
                tracing::warn!(%err, "compressing a cache entry failed; stored as is");
                (Stored::Identity, body)
            }
        }
    }

    /// Leads the fetch of `key`, or returns the receiver to wait on the fetch in flight.
    fn lead(&self, key: &str) -> std::result::Result<Flight, watch::Receiver<bool>> {
        let mut flights = self.flights.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(waiting) = flights.get(key) {
            return Err(waiting.clone());
        }
        let (done, receiver) = watch::channel(false);
        flights.insert(key.to_owned(), receiver);
        Ok(Flight {
            key: key.to_owned(),
            flights: Arc::clone(&self.flights),
            done,
        })
    }

    async fn handle_cached(&self, ctx: &mut Context, next: Next<'_>) -> Result {
        let key = match &self.config.key {
            Some(key) => key(ctx),
            None => default_key(ctx),
        };
        if !request_bypasses(ctx) {
            match self.lookup(&key).await {
                Lookup::Hit(entry) => {
                    if Self::serve(ctx, entry) {
                        counters().cache(CacheOutcome::Hit);
                        return Ok(());
                    }
                }
                Lookup::Pass => {
                    counters().cache(CacheOutcome::HitForPass);
                    let result = next.run(ctx).await;
                    set_x_cache(ctx, "hit-for-pass");
                    return result;
                }
                Lookup::Failed => {
                    counters().cache(CacheOutcome::Miss);
                    return next.run(ctx).await;
                }
                Lookup::Miss => {}
            }
        }
        let flight = loop {
            match self.lead(&key) {
                Ok(flight) => break flight,
                Err(mut waiting) => {
                    // Wakes when the fetch ended (`true`) or was abandoned (the sender dropped
                    // without it): then this waiter tries to take the lead.
                    let _ = waiting.changed().await;
                    if *waiting.borrow() {
                        return self.after_waiting(ctx, next, &key).await;
                    }
                }
            }
        };
        counters().cache(CacheOutcome::Miss);
        let result = next.run(ctx).await;
        if result.is_ok() {
            self.store(ctx, &key).await;
            set_x_cache(ctx, "fetch");
        }
        flight.end();
        result
    }

    /// A waiter's turn: the entry the fetch stored, or the handler when there is none.
    async fn after_waiting(&self, ctx: &mut Context, next: Next<'_>, key: &str) -> Result {
        match self.lookup(key).await {
            Lookup::Hit(entry) => {
                if Self::serve(ctx, entry) {
                    counters().cache(CacheOutcome::Hit);
                    return Ok(());
                }
                counters().cache(CacheOutcome::Miss);
                next.run(ctx).await
            }
            Lookup::Pass => {
                counters().cache(CacheOutcome::HitForPass);
                let result = next.run(ctx).await;
                set_x_cache(ctx, "hit-for-pass");
                result
            }
            Lookup::Miss | Lookup::Failed => {
                counters().cache(CacheOutcome::Miss);
                let result = next.run(ctx).await;
                set_x_cache(ctx, "fetch");
                result
            }
        }
    }
}

impl Middleware for Cache {
    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        Box::pin(async move {
            let method = ctx.method();
            if (*method != Method::GET && *method != Method::HEAD) || ctx.is_committed() {
                return next.run(ctx).await;
            }
            self.handle_cached(ctx, next).await
        })
    }
}

//! Gives buffered 2xx answers a strong `ETag` computed from their bytes, so [`fresh`] (and any
//! cache or client) can revalidate them.
//!
//! The tag is `"<length in hex>-<digest in base64url>"` with a 128-bit xxh3 digest
//! (`xxhash-rust`). xxh3 is not cryptographic and does not need to be: an entity tag only has
//! to change when the bytes change, and nobody gains by forging a collision with their own
//! answer. It runs at memory speed (tens of GB/s with SIMD), where SHA-256 costs about 20 times
//! more per byte; 128 bits make an accidental collision between two versions of one resource
//! negligible, and the length in front separates the common case for free.
//!
//! Left alone: streams (their bytes are not in memory; a stream with its own tag, like a static
//! file's, keeps it), empty bodies, non-2xx answers, answers that already have an `ETag`, and
//! answers marked `Cache-Control: no-store` (as Django's `ConditionalGetMiddleware` does): no
//! cache and no browser keeps such an answer, so nobody revalidates it and its tag would be
//! bytes and a digest spent for nothing (per-session answers such as login tokens are the
//! usual case).
//! The tag comes from the response only: an `ETag` *request* header means nothing here, so a
//! client cannot make the server claim a version it did not send (salvo's issue 1555).
//!
//! Put it inside [`fresh`] and [`compress`](super::compress) (reference order: compress, fresh,
//! etag): compress then weakens the tag of a compressed answer to `W/"…"`, and fresh compares
//! weakly, so a revalidation still matches.
//!
//! ```
//! use framework::middleware::{etag::ETag, fresh::Fresh};
//!
//! let app = framework::App::new()
//!     .use_middleware(Fresh)
//!     .use_middleware(ETag);
//! # let _ = app;
//! ```
//!
//! [`fresh`]: super::fresh

use http::HeaderValue;
use http::header::{CACHE_CONTROL, ETAG};

use crate::context::Context;
use crate::error::Result;
use crate::handler::{Before, Middleware};

/// The etag middleware.
/// It has no settings: mount it as `ETag`, and limit it to some requests with
/// [`App::use_when`](crate::App::use_when).
#[derive(Clone, Copy, Debug, Default)]
pub struct ETag;

/// The strong entity tag of `body`: `"<length hex>-<xxh3-128 base64url>"`, the framework's
/// one form of a tag ([`conditional`](crate::conditional)'s, which static files use with a
/// SHA-256).
pub fn strong_etag(body: &[u8]) -> HeaderValue {
    let digest = xxhash_rust::xxh3::xxh3_128(body).to_be_bytes();
    crate::conditional::entity_tag(body.len() as u64, &digest)
}

fn apply(ctx: &mut Context) {
    if ctx.body().is_stream() || !ctx.status().unwrap_or(http::StatusCode::OK).is_success() {
        return;
    }
    let Some(body) = ctx.body().bytes().filter(|b| !b.is_empty()) else {
        return;
    };
    // One scan of the answer's headers for both reasons to leave it alone.
    let tagged_or_no_store = ctx.response_headers().iter().any(|(key, value)| {
        *key == ETAG
            || (*key == CACHE_CONTROL
                && crate::header::cache_control::names_directive(value, "no-store"))
    });
    if tagged_or_no_store {
        return;
    }
    let tag = strong_etag(body);
    ctx.set_response_header(ETAG, tag);
}

impl Middleware for ETag {
    fn before(&self, _ctx: &mut Context) -> Before {
        Before::Continue
    }

    fn after(&self, ctx: &mut Context, result: Result) -> Result {
        result?;
        if !ctx.is_committed() {
            apply(ctx);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_strong_and_follow_the_bytes() {
        let a = strong_etag(b"hello");
        assert_eq!(a, strong_etag(b"hello"));
        assert_ne!(a, strong_etag(b"hellp"));
        let text = a.to_str().unwrap();
        assert!(text.starts_with("\"5-") && text.ends_with('"'), "{text}");
        assert_eq!(text.len(), 2 + 2 + 22, "{text}");
        assert!(
            strong_etag(&[0u8; 4096])
                .to_str()
                .unwrap()
                .starts_with("\"1000-")
        );
        // The length in lowercase hex, without leading zeros; 0 is `0`.
        for (len, hex) in [
            (0usize, "0"),
            (1, "1"),
            (15, "f"),
            (16, "10"),
            (255, "ff"),
            (4097, "1001"),
        ] {
            let tag = strong_etag(&vec![7u8; len]);
            let text = tag.to_str().unwrap();
            assert!(text.starts_with(&format!("\"{hex}-")), "{len}: {text}");
            assert_eq!(text.len(), 2 + hex.len() + 1 + 22, "{text}");
        }
    }
}

//! What may be cached and under which key, and what a stored answer becomes when it is
//! served: a weak validator, `Vary`, a decompressed body.

use super::X_CACHE;
use super::entry::Stored;
use crate::context::Context;
use crate::cookies::CookiesExt;
use crate::header::{cache_directive_seconds, has_cache_directive};
use http::header::{AUTHORIZATION, ETAG, VARY};
use http::{HeaderMap, HeaderValue, StatusCode};
use std::io::Read;
use std::time::Duration;

/// The TTL of a cacheable answer, `None` when it is not cacheable.
pub(super) fn cacheable(ctx: &Context) -> Option<Duration> {
    if ctx.status().unwrap_or(StatusCode::OK) != StatusCode::OK || ctx.body().is_stream() {
        return None;
    }
    if ctx.sets_cookies() {
        return None;
    }
    let headers = ctx.response_headers();
    let vary_ok = headers.get_all(VARY).iter().all(|v| {
        v.to_str().is_ok_and(|v| {
            v.split(',')
                .all(|f| f.trim().eq_ignore_ascii_case("accept-encoding") || f.trim().is_empty())
        })
    });
    if !vary_ok {
        return None;
    }
    if ["no-cache", "no-store", "private"]
        .into_iter()
        .any(|d| has_cache_directive(headers, d))
    {
        return None;
    }
    let s_maxage = cache_directive_seconds(headers, "s-maxage");
    if ctx.request_headers().contains_key(AUTHORIZATION)
        && s_maxage.is_none()
        && !has_cache_directive(headers, "public")
    {
        return None;
    }
    let ttl = s_maxage.or_else(|| cache_directive_seconds(headers, "max-age"))?;
    (ttl > 0).then(|| Duration::from_secs(ttl))
}

pub(super) fn request_bypasses(ctx: &Context) -> bool {
    has_cache_directive(ctx.request_headers(), "no-cache")
        || has_cache_directive(ctx.request_headers(), "no-store")
}

pub(super) fn default_key(ctx: &Context) -> String {
    let target = ctx
        .uri()
        .path_and_query()
        .map_or_else(|| ctx.path(), |pq| pq.as_str());
    format!("{} {} {}", ctx.method(), ctx.host(), target)
}

pub(super) fn set_x_cache(ctx: &mut Context, state: &'static str) {
    ctx.set_response_header(X_CACHE, HeaderValue::from_static(state));
}

pub(super) fn weaken(headers: &mut HeaderMap) {
    let Some(tag) = headers.get(ETAG) else {
        return;
    };
    if tag.as_bytes().starts_with(b"W/") {
        return;
    }
    let mut weak = b"W/".to_vec();
    weak.extend_from_slice(tag.as_bytes());
    if let Ok(weak) = HeaderValue::from_bytes(&weak) {
        headers.insert(ETAG, weak);
    }
}

pub(super) fn add_vary_accept_encoding(headers: &mut HeaderMap) {
    crate::header::add_vary(headers, "Accept-Encoding");
}

pub(super) fn decompress(encoding: Stored, body: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len() * 4);
    match encoding {
        Stored::Identity => out.extend_from_slice(body),
        Stored::Gzip => {
            flate2::read::GzDecoder::new(body).read_to_end(&mut out)?;
        }
        Stored::Brotli => {
            #[cfg(feature = "compress-br")]
            brotli::Decompressor::new(body, 4096).read_to_end(&mut out)?;
            #[cfg(not(feature = "compress-br"))]
            return Err(std::io::Error::other("brotli support is not built in"));
        }
    }
    Ok(out)
}

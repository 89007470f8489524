//! Compresses response bodies for clients that accept it: brotli (feature `compress-br`, on by
//! default), zstd (feature `compress-zstd`), gzip and deflate, pluggable ([`Compressor`]).
//!
//! A body is compressed when it is at least `min_length` bytes (1024 by default), has no
//! `Content-Encoding` yet, and its `Content-Type` is text, JavaScript, JSON, XML, SVG, wasm or a
//! font. The encoding is the one the client's `Accept-Encoding` rates highest (q-values
//! honoured, `br;q=0` means no), ties going to the compressor added first. Such a response
//! always gets `Vary: Accept-Encoding`, compressed or not (and so do the 304 and 206 answers that
//! stand for it, through [`Represents`]), so shared caches keep the variants
//! apart; a strong `ETag` is weakened to `W/"…"` since the bytes changed (RFC 9110 8.8.1). When
//! a compressor fails, the body goes out uncompressed.
//!
//! What a body costs depends on what it is:
//!
//! - **Static bodies are compressed once.** A body marked [`StaticBody`] (static serve marks
//!   the files it sends whole whose digest it knows: files compiled into the binary, the docs
//!   page's Swagger UI, files with a strong ETag) is compressed once per encoding, on tokio's
//!   blocking pool, at the compressor's static level (gzip 9, brotli 9 by default:
//!   [`Compressor::compress_static`]), and the result is kept and sent to every later client
//!   as it is, a shared buffer with nothing copied. Requests that come while it is being made
//!   wait for it (a tenth of a second for a 1.4 MB script), so every answer to a client that
//!   accepts the encoding is encoded, and a shared cache never keeps an uncompressed copy for
//!   it; the compression goes on if they give up. At most two such compressions run at once:
//!   a static body asked for meanwhile is compressed as a dynamic one, this once. What is kept
//!   is bounded by [`CompressConfig::static_cache_bytes`] (32 MiB), least recently used first
//!   out; a body larger than the bound is treated as a dynamic one.
//! - **Large dynamic bodies are compressed as a stream** (at least
//!   [`CompressConfig::stream_threshold`], 64 KiB, with a compressor that streams): the
//!   encoder takes the body 32 KiB at a time, as the client takes the answer, flushes its
//!   output after each slice and gives the worker back before the next, so one large answer
//!   does not hold up the other requests on its worker. A client that reads nothing (an HTTP/2 stream with a zero window) costs the body
//!   it already had and an encoder that has not started, not a compressed copy of the body.
//!   The compressed length is unknown, so such an answer has no `Content-Length`.
//! - **Other bodies** are compressed whole, at once, at the dynamic level.
//!
//! Streams ([`Content::set_stream`](crate::context::Content::set_stream)) are compressed as streams, by every built-in coding through
//! `async-compression`: the encoder flushes whenever the source has nothing ready, so each
//! server-sent event reaches the client compressed but as soon as it is sent; a stream whose
//! chunks are all ready is fed 32 KiB at a time, as a large body is. A stream is
//! compressed under the same type and encoding rules; its length is checked against
//! `min_length` only when known. The compressed stream's length is unknown, so
//! `Content-Length` is removed. A compressor without [`Compressor::supports_stream`] is not
//! chosen for streams.
//!
//! Never compressed: a 206 Partial Content or any response with `Content-Range` (the range
//! refers to the uncompressed bytes; compressing it would corrupt the client's reassembly) and a
//! response that already has a `Content-Encoding`.
//!
//! Levels: gzip and deflate 6 (zlib's default), brotli 4 (the usual level for dynamic content;
//! brotli's high levels cost about ten times the CPU for a few percent) and zstd 3 (zstd's
//! default) for bodies compressed per answer; gzip and deflate 9, brotli 9 and zstd 15 for
//! static bodies, compressed once (brotli 10 and 11 cost another 7 to 15 times the CPU of 9 for
//! 6 to 8% less; zstd past 15 slows to a few MB/s). All are configurable.
//!
//! Preference on a tie of q-values (browsers send `gzip, deflate, br, zstd`, all q=1): brotli,
//! zstd, gzip, deflate, the order [`Compress::new`] adds them in.
//!
//! ```
//! use framework::middleware::compress::{Compress, CompressConfig};
//!
//! let compress = Compress::new(CompressConfig::default()
//!     .gzip_level(1));
//! let app = framework::App::new().use_middleware(compress);
//! # let _ = app;
//! ```
//!
//! Another encoding plugs in as a [`Compressor`]:
//!
//! ```
//! use framework::middleware::compress::{Compress, Compressor};
//!
//! /// A coding of your own: here, a stand-in that stores the bytes as they are.
//! struct Identity;
//! impl Compressor for Identity {
//!     fn encoding(&self) -> &'static str { "x-identity" }
//!     fn compress(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
//!         Ok(data.to_vec())
//!     }
//! }
//! let compress = Compress::default().add_compressor(Identity);
//! # let _ = compress;
//! ```

mod codecs;
mod pacing;
mod policy;
mod variants;

use std::sync::Arc;

use http::StatusCode;
use http::header::{
    CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE, ETAG, HeaderValue,
};

use crate::body::BodyStream;
use crate::conditional::Represents;
use crate::context::Context;
use crate::error::Result;
use crate::handler::{Before, Middleware};
pub(crate) use policy::is_compressible;

pub use crate::body::StaticBody;
#[cfg(feature = "compress-br")]
pub use codecs::Brotli;
#[cfg(feature = "compress-zstd")]
pub use codecs::Zstd;
pub use codecs::{Compressor, Deflate, Gzip};
use futures_util::FutureExt;
use variants::{StaticVariants, Variant};

/// Compress settings.
#[derive(Clone)]
#[non_exhaustive]
pub struct CompressConfig {
    /// Smallest body worth compressing. Default 1024 bytes.
    pub min_length: usize,
    /// gzip (and deflate) level for bodies compressed per answer. Default 6.
    pub gzip_level: u32,
    /// Brotli level for bodies compressed per answer. Default 4.
    pub br_level: u32,
    /// gzip (and deflate) level for [`StaticBody`] bodies, compressed once. Default 9.
    pub static_gzip_level: u32,
    /// zstd level for bodies compressed per answer (feature `compress-zstd`). Default 3.
    pub zstd_level: i32,
    /// zstd level for [`StaticBody`] bodies, compressed once. Default 15.
    pub static_zstd_level: i32,
    /// Brotli level for [`StaticBody`] bodies, compressed once. Default 9.
    pub static_br_level: u32,
    /// The most bytes of compressed static bodies kept (least recently used out first).
    /// Default 32 MiB.
    pub static_cache_bytes: usize,
    /// A body at least this large, not static, is compressed as a stream (see the
    /// [module](self)). Default 64 KiB.
    pub stream_threshold: usize,
}

crate::config::setters!(CompressConfig {
    min_length: usize,
    gzip_level: u32,
    br_level: u32,
    static_gzip_level: u32,
    zstd_level: i32,
    static_zstd_level: i32,
    static_br_level: u32,
    static_cache_bytes: usize,
    stream_threshold: usize,
});

impl Default for CompressConfig {
    fn default() -> Self {
        Self {
            min_length: 1024,
            gzip_level: 6,
            br_level: 4,
            static_gzip_level: 9,
            static_br_level: 9,
            zstd_level: 3,
            static_zstd_level: 15,
            static_cache_bytes: 32 * 1024 * 1024,
            stream_threshold: 64 * 1024,
        }
    }
}

/// The compress middleware.
pub struct Compress {
    config: CompressConfig,
    compressors: Vec<Arc<dyn Compressor>>,
    variants: Arc<StaticVariants>,
}

impl Default for Compress {
    fn default() -> Self {
        Self::new(CompressConfig::default())
    }
}

impl Compress {
    /// brotli (with `compress-br`), zstd (with `compress-zstd`), gzip, then deflate, at the
    /// configured levels: on a tie of the client's q-values, the first wins.
    pub fn new(config: CompressConfig) -> Self {
        let compressors: Vec<Arc<dyn Compressor>> = vec![
            #[cfg(feature = "compress-br")]
            Arc::new(Brotli {
                level: config.br_level,
                static_level: config.static_br_level,
            }),
            #[cfg(feature = "compress-zstd")]
            Arc::new(Zstd {
                level: config.zstd_level,
                static_level: config.static_zstd_level,
            }),
            Arc::new(Gzip {
                level: config.gzip_level,
                static_level: config.static_gzip_level,
            }),
            Arc::new(Deflate {
                level: config.gzip_level,
                static_level: config.static_gzip_level,
            }),
        ];
        Self::with_compressors(config, compressors)
    }

    /// Only the given compressors, in order of preference.
    pub fn with_compressors(config: CompressConfig, compressors: Vec<Arc<dyn Compressor>>) -> Self {
        let variants = Arc::new(StaticVariants::new(config.static_cache_bytes));
        Self {
            config,
            compressors,
            variants,
        }
    }

    /// How many compressions of [`StaticBody`] bodies this middleware has started: each body
    /// once per encoding while its result is kept.
    pub fn static_compressions(&self) -> u64 {
        self.variants.started()
    }

    /// Adds a compressor, least preferred so far.
    #[must_use]
    pub fn add_compressor(mut self, compressor: impl Compressor) -> Self {
        self.compressors.push(Arc::new(compressor));
        self
    }

    /// Cheapest test first: most small answers stop at the length.
    fn eligible(&self, ctx: &Context) -> Option<usize> {
        let len = ctx.body().bytes()?.len();
        (len >= self.config.min_length && encodable(ctx)).then_some(len)
    }

    fn choose(&self, ctx: &Context, len: usize, stream: bool) -> Option<&Arc<dyn Compressor>> {
        let mut best: Option<(&Arc<dyn Compressor>, f32)> = None;
        for c in &self.compressors {
            if stream && !c.supports_stream() {
                continue;
            }
            let q = c.accept(ctx, len);
            if q > 0.0 && best.is_none_or(|(_, b)| q > b) {
                best = Some((c, q));
            }
        }
        best.map(|(c, _)| c)
    }

    fn apply(&self, ctx: &mut Context) {
        if matches!(
            ctx.status(),
            Some(StatusCode::NOT_MODIFIED | StatusCode::PARTIAL_CONTENT)
        ) {
            self.apply_stand_in(ctx);
            return;
        }
        if ctx.body().is_stream() {
            self.apply_stream(ctx);
            return;
        }
        let Some(len) = self.eligible(ctx) else {
            return;
        };
        add_vary_accept_encoding(ctx);
        let Some(compressor) = self.choose(ctx, len, false) else {
            return;
        };
        let digest = ctx
            .extensions()
            .get::<StaticBody>()
            .zip(ctx.body().bytes())
            .and_then(|(mark, body)| mark.marks(body).then(|| mark.key()));
        if let Some(digest) = digest
            && len <= self.config.static_cache_bytes
            && self.apply_static(ctx, digest, compressor)
        {
            return;
        }
        if len >= self.config.stream_threshold && compressor.supports_stream() {
            if let Some(body) = ctx.body_mut().take_bytes() {
                let whole = BodyStream::new(http_body_util::Full::new(body));
                ctx.body_mut()
                    .set_stream(compressor.compress_stream(pacing::paced(whole)));
                mark_encoded(ctx, compressor.encoding());
            }
            return;
        }
        let Some(body) = ctx.body().bytes() else {
            return;
        };
        match compressor.compress(body) {
            Ok(compressed) => {
                ctx.body_mut().set_bytes(compressed);
                mark_encoded(ctx, compressor.encoding());
            }
            Err(err) => {
                tracing::warn!(encoding = compressor.encoding(), %err, "compression failed, sending uncompressed");
            }
        }
    }

    /// A [`StaticBody`]: its kept variant, or the one being made (sent when ready; should its
    /// compression fail, the answer ends there, its headers gone), or the body as it is when
    /// its compression failed. False when the variant is busy being made for others and this
    /// answer is to be compressed as a dynamic one.
    fn apply_static(
        &self,
        ctx: &mut Context,
        digest: u128,
        compressor: &Arc<dyn Compressor>,
    ) -> bool {
        let Some(body) = ctx.body().bytes() else {
            return true;
        };
        match self.variants.get_or_start(digest, compressor, body) {
            Variant::Kept(variant) => ctx.body_mut().set_bytes(variant),
            Variant::Making(making) => {
                let ready = making.map(|variant| {
                    variant.ok_or_else(|| std::io::Error::other("compressing a static body failed"))
                });
                ctx.body_mut()
                    .set_stream(BodyStream::from_stream(futures_util::stream::once(ready)));
            }
            Variant::Failed => return true,
            Variant::Busy => return false,
        }
        mark_encoded(ctx, compressor.encoding());
        true
    }

    /// A 304 or a 206 is never compressed, but carries what the 200 would have: `Vary:
    /// Accept-Encoding` when the representation it stands for ([`Represents`]) is one this
    /// middleware varies on, and on a 304 the `ETag` weakened as the 200's would be for this
    /// client.
    fn apply_stand_in(&self, ctx: &mut Context) {
        let Some(represents) = ctx.extensions().get::<Represents>() else {
            return;
        };
        let len = usize::try_from(represents.length).unwrap_or(usize::MAX);
        let compressible = represents
            .content_type
            .as_ref()
            .and_then(|v| v.to_str().ok())
            .is_some_and(is_compressible);
        if len < self.config.min_length || !compressible {
            return;
        }
        add_vary_accept_encoding(ctx);
        if ctx.status() == Some(StatusCode::NOT_MODIFIED)
            && !ctx.response_headers().contains_key(CONTENT_ENCODING)
            && self.choose(ctx, len, false).is_some()
        {
            weaken_etag(ctx.response_headers_mut());
        }
    }

    fn apply_stream(&self, ctx: &mut Context) {
        let Some(hint) = ctx.body_mut().stream_mut().map(|s| s.size_hint()) else {
            return;
        };
        // An unknown length counts as long enough: streams are usually large or live.
        let len = hint
            .exact()
            .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
        if len < self.config.min_length || !encodable(ctx) {
            return;
        }
        add_vary_accept_encoding(ctx);
        let Some(compressor) = self.choose(ctx, len, true) else {
            return;
        };
        if let Some(stream) = ctx.body_mut().take_stream() {
            ctx.body_mut()
                .set_stream(compressor.compress_stream(pacing::paced(stream)));
            mark_encoded(ctx, compressor.encoding());
        }
    }
}

/// The rules shared by bodies and streams: a compressible type, not encoded yet, not a range.
/// HEAD is treated as GET, so its headers say what a GET would get (RFC 9110 section 9.3.2).
fn encodable(ctx: &Context) -> bool {
    let headers = ctx.response_headers();
    ctx.status() != Some(StatusCode::PARTIAL_CONTENT)
        && !headers.contains_key(CONTENT_ENCODING)
        && !headers.contains_key(CONTENT_RANGE)
        && ctx
            .response_header(CONTENT_TYPE)
            .is_some_and(is_compressible)
}

fn mark_encoded(ctx: &mut Context, encoding: &'static str) {
    let headers = ctx.response_headers_mut();
    headers.insert(CONTENT_ENCODING, HeaderValue::from_static(encoding));
    headers.remove(CONTENT_LENGTH);
    weaken_etag(headers);
}

fn add_vary_accept_encoding(ctx: &mut Context) {
    crate::header::add_vary(ctx.response_headers_mut(), "Accept-Encoding");
}

fn weaken_etag(headers: &mut http::HeaderMap) {
    let Some(tag) = headers.get(ETAG) else {
        return;
    };
    if tag.as_bytes().starts_with(b"W/") {
        return;
    }
    let mut weak = Vec::with_capacity(tag.len() + 2);
    weak.extend_from_slice(b"W/");
    weak.extend_from_slice(tag.as_bytes());
    if let Ok(weak) = HeaderValue::from_bytes(&weak) {
        headers.insert(ETAG, weak);
    }
}

impl Middleware for Compress {
    fn before(&self, _ctx: &mut Context) -> Before {
        Before::Continue
    }

    fn after(&self, ctx: &mut Context, result: Result) -> Result {
        result?;
        if !ctx.is_committed() {
            self.apply(ctx);
        }
        Ok(())
    }
}

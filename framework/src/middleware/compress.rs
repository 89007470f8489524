//! Compresses response bodies for clients that accept it: brotli and gzip by default,
//! pluggable ([`Compressor`]).
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
//! Streams ([`Context::set_body_stream`]) are compressed as streams, by gzip and brotli through
//! `async-compression`: the encoder flushes whenever the source has nothing ready, so each
//! server-sent event reaches the client compressed but as soon as it is sent, while a file whose
//! chunks are all ready compresses as one run. A stream is compressed under the same type and
//! encoding rules; its length is checked against `min_length` only when known. The compressed
//! stream's length is unknown, so `Content-Length` is removed. A compressor without
//! [`Compressor::supports_stream`] is not chosen for streams.
//!
//! Never compressed: a 206 Partial Content or any response with `Content-Range` (the range
//! refers to the uncompressed bytes; compressing it would corrupt the client's reassembly) and a
//! response that already has a `Content-Encoding`.
//!
//! Levels: gzip 6 (zlib's default) and brotli 4 (the usual level for dynamic content; brotli's
//! high levels cost about ten times the CPU for a few percent). Both are configurable.
//!
//! ```
//! use framework::middleware::compress::{Compress, CompressConfig};
//!
//! let compress = Compress::new(CompressConfig {
//!     gzip_level: 1,
//!     ..CompressConfig::default()
//! });
//! let app = framework::App::new().use_middleware(compress);
//! # let _ = app;
//! ```
//!
//! Another encoding plugs in as a [`Compressor`]; with the `zstd` crate for instance:
//!
//! ```ignore
//! struct Zstd;
//! impl framework::middleware::compress::Compressor for Zstd {
//!     fn encoding(&self) -> &'static str { "zstd" }
//!     fn compress(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
//!         zstd::bulk::compress(data, 3)
//!     }
//! }
//! let compress = Compress::default().add_compressor(Zstd);
//! ```

use std::io::Write;
use std::sync::Arc;

use async_compression::Level;
use futures_util::TryStreamExt;
use http::StatusCode;
use http::header::{
    CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE, ETAG, HeaderValue,
};
use http_body_util::BodyDataStream;
use tokio_util::io::{ReaderStream, StreamReader};

use crate::body::BodyStream;
use crate::conditional::Represents;
use crate::context::Context;
use crate::error::Result;
use crate::handler::{Before, Middleware};
use crate::header::{accept_encoding_q, is_compressible};

/// One content coding.
pub trait Compressor: Send + Sync + 'static {
    /// The `Content-Encoding` token, e.g. `gzip`.
    fn encoding(&self) -> &'static str;

    /// How much the client wants this coding (0 = not at all): by default the q-value its
    /// `Accept-Encoding` gives [`Compressor::encoding`]. `body_len` lets a compressor refuse
    /// bodies it handles badly.
    fn accept(&self, ctx: &Context, body_len: usize) -> f32 {
        let _ = body_len;
        accept_encoding_q(ctx.headers(), self.encoding())
    }

    /// Compresses a whole body.
    fn compress(&self, data: &[u8]) -> std::io::Result<Vec<u8>>;

    /// True when [`Compressor::compress_stream`] compresses; a compressor that cannot stream
    /// is never chosen for a streamed body (the stream then goes out as it is).
    fn supports_stream(&self) -> bool {
        false
    }

    /// Compresses a stream. It must flush whenever `body` has nothing ready, so a live stream
    /// (server-sent events) is not held back. The default returns `body` unchanged.
    fn compress_stream(&self, body: BodyStream) -> BodyStream {
        body
    }
}

/// Chunk size of the compressed stream.
const STREAM_CHUNK: usize = 8 * 1024;

/// The stream's bytes as an `AsyncBufRead`, for `async-compression`'s encoders.
fn stream_reader(
    body: BodyStream,
) -> StreamReader<
    impl futures_util::Stream<Item = std::io::Result<bytes::Bytes>> + Send,
    bytes::Bytes,
> {
    StreamReader::new(BodyDataStream::new(body.into_inner()).map_err(std::io::Error::other))
}

/// gzip through flate2.
#[derive(Debug, Clone, Copy)]
pub struct Gzip {
    /// 0 (store) to 9 (smallest).
    pub level: u32,
}

impl Compressor for Gzip {
    fn encoding(&self) -> &'static str {
        "gzip"
    }

    fn compress(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut encoder = flate2::write::GzEncoder::new(
            Vec::with_capacity(data.len() / 3),
            flate2::Compression::new(self.level.min(9)),
        );
        encoder.write_all(data)?;
        encoder.finish()
    }

    fn supports_stream(&self) -> bool {
        true
    }

    fn compress_stream(&self, body: BodyStream) -> BodyStream {
        let encoder = async_compression::tokio::bufread::GzipEncoder::with_quality(
            stream_reader(body),
            Level::Precise(self.level.min(9) as i32),
        );
        BodyStream::from_stream(ReaderStream::with_capacity(encoder, STREAM_CHUNK))
    }
}

/// Brotli (feature `compress-br`).
#[cfg(feature = "compress-br")]
#[derive(Debug, Clone, Copy)]
pub struct Brotli {
    /// 0 (fastest) to 11 (smallest).
    pub level: u32,
}

#[cfg(feature = "compress-br")]
impl Compressor for Brotli {
    fn encoding(&self) -> &'static str {
        "br"
    }

    fn compress(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(data.len() / 3);
        {
            // 22 is brotli's default window (4 MiB): bodies here are far smaller.
            let mut writer = brotli::CompressorWriter::new(&mut out, 4096, self.level.min(11), 22);
            writer.write_all(data)?;
            writer.flush()?;
        }
        Ok(out)
    }

    fn supports_stream(&self) -> bool {
        true
    }

    fn compress_stream(&self, body: BodyStream) -> BodyStream {
        let encoder = async_compression::tokio::bufread::BrotliEncoder::with_quality(
            stream_reader(body),
            Level::Precise(self.level.min(11) as i32),
        );
        BodyStream::from_stream(ReaderStream::with_capacity(encoder, STREAM_CHUNK))
    }
}

/// Compress settings.
#[derive(Clone)]
pub struct CompressConfig {
    /// Smallest body worth compressing. Default 1024 bytes.
    pub min_length: usize,
    /// gzip level. Default 6.
    pub gzip_level: u32,
    /// Brotli level. Default 4.
    pub br_level: u32,
}

impl Default for CompressConfig {
    fn default() -> Self {
        Self {
            min_length: 1024,
            gzip_level: 6,
            br_level: 4,
        }
    }
}

/// The compress middleware.
pub struct Compress {
    config: CompressConfig,
    compressors: Vec<Arc<dyn Compressor>>,
}

impl Default for Compress {
    fn default() -> Self {
        Self::new(CompressConfig::default())
    }
}

impl Compress {
    /// brotli (with `compress-br`) then gzip, at the configured levels.
    pub fn new(config: CompressConfig) -> Self {
        let gzip: Arc<dyn Compressor> = Arc::new(Gzip {
            level: config.gzip_level,
        });
        #[cfg(feature = "compress-br")]
        let compressors = vec![
            Arc::new(Brotli {
                level: config.br_level,
            }) as Arc<dyn Compressor>,
            gzip,
        ];
        #[cfg(not(feature = "compress-br"))]
        let compressors = vec![gzip];
        Self {
            config,
            compressors,
        }
    }

    /// Only the given compressors, in order of preference.
    pub fn with_compressors(config: CompressConfig, compressors: Vec<Arc<dyn Compressor>>) -> Self {
        Self {
            config,
            compressors,
        }
    }

    /// Adds a compressor, least preferred so far.
    #[must_use]
    pub fn add_compressor(mut self, compressor: impl Compressor) -> Self {
        self.compressors.push(Arc::new(compressor));
        self
    }

    /// Cheapest test first: most small answers stop at the length.
    fn eligible(&self, ctx: &Context) -> Option<usize> {
        let len = ctx.body_buffer.as_ref()?.len();
        (len >= self.config.min_length && encodable(ctx)).then_some(len)
    }

    fn choose(&self, ctx: &Context, len: usize, stream: bool) -> Option<&dyn Compressor> {
        let mut best: Option<(&dyn Compressor, f32)> = None;
        for c in &self.compressors {
            if stream && !c.supports_stream() {
                continue;
            }
            let q = c.accept(ctx, len);
            if q > 0.0 && best.is_none_or(|(_, b)| q > b) {
                best = Some((&**c, q));
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
        if ctx.has_body_stream() {
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
        let Some(body) = ctx.body_buffer.as_ref() else {
            return;
        };
        match compressor.compress(body) {
            Ok(compressed) => {
                ctx.body_buffer = Some(compressed.into());
                mark_encoded(ctx, compressor.encoding());
            }
            Err(err) => {
                tracing::warn!(encoding = compressor.encoding(), %err, "compression failed, sending uncompressed");
            }
        }
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
        let Some(hint) = ctx.body_stream_mut().map(|s| s.size_hint()) else {
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
        if let Some(stream) = ctx.take_body_stream() {
            ctx.set_body_stream(compressor.compress_stream(stream));
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
        if !ctx.committed() {
            self.apply(ctx);
        }
        Ok(())
    }
}

//! The [`Compressor`] trait and the built-in codings: gzip and deflate (flate2), brotli
//! (feature `compress-br`) and zstd (feature `compress-zstd`).

use std::io::Write;

use async_compression::Level;
use futures_util::TryStreamExt;
use http_body_util::BodyDataStream;
use tokio_util::io::{ReaderStream, StreamReader};

use crate::body::BodyStream;
use crate::context::Context;
use crate::header::accept_encoding_q;

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

    /// Compresses a body that is compressed once and then sent many times (a
    /// [`StaticBody`](super::StaticBody)), on tokio's blocking pool: worth a higher level
    /// than a body compressed for one answer. The default is [`Compressor::compress`].
    fn compress_static(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        self.compress(data)
    }

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

/// Chunk size of a compressed stream.
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
    /// 0 (store) to 9 (smallest), for bodies compressed per answer.
    pub level: u32,
    /// The level for bodies compressed once and kept ([`Compressor::compress_static`]).
    pub static_level: u32,
}

impl Gzip {
    fn compress_at(data: &[u8], level: u32) -> std::io::Result<Vec<u8>> {
        let mut encoder = flate2::write::GzEncoder::new(
            Vec::with_capacity(data.len() / 3),
            flate2::Compression::new(level.min(9)),
        );
        encoder.write_all(data)?;
        encoder.finish()
    }
}

impl Compressor for Gzip {
    fn encoding(&self) -> &'static str {
        "gzip"
    }

    fn compress(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        Self::compress_at(data, self.level)
    }

    fn compress_static(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        Self::compress_at(data, self.static_level)
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

/// deflate through flate2: the zlib format (RFC 1950), which is what the `deflate` content
/// coding means (RFC 9110 section 8.4.1.2), at gzip's levels. Few clients prefer it; it is
/// there for the ones that accept nothing else.
#[derive(Debug, Clone, Copy)]
pub struct Deflate {
    /// 0 (store) to 9 (smallest), for bodies compressed per answer.
    pub level: u32,
    /// The level for bodies compressed once and kept ([`Compressor::compress_static`]).
    pub static_level: u32,
}

impl Deflate {
    fn compress_at(data: &[u8], level: u32) -> std::io::Result<Vec<u8>> {
        let mut encoder = flate2::write::ZlibEncoder::new(
            Vec::with_capacity(data.len() / 3),
            flate2::Compression::new(level.min(9)),
        );
        encoder.write_all(data)?;
        encoder.finish()
    }
}

impl Compressor for Deflate {
    fn encoding(&self) -> &'static str {
        "deflate"
    }

    fn compress(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        Self::compress_at(data, self.level)
    }

    fn compress_static(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        Self::compress_at(data, self.static_level)
    }

    fn supports_stream(&self) -> bool {
        true
    }

    fn compress_stream(&self, body: BodyStream) -> BodyStream {
        let encoder = async_compression::tokio::bufread::ZlibEncoder::with_quality(
            stream_reader(body),
            Level::Precise(self.level.min(9) as i32),
        );
        BodyStream::from_stream(ReaderStream::with_capacity(encoder, STREAM_CHUNK))
    }
}

/// zstd through the `zstd` crate (feature `compress-zstd`), as tower-http and actix-web
/// offer it.
#[cfg(feature = "compress-zstd")]
#[derive(Debug, Clone, Copy)]
pub struct Zstd {
    /// 1 (fastest) to 22 (smallest), for bodies compressed per answer.
    pub level: i32,
    /// The level for bodies compressed once and kept ([`Compressor::compress_static`]).
    pub static_level: i32,
}

#[cfg(feature = "compress-zstd")]
impl Compressor for Zstd {
    fn encoding(&self) -> &'static str {
        "zstd"
    }

    fn compress(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        zstd::bulk::compress(data, self.level.clamp(1, 22))
    }

    fn compress_static(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        zstd::bulk::compress(data, self.static_level.clamp(1, 22))
    }

    fn supports_stream(&self) -> bool {
        true
    }

    fn compress_stream(&self, body: BodyStream) -> BodyStream {
        let encoder = async_compression::tokio::bufread::ZstdEncoder::with_quality(
            stream_reader(body),
            Level::Precise(self.level.clamp(1, 22)),
        );
        BodyStream::from_stream(ReaderStream::with_capacity(encoder, STREAM_CHUNK))
    }
}

/// Brotli (feature `compress-br`).
#[cfg(feature = "compress-br")]
#[derive(Debug, Clone, Copy)]
pub struct Brotli {
    /// 0 (fastest) to 11 (smallest), for bodies compressed per answer.
    pub level: u32,
    /// The level for bodies compressed once and kept ([`Compressor::compress_static`]).
    pub static_level: u32,
}

/// Brotli's window (log2 of its bytes) for a body of `len` bytes, when known: the smallest
/// that holds the body, from 64 KiB to brotli's default of 4 MiB. A window larger than the
/// body only costs memory (the encoder's ring buffer is twice the window).
#[cfg(feature = "compress-br")]
fn brotli_window(len: Option<u64>) -> u32 {
    const SMALLEST: u32 = 16;
    const DEFAULT: u32 = 22;
    len.map_or(DEFAULT, |len| {
        let bits = u64::BITS - len.saturating_sub(1).leading_zeros();
        bits.clamp(SMALLEST, DEFAULT)
    })
}

#[cfg(feature = "compress-br")]
impl Brotli {
    fn compress_at(data: &[u8], level: u32) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(data.len() / 3);
        {
            let window = brotli_window(Some(data.len() as u64));
            let mut writer = brotli::CompressorWriter::new(&mut out, 4096, level.min(11), window);
            writer.write_all(data)?;
            writer.flush()?;
        }
        Ok(out)
    }
}

#[cfg(feature = "compress-br")]
impl Compressor for Brotli {
    fn encoding(&self) -> &'static str {
        "br"
    }

    fn compress(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        Self::compress_at(data, self.level)
    }

    fn compress_static(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        Self::compress_at(data, self.static_level)
    }

    fn supports_stream(&self) -> bool {
        true
    }

    fn compress_stream(&self, mut body: BodyStream) -> BodyStream {
        let len = body.size_hint().exact();
        let mut params = async_compression::brotli::EncoderParams::default()
            .quality(Level::Precise(self.level.min(11) as i32))
            .window_size(brotli_window(len) as i32);
        if let Some(len) = len.and_then(|l| usize::try_from(l).ok()) {
            params = params.size_hint(len);
        }
        let encoder = async_compression::tokio::bufread::BrotliEncoder::with_params(
            stream_reader(body),
            params,
        );
        BodyStream::from_stream(ReaderStream::with_capacity(encoder, STREAM_CHUNK))
    }
}

#[cfg(all(test, feature = "compress-br"))]
mod tests {
    use super::brotli_window;

    #[test]
    fn the_window_holds_the_body_within_brotli_bounds() {
        assert_eq!(brotli_window(None), 22);
        assert_eq!(brotli_window(Some(0)), 16);
        assert_eq!(brotli_window(Some(65_536)), 16);
        assert_eq!(brotli_window(Some(65_537)), 17);
        assert_eq!(brotli_window(Some(1_466_908)), 21);
        assert_eq!(brotli_window(Some(1 << 40)), 22);
    }
}

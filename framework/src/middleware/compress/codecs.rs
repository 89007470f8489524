//! The [`Compressor`] trait and the built-in codings: gzip and deflate (flate2), brotli
//! (feature `compress-br`) and zstd (feature `compress-zstd`).

use std::io::Write;

use async_compression::Level;
use futures_util::TryStreamExt;
use http_body_util::BodyDataStream;
use tokio_util::io::{ReaderStream, StreamReader};

use crate::body::BodyStream;
use crate::context::Context;
use crate::negotiation::encoding_quality;

/// One content coding.
pub trait Compressor: Send + Sync + 'static {
    /// The `Content-Encoding` token, e.g. `gzip`.
    fn encoding(&self) -> &'static str;

    /// How much the client wants this coding (0 = not at all): by default the q-value its
    /// `Accept-Encoding` gives [`Compressor::encoding`]. `body_len` lets a compressor refuse
    /// bodies it handles badly.
    fn accept(&self, ctx: &Context, body_len: usize) -> f32 {
        let _ = body_len;
        encoding_quality(ctx.request_headers(), self.encoding())
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
#[non_exhaustive]
pub struct Gzip {
    /// 0 (store) to 9 (smallest), for bodies compressed per answer.
    pub level: u32,
    /// The level for bodies compressed once and kept ([`Compressor::compress_static`]).
    pub static_level: u32,
}

crate::config::setters!(Gzip {
    level: u32,
    static_level: u32,
});

/// The levels of [`CompressConfig::default`](super::CompressConfig::default).
impl Default for Gzip {
    fn default() -> Self {
        let config = super::CompressConfig::default();
        Self {
            level: config.gzip_level,
            static_level: config.static_gzip_level,
        }
    }
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

/// The gzip member header (RFC 1952): deflate, no flags, no time, no extra flags, OS unknown.
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// A deflate compressor kept by each thread and reset between bodies: its state (hash tables
/// and window, a few hundred KiB) is allocated once per worker thread instead of once per
/// answer. Allocating and freeing it per answer cost more in the kernel than the compression
/// itself (glibc gives blocks that large back to the kernel when they are freed, so each new
/// one faults its pages in again): `GET /big` under wrk, 16 KiB of JSON at level 1, spent
/// about 95 µs of system time per request that way. One per thread at most, for the last
/// level and format used; a body compressed once and kept (`compress_static`, on the
/// blocking pool) does not use it.
struct KeptDeflate {
    level: u32,
    zlib_header: bool,
    compress: flate2::Compress,
}

thread_local! {
    static KEPT_DEFLATE: std::cell::RefCell<Option<KeptDeflate>> =
        const { std::cell::RefCell::new(None) };
}

/// Deflates `data` onto `out` with this thread's kept compressor (see [`KeptDeflate`]): with a
/// zlib header and trailer when `zlib_header`, else raw (gzip's member).
fn deflate_kept(
    data: &[u8],
    level: u32,
    zlib_header: bool,
    out: &mut Vec<u8>,
) -> std::io::Result<()> {
    let level = level.min(9);
    KEPT_DEFLATE.with_borrow_mut(|kept| {
        let compress = match kept {
            Some(k) if k.level == level && k.zlib_header == zlib_header => {
                k.compress.reset();
                &mut k.compress
            }
            _ => {
                let fresh = KeptDeflate {
                    level,
                    zlib_header,
                    compress: flate2::Compress::new(flate2::Compression::new(level), zlib_header),
                };
                &mut kept.insert(fresh).compress
            }
        };
        let start = compress.total_in();
        loop {
            if out.capacity() - out.len() < 64 {
                out.reserve(out.capacity().max(1024));
            }
            let consumed = usize::try_from(compress.total_in() - start).unwrap_or(data.len());
            let status = compress
                .compress_vec(&data[consumed..], out, flate2::FlushCompress::Finish)
                .map_err(std::io::Error::other)?;
            if status == flate2::Status::StreamEnd {
                return Ok(());
            }
        }
    })
}

/// gzip of `data` (RFC 1952: header, raw deflate, CRC-32, length) through this thread's kept
/// compressor.
fn gzip_kept(data: &[u8], level: u32) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(data.len() / 3 + GZIP_HEADER.len() + 8);
    out.extend_from_slice(&GZIP_HEADER);
    deflate_kept(data, level, false, &mut out)?;
    let mut crc = flate2::Crc::new();
    crc.update(data);
    out.extend_from_slice(&crc.sum().to_le_bytes());
    // ISIZE: the length modulo 2^32.
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    Ok(out)
}

impl Compressor for Gzip {
    fn encoding(&self) -> &'static str {
        "gzip"
    }

    fn compress(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        gzip_kept(data, self.level)
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
#[non_exhaustive]
pub struct Deflate {
    /// 0 (store) to 9 (smallest), for bodies compressed per answer.
    pub level: u32,
    /// The level for bodies compressed once and kept ([`Compressor::compress_static`]).
    pub static_level: u32,
}

crate::config::setters!(Deflate {
    level: u32,
    static_level: u32,
});

/// The levels of [`CompressConfig::default`](super::CompressConfig::default).
impl Default for Deflate {
    fn default() -> Self {
        let config = super::CompressConfig::default();
        Self {
            level: config.gzip_level,
            static_level: config.static_gzip_level,
        }
    }
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
        let mut out = Vec::with_capacity(data.len() / 3 + 8);
        deflate_kept(data, self.level, true, &mut out)?;
        Ok(out)
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
#[non_exhaustive]
pub struct Zstd {
    /// 1 (fastest) to 22 (smallest), for bodies compressed per answer.
    pub level: i32,
    /// The level for bodies compressed once and kept ([`Compressor::compress_static`]).
    pub static_level: i32,
}

#[cfg(feature = "compress-zstd")]
crate::config::setters!(Zstd {
    level: i32,
    static_level: i32,
});

/// The levels of [`CompressConfig::default`](super::CompressConfig::default).
#[cfg(feature = "compress-zstd")]
impl Default for Zstd {
    fn default() -> Self {
        let config = super::CompressConfig::default();
        Self {
            level: config.zstd_level,
            static_level: config.static_zstd_level,
        }
    }
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
#[non_exhaustive]
pub struct Brotli {
    /// 0 (fastest) to 11 (smallest), for bodies compressed per answer.
    pub level: u32,
    /// The level for bodies compressed once and kept ([`Compressor::compress_static`]).
    pub static_level: u32,
}

#[cfg(feature = "compress-br")]
crate::config::setters!(Brotli {
    level: u32,
    static_level: u32,
});

/// The levels of [`CompressConfig::default`](super::CompressConfig::default).
#[cfg(feature = "compress-br")]
impl Default for Brotli {
    fn default() -> Self {
        let config = super::CompressConfig::default();
        Self {
            level: config.br_level,
            static_level: config.static_br_level,
        }
    }
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
    use std::io::Read;

    use super::{brotli_window, deflate_kept, gzip_kept};

    /// The kept compressor's gzip and zlib decode to the input, body after body, at any
    /// level, empty and large bodies included, as flate2's own decoders read them.
    #[test]
    fn kept_compressors_make_valid_gzip_and_zlib_again_and_again() {
        let large: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for level in [1, 6, 1, 9] {
            for data in [&b""[..], b"hello, hello, hello", &large] {
                let gz = gzip_kept(data, level).unwrap();
                let mut back = Vec::new();
                flate2::read::GzDecoder::new(&gz[..])
                    .read_to_end(&mut back)
                    .unwrap();
                assert_eq!(back, data, "gzip, level {level}, {} bytes", data.len());
                let mut zlib = Vec::new();
                deflate_kept(data, level, true, &mut zlib).unwrap();
                let mut back = Vec::new();
                flate2::read::ZlibDecoder::new(&zlib[..])
                    .read_to_end(&mut back)
                    .unwrap();
                assert_eq!(back, data, "zlib, level {level}, {} bytes", data.len());
            }
        }
    }

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

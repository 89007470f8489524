//! The body parser's decoders: one step each over the body read whole, a content coding
//! removed (gzip, deflate, br, zstd) or the decoded bytes checked and turned into JSON (JSON,
//! forms). Each content decoder reads at most one byte past the parser's limit, so a
//! decompression bomb costs the limit, not the bomb.

use std::io::Read;

use bytes::Bytes;
use http::StatusCode;
use http::header::{CONTENT_ENCODING, CONTENT_LENGTH};

use super::{error, too_large};
use crate::body::FormDecoded;
use crate::context::Context;
use crate::error::HttpError;
use crate::header::{content_encodings, is_form_media_type, is_json_media_type};

/// One decoding step over the body.
pub trait Decoder: Send + Sync + 'static {
    /// Whether this decoder applies to the request.
    fn accepts(&self, ctx: &Context) -> bool;
    /// Decodes `body`; the result must stay within `limit` bytes.
    fn decode(&self, ctx: &mut Context, body: Bytes, limit: usize) -> Result<Bytes, HttpError>;

    /// The content coding this decoder removes (`"gzip"`), if it is a content decoder: the
    /// parser does not ask such a decoder about a request without `Content-Encoding`, which
    /// saves each of them a look through the headers on nearly every request. A decoder that
    /// removes a content coding must name it here: a request whose `Content-Encoding` is not
    /// exactly one coding some decoder names is refused with 415 before its body is read.
    /// Default `None`: the decoder reads decoded bytes (JSON, forms), and is always asked.
    fn content_coding(&self) -> Option<&'static str> {
        None
    }
}

/// Whether the request's one content coding is `coding`.
fn sent_in(ctx: &Context, coding: &str) -> bool {
    content_encodings(ctx.request_headers()) == [coding]
}

/// The decoded body: `reader`'s bytes, read to one byte past `limit` (that is how a body over
/// the limit is told, without decoding the rest), with `Content-Encoding` and
/// `Content-Length` removed; `invalid` is the 400's message when the bytes are not what their
/// coding says.
fn decoded(
    ctx: &mut Context,
    reader: std::io::Result<impl Read>,
    sent: usize,
    limit: usize,
    invalid: &'static str,
) -> Result<Bytes, HttpError> {
    let out = read_to_limit(reader, sent, limit, invalid)?;
    ctx.request_headers_mut().remove(CONTENT_ENCODING);
    ctx.request_headers_mut().remove(CONTENT_LENGTH);
    Ok(out.into())
}

/// `reader`'s bytes, at most `limit` of them: the read stops one byte past it (413), so a
/// decoder is never asked for more, however much its input would expand to.
fn read_to_limit(
    reader: std::io::Result<impl Read>,
    sent: usize,
    limit: usize,
    invalid: &'static str,
) -> Result<Vec<u8>, HttpError> {
    let mut out = Vec::with_capacity((sent * 4).min(limit));
    let read = reader.and_then(|reader| reader.take(limit as u64 + 1).read_to_end(&mut out));
    if read.is_err() {
        return Err(error(StatusCode::BAD_REQUEST, invalid));
    }
    if out.len() > limit {
        return Err(too_large());
    }
    Ok(out)
}

/// Gunzips a `Content-Encoding: gzip` body and removes the header.
#[derive(Debug, Clone, Copy, Default)]
pub struct GzipDecoder;

impl Decoder for GzipDecoder {
    fn accepts(&self, ctx: &Context) -> bool {
        sent_in(ctx, "gzip")
    }

    fn content_coding(&self) -> Option<&'static str> {
        Some("gzip")
    }

    fn decode(&self, ctx: &mut Context, body: Bytes, limit: usize) -> Result<Bytes, HttpError> {
        let reader = Ok(flate2::read::GzDecoder::new(&body[..]));
        decoded(ctx, reader, body.len(), limit, "invalid gzip body")
    }
}

/// Inflates a `Content-Encoding: deflate` body (the zlib format, RFC 9110 section 8.4.1.2) and
/// removes the header.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeflateDecoder;

impl Decoder for DeflateDecoder {
    fn accepts(&self, ctx: &Context) -> bool {
        sent_in(ctx, "deflate")
    }

    fn content_coding(&self) -> Option<&'static str> {
        Some("deflate")
    }

    fn decode(&self, ctx: &mut Context, body: Bytes, limit: usize) -> Result<Bytes, HttpError> {
        let reader = Ok(flate2::read::ZlibDecoder::new(&body[..]));
        decoded(ctx, reader, body.len(), limit, "invalid deflate body")
    }
}

/// Decodes a `Content-Encoding: br` body (feature `compress-br`) and removes the header.
#[cfg(feature = "compress-br")]
#[derive(Debug, Clone, Copy, Default)]
pub struct BrotliDecoder;

#[cfg(feature = "compress-br")]
impl Decoder for BrotliDecoder {
    fn accepts(&self, ctx: &Context) -> bool {
        sent_in(ctx, "br")
    }

    fn content_coding(&self) -> Option<&'static str> {
        Some("br")
    }

    fn decode(&self, ctx: &mut Context, body: Bytes, limit: usize) -> Result<Bytes, HttpError> {
        let reader = Ok(brotli::Decompressor::new(&body[..], 4096));
        decoded(ctx, reader, body.len(), limit, "invalid br body")
    }
}

/// The largest zstd window a request may ask for: 8 MiB, RFC 9659's bound for the `zstd`
/// content coding.
#[cfg(feature = "compress-zstd")]
const ZSTD_WINDOW_LOG_MAX: u32 = 23;

/// Decodes a `Content-Encoding: zstd` body (feature `compress-zstd`) and removes the header;
/// a frame that needs a window over 8 MiB is invalid.
#[cfg(feature = "compress-zstd")]
#[derive(Debug, Clone, Copy, Default)]
pub struct ZstdDecoder;

#[cfg(feature = "compress-zstd")]
impl Decoder for ZstdDecoder {
    fn accepts(&self, ctx: &Context) -> bool {
        sent_in(ctx, "zstd")
    }

    fn content_coding(&self) -> Option<&'static str> {
        Some("zstd")
    }

    fn decode(&self, ctx: &mut Context, body: Bytes, limit: usize) -> Result<Bytes, HttpError> {
        let reader = zstd::stream::read::Decoder::with_buffer(&body[..]).and_then(|mut d| {
            d.window_log_max(ZSTD_WINDOW_LOG_MAX)?;
            Ok(d)
        });
        decoded(ctx, reader, body.len(), limit, "invalid zstd body")
    }
}

/// Checks that a JSON body is well-formed (the bytes are kept as they are).
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonDecoder;

impl Decoder for JsonDecoder {
    fn accepts(&self, ctx: &Context) -> bool {
        is_json_media_type(ctx.request_headers())
    }

    fn decode(&self, _ctx: &mut Context, body: Bytes, _limit: usize) -> Result<Bytes, HttpError> {
        // IgnoredAny walks the document without building it: a syntax check, no allocation.
        serde_json::from_slice::<serde::de::IgnoredAny>(&body)
            .map_err(|_| error(StatusCode::BAD_REQUEST, "invalid json"))?;
        Ok(body)
    }
}

/// Turns a urlencoded form into a JSON object: a key seen once maps to a string, a repeated
/// key to an array of strings.
#[derive(Debug, Clone, Copy, Default)]
pub struct FormDecoder;

impl Decoder for FormDecoder {
    fn accepts(&self, ctx: &Context) -> bool {
        is_form_media_type(ctx.request_headers())
    }

    fn decode(&self, ctx: &mut Context, body: Bytes, limit: usize) -> Result<Bytes, HttpError> {
        use serde_json::{Map, Value};
        ctx.insert_data(FormDecoded);
        let mut map = Map::new();
        for (key, value) in form_urlencoded::parse(&body) {
            let value = Value::String(value.into_owned());
            match map.get_mut(key.as_ref()) {
                None => {
                    map.insert(key.into_owned(), value);
                }
                Some(Value::Array(items)) => items.push(value),
                Some(existing) => {
                    let first = existing.take();
                    *existing = Value::Array(vec![first, value]);
                }
            }
        }
        let json =
            serde_json::to_vec(&map).map_err(|_| error(StatusCode::BAD_REQUEST, "invalid form"))?;
        if json.len() > limit {
            return Err(too_large());
        }
        Ok(json.into())
    }
}

#[cfg(test)]
mod tests {
    use super::read_to_limit;

    /// Every decoder's output goes through `read_to_limit`: an input that never ends (what a
    /// decompression bomb looks like from the output side) is read to one byte past the
    /// limit and refused, so the work is bounded by the limit, not by the bomb.
    #[test]
    fn an_endless_body_is_read_to_one_byte_past_the_limit() {
        // `repeat` never ends: only the bound makes this return.
        let refused = read_to_limit(Ok(std::io::repeat(b'0')), 10, 50 * 1024, "bad");
        assert_eq!(refused.unwrap_err().status().as_u16(), 413);
        let kept = read_to_limit(Ok(&[b'0'; 1024][..]), 1024, 1024, "bad").unwrap();
        assert_eq!(kept.len(), 1024);
        let over = read_to_limit(Ok(&[b'0'; 1025][..]), 1025, 1024, "bad");
        assert_eq!(over.unwrap_err().status().as_u16(), 413);
    }
}

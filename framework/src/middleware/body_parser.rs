//! Reads the request body of POST, PUT and PATCH requests into `Context::request_body`.
//!
//! The default parser ([`BodyParser::default`]) takes `application/json` (and `+json` types),
//! decodes a body sent with `Content-Encoding` `gzip`, `deflate`, `br` (feature `compress-br`)
//! or `zstd` (feature `compress-zstd`) first ([`BodyParser::add_content_decoders`]), and checks
//! that the JSON is well-formed.
//! Decoders are pluggable ([`BodyParser::add_decoder`]); the form decoder turns
//! `application/x-www-form-urlencoded` into JSON (`a=1&a=2&b=3` becomes
//! `{"a":["1","2"],"b":"3"}`) and needs [`json_and_form_content_type`] as the content type
//! check, since accepting forms widens what a cross-site page can post.
//!
//! Limits: at most [`DEFAULT_LIMIT`] bytes (50 KiB) by default, on the bytes received and again
//! on the decoded bytes, so a compression bomb (gzip, deflate, brotli or zstd) stops at the
//! limit, having decoded one byte past it. Over it: 413. Malformed JSON: 400 `invalid json`.
//! Bytes that are not what their coding says: 400 `invalid gzip body` (`deflate`, `br`, `zstd`
//! alike). A zstd frame that asks for a window over 8 MiB (RFC 9659's bound for HTTP) is
//! refused as invalid, so a request cannot make the server set aside more. One coding per
//! request; a stacked one (`gzip, br`), a doubled one (`gzip, gzip`) or a coding no decoder
//! removes: 415 `unsupported content encoding`, before any of the body is read or decoded.
//! All with category `framework-body-parser`. Requests of other methods or content types pass
//! through with their body unread (a route may read it raw: an upload, a proxy); a handler that
//! binds such a body ([`Context::bind`]) answers **415** `unsupported media type <type>:
//! expected application/json`, to which the parser adds `Accept-Post` (`Accept-Patch` on a
//! PATCH) listing [`BodyParserConfig::accept`].
//!
//! Streams: the parser reads requests only; a streamed response passes through untouched. A
//! route that must stream its request body on (a proxy) should not be behind the parser, since
//! a parsed body is no longer a stream.
//!
//! ```
//! use framework::middleware::body_parser::{
//!     BodyParser, BodyParserConfig, FormDecoder, GzipDecoder, JsonDecoder,
//!     json_and_form_content_type,
//! };
//!
//! let parser = BodyParser::new(BodyParserConfig::default()
//!     .limit(1024 * 1024)
//!     .content_type_validate(json_and_form_content_type)
//!     .accept("application/json, application/x-www-form-urlencoded"))
//! .add_decoder(GzipDecoder)
//! .add_decoder(JsonDecoder)
//! .add_decoder(FormDecoder);
//! # let _ = parser;
//! ```

use std::sync::Arc;

use http::HeaderValue;
use http::header::{CONTENT_ENCODING, CONTENT_LENGTH, HeaderName};
use http::{Method, StatusCode};

use crate::body::BodyDeclined;
use crate::context::Context;
use crate::error::{HttpError, Result};
use crate::handler::{Before, BoxFuture, Middleware, Next};
use crate::header::{content_encodings, is_form_media_type, is_json_media_type};

/// `Accept-Post` (W3C LDP, registered with IANA): the media types a POST may send.
const ACCEPT_POST: HeaderName = HeaderName::from_static("accept-post");
/// `Accept-Patch` (RFC 5789 section 3.1): the media types a PATCH may send.
const ACCEPT_PATCH: HeaderName = HeaderName::from_static("accept-patch");

/// Category of body parser errors.
pub const CATEGORY: &str = "framework-body-parser";

/// The default size limit: 50 KiB.
pub const DEFAULT_LIMIT: usize = 50 * 1024;

fn error(status: StatusCode, message: &'static str) -> HttpError {
    HttpError::with(status, CATEGORY, message)
}

fn too_large() -> HttpError {
    error(StatusCode::PAYLOAD_TOO_LARGE, "request body is too large")
}

mod decoders;

#[cfg(feature = "compress-br")]
pub use decoders::BrotliDecoder;
#[cfg(feature = "compress-zstd")]
pub use decoders::ZstdDecoder;
pub use decoders::{Decoder, DeflateDecoder, FormDecoder, GzipDecoder, JsonDecoder};

/// Decides whether the parser reads the request at all.
pub type ContentTypeValidate = fn(&Context) -> bool;

/// JSON only: the default.
pub fn json_content_type(ctx: &Context) -> bool {
    is_json_media_type(ctx.request_headers())
}

/// JSON or urlencoded forms: needed by [`FormDecoder`].
pub fn json_and_form_content_type(ctx: &Context) -> bool {
    is_json_media_type(ctx.request_headers()) || is_form_media_type(ctx.request_headers())
}

/// Body parser settings.
#[derive(Clone)]
#[non_exhaustive]
pub struct BodyParserConfig {
    /// Most bytes accepted, received and decoded. Default 50 KiB.
    pub limit: usize,
    /// Which requests are read. Default: JSON ones.
    pub content_type_validate: ContentTypeValidate,
    /// The media types `content_type_validate` accepts, as sent in `Accept-Post` (or
    /// `Accept-Patch`) on the **415** a handler answers (through [`Context::bind`]) to a body in
    /// another type. Default `application/json`; with [`json_and_form_content_type`],
    /// `application/json, application/x-www-form-urlencoded`.
    pub accept: &'static str,
}

crate::config::setters!(BodyParserConfig {
    limit: usize,
    content_type_validate: ContentTypeValidate,
    accept: &'static str,
});

impl Default for BodyParserConfig {
    fn default() -> Self {
        Self {
            limit: DEFAULT_LIMIT,
            content_type_validate: json_content_type,
            accept: "application/json",
        }
    }
}

/// The body parser middleware.
pub struct BodyParser {
    config: BodyParserConfig,
    decoders: Vec<Arc<dyn Decoder>>,
}

impl Default for BodyParser {
    /// JSON, in any content coding compiled in ([`BodyParser::add_content_decoders`]), 50 KiB.
    fn default() -> Self {
        Self::new(BodyParserConfig::default())
            .add_content_decoders()
            .add_decoder(JsonDecoder)
    }
}

impl BodyParser {
    /// A parser with no decoders: the raw bytes are stored as received.
    pub fn new(config: BodyParserConfig) -> Self {
        Self {
            config,
            decoders: Vec::new(),
        }
    }

    /// Adds a decoder; decoders run in the order added.
    #[must_use]
    pub fn add_decoder(mut self, decoder: impl Decoder) -> Self {
        self.decoders.push(Arc::new(decoder));
        self
    }

    /// Adds a decoder for each content coding compiled in: [`GzipDecoder`],
    /// [`DeflateDecoder`], `BrotliDecoder` (feature `compress-br`) and `ZstdDecoder` (feature
    /// `compress-zstd`). Add them before the decoders that read the decoded bytes (JSON, forms).
    #[must_use]
    pub fn add_content_decoders(self) -> Self {
        let parser = self.add_decoder(GzipDecoder).add_decoder(DeflateDecoder);
        #[cfg(feature = "compress-br")]
        let parser = parser.add_decoder(BrotliDecoder);
        #[cfg(feature = "compress-zstd")]
        let parser = parser.add_decoder(ZstdDecoder);
        parser
    }

    async fn read(&self, ctx: &mut Context) -> Result<(), HttpError> {
        // Looked up once: most requests are sent without a coding, and then no content
        // decoder is asked and nothing is left to refuse.
        let coded = ctx.request_headers().contains_key(CONTENT_ENCODING);
        if coded && !self.decodes(ctx) {
            return Err(unsupported_coding());
        }
        let limit = self.config.limit;
        let declared = ctx
            .request_header(CONTENT_LENGTH)
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            return Err(too_large());
        }
        // 413, 408 or 400 as a handler reading the body itself gets them, in this category.
        let mut body = ctx
            .take_raw_body()
            .read_limited(limit)
            .await
            .map_err(|err| HttpError::from(err).with_category(CATEGORY))?;
        for decoder in &self.decoders {
            if (coded || decoder.content_coding().is_none()) && decoder.accepts(ctx) {
                body = decoder.decode(ctx, body, limit)?;
            }
        }
        if coded && !content_encodings(ctx.request_headers()).is_empty() {
            return Err(unsupported_coding());
        }
        ctx.set_request_body(body);
        Ok(())
    }

    /// Whether the request's `Content-Encoding` is one coding that one of the content decoders
    /// removes: a stacked (`gzip, br`), doubled (`gzip, gzip`) or unknown coding is refused
    /// before any of the body is read or decoded, so no other check runs on coded bytes.
    fn decodes(&self, ctx: &Context) -> bool {
        match content_encodings(ctx.request_headers()).as_slice() {
            [] => true,
            [coding] => self
                .decoders
                .iter()
                .any(|decoder| decoder.content_coding() == Some(coding.as_str())),
            _ => false,
        }
    }

    /// Says what the parser does with the request's body; one it leaves unread is marked
    /// [`BodyDeclined`] for [`Context::bind`].
    fn wants(&self, ctx: &mut Context) -> Wants {
        let wants = self.decide(ctx);
        if !matches!(wants, Wants::Read) {
            mark_declined(ctx);
        }
        wants
    }

    fn decide(&self, ctx: &Context) -> Wants {
        if !has_body_method(ctx) {
            Wants::Nothing
        } else if (self.config.content_type_validate)(ctx) {
            Wants::Read
        } else if ctx.raw_body_has_data() {
            Wants::Declined
        } else {
            Wants::Nothing
        }
    }
}

/// The 415 for a content coding no decoder removes.
fn unsupported_coding() -> HttpError {
    error(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported content encoding",
    )
}

/// Marks a body the parser leaves unread as [`BodyDeclined`], for [`Context::bind`].
fn mark_declined(ctx: &mut Context) {
    if ctx.raw_body_has_data() {
        ctx.insert_data(BodyDeclined);
    }
}

/// True for a POST, PUT or PATCH not yet answered: the requests whose body the parser reads.
fn has_body_method(ctx: &Context) -> bool {
    matches!(*ctx.method(), Method::POST | Method::PUT | Method::PATCH) && !ctx.is_committed()
}

/// What the parser does with a request.
enum Wants {
    /// No body to read (GET, an empty body, skipped).
    Nothing,
    /// A body in a type it reads.
    Read,
    /// A body in a type it does not read: left for the handler (a raw upload, a proxy); a
    /// handler that binds it answers 415, to which the parser adds `Accept-Post`.
    Declined,
}

impl Middleware for BodyParser {
    fn role(&self) -> Option<crate::handler::Role> {
        Some(crate::handler::Role::BodyParser)
    }

    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        Box::pin(async move {
            match self.wants(ctx) {
                Wants::Read => self.read(ctx).await?,
                Wants::Declined => {
                    let result = next.run(ctx).await;
                    if let Err(err) = &result
                        && err.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE
                    {
                        let name = if *ctx.method() == Method::PATCH {
                            ACCEPT_PATCH
                        } else {
                            ACCEPT_POST
                        };
                        // A reader of its own types (a multipart upload) may have said
                        // what it takes already.
                        if !ctx.response_headers().contains_key(&name) {
                            ctx.set_response_header(
                                name,
                                HeaderValue::from_static(self.config.accept),
                            );
                        }
                    }
                    return result;
                }
                Wants::Nothing => {}
            }
            next.run(ctx).await
        })
    }

    /// A request whose method has no body to read (GET, HEAD, DELETE, …) passes through
    /// without a future of its own. Only the method is looked at here: `handle` decides the
    /// rest (the `Content-Type`), so a POST asks that once, not twice (about 130 instructions
    /// a request). A POST without a body takes the future and then reads nothing.
    fn before(&self, ctx: &mut Context) -> Before {
        if has_body_method(ctx) {
            return Before::Handle;
        }
        mark_declined(ctx);
        Before::Pass
    }
}

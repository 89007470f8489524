//! `multipart/form-data` uploads (feature `multipart`): a [`Multipart`] handler argument that
//! streams the parts of the request body, text fields and files alike, without holding a whole
//! file in memory. Parsing is [`multer`](https://docs.rs/multer)'s, as in axum and poem.
//!
//! ```rust,standalone_crate
//! use framework::multipart::Multipart;
//! use framework::{Context, HttpError, Result, controller, post};
//!
//! #[derive(framework::FromState)]
//! struct Uploads;
//!
//! #[controller(prefix = "/uploads")]
//! impl Uploads {
//!     /// Stores every file of the form; answers with how many bytes it kept.
//!     #[post("/")]
//!     async fn upload(&self, mut form: Multipart) -> Result<String> {
//!         let mut kept = 0;
//!         while let Some(part) = form.next_part().await? {
//!             if part.is_file() {
//!                 // Streamed to a temporary file, deleted when `file` is dropped (or
//!                 // `file.persist(path)` keeps it).
//!                 let file = part.save_to_temp().await?;
//!                 kept += file.len();
//!             } else {
//!                 let name = part.name().to_owned();
//!                 let text = part.text().await?;
//!                 tracing::info!(%name, %text, "field");
//!             }
//!         }
//!         Ok(format!("{kept} bytes"))
//!     }
//! }
//! ```
//!
//! A part is a file when its `Content-Disposition` carries a `filename` (browsers send one for
//! every `<input type="file">`), else a field. Its name, file name (sanitised: see
//! [`Part::file_name`]) and `Content-Type` are known before its bytes are read; the bytes come
//! chunk by chunk ([`Part::chunk`]), whole within the part's limit ([`Part::bytes`],
//! [`Part::text`]), into any [`AsyncWrite`](tokio::io::AsyncWrite) ([`Part::write_to`]) or
//! into a temporary file ([`Part::save_to_temp`]). Parts come in order, one at a time: the next
//! [`Multipart::next_part`] skips what is left of the current one.
//!
//! **Limits** ([`MultipartLimits`]), each answered **413** with category `framework-multipart`
//! and a message naming the limit and its value: parts (default 100), bytes of a field (64 KiB),
//! of a file (8 MiB), of the whole body as received, boundaries and part headers included
//! (16 MiB), and of one part's header block (8 KiB). A `Content-Length` over the total
//! is refused before anything is read. A body that is not `multipart/form-data` is **415**; one
//! without a boundary, truncated, or with a part that has no name, **400**; a client too slow
//! to send it, **408** (the server's body read deadline). What a request can make the server
//! hold is one chunk of the connection (hyper reads at most about 408 KiB at a time) and the
//! part headers being read, plus what the handler itself keeps ([`Part::bytes`] up to the
//! part's limit): `tests/tests/multipart_memory.rs` measures 20 uploads of 8 MiB files against
//! 20 of 1 MiB.
//!
//! The limits come from the argument's type ([`MultipartParts::LIMITS`]), else from the app's
//! state (`App::with_state(MultipartLimits { .. })`), else the defaults; a handler may set its
//! own with [`Multipart::with_limits`] before the first part.
//!
//! The OpenAPI document describes a route taking a `Multipart` with a `multipart/form-data`
//! request body; `Multipart<P>` with `P:` [`MultipartParts`] names its parts (files as
//! `type: string, format: binary`), their media types and the limits.

mod describe;
mod file_name;
mod header_scan;
mod part;

use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::StreamExt;
use http::StatusCode;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderName, HeaderValue};
use http_body_util::BodyExt;

use crate::body::{BodyError, BoxError, RequestBody};
use crate::context::Context;
use crate::error::HttpError;
use crate::extract::FromRequest;
use header_scan::{HeaderBlockTooLarge, HeaderScan};

pub use describe::{AnyParts, MultipartParts, PartSpec};
pub use file_name::sanitise_file_name;
pub use part::{Part, TempUpload};

/// Category of multipart errors.
pub const CATEGORY: &str = "framework-multipart";

/// The media type a [`Multipart`] reads.
pub const MULTIPART_FORM_DATA: &str = "multipart/form-data";

/// How much of an upload a request may send; each limit passed is a **413** naming it. A
/// limit is inclusive: a field of exactly `field_size` bytes is accepted, one byte more is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct MultipartLimits {
    /// Most parts (fields and files). Default 100.
    pub parts: usize,
    /// Most bytes of a field (a part without a file name). Default 64 KiB.
    pub field_size: u64,
    /// Most bytes of a file. Default 8 MiB.
    pub file_size: u64,
    /// Most bytes of the whole body as received: parts, boundaries and part headers. Default
    /// 16 MiB.
    pub total_size: u64,
    /// Most bytes of one part's header block (with the boundary line before it; for the first
    /// part, with any preamble). Default 8 KiB.
    pub header_size: u64,
}

crate::config::setters!(const MultipartLimits {
    parts: usize,
    field_size: u64,
    file_size: u64,
    total_size: u64,
    header_size: u64,
});

impl MultipartLimits {
    /// The defaults: 100 parts, fields of 64 KiB, files of 8 MiB, 16 MiB in all, 8 KiB of
    /// headers per part.
    pub const DEFAULT: Self = Self {
        parts: 100,
        field_size: 64 * 1024,
        file_size: 8 * 1024 * 1024,
        total_size: 16 * 1024 * 1024,
        header_size: 8 * 1024,
    };
}

impl Default for MultipartLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A `multipart/form-data` request body, read part by part: a handler argument (a controller
/// method's `form: Multipart`), or made in any handler with [`Multipart::from_context`].
///
/// `P` describes the parts for the OpenAPI document and may set the limits
/// ([`MultipartParts`]); the default, [`AnyParts`], describes any parts.
pub struct Multipart<P = AnyParts> {
    limits: MultipartLimits,
    source: Source,
    current: Option<part::Current>,
    /// Parts begun so far.
    parts: usize,
    /// The header block limit in force, shared with the [`HeaderScan`] of the body stream.
    header_limit: Arc<AtomicU64>,
    /// The error that ended the body: every later read answers it again.
    failed: Option<HttpError>,
    _parts: PhantomData<fn() -> P>,
}

/// Where the parts come from.
enum Source {
    /// Nothing read yet, so the limits may still change.
    Unread {
        body: RequestBody,
        boundary: String,
        declared: Option<u64>,
    },
    /// Being parsed.
    Reading(multer::Multipart<'static>),
    /// The closing boundary was read.
    Done,
}

impl<P> std::fmt::Debug for Multipart<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Multipart")
            .field("limits", &self.limits)
            .field("parts", &self.parts)
            .finish_non_exhaustive()
    }
}

impl<P: MultipartParts> FromRequest for Multipart<P> {
    type Rejection = HttpError;

    /// The limits of `P`, else the app state's [`MultipartLimits`], else the defaults.
    fn from_request(ctx: &mut Context) -> Result<Self, HttpError> {
        let limits = P::LIMITS
            .or_else(|| ctx.state().get::<MultipartLimits>().copied())
            .unwrap_or_default();
        Self::from_context(ctx, limits)
    }

    fn describe(operation: &mut crate::openapi::Operation<'_>) {
        describe::describe::<P>(operation);
    }
}

impl<P> Multipart<P> {
    /// Takes the request body of `ctx` to read as `multipart/form-data` within `limits`; for a
    /// handler that takes `&mut Context` (a controller method takes a `Multipart` argument
    /// instead). Nothing is read yet.
    ///
    /// **415** when the body is not `multipart/form-data` (or has a `Content-Encoding`),
    /// **400** when its `Content-Type` has no valid boundary.
    ///
    /// ```
    /// use framework::multipart::{Multipart, MultipartLimits};
    /// use framework::{Context, Result};
    ///
    /// async fn upload(ctx: &mut Context) -> Result<String> {
    ///     let limits = MultipartLimits::DEFAULT
    ///         .parts(1);
    ///     let mut form: Multipart = Multipart::from_context(ctx, limits)?;
    ///     let Some(part) = form.next_part().await? else {
    ///         return Ok("nothing sent".to_owned());
    ///     };
    ///     let name = part.name().to_owned();
    ///     let bytes = part.bytes().await?;
    ///     Ok(format!("{name}: {} bytes", bytes.len()))
    /// }
    /// # let _ = framework::App::new().post("/upload", upload);
    /// ```
    pub fn from_context(ctx: &mut Context, limits: MultipartLimits) -> Result<Self, HttpError> {
        let content_type = ctx.request_header(CONTENT_TYPE);
        let is_multipart = content_type.is_some_and(|v| {
            crate::header::media_type(v).eq_ignore_ascii_case(MULTIPART_FORM_DATA)
        });
        if !is_multipart {
            let err = unsupported_media_type(content_type);
            accept_multipart(ctx);
            return Err(err);
        }
        let boundary = content_type
            .and_then(|v| multer::parse_boundary(v).ok())
            .filter(|b| valid_boundary(b))
            .ok_or_else(|| {
                error(
                    StatusCode::BAD_REQUEST,
                    "multipart/form-data needs a boundary of 1 to 70 characters in its \
                     Content-Type",
                )
            })?;
        if !crate::header::content_encodings(ctx.request_headers()).is_empty() {
            return Err(error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported content encoding of a multipart body",
            ));
        }
        let declared = ctx
            .request_header(CONTENT_LENGTH)
            .and_then(|v| v.trim().parse::<u64>().ok());
        let mut body = ctx.take_raw_body();
        if !body.has_data() && !ctx.request_body().is_empty() {
            // A body parser that reads every media type has read this one already.
            body = RequestBody::Full(ctx.request_body().clone());
        }
        Ok(Self {
            limits,
            source: Source::Unread {
                body,
                boundary,
                declared,
            },
            current: None,
            parts: 0,
            header_limit: Arc::new(AtomicU64::new(limits.header_size)),
            failed: None,
            _parts: PhantomData,
        })
    }

    /// The limits in force.
    pub fn limits(&self) -> MultipartLimits {
        self.limits
    }

    /// Sets the limits. All of them apply when called before the first
    /// [`Multipart::next_part`]; later, the total size already in force stays, the others
    /// apply to the parts that follow.
    #[must_use]
    pub fn with_limits(mut self, limits: MultipartLimits) -> Self {
        self.limits = limits;
        self.header_limit
            .store(limits.header_size, Ordering::Relaxed);
        self
    }

    /// The next part, or `None` after the last one. What the handler left unread of the
    /// previous part is read and dropped first (it still counts against that part's limit).
    ///
    /// Errors: 413 when a limit is passed, 400 for a malformed or truncated body or a part
    /// without a name, 408 when the client stops sending. After an error every call answers
    /// the same error.
    pub async fn next_part(&mut self) -> Result<Option<Part<'_>>, HttpError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        match self.advance().await {
            Ok(true) => Ok(self
                .current
                .as_mut()
                .map(|current| Part::new(current, &mut self.failed))),
            Ok(false) => Ok(None),
            Err(err) => {
                self.failed = Some(err.clone());
                Err(err)
            }
        }
    }

    /// Moves to the next part: `true` when there is one (in `current`).
    async fn advance(&mut self) -> Result<bool, HttpError> {
        if let Some(mut current) = self.current.take() {
            // multer keeps one part open at a time: the rest of this one is read and dropped.
            while current.next_chunk().await?.is_some() {}
        }
        if let Source::Unread { .. } = self.source {
            self.start()?;
        }
        let Source::Reading(parser) = &mut self.source else {
            return Ok(false);
        };
        // The header block's limit is the body stream's (`HeaderScan`): it fails the read.
        let next = parser.next_field().await.map_err(|e| from_multer(&e))?;
        let Some(field) = next else {
            self.source = Source::Done;
            return Ok(false);
        };
        self.parts += 1;
        if self.parts > self.limits.parts {
            return Err(too_large(format!(
                "multipart body exceeds the part count limit of {} parts",
                self.limits.parts
            )));
        }
        self.current = Some(part::Current::new(field, self.parts, &self.limits)?);
        Ok(true)
    }

    /// Starts the parser on the body, refusing a declared length over the total at once.
    fn start(&mut self) -> Result<(), HttpError> {
        let Source::Unread {
            body,
            boundary,
            declared,
        } = std::mem::replace(&mut self.source, Source::Done)
        else {
            return Ok(());
        };
        let total = self.limits.total_size;
        if declared.is_some_and(|n| n > total) {
            return Err(total_too_large(total));
        }
        let mut scan = HeaderScan::new(&boundary, Arc::clone(&self.header_limit));
        let stream = body.into_data_stream().map(move |chunk| {
            let chunk = chunk.map_err(BoxError::from)?;
            scan.feed(&chunk)?;
            Ok::<_, BoxError>(chunk)
        });
        // The parser's own per-field limit backs ours (which is exact and names the part):
        // never below it, so ours always answers first.
        let per_part = self.limits.field_size.max(self.limits.file_size);
        let constraints = multer::Constraints::new().size_limit(
            multer::SizeLimit::new()
                .whole_stream(total)
                .per_field(per_part.saturating_add(1)),
        );
        self.source = Source::Reading(multer::Multipart::with_constraints(
            stream,
            boundary,
            constraints,
        ));
        Ok(())
    }
}

/// RFC 2046 section 5.1.1: 1 to 70 characters.
fn valid_boundary(boundary: &str) -> bool {
    (1..=70).contains(&boundary.len())
}

fn error(status: StatusCode, message: impl Into<std::borrow::Cow<'static, str>>) -> HttpError {
    HttpError::with(status, CATEGORY, message)
}

fn too_large(message: String) -> HttpError {
    error(StatusCode::PAYLOAD_TOO_LARGE, message)
}

fn total_too_large(limit: u64) -> HttpError {
    too_large(format!(
        "multipart body exceeds the total size limit of {limit} bytes"
    ))
}

/// The 415 for a body of another media type, naming it (when it is printable and short).
fn unsupported_media_type(received: Option<&str>) -> HttpError {
    let received = received
        .map(crate::header::media_type)
        .filter(|v| !v.is_empty() && v.len() <= 100 && v.bytes().all(|b| b.is_ascii_graphic()));
    let message = match received {
        Some(received) => {
            format!("unsupported media type {received}: expected {MULTIPART_FORM_DATA}")
        }
        None => format!("unsupported media type: expected {MULTIPART_FORM_DATA}"),
    };
    error(StatusCode::UNSUPPORTED_MEDIA_TYPE, message)
}

/// Says on a 415 what the route takes: `Accept-Post` (W3C LDP, registered with IANA) or, on a
/// PATCH, `Accept-Patch` (RFC 5789 section 3.1), as the body parser does for its types.
fn accept_multipart(ctx: &mut Context) {
    let name = if *ctx.method() == http::Method::PATCH {
        HeaderName::from_static("accept-patch")
    } else {
        HeaderName::from_static("accept-post")
    };
    ctx.set_response_header(name, HeaderValue::from_static(MULTIPART_FORM_DATA));
}

/// The answer to a parser error.
fn from_multer(err: &multer::Error) -> HttpError {
    use multer::Error as E;
    match err {
        E::StreamSizeExceeded { limit } => total_too_large(*limit),
        // Only when the handler raised a part limit past the parser's after it started.
        E::FieldSizeExceeded { limit, .. } => too_large(format!(
            "multipart part exceeds the part size limit of {} bytes",
            limit.saturating_sub(1)
        )),
        E::StreamReadFailed(source) if source.is::<HeaderBlockTooLarge>() => {
            too_large(source.to_string())
        }
        E::StreamReadFailed(source) => match source.downcast_ref::<BodyError>() {
            Some(e) if e.is_timeout() => {
                error(StatusCode::REQUEST_TIMEOUT, "request body read timed out")
            }
            _ => {
                tracing::debug!(error = %source, "reading a multipart body failed");
                error(StatusCode::BAD_REQUEST, "failed to read request body")
            }
        },
        E::IncompleteFieldData { .. } | E::IncompleteStream | E::IncompleteHeaders => error(
            StatusCode::BAD_REQUEST,
            "multipart body ends before its closing boundary",
        ),
        E::ReadHeaderFailed(_) | E::DecodeHeaderName { .. } | E::DecodeHeaderValue { .. } => {
            error(StatusCode::BAD_REQUEST, "malformed multipart part headers")
        }
        E::LockFailure => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "multipart parts were read out of order",
        )
        .with_exception(true),
        _ => error(StatusCode::BAD_REQUEST, "malformed multipart body"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_documented_values() {
        let limits = MultipartLimits::default();
        assert_eq!(limits.parts, 100);
        assert_eq!(limits.field_size, 65_536);
        assert_eq!(limits.file_size, 8_388_608);
        assert_eq!(limits.total_size, 16_777_216);
        assert_eq!(limits.header_size, 8_192);
    }

    #[test]
    fn boundaries_are_1_to_70_characters() {
        assert!(valid_boundary("x"));
        assert!(valid_boundary(&"b".repeat(70)));
        assert!(!valid_boundary(""));
        assert!(!valid_boundary(&"b".repeat(71)));
    }

    #[test]
    fn parser_errors_answer_with_their_status() {
        let status = |e: multer::Error| from_multer(&e).status().as_u16();
        assert_eq!(status(multer::Error::StreamSizeExceeded { limit: 10 }), 413);
        assert_eq!(status(multer::Error::IncompleteStream), 400);
        assert_eq!(status(multer::Error::IncompleteHeaders), 400);
        assert_eq!(status(multer::Error::NoBoundary), 400);
        let message = from_multer(&multer::Error::StreamSizeExceeded { limit: 10 });
        assert_eq!(
            message.message(),
            "multipart body exceeds the total size limit of 10 bytes"
        );
    }
}

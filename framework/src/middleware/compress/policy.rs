//! What is worth compressing, by media type.

use crate::header::media_type;
use crate::header::media_type::{contains_ignore_case, starts_with_ignore_case};

/// True for media types worth compressing: text, JavaScript, JSON, XML (SVG included), wasm
/// and fonts. Images, video, archives and the like are compressed already. gRPC
/// (`application/grpc`, `application/grpc+json`, …) never is: it compresses each message
/// itself (`grpc-encoding`), and its status travels in trailers that a whole-body encoder
/// would not carry.
pub(crate) fn is_compressible(content_type: &str) -> bool {
    let mt = media_type(content_type);
    if starts_with_ignore_case(mt, "application/grpc") {
        return false;
    }
    starts_with_ignore_case(mt, "text/")
        || starts_with_ignore_case(mt, "font/")
        || contains_ignore_case(mt, "javascript")
        || contains_ignore_case(mt, "json")
        || contains_ignore_case(mt, "xml")
        || mt.eq_ignore_ascii_case("application/wasm")
        || starts_with_ignore_case(mt, "application/font-")
        || mt.eq_ignore_ascii_case("application/vnd.ms-fontobject")
}

#[cfg(test)]
mod tests;

//! Proactive content negotiation (RFC 9110 section 12.5.1): which of the media types a route
//! can answer with the request's `Accept` prefers.
//!
//! Each offered type takes the quality (`q`) of the most specific media range that matches it
//! (`text/csv` before `text/*` before `*/*`); the offer with the highest quality above zero
//! wins, an earlier offer winning a tie, so the server's order is the order of preference. A
//! request without `Accept` takes the first offer. Media type parameters other than `q`
//! (`charset=utf-8`) are not compared. A range whose `q` does not parse is ignored.

use http::HeaderMap;
use http::header::ACCEPT;

/// The index in `offered` (media types such as `application/json` or
/// `text/csv; charset=utf-8`, most preferred first) of the one the request's `Accept` prefers;
/// `None` when `Accept` rules every one out.
///
/// ```
/// use framework::negotiation::preferred;
/// use http::{HeaderMap, HeaderValue, header::ACCEPT};
///
/// let mut headers = HeaderMap::new();
/// let offered = ["application/json", "text/csv"];
/// assert_eq!(preferred(&headers, &offered), Some(0));
/// headers.insert(ACCEPT, HeaderValue::from_static("text/csv, application/json;q=0.5"));
/// assert_eq!(preferred(&headers, &offered), Some(1));
/// headers.insert(ACCEPT, HeaderValue::from_static("text/html"));
/// assert_eq!(preferred(&headers, &offered), None);
/// ```
pub fn preferred(headers: &HeaderMap, offered: &[&str]) -> Option<usize> {
    let mut accepts = headers.get_all(ACCEPT).iter().peekable();
    if accepts.peek().is_none() {
        return (!offered.is_empty()).then_some(0);
    }
    let ranges: Vec<Range<'_>> = accepts
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(Range::parse)
        .collect();
    let mut best: Option<(usize, f32)> = None;
    for (index, offer) in offered.iter().enumerate() {
        let Some((kind, subtype)) = essence(offer) else {
            continue;
        };
        let quality = ranges
            .iter()
            .filter(|range| range.matches(kind, subtype))
            .max_by_key(|range| range.specificity())
            .map_or(0.0, |range| range.quality);
        if quality > 0.0 && best.is_none_or(|(_, q)| quality > q) {
            best = Some((index, quality));
        }
    }
    best.map(|(index, _)| index)
}

/// `type` and `subtype` of a media type, without parameters and surrounding space.
fn essence(media: &str) -> Option<(&str, &str)> {
    let essence = media.split(';').next()?.trim();
    let (kind, subtype) = essence.split_once('/')?;
    let (kind, subtype) = (kind.trim(), subtype.trim());
    (!kind.is_empty() && !subtype.is_empty()).then_some((kind, subtype))
}

/// One media range of `Accept`.
struct Range<'a> {
    kind: &'a str,
    subtype: &'a str,
    quality: f32,
}

impl<'a> Range<'a> {
    fn parse(text: &'a str) -> Option<Self> {
        let mut parts = text.split(';');
        let (kind, subtype) = essence(parts.next()?)?;
        let mut quality = 1.0;
        for param in parts {
            let Some((name, value)) = param.split_once('=') else {
                continue;
            };
            if name.trim().eq_ignore_ascii_case("q") {
                quality = value
                    .trim()
                    .parse::<f32>()
                    .ok()
                    .filter(|q| (0.0..=1.0).contains(q))?;
            }
        }
        Some(Self {
            kind,
            subtype,
            quality,
        })
    }

    fn matches(&self, kind: &str, subtype: &str) -> bool {
        (self.kind == "*" || self.kind.eq_ignore_ascii_case(kind))
            && (self.subtype == "*" || self.subtype.eq_ignore_ascii_case(subtype))
    }

    /// `*/*` 0, `type/*` 1, `type/subtype` 2.
    fn specificity(&self) -> u8 {
        u8::from(self.kind != "*") + u8::from(self.subtype != "*")
    }
}

/// The quality the request's `Accept-Encoding` gives the content coding `coding` (RFC 9110
/// section 12.5.3), from 0 (refused) to 1: its own entry, else the `*` entry, else 0. No
/// header at all also gives 0: a client that did not ask gets no compressed body, whatever the
/// RFC allows. What the compress middleware and the static files choose a coding by.
///
/// ```
/// use framework::negotiation::encoding_quality;
/// use http::{HeaderMap, HeaderValue, header::ACCEPT_ENCODING};
///
/// let mut headers = HeaderMap::new();
/// headers.insert(ACCEPT_ENCODING, HeaderValue::from_static("br;q=0.9, *;q=0.1, gzip;q=0"));
/// assert_eq!(encoding_quality(&headers, "br"), 0.9);
/// assert_eq!(encoding_quality(&headers, "zstd"), 0.1);
/// assert_eq!(encoding_quality(&headers, "gzip"), 0.0);
/// ```
pub fn encoding_quality(headers: &HeaderMap, coding: &str) -> f32 {
    let mut wildcard = None;
    for entry in headers
        .get_all(http::header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
    {
        let mut parts = entry.split(';');
        let name = parts.next().unwrap_or("").trim();
        let q = parts
            .filter_map(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .or_else(|| p.trim().strip_prefix("Q="))
            })
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0)
            .clamp(0.0, 1.0);
        if name.eq_ignore_ascii_case(coding) {
            return q;
        }
        if name == "*" {
            wildcard = Some(q);
        }
    }
    wildcard.unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn pick(accept: &str, offered: &[&str]) -> Option<usize> {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_str(accept).unwrap());
        preferred(&headers, offered)
    }

    #[test]
    fn the_most_specific_range_gives_each_offer_its_quality() {
        let offered = ["application/json; charset=utf-8", "text/csv"];
        assert_eq!(pick("*/*", &offered), Some(0));
        assert_eq!(pick("text/*", &offered), Some(1));
        assert_eq!(pick("TEXT/CSV", &offered), Some(1));
        assert_eq!(
            pick("text/csv;q=0.5, application/json;q=0.9", &offered),
            Some(0)
        );
        assert_eq!(
            pick("text/csv;q=0.9, application/json;q=0.5", &offered),
            Some(1)
        );
        // A tie goes to the server's first choice.
        assert_eq!(pick("text/csv, application/json", &offered), Some(0));
        // `*/*` lets JSON in at its own quality, below the explicit CSV.
        assert_eq!(pick("text/csv, */*;q=0.1", &offered), Some(1));
        // The specific range's q=0 beats the wildcard's 1.
        assert_eq!(pick("*/*, application/json;q=0", &offered), Some(1));
        assert_eq!(pick("text/html", &offered), None);
        assert_eq!(pick("text/csv;q=0, application/json;q=0", &offered), None);
        // A range whose q does not parse is ignored.
        assert_eq!(pick("text/csv;q=high, application/json", &offered), Some(0));
        assert_eq!(pick("text/csv;q=2", &offered), None);
    }

    fn encodings(value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::ACCEPT_ENCODING,
            HeaderValue::from_static(value),
        );
        headers
    }

    #[test]
    fn accept_encoding() {
        let h = encodings("gzip;q=0.5, br, *;q=0.1");
        assert_eq!(encoding_quality(&h, "br"), 1.0);
        assert_eq!(encoding_quality(&h, "gzip"), 0.5);
        assert_eq!(encoding_quality(&h, "zstd"), 0.1);
        let h = encodings("br;q=0, gzip");
        assert_eq!(encoding_quality(&h, "br"), 0.0);
        assert_eq!(encoding_quality(&HeaderMap::new(), "gzip"), 0.0);
        let h = encodings("GZIP; Q=0.8");
        assert_eq!(encoding_quality(&h, "gzip"), 0.8);
    }
}

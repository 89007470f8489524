//! What a cache entry holds, and its byte encoding (the same in every store).
//!
//! ```text
//! version u8 = 1 | kind u8 (0 pass marker, 1 response) | stored_at u64 (ms since the epoch)
//! [response only] status u16 | encoding u8 (0 identity, 1 gzip, 2 br) | headers u16
//!                 { name u16 len, name, value u32 len, value }* | body (the rest)
//! ```
//! All integers big-endian. A value that does not decode (another version, a truncated or
//! foreign value under our key) is treated as a miss.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};

const VERSION: u8 = 1;

/// How a stored body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stored {
    Identity,
    Gzip,
    Brotli,
}

impl Stored {
    pub(crate) fn token(self) -> Option<&'static str> {
        match self {
            Self::Identity => None,
            Self::Gzip => Some("gzip"),
            Self::Brotli => Some("br"),
        }
    }
}

/// A decoded entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    /// Hit-for-pass: the answer for this key was not cacheable; go to the handler.
    Pass,
    /// A stored answer.
    Response {
        stored_at: SystemTime,
        status: StatusCode,
        encoding: Stored,
        headers: HeaderMap,
        body: Bytes,
    },
}

fn millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Entry {
    pub(crate) fn encode(&self, now: SystemTime) -> Bytes {
        let mut out = BytesMut::new();
        out.put_u8(VERSION);
        match self {
            Entry::Pass => {
                out.put_u8(0);
                out.put_u64(millis(now));
            }
            Entry::Response {
                stored_at,
                status,
                encoding,
                headers,
                body,
            } => {
                out.put_u8(1);
                out.put_u64(millis(*stored_at));
                out.put_u16(status.as_u16());
                out.put_u8(match encoding {
                    Stored::Identity => 0,
                    Stored::Gzip => 1,
                    Stored::Brotli => 2,
                });
                let count = u16::try_from(headers.len()).unwrap_or(u16::MAX);
                out.put_u16(count);
                for (name, value) in headers.iter().take(usize::from(count)) {
                    out.put_u16(u16::try_from(name.as_str().len()).unwrap_or(0));
                    out.put_slice(name.as_str().as_bytes());
                    out.put_u32(u32::try_from(value.len()).unwrap_or(0));
                    out.put_slice(value.as_bytes());
                }
                out.put_slice(body);
            }
        }
        out.freeze()
    }

    pub(crate) fn decode(mut raw: Bytes) -> Option<Self> {
        if raw.remaining() < 10 || raw.get_u8() != VERSION {
            return None;
        }
        let kind = raw.get_u8();
        let stored_at = UNIX_EPOCH + Duration::from_millis(raw.get_u64());
        if kind == 0 {
            return Some(Entry::Pass);
        }
        if kind != 1 || raw.remaining() < 5 {
            return None;
        }
        let status = StatusCode::from_u16(raw.get_u16()).ok()?;
        let encoding = match raw.get_u8() {
            0 => Stored::Identity,
            1 => Stored::Gzip,
            2 => Stored::Brotli,
            _ => return None,
        };
        let count = raw.get_u16();
        let mut headers = HeaderMap::with_capacity(usize::from(count));
        for _ in 0..count {
            if raw.remaining() < 2 {
                return None;
            }
            let len = usize::from(raw.get_u16());
            if raw.remaining() < len + 4 {
                return None;
            }
            let name = HeaderName::from_bytes(&raw.split_to(len)).ok()?;
            let len = usize::try_from(raw.get_u32()).ok()?;
            if raw.remaining() < len {
                return None;
            }
            let value = HeaderValue::from_maybe_shared(raw.split_to(len)).ok()?;
            headers.append(name, value);
        }
        Some(Entry::Response {
            stored_at,
            status,
            encoding,
            headers,
            body: raw,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_garbage() {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        headers.append("vary", HeaderValue::from_static("Accept-Encoding"));
        headers.append("x-multi", HeaderValue::from_static("a"));
        headers.append("x-multi", HeaderValue::from_static("b"));
        let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        let entry = Entry::Response {
            stored_at: at,
            status: StatusCode::OK,
            encoding: Stored::Gzip,
            headers,
            body: Bytes::from_static(b"\x1f\x8bbody"),
        };
        let raw = entry.encode(at);
        assert_eq!(Entry::decode(raw.clone()), Some(entry));
        assert_eq!(Entry::decode(Entry::Pass.encode(at)), Some(Entry::Pass));
        for cut in [0, 1, 5, 12, 15, 20] {
            let _ = Entry::decode(raw.slice(..cut.min(raw.len())));
        }
        assert_eq!(
            Entry::decode(Bytes::from_static(b"not an entry at all")),
            None
        );
        assert_eq!(Entry::decode(raw.slice(..20)), None);
    }
}

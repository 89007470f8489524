//! The params of one match, kept as byte ranges into the path and decoded on access.

use std::borrow::Cow;

use route_pattern::MAX_PARAMS;

/// Route params of one match: byte ranges into the looked-up path, in the order of the
/// matched route's `param_names()`. The names stay with the route.
#[derive(Debug, Clone, Default)]
pub struct Params {
    ranges: [(u32, u32); MAX_PARAMS],
    len: u8,
}

impl Params {
    pub(super) fn push(&mut self, start: usize, end: usize) {
        // The router refuses patterns with more than MAX_PARAMS params, and paths longer than
        // u32::MAX cannot reach here (hyper caps the request line far below that).
        self.ranges[usize::from(self.len)] = (start as u32, end as u32);
        self.len += 1;
    }

    pub(super) fn pop(&mut self) {
        self.len -= 1;
    }

    /// Keeps the first `len` params, dropping those pushed since `len()` returned it.
    pub(super) fn truncate(&mut self, len: usize) {
        debug_assert!(len <= self.len());
        // No more than the current length, so at most MAX_PARAMS.
        self.len = len as u8;
    }

    /// Number of params.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// True when the route had no params.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The raw (undecoded) value at `index` within `path`.
    pub fn raw<'p>(&self, path: &'p str, index: usize) -> Option<&'p str> {
        let (start, end) = *self.ranges[..self.len()].get(index)?;
        path.get(start as usize..end as usize)
    }
}

/// Percent-decodes a param value; borrowed when there is nothing to decode.
pub fn decode_param(raw: &str) -> Cow<'_, str> {
    percent_encoding::percent_decode_str(raw).decode_utf8_lossy()
}

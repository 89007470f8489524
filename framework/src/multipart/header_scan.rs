//! The limit on a part's header block, checked on the body's bytes as they arrive.
//!
//! The parser (`multer`) pulls every chunk the connection has ready before it looks for the
//! end of a part's headers, so how many of the bytes it holds are headers cannot be told from
//! outside it: a header block that arrives in one read with the part before it is already
//! parsed when the parser first says it waits. [`HeaderScan`] follows the body itself: it
//! finds each delimiter (`CRLF--boundary`, RFC 2046 section 5.1.1) in the bytes between them
//! with `memchr`'s substring search, and counts the bytes from the boundary line to the empty
//! line that ends the part's headers, so the limit holds whatever the read boundaries.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use memchr::memmem::Finder;

/// A part's header block passed the limit: the body stream fails with it, and the parser
/// hands it back as the read error.
#[derive(Debug)]
pub(super) struct HeaderBlockTooLarge {
    pub(super) limit: u64,
}

impl std::fmt::Display for HeaderBlockTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "multipart part headers exceed the header size limit of {} bytes",
            self.limit
        )
    }
}

impl std::error::Error for HeaderBlockTooLarge {}

/// Where in the body the bytes seen so far end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the first boundary: the preamble, `len` bytes so far (counted with the first
    /// part's headers, as the limit's documentation says).
    Preamble { len: u64 },
    /// In a part's data, looking for the next delimiter.
    Data,
    /// In a boundary line and the header block after it: `len` bytes of them so far,
    /// `after` bytes since the delimiter (up to 2: `--` closes the body), whether the
    /// boundary line is still going on (`in_line`), and how much of its line break, or of the
    /// empty line that ends the headers (`CRLF CRLF`, looked for only after the boundary
    /// line, as the parser looks for it), was just seen.
    Head {
        len: u64,
        after: u8,
        ending: u8,
        in_line: bool,
    },
    /// After the closing delimiter: the epilogue is not looked at.
    Closed,
}

/// Follows a `multipart/form-data` body's bytes and fails when one part's header block (its
/// boundary line included; for the first part, any preamble too) passes the limit.
pub(super) struct HeaderScan {
    /// `--boundary`: the first delimiter may start the body, without the line break.
    first: Finder<'static>,
    /// `CRLF--boundary`.
    next: Finder<'static>,
    /// The last bytes that may begin a delimiter the next chunk completes (fewer than the
    /// delimiter's length).
    tail: Vec<u8>,
    /// The limit in force: [`Multipart::with_limits`](super::Multipart::with_limits) may
    /// change it for the parts that follow.
    limit: Arc<AtomicU64>,
    state: State,
}

impl HeaderScan {
    pub(super) fn new(boundary: &str, limit: Arc<AtomicU64>) -> Self {
        let next = format!("\r\n--{boundary}").into_bytes();
        Self {
            first: Finder::new(&next[2..]).into_owned(),
            next: Finder::new(&next).into_owned(),
            tail: Vec::with_capacity(next.len()),
            limit,
            state: State::Preamble { len: 0 },
        }
    }

    /// Follows the next `bytes` of the body.
    pub(super) fn feed(&mut self, mut bytes: &[u8]) -> Result<(), HeaderBlockTooLarge> {
        while !bytes.is_empty() {
            match self.state {
                State::Closed => return Ok(()),
                State::Preamble { len } => {
                    match self.find(bytes, true) {
                        Some(end) => {
                            self.state = State::Head {
                                len: len + end as u64,
                                after: 0,
                                ending: 0,
                                in_line: true,
                            };
                            self.check(len + end as u64)?;
                            bytes = &bytes[end..];
                        }
                        None => {
                            // The first part's header block holds all of it at least.
                            let len = len + bytes.len() as u64;
                            self.check(len)?;
                            self.state = State::Preamble { len };
                            return Ok(());
                        }
                    }
                }
                State::Data => match self.find(bytes, false) {
                    Some(end) => {
                        // The line break before `--` ends the part's data.
                        let boundary_line = self.next.needle().len() as u64 - 2;
                        self.state = State::Head {
                            len: boundary_line,
                            after: 0,
                            ending: 0,
                            in_line: true,
                        };
                        bytes = &bytes[end..];
                    }
                    None => return Ok(()),
                },
                State::Head {
                    len,
                    after,
                    ending,
                    in_line,
                } => {
                    let consumed = self.head(bytes, len, after, ending, in_line)?;
                    bytes = &bytes[consumed..];
                }
            }
        }
        Ok(())
    }

    /// In a boundary line and header block: how many of `bytes` belong to it.
    fn head(
        &mut self,
        bytes: &[u8],
        mut len: u64,
        mut after: u8,
        mut ending: u8,
        mut in_line: bool,
    ) -> Result<usize, HeaderBlockTooLarge> {
        for (at, &byte) in bytes.iter().enumerate() {
            len += 1;
            if after < 2 {
                after += 1;
                if byte != b'-' {
                    // Transport padding or the line break: a part follows.
                    after = 2;
                } else if after == 2 {
                    self.state = State::Closed;
                    return Ok(at + 1);
                }
            }
            ending = if in_line {
                // The boundary line (and any transport padding) ends at its line break; the
                // headers' empty line is looked for from the next byte on. A part with no
                // header line is thus not ended by `--bnd CRLF CRLF`: the parser does not end
                // it there either, and keeps reading what follows as headers.
                match (byte, ending) {
                    (b'\n', 1) => {
                        in_line = false;
                        0
                    }
                    (b'\r', _) => 1,
                    _ => 0,
                }
            } else {
                match (byte, ending) {
                    (b'\r', 2) => 3,
                    (b'\r', _) => 1,
                    (b'\n', 1) => 2,
                    (b'\n', 3) => 4,
                    _ => 0,
                }
            };
            self.check(len)?;
            if ending == 4 {
                self.state = State::Data;
                return Ok(at + 1);
            }
        }
        self.state = State::Head {
            len,
            after,
            ending,
            in_line,
        };
        Ok(bytes.len())
    }

    /// Where the first delimiter in what the tail and `bytes` hold ends, as an offset into
    /// `bytes`; `None` (the tail updated) when there is none yet.
    fn find(&mut self, bytes: &[u8], first: bool) -> Option<usize> {
        let finder = if first { &self.first } else { &self.next };
        let needle = finder.needle().len();
        if !self.tail.is_empty() {
            // A delimiter begun at the end of the last chunk: the tail holds no whole one.
            let joined_from = self.tail.len();
            self.tail
                .extend_from_slice(&bytes[..bytes.len().min(needle - 1)]);
            if let Some(at) = finder.find(&self.tail) {
                self.tail.clear();
                return Some(at + needle - joined_from);
            }
            self.tail.truncate(joined_from);
        }
        if let Some(at) = finder.find(bytes) {
            self.tail.clear();
            return Some(at + needle);
        }
        // Keep what may begin the next delimiter: the last `needle - 1` bytes seen.
        let keep = needle - 1;
        if bytes.len() >= keep {
            self.tail.clear();
            self.tail.extend_from_slice(&bytes[bytes.len() - keep..]);
        } else {
            self.tail.extend_from_slice(bytes);
            let excess = self.tail.len().saturating_sub(keep);
            self.tail.drain(..excess);
        }
        None
    }

    fn check(&self, len: u64) -> Result<(), HeaderBlockTooLarge> {
        let limit = self.limit.load(Ordering::Relaxed);
        if len > limit {
            Err(HeaderBlockTooLarge { limit })
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body with a preamble of `preamble` bytes, then parts whose extra header is `pads`
    /// bytes long each.
    fn body(preamble: usize, pads: &[usize]) -> Vec<u8> {
        let mut body = "p".repeat(preamble).into_bytes();
        for (i, pad) in pads.iter().enumerate() {
            if i > 0 || preamble > 0 {
                body.extend_from_slice(b"\r\n");
            }
            body.extend_from_slice(
                format!(
                    "--bnd\r\ncontent-disposition: form-data; name=\"f{i}\"\r\nx-pad: {}\r\n\r\n",
                    "q".repeat(*pad)
                )
                .as_bytes(),
            );
            // Data that looks like a delimiter but is not one.
            body.extend_from_slice(&[b'd'; 1000]);
            body.extend_from_slice(b"\r\n--bn\r\n-- bnd");
        }
        body.extend_from_slice(b"\r\n--bnd--\r\nepilogue\r\n\r\n--bnd\r\n");
        body
    }

    /// The header block of part `i` (boundary line to the empty line) for `pad`.
    fn block(i: usize, pad: usize) -> usize {
        format!(
            "--bnd\r\ncontent-disposition: form-data; name=\"f{i}\"\r\nx-pad: {}\r\n\r\n",
            "q".repeat(pad)
        )
        .len()
    }

    fn scan(body: &[u8], limit: u64, piece: usize) -> Result<(), HeaderBlockTooLarge> {
        let mut scan = HeaderScan::new("bnd", Arc::new(AtomicU64::new(limit)));
        for chunk in body.chunks(piece) {
            scan.feed(chunk)?;
        }
        Ok(())
    }

    #[test]
    fn the_limit_holds_at_its_boundary_whatever_the_pieces() {
        let pads = [10, 500, 20];
        let largest = block(1, 500) as u64;
        let body = body(0, &pads);
        for piece in [1, 2, 3, 7, 64, 1000, 4096, body.len()] {
            assert!(scan(&body, largest, piece).is_ok(), "piece {piece}");
            let err = scan(&body, largest - 1, piece).expect_err("one byte over");
            assert_eq!(err.limit, largest - 1, "piece {piece}");
        }
    }

    #[test]
    fn the_first_part_counts_its_preamble_and_the_epilogue_is_not_looked_at() {
        let first = 100 + 2 + block(0, 10) as u64;
        let body = body(100, &[10]);
        for piece in [1, 5, body.len()] {
            assert!(scan(&body, first, piece).is_ok(), "piece {piece}");
            assert!(scan(&body, first - 1, piece).is_err(), "piece {piece}");
        }
        // A part without a header line: what follows its boundary line is read as headers
        // until an empty line, as the parser reads it, so it passes the limit as it grows.
        let mut headless = b"--bnd\r\n\r\n".to_vec();
        headless.extend(std::iter::repeat_n(b'd', 10_000));
        assert!(scan(&headless, 8192, 10_000).is_err());
        assert!(scan(&headless, 8192, 7).is_err());
        // With its empty line after the boundary line's break, it ends there.
        let mut empty = b"--bnd\r\n\r\n\r\n".to_vec();
        empty.extend(std::iter::repeat_n(b'd', 10_000));
        assert!(scan(&empty, 64, 10_000).is_ok());
        // A preamble with no boundary at all passes the limit as it grows.
        let endless = vec![b'p'; 10_000];
        assert!(scan(&endless, 8192, 10_000).is_err());
        assert!(scan(&endless, 8192, 3).is_err());
    }
}

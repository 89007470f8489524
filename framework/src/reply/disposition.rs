//! `Content-Disposition` (RFC 6266) with a file name any client reads: an ASCII `filename`
//! for old clients and, when the name needs more, `filename*` in UTF-8 (RFC 8187).

use http::HeaderValue;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Whether the client shows a file or saves it: the type of a `Content-Disposition` header.
///
/// ```
/// use framework::reply::Disposition;
///
/// assert_eq!(
///     Disposition::Attachment.header("report.pdf"),
///     "attachment; filename=\"report.pdf\""
/// );
/// assert_eq!(
///     Disposition::Attachment.header("Übersicht 2024.pdf"),
///     "attachment; filename=\"_bersicht 2024.pdf\"; filename*=UTF-8''%C3%9Cbersicht%202024.pdf"
/// );
/// assert_eq!(Disposition::Inline.header(""), "inline");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// `inline`: shown in the browser when it can, saved under the name otherwise.
    Inline,
    /// `attachment`: saved (downloaded) under the name.
    Attachment,
}

/// What RFC 8187 section 3.2.1 lets stand in an `ext-value` (`attr-char`); the rest is
/// percent-encoded, UTF-8 byte by byte.
const NOT_ATTR_CHAR: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'!')
    .remove(b'#')
    .remove(b'$')
    .remove(b'&')
    .remove(b'+')
    .remove(b'-')
    .remove(b'.')
    .remove(b'^')
    .remove(b'_')
    .remove(b'`')
    .remove(b'|')
    .remove(b'~');

/// Whether `c` is a character a file name must not carry although it is not a control
/// character: the zero-width and direction marks U+200B to U+200F, the bidirectional
/// embeddings and overrides U+202A to U+202E and isolates U+2066 to U+2069, the Arabic letter
/// mark U+061C, the word joiner and invisible operators U+2060 to U+2064, and the byte order
/// mark U+FEFF. A right-to-left override shows `invoice\u{202e}gnp.exe` as `invoiceexe.png`,
/// and invisible characters make two names that look the same differ.
pub(crate) fn is_invisible_or_bidi(c: char) -> bool {
    matches!(
        c,
        '\u{061C}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{FEFF}'
    )
}

impl Disposition {
    /// The header for a file called `file_name`: only its last path component counts (a name
    /// with `/` or `\` keeps what follows the last one), and control characters, invisible
    /// characters and bidirectional controls (a right-to-left override would show
    /// `invoice\u{202e}gnp.exe` as `invoiceexe.png`) become `_`.
    /// `filename="…"` carries an ASCII form in which every other character, `"`, `\` and `%`
    /// (which some clients decode, RFC 6266 appendix D) become `_`; when that form differs
    /// from the name, `filename*=UTF-8''…` carries the name itself, percent-encoded, which
    /// clients that know it prefer. An empty name gives the type alone.
    pub fn header(self, file_name: &str) -> HeaderValue {
        let kind = match self {
            Disposition::Inline => "inline",
            Disposition::Attachment => "attachment",
        };
        let name: String = file_name
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or_default()
            .chars()
            .map(|c| {
                if c.is_control() || is_invisible_or_bidi(c) {
                    '_'
                } else {
                    c
                }
            })
            .collect();
        if name.is_empty() {
            return HeaderValue::from_static(kind);
        }
        let ascii: String = name
            .chars()
            .map(|c| match c {
                '"' | '\\' | '%' => '_',
                c if c.is_ascii() => c,
                _ => '_',
            })
            .collect();
        let mut value = format!("{kind}; filename=\"{ascii}\"");
        if ascii != name {
            value.push_str("; filename*=UTF-8''");
            value.extend(utf8_percent_encode(&name, NOT_ATTR_CHAR));
        }
        // Printable ASCII only (controls were replaced, the rest encoded): always valid.
        HeaderValue::try_from(value).unwrap_or_else(|_| HeaderValue::from_static(kind))
    }
}

#[cfg(test)]
mod tests {
    use super::Disposition::{Attachment, Inline};

    #[test]
    fn names_of_every_kind() {
        for (name, expected) in [
            ("a.txt", "attachment; filename=\"a.txt\""),
            ("", "attachment"),
            (
                "naïve café.txt",
                "attachment; filename=\"na_ve caf_.txt\"; filename*=UTF-8''na%C3%AFve%20caf%C3%A9.txt",
            ),
            (
                "say \"hi\".txt",
                "attachment; filename=\"say _hi_.txt\"; filename*=UTF-8''say%20%22hi%22.txt",
            ),
            (
                "100%25.txt",
                "attachment; filename=\"100_25.txt\"; filename*=UTF-8''100%2525.txt",
            ),
            ("../../etc/passwd", "attachment; filename=\"passwd\""),
            (
                "C:\\Users\\x\\evil.exe",
                "attachment; filename=\"evil.exe\"",
            ),
            ("dir/", "attachment"),
            (
                "a\r\nSet-Cookie: x=y",
                "attachment; filename=\"a__Set-Cookie: x=y\"",
            ),
            (
                "日本.pdf",
                "attachment; filename=\"__.pdf\"; filename*=UTF-8''%E6%97%A5%E6%9C%AC.pdf",
            ),
            ("a;b=c.txt", "attachment; filename=\"a;b=c.txt\""),
        ] {
            assert_eq!(Attachment.header(name), expected, "{name:?}");
        }
        assert_eq!(Inline.header("x.png"), "inline; filename=\"x.png\"");
    }
}

//! Turning the raw wildcard of a request path into a safe relative file path.
//!
//! The input is still percent-encoded and is decoded exactly once, segment by segment, so
//! `%252e%252e` stays the literal name `%2e%2e` and never becomes `..`. Anything that could
//! name a file outside the root on any platform is refused rather than normalised: `.` and `..`
//! segments, empty segments (`//`, a leading `/`), an encoded `/` or a `\` inside a segment,
//! NUL and other control characters, `:` (drive letters, NTFS streams), invalid UTF-8
//! (overlong encodings included), names ending in `.` or a space (Windows strips them), and
//! Windows device names (`CON`, `nul.txt`, `COM1`, …). Symlinks are checked by the source,
//! after canonicalising.

use percent_encoding::percent_decode_str;

/// What a raw path turned out to be.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SafePath {
    /// A relative path of plain names joined by `/`; `""` is the root. `dir` is true when the
    /// request ended in `/`.
    File { path: String, dir: bool },
    /// A path with a segment that starts with `.` (dot files are hidden unless allowed).
    Hidden { path: String, dir: bool },
}

/// The raw path escapes the root or is not a portable file name.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct OutOfPath;

const DEVICE_NAMES: [&str; 6] = ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"];

fn is_device_name(segment: &str) -> bool {
    let stem = segment.split('.').next().unwrap_or("");
    let stem = stem.trim_end();
    if DEVICE_NAMES.iter().any(|d| stem.eq_ignore_ascii_case(d)) {
        return true;
    }
    // COM0-COM9 and LPT0-LPT9, superscript digits included.
    let upper = stem.to_ascii_uppercase();
    let rest = upper
        .strip_prefix("COM")
        .or_else(|| upper.strip_prefix("LPT"));
    rest.is_some_and(|r| {
        matches!(
            r,
            "0" | "1" | "2" | "3" | "4" | "5" | "6" | "7" | "8" | "9" | "¹" | "²" | "³"
        )
    })
}

fn check_segment(decoded: &str) -> Result<(), OutOfPath> {
    if decoded == "."
        || decoded == ".."
        || decoded.ends_with('.')
        || decoded.ends_with(' ')
        || decoded
            .chars()
            .any(|c| c == '/' || c == '\\' || c == ':' || c.is_control())
        || is_device_name(decoded)
    {
        return Err(OutOfPath);
    }
    Ok(())
}

/// Checks and decodes the raw (percent-encoded) wildcard value of a request path.
pub(crate) fn resolve_static_path(raw: &str) -> Result<SafePath, OutOfPath> {
    if raw.contains('\\') {
        return Err(OutOfPath);
    }
    let (body, dir) = match raw.strip_suffix('/') {
        Some(body) => (body, true),
        None => (raw, raw.is_empty()),
    };
    let mut path = String::with_capacity(body.len());
    let mut hidden = false;
    if !body.is_empty() {
        for segment in body.split('/') {
            if segment.is_empty() {
                return Err(OutOfPath);
            }
            let decoded = percent_decode_str(segment)
                .decode_utf8()
                .map_err(|_| OutOfPath)?;
            check_segment(&decoded)?;
            hidden |= decoded.starts_with('.');
            if !path.is_empty() {
                path.push('/');
            }
            path.push_str(&decoded);
        }
    }
    Ok(if hidden {
        SafePath::Hidden { path, dir }
    } else {
        SafePath::File { path, dir }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str) -> Result<SafePath, OutOfPath> {
        Ok(SafePath::File {
            path: path.to_owned(),
            dir: false,
        })
    }

    #[test]
    fn plain_paths() {
        assert_eq!(resolve_static_path("a/b.txt"), file("a/b.txt"));
        assert_eq!(resolve_static_path("a%20b.txt"), file("a b.txt"));
        assert_eq!(resolve_static_path("caf%C3%A9.txt"), file("café.txt"));
        // A literal percent sign, encoded once, stays what it names.
        assert_eq!(resolve_static_path("%252e%252e"), file("%2e%2e"));
        assert_eq!(
            resolve_static_path(""),
            Ok(SafePath::File {
                path: String::new(),
                dir: true
            })
        );
        assert_eq!(
            resolve_static_path("docs/"),
            Ok(SafePath::File {
                path: "docs".into(),
                dir: true
            })
        );
        assert_eq!(
            resolve_static_path(".well-known/x"),
            Ok(SafePath::Hidden {
                path: ".well-known/x".into(),
                dir: false
            })
        );
    }

    #[test]
    fn hostile_paths() {
        for raw in [
            "..",
            "../etc/passwd",
            "a/../../etc/passwd",
            "%2e%2e/etc/passwd",
            "%2E%2E/etc/passwd",
            ".%2e/x",
            "..%2fetc%2fpasswd",
            "a%2f..%2f..%2fx",
            "a%2Fb",
            "..\\etc\\passwd",
            "a\\b",
            "%5c..%5cx",
            "/etc/passwd",
            "%2fetc%2fpasswd",
            "a//b",
            "a%00.txt",
            "%00",
            "%c0%ae%c0%ae/x",
            "%e0%80%ae",
            "%ff",
            "C:/Windows/win.ini",
            "c%3a%5cwindows",
            "file.txt.",
            "file.txt%20",
            "CON",
            "nul",
            "aux.txt",
            "COM1.log",
            "lpt9",
            "./a",
            "a/./b",
            "file%0a.txt",
            "x::$DATA",
        ] {
            assert_eq!(resolve_static_path(raw), Err(OutOfPath), "{raw}");
        }
    }
}

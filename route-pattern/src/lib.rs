//! The route pattern grammar, in one place: what the framework's router accepts, what its
//! `#[controller]` macro refuses at the path string, how a prefix and a path join, how the
//! OpenAPI document writes a path, and how the typed client fills one in. No dependencies, so
//! the proc-macro crate and the framework both build on it (as matchit is for axum).
//!
//! A pattern is `/`-separated segments, each
//! - static text (no `{`, `}` or `*` in it),
//! - a param, `:name` or `{name}`, whose name is letters, digits or `_`, matching one segment,
//! - or, as the last segment only, a wildcard, `*name` or a bare `*` (named [`WILDCARD`]),
//!   matching the rest of the path.
//!
//! A pattern has at most [`MAX_PARAMS`] params, the wildcard counted as one.
//!
//! ```
//! use route_pattern::{Pattern, Segment, join, openapi_template};
//!
//! let full = join("/users/", "/:id/files/*path");
//! assert_eq!(full, "/users/:id/files/*path");
//! let pattern = Pattern::parse(&full).unwrap();
//! assert_eq!(pattern.param_names().collect::<Vec<_>>(), ["id", "path"]);
//! assert_eq!(pattern.segments()[1], Segment::Param("id"));
//! assert_eq!(openapi_template(&full), "/users/{id}/files/{path}");
//!
//! let mut target = String::new();
//! pattern
//!     .fill(&mut target, |name| match name {
//!         "id" => Some("ann lee"),
//!         _ => Some("2024/report.pdf"),
//!     })
//!     .unwrap();
//! assert_eq!(target, "/users/ann%20lee/files/2024/report.pdf");
//! ```

#![forbid(unsafe_code)]

use std::fmt;

/// How many params (a wildcard counts as one) one pattern may have.
pub const MAX_PARAMS: usize = 8;

/// The name of a bare `*` wildcard's value, wherever a name is needed: in
/// [`Pattern::param_names`], in the router's params, in the OpenAPI template (`{*}`) and in
/// the client's [`Pattern::fill`].
pub const WILDCARD: &str = "*";

/// One segment, as written between two `/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment<'a> {
    /// Static text, matched as written.
    Static(&'a str),
    /// A param (`:name`, `{name}`), by name (`""` when it has none: refused by
    /// [`Pattern::parse`]).
    Param(&'a str),
    /// The wildcard (`*name`), by name ([`WILDCARD`] for a bare `*`).
    Wildcard(&'a str),
}

impl<'a> Segment<'a> {
    /// The one reading of a segment: `:n` and `{n}` are a param, `*` and `*n` a wildcard,
    /// anything else static. No checks: [`Pattern::parse`] makes them.
    pub fn of(part: &'a str) -> Self {
        if let Some(name) = part.strip_prefix(':') {
            Segment::Param(name)
        } else if let Some(name) = part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            Segment::Param(name)
        } else if let Some(name) = part.strip_prefix('*') {
            Segment::Wildcard(if name.is_empty() { WILDCARD } else { name })
        } else {
            Segment::Static(part)
        }
    }

    /// The param's or wildcard's name; `None` for static text.
    pub fn name(self) -> Option<&'a str> {
        match self {
            Segment::Static(_) => None,
            Segment::Param(name) | Segment::Wildcard(name) => Some(name),
        }
    }
}

/// A pattern the grammar accepts, split into its segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern<'a> {
    source: &'a str,
    segments: Vec<Segment<'a>>,
}

impl<'a> Pattern<'a> {
    /// Checks `pattern` and splits it: a leading `/`, no `{`, `}` or `*` in static text, the
    /// wildcard last, params named with letters, digits or `_`, at most [`MAX_PARAMS`].
    /// Empty segments (`//`, a trailing `/`) are static `""`.
    pub fn parse(pattern: &'a str) -> Result<Self, PatternError> {
        let Some(rest) = pattern.strip_prefix('/') else {
            return Err(PatternError::MissingLeadingSlash {
                pattern: pattern.to_owned(),
            });
        };
        let parts: Vec<&str> = rest.split('/').collect();
        let mut segments = Vec::with_capacity(parts.len());
        for (i, part) in parts.iter().enumerate() {
            let segment = Segment::of(part);
            let bad = |make: fn(String, String) -> PatternError| {
                Err(make(pattern.to_owned(), (*part).to_owned()))
            };
            match segment {
                Segment::Wildcard(_) if i + 1 != parts.len() => {
                    return Err(PatternError::WildcardNotLast {
                        pattern: pattern.to_owned(),
                    });
                }
                Segment::Static(text) if text.contains(['{', '}', '*']) => {
                    return bad(|pattern, segment| PatternError::BadSegment { pattern, segment });
                }
                Segment::Param("") => {
                    return bad(|pattern, segment| PatternError::UnnamedParam { pattern, segment });
                }
                Segment::Param(name) if !is_param_name(name) => {
                    return bad(|pattern, segment| PatternError::InvalidParamName {
                        pattern,
                        segment,
                    });
                }
                _ => segments.push(segment),
            }
        }
        let count = segments.iter().filter(|s| s.name().is_some()).count();
        if count > MAX_PARAMS {
            return Err(PatternError::TooManyParams {
                pattern: pattern.to_owned(),
                count,
            });
        }
        Ok(Pattern {
            source: pattern,
            segments,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &'a str {
        self.source
    }

    /// Its segments, after the leading `/`.
    pub fn segments(&self) -> &[Segment<'a>] {
        &self.segments
    }

    /// The names of its params and wildcard, in order ([`WILDCARD`] for a bare `*`).
    pub fn param_names(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.segments.iter().filter_map(|s| s.name())
    }

    /// True when it has no param and no wildcard.
    pub fn is_static(&self) -> bool {
        self.segments
            .iter()
            .all(|s| matches!(s, Segment::Static(_)))
    }

    /// The path for these values: `value` is asked each param's and the wildcard's value by
    /// name, a param's value is percent-encoded as one segment (everything but unreserved
    /// characters and the sub-delimiters a segment may hold, RFC 3986 §3.3), the wildcard's
    /// keeps its `/`; static text is written as it is.
    pub fn fill<'v>(
        &self,
        out: &mut String,
        mut value: impl FnMut(&str) -> Option<&'v str>,
    ) -> Result<(), MissingParam<'a>> {
        for segment in &self.segments {
            out.push('/');
            match *segment {
                Segment::Static(text) => out.push_str(text),
                Segment::Param(name) | Segment::Wildcard(name) => {
                    let Some(text) = value(name) else {
                        return Err(MissingParam { name });
                    };
                    let keep_slash = matches!(segment, Segment::Wildcard(_));
                    escape(out, text, keep_slash);
                }
            }
        }
        Ok(())
    }
}

/// Whether `name` is a param name: letters, digits or `_`, not empty.
fn is_param_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// Checks a route pattern ([`Pattern::parse`]) without keeping its segments.
pub fn validate(pattern: &str) -> Result<(), PatternError> {
    Pattern::parse(pattern).map(drop)
}

/// Checks a prefix that routes are joined under ([`join`]): `""`, or a pattern without a
/// wildcard (a wildcard would have to be last, and the route's path comes after it).
pub fn validate_prefix(prefix: &str) -> Result<(), PatternError> {
    if prefix.is_empty() {
        return Ok(());
    }
    let pattern = Pattern::parse(prefix)?;
    if pattern
        .segments()
        .iter()
        .any(|s| matches!(s, Segment::Wildcard(_)))
    {
        return Err(PatternError::WildcardNotLast {
            pattern: prefix.to_owned(),
        });
    }
    Ok(())
}

/// A prefix and a route's path joined as the app joins them: the prefix's trailing `/`s
/// dropped, then the path; `""` and `"/"` under a prefix are the prefix itself, and `/` when
/// there is none. No `/` is added between them, and nothing is checked.
///
/// ```
/// use route_pattern::join;
///
/// assert_eq!(join("/users/", "/v1/me"), "/users/v1/me");
/// assert_eq!(join("/users", "/"), "/users");
/// assert_eq!(join("", "/"), "/");
/// ```
pub fn join(prefix: &str, path: &str) -> String {
    let prefix = prefix.trim_end_matches('/');
    if path.is_empty() || path == "/" && !prefix.is_empty() {
        return if prefix.is_empty() {
            "/".to_owned()
        } else {
            prefix.to_owned()
        };
    }
    format!("{prefix}{path}")
}

/// The path as an OpenAPI path template: `:name`, `{name}` and `*name` become `{name}`, a bare
/// `*` becomes `{*}` (the name its value has everywhere, [`WILDCARD`]). Text that is not a
/// valid pattern is converted segment by segment all the same.
pub fn openapi_template(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 4);
    for (i, part) in pattern.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        match Segment::of(part) {
            Segment::Static(text) => out.push_str(text),
            Segment::Param(name) | Segment::Wildcard(name) => {
                out.push('{');
                out.push_str(name);
                out.push('}');
            }
        }
    }
    out
}

/// The names of the params and wildcard of any text, read segment by segment as
/// [`Segment::of`] reads them (for code that must not fail on a pattern already checked, or
/// reported elsewhere).
pub fn param_names(pattern: &str) -> impl Iterator<Item = &str> {
    pattern
        .split('/')
        .filter_map(|part| Segment::of(part).name())
}

/// Writes `text` percent-encoded: controls, non-ASCII bytes and `␠ " # % < > ? [ \ ] ^ `` `
/// { | }` (and `/`, unless `keep_slash`) as `%XX`.
fn escape(out: &mut String, text: &str, keep_slash: bool) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for c in text.chars() {
        let escaped = c as u32 >= 0x7F
            || (c as u32) < 0x20
            || matches!(
                c,
                ' ' | '"'
                    | '#'
                    | '%'
                    | '<'
                    | '>'
                    | '?'
                    | '['
                    | '\\'
                    | ']'
                    | '^'
                    | '`'
                    | '{'
                    | '|'
                    | '}'
            )
            || c == '/' && !keep_slash;
        if !escaped {
            out.push(c);
            continue;
        }
        let mut bytes = [0u8; 4];
        for &b in c.encode_utf8(&mut bytes).as_bytes() {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xF)]));
        }
    }
}

/// Why a route pattern was refused.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternError {
    /// The pattern does not start with `/`.
    MissingLeadingSlash {
        /// The pattern as given.
        pattern: String,
    },
    /// A wildcard segment (`*`, `*name`) is followed by another segment (or stands in a
    /// prefix, which routes follow).
    WildcardNotLast {
        /// The pattern as given.
        pattern: String,
    },
    /// A static segment contains `{`, `}` or `*`.
    BadSegment {
        /// The pattern as given.
        pattern: String,
        /// The segment, as written.
        segment: String,
    },
    /// A param segment (`:`, `{}`) has no name.
    UnnamedParam {
        /// The pattern as given.
        pattern: String,
        /// The segment, as written.
        segment: String,
    },
    /// A param name holds something other than letters, digits and `_`.
    InvalidParamName {
        /// The pattern as given.
        pattern: String,
        /// The segment, as written.
        segment: String,
    },
    /// The pattern has more than [`MAX_PARAMS`] params (a wildcard counts as one).
    TooManyParams {
        /// The pattern as given.
        pattern: String,
        /// How many params it has.
        count: usize,
    },
    /// The pattern is a route already in a table under another spelling: they differ only in
    /// param or wildcard names (`/u/:id`, `/u/:name`) or param syntax (`/u/{id}`).
    Conflict {
        /// The pattern as given.
        pattern: String,
        /// The pattern already in the table.
        with: String,
    },
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingLeadingSlash { pattern } => {
                write!(f, "route path `{pattern}` must start with `/`")
            }
            Self::WildcardNotLast { pattern } => write!(
                f,
                "route path `{pattern}`: the wildcard `*` must be the last segment"
            ),
            Self::BadSegment { pattern, segment } => {
                write!(f, "route path `{pattern}`: bad segment `{segment}`")
            }
            Self::UnnamedParam { pattern, segment } => {
                write!(f, "route path `{pattern}`: param `{segment}` has no name")
            }
            Self::InvalidParamName { pattern, segment } => write!(
                f,
                "route path `{pattern}`: param names are letters, digits or `_`, got `{segment}`"
            ),
            Self::TooManyParams { pattern, count } => write!(
                f,
                "route path `{pattern}` has {count} params, at most {MAX_PARAMS} are allowed"
            ),
            Self::Conflict { pattern, with } => {
                write!(f, "route path `{pattern}` conflicts with `{with}`")
            }
        }
    }
}

impl std::error::Error for PatternError {}

/// [`Pattern::fill`] was given no value for a param.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MissingParam<'a> {
    /// The param's name ([`WILDCARD`] for a bare `*`).
    pub name: &'a str,
}

impl fmt::Display for MissingParam<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no value for the path parameter {}", self.name)
    }
}

impl std::error::Error for MissingParam<'_> {}

#[cfg(test)]
mod tests;

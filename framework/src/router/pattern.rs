//! The pattern grammar: `/`-separated segments, each static, a param (`:name` or `{name}`) or,
//! last only, a wildcard (`*` or `*name`); and the errors that refuse a pattern.

use std::fmt;

use super::params::{MAX_PARAMS, WILDCARD};

/// One segment of a parsed pattern.
pub(super) enum Segment<'a> {
    Static(&'a str),
    /// A param, by name.
    Param(&'a str),
    /// The trailing wildcard, by name ([`WILDCARD`] for a bare `*`).
    Wildcard(&'a str),
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
    /// A wildcard segment (`*`, `*name`) is followed by another segment.
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
    /// The pattern is a route already in the table under another spelling: they differ only
    /// in param or wildcard names (`/u/:id`, `/u/:name`) or param syntax (`/u/{id}`).
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

/// Checks a pattern and splits it into segments.
pub(super) fn parse_pattern(pattern: &str) -> Result<Vec<Segment<'_>>, PatternError> {
    let Some(rest) = pattern.strip_prefix('/') else {
        return Err(PatternError::MissingLeadingSlash {
            pattern: pattern.to_owned(),
        });
    };
    let parts: Vec<&str> = rest.split('/').collect();
    let mut segments = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let segment = if let Some(name) = part.strip_prefix(':') {
            Segment::Param(name)
        } else if let Some(name) = part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            Segment::Param(name)
        } else if let Some(name) = part.strip_prefix('*') {
            if !last {
                return Err(PatternError::WildcardNotLast {
                    pattern: pattern.to_owned(),
                });
            }
            Segment::Wildcard(if name.is_empty() { WILDCARD } else { name })
        } else {
            if part.contains(['{', '}', '*']) {
                return Err(PatternError::BadSegment {
                    pattern: pattern.to_owned(),
                    segment: (*part).to_owned(),
                });
            }
            Segment::Static(part)
        };
        if let Segment::Param("") = segment {
            return Err(PatternError::UnnamedParam {
                pattern: pattern.to_owned(),
                segment: (*part).to_owned(),
            });
        }
        if let Segment::Param(name) = segment
            && !name.chars().all(|c| c.is_alphanumeric() || c == '_')
        {
            return Err(PatternError::InvalidParamName {
                pattern: pattern.to_owned(),
                segment: (*part).to_owned(),
            });
        }
        segments.push(segment);
    }
    let count = segments
        .iter()
        .filter(|s| !matches!(s, Segment::Static(_)))
        .count();
    if count > MAX_PARAMS {
        return Err(PatternError::TooManyParams {
            pattern: pattern.to_owned(),
            count,
        });
    }
    Ok(segments)
}

/// Checks a route pattern without adding it.
pub fn validate_pattern(pattern: &str) -> Result<(), PatternError> {
    parse_pattern(pattern).map(drop)
}

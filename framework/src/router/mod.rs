//! Path routing: static segments, named params (`:name` or `{name}`) and a trailing wildcard
//! (`*` or `*name`).
//!
//! Fully static patterns live in an open-addressing table whose hash reads two words of the
//! path (its first and last eight bytes) and its length, so a static lookup costs the same for
//! any length, and a dynamic path almost always finds an empty bucket at once. Patterns with
//! params or a wildcard live in a segment tree, searched with backtracking in the order static
//! segment, then param, then wildcard: a lookup reads each path byte once, to find the end of
//! the segment, and a node's static children are picked out by a 32-bit fingerprint (length,
//! first and last byte) before any bytes are compared. Params are kept as byte ranges into the
//! request path, so a match allocates nothing; values are percent-decoded on access.
//!
//! Why a segment tree and not matchit's radix tree: see `benches/benches/router.rs`.
//!
//! Matching is on the raw (still percent-encoded) path and is strict about trailing slashes:
//! `/a/` and `/a` are different paths. A wildcard matches the rest of the path after its slash,
//! including nothing: `/files/*` matches `/files/` and `/files/a/b`, not `/files`.

mod params;
mod pattern;
mod route;
mod static_table;
mod tree;

#[cfg(test)]
mod tests;

pub use params::{MAX_PARAMS, Params, WILDCARD, decode_param};
pub use pattern::{PatternError, validate_pattern};
pub use route::Route;

use pattern::{Segment, parse_pattern};
use static_table::StaticTable;
use tree::{Node, collect_routes, find_in};

/// A route table from path patterns to values of type `T`.
#[derive(Debug)]
pub struct Router<T> {
    /// Fully static patterns: one probe of [`StaticTable`], whatever the path's length.
    statics: StaticTable<T>,
    /// Patterns with a param or a wildcard.
    root: Node<T>,
}

/// A successful lookup.
#[derive(Debug)]
pub struct Match<'r, T> {
    /// The matched route; its `param_names()` name the params.
    pub route: &'r Route<T>,
    /// Its params as ranges into the looked-up path.
    pub params: Params,
}

impl<T> Default for Router<T> {
    fn default() -> Self {
        Self {
            statics: StaticTable::default(),
            root: Node::default(),
        }
    }
}

impl<T> Router<T> {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value at `pattern`, created with `make` when the pattern is new.
    ///
    /// Two patterns that differ only in param names (`/u/:id`, `/u/:name`) are the same route
    /// and are refused ([`PatternError::Conflict`]), as are malformed patterns.
    pub fn entry(
        &mut self,
        pattern: &str,
        make: impl FnOnce() -> T,
    ) -> Result<&mut T, PatternError> {
        let segments = parse_pattern(pattern)?;
        let names: Vec<Box<str>> = segments
            .iter()
            .filter_map(|s| match s {
                Segment::Static(_) => None,
                Segment::Param(n) | Segment::Wildcard(n) => Some(Box::<str>::from(*n)),
            })
            .collect();
        let new_route = || Route::new(pattern, names.into_boxed_slice(), make());
        if segments.iter().all(|s| matches!(s, Segment::Static(_))) {
            return Ok(&mut self.statics.entry(pattern, new_route).value);
        }
        let route = self.root.route_mut(&segments, new_route);
        if route.pattern() != pattern {
            return Err(PatternError::Conflict {
                pattern: pattern.to_owned(),
                with: route.pattern().to_owned(),
            });
        }
        Ok(&mut route.value)
    }

    /// Finds the route for `path`. Allocates nothing.
    pub fn find<'r>(&'r self, path: &str) -> Option<Match<'r, T>> {
        let bytes = path.as_bytes();
        if let Some(route) = self.statics.get(bytes) {
            return Some(Match {
                route,
                params: Params::default(),
            });
        }
        if bytes.first() != Some(&b'/') {
            return None;
        }
        let mut params = Params::default();
        let route = find_in(&self.root, bytes, 1, &mut params)?;
        Some(Match { route, params })
    }

    /// Every registered route, in no particular order.
    pub fn routes(&self) -> Vec<&Route<T>> {
        let mut out: Vec<&Route<T>> = self.statics.routes().iter().collect();
        collect_routes(&self.root, &mut out);
        out
    }
}

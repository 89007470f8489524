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
mod route;
mod static_table;
mod tree;

#[cfg(test)]
mod tests;

pub use params::{Params, decode_param};
pub use route::Route;
/// The pattern grammar is the `route-pattern` crate's, shared with the macros and the client.
pub use route_pattern::{MAX_PARAMS, PatternError, WILDCARD, validate as validate_pattern};

use route_pattern::Pattern;
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
        let parsed = Pattern::parse(pattern)?;
        let names: Vec<Box<str>> = parsed.param_names().map(Box::<str>::from).collect();
        let segments = parsed.segments();
        let new_route = || Route::new(pattern, names.into_boxed_slice(), make());
        if parsed.is_static() {
            return Ok(&mut self.statics.entry(pattern, new_route).value);
        }
        let route = self.root.route_mut(segments, new_route);
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

//! Path routing: static segments, named params (`:name` or `{name}`) and a trailing wildcard
//! (`*` or `*name`).
//!
//! Fully static patterns live in a hash map, so their lookup is one hash and no allocation.
//! Patterns with params or a wildcard live in a segment tree searched with backtracking, in the
//! order static segment, then param, then wildcard. Params are kept as byte ranges into the
//! request path, so a match allocates nothing either; values are percent-decoded on access.
//!
//! Matching is on the raw (still percent-encoded) path and is strict about trailing slashes:
//! `/a/` and `/a` are different paths. A wildcard matches the rest of the path after its slash,
//! including nothing: `/files/*` matches `/files/` and `/files/a/b`, not `/files`.

use rustc_hash::FxHashMap;
use std::borrow::Cow;

/// How many params one route may have.
pub const MAX_PARAMS: usize = 8;

/// The name under which a bare `*` wildcard's value is found.
pub const WILDCARD: &str = "*";

/// A route table from path patterns to values of type `T`.
#[derive(Debug)]
pub struct Router<T> {
    /// FxHash: the table is fixed at start-up, so there is no flooding to defend against, and
    /// SipHash was the largest cost of a static lookup.
    statics: FxHashMap<Box<str>, Slot<T>>,
    root: Node<T>,
}

/// A pattern's entry: the pattern as written, its param names and the value.
#[derive(Debug)]
pub struct Slot<T> {
    pattern: Box<str>,
    names: Box<[Box<str>]>,
    /// What was routed here.
    pub value: T,
}

impl<T> Slot<T> {
    /// The pattern as registered, e.g. `/users/:id`.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// The param names in order (`*` for a bare wildcard).
    pub fn param_names(&self) -> &[Box<str>] {
        &self.names
    }
}

#[derive(Debug)]
struct Node<T> {
    /// Sorted by segment for binary search.
    statics: Vec<(Box<str>, Node<T>)>,
    param: Option<Box<Node<T>>>,
    wildcard: Option<Slot<T>>,
    slot: Option<Slot<T>>,
}

impl<T> Default for Node<T> {
    fn default() -> Self {
        Self {
            statics: Vec::new(),
            param: None,
            wildcard: None,
            slot: None,
        }
    }
}

/// Route params of one match: byte ranges into the path plus the route's names.
#[derive(Debug, Clone, Default)]
pub struct Params {
    ranges: [(u32, u32); MAX_PARAMS],
    len: u8,
}

impl Params {
    fn push(&mut self, start: usize, end: usize) {
        // The router refuses patterns with more than MAX_PARAMS params, and paths longer than
        // u32::MAX cannot reach here (hyper caps the request line far below that).
        self.ranges[usize::from(self.len)] = (start as u32, end as u32);
        self.len += 1;
    }

    fn pop(&mut self) {
        self.len -= 1;
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

/// A successful lookup.
#[derive(Debug)]
pub struct Match<'r, T> {
    /// The matched route.
    pub slot: &'r Slot<T>,
    /// Its params as ranges into the looked-up path.
    pub params: Params,
}

impl<'r, T> Match<'r, T> {
    /// The param names of the matched route, in order.
    pub fn names(&self) -> &'r [Box<str>] {
        &self.slot.names
    }
}

enum Segment<'a> {
    Static(&'a str),
    Param(&'a str),
    Wildcard(&'a str),
}

/// Checks a pattern and splits it into segments. The error says what is wrong.
fn parse_pattern(pattern: &str) -> Result<Vec<Segment<'_>>, String> {
    let Some(rest) = pattern.strip_prefix('/') else {
        return Err(format!("route path `{pattern}` must start with `/`"));
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
                return Err(format!(
                    "route path `{pattern}`: the wildcard `*` must be the last segment"
                ));
            }
            Segment::Wildcard(if name.is_empty() { WILDCARD } else { name })
        } else {
            if part.contains(['{', '}', '*']) {
                return Err(format!("route path `{pattern}`: bad segment `{part}`"));
            }
            Segment::Static(part)
        };
        if let Segment::Param("") = segment {
            return Err(format!(
                "route path `{pattern}`: param `{part}` has no name"
            ));
        }
        if let Segment::Param(name) = segment
            && !name.chars().all(|c| c.is_alphanumeric() || c == '_')
        {
            return Err(format!(
                "route path `{pattern}`: param names are letters, digits or `_`, got `{part}`"
            ));
        }
        segments.push(segment);
    }
    let params = segments
        .iter()
        .filter(|s| !matches!(s, Segment::Static(_)))
        .count();
    if params > MAX_PARAMS {
        return Err(format!(
            "route path `{pattern}` has {params} params, at most {MAX_PARAMS} are allowed"
        ));
    }
    Ok(segments)
}

/// Checks a route pattern without adding it.
pub fn validate_pattern(pattern: &str) -> Result<(), String> {
    parse_pattern(pattern).map(drop)
}

impl<T> Default for Router<T> {
    fn default() -> Self {
        Self {
            statics: FxHashMap::default(),
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
    /// and are refused, as are malformed patterns.
    pub fn entry(&mut self, pattern: &str, make: impl FnOnce() -> T) -> Result<&mut T, String> {
        let segments = parse_pattern(pattern)?;
        let mut names = Vec::new();
        let mut dynamic = false;
        for s in &segments {
            match s {
                Segment::Static(_) => {}
                Segment::Param(n) | Segment::Wildcard(n) => {
                    dynamic = true;
                    names.push(Box::<str>::from(*n));
                }
            }
        }
        let new_slot = || Slot {
            pattern: pattern.into(),
            names: names.into_boxed_slice(),
            value: make(),
        };
        let slot = if dynamic {
            let (wildcard, path_segments) = match segments.split_last() {
                Some((Segment::Wildcard(_), init)) => (true, init),
                _ => (false, &segments[..]),
            };
            let mut node = &mut self.root;
            for segment in path_segments {
                match segment {
                    Segment::Static(s) => {
                        let i = match node.statics.binary_search_by(|(k, _)| (**k).cmp(*s)) {
                            Ok(i) => i,
                            Err(i) => {
                                node.statics.insert(i, ((*s).into(), Node::default()));
                                i
                            }
                        };
                        node = &mut node.statics[i].1;
                    }
                    Segment::Param(_) => node = node.param.get_or_insert_with(Box::default),
                    // parse_pattern only allows a wildcard last, which split_last took off.
                    Segment::Wildcard(_) => {}
                }
            }
            let place = if wildcard {
                &mut node.wildcard
            } else {
                &mut node.slot
            };
            place.get_or_insert_with(new_slot)
        } else {
            self.statics.entry(pattern.into()).or_insert_with(new_slot)
        };
        if *slot.pattern != *pattern {
            return Err(format!(
                "route path `{pattern}` conflicts with `{}`",
                slot.pattern
            ));
        }
        Ok(&mut slot.value)
    }

    /// Finds the route for `path`. Allocates nothing.
    pub fn find<'r>(&'r self, path: &str) -> Option<Match<'r, T>> {
        if let Some(slot) = self.statics.get(path) {
            return Some(Match {
                slot,
                params: Params::default(),
            });
        }
        let start = 1;
        if !path.starts_with('/') {
            return None;
        }
        let mut params = Params::default();
        let slot = find_in(&self.root, path, start, &mut params)?;
        Some(Match { slot, params })
    }

    /// Every registered slot, static ones first, in no particular order within each kind.
    pub fn slots(&self) -> Vec<&Slot<T>> {
        let mut out: Vec<&Slot<T>> = self.statics.values().collect();
        collect_slots(&self.root, &mut out);
        out
    }
}

fn collect_slots<'r, T>(node: &'r Node<T>, out: &mut Vec<&'r Slot<T>>) {
    out.extend(node.slot.iter());
    out.extend(node.wildcard.iter());
    for (_, child) in &node.statics {
        collect_slots(child, out);
    }
    if let Some(child) = &node.param {
        collect_slots(child, out);
    }
}

fn find_in<'r, T>(
    node: &'r Node<T>,
    path: &str,
    start: usize,
    params: &mut Params,
) -> Option<&'r Slot<T>> {
    let end = path[start..].find('/').map_or(path.len(), |i| start + i);
    let segment = &path[start..end];
    let last = end == path.len();
    let descend = |child: &'r Node<T>, params: &mut Params| {
        if last {
            child.slot.as_ref()
        } else {
            find_in(child, path, end + 1, params)
        }
    };
    if let Ok(i) = node.statics.binary_search_by(|(k, _)| (**k).cmp(segment))
        && let Some(slot) = descend(&node.statics[i].1, params)
    {
        return Some(slot);
    }
    if !segment.is_empty()
        && let Some(child) = &node.param
    {
        params.push(start, end);
        if let Some(slot) = descend(child, params) {
            return Some(slot);
        }
        params.pop();
    }
    if let Some(slot) = &node.wildcard {
        params.push(start, path.len());
        return Some(slot);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(patterns: &[&str]) -> Router<usize> {
        let mut r = Router::new();
        for (i, p) in patterns.iter().enumerate() {
            *r.entry(p, || 0).unwrap() = i;
        }
        r
    }

    fn lookup(r: &Router<usize>, path: &str) -> Option<(usize, Vec<(String, String)>)> {
        let m = r.find(path)?;
        let params = m
            .names()
            .iter()
            .enumerate()
            .map(|(i, n)| (n.to_string(), m.params.raw(path, i).unwrap().to_string()))
            .collect();
        Some((m.slot.value, params))
    }

    #[test]
    fn static_param_wildcard_priority() {
        let r = table(&[
            "/users/me",
            "/users/:id",
            "/files/*",
            "/users/:id/posts/{post}",
        ]);
        assert_eq!(lookup(&r, "/users/me"), Some((0, vec![])));
        assert_eq!(
            lookup(&r, "/users/42"),
            Some((1, vec![("id".into(), "42".into())]))
        );
        assert_eq!(
            lookup(&r, "/users/7/posts/x"),
            Some((
                3,
                vec![("id".into(), "7".into()), ("post".into(), "x".into())]
            ))
        );
        assert_eq!(
            lookup(&r, "/files/a/b.txt"),
            Some((2, vec![("*".into(), "a/b.txt".into())]))
        );
        assert_eq!(
            lookup(&r, "/files/"),
            Some((2, vec![("*".into(), String::new())]))
        );
        assert_eq!(lookup(&r, "/files"), None);
        assert_eq!(lookup(&r, "/users/"), None);
        assert_eq!(lookup(&r, "/users/me/"), None);
        assert_eq!(lookup(&r, "/nope"), None);
    }

    #[test]
    fn backtracks_from_static_to_param() {
        let r = table(&["/a/b/c", "/a/:x/d"]);
        assert_eq!(
            lookup(&r, "/a/b/d"),
            Some((1, vec![("x".into(), "b".into())]))
        );
    }

    #[test]
    fn root_and_named_wildcard() {
        let r = table(&["/", "/static/*path"]);
        assert_eq!(lookup(&r, "/"), Some((0, vec![])));
        assert_eq!(
            lookup(&r, "/static/css/a.css"),
            Some((1, vec![("path".into(), "css/a.css".into())]))
        );
    }

    #[test]
    fn rejects_bad_patterns() {
        for bad in ["users", "/a/*/b", "/a/:", "/a/{}", "/a/:b-c", "/a/x*"] {
            assert!(validate_pattern(bad).is_err(), "{bad} accepted");
        }
        let mut r: Router<()> = Router::new();
        r.entry("/u/:id", || ()).unwrap();
        let err = r.entry("/u/:name", || ()).unwrap_err();
        assert!(err.contains("conflicts with `/u/:id`"), "{err}");
    }

    #[test]
    fn decodes_params_lazily() {
        assert!(matches!(decode_param("plain"), Cow::Borrowed("plain")));
        assert_eq!(decode_param("a%20b"), "a b");
    }
}

//! Path routing: static segments, named params (`:name` or `{name}`) and a trailing wildcard
//! (`*` or `*name`).
//!
//! Fully static patterns live in an open-addressing table whose hash reads two words of the
//! path (its first and last eight bytes) and its length, so a static lookup costs the same for
//! any length, and a dynamic path almost always finds an empty place at once. Patterns with
//! params or a wildcard live in a segment tree, searched with backtracking in the order static
//! segment, then param, then wildcard: a lookup reads each path byte once, to find the end of
//! the segment, and a node's static children are picked out by a 32-bit fingerprint (length,
//! first and last byte) before any bytes are compared. Params are kept as byte ranges into the
//! request path, so a match allocates nothing; values are percent-decoded on access.
//!
//! Why not a prefix-compressed radix tree over bytes (matchit's design): routes are sets of
//! segments, and a byte-level tree pays for that with splits inside segments and params that
//! must be re-scanned for their end; the segment tree answers the same questions with fewer
//! branches. `benches/benches/router.rs` compares the two on the same 100 routes.
//!
//! Matching is on the raw (still percent-encoded) path and is strict about trailing slashes:
//! `/a/` and `/a` are different paths. A wildcard matches the rest of the path after its slash,
//! including nothing: `/files/*` matches `/files/` and `/files/a/b`, not `/files`.

use std::borrow::Cow;

/// How many params one route may have.
pub const MAX_PARAMS: usize = 8;

/// The name under which a bare `*` wildcard's value is found.
pub const WILDCARD: &str = "*";

/// A route table from path patterns to values of type `T`.
#[derive(Debug)]
pub struct Router<T> {
    /// Fully static patterns: one probe of [`StaticTable`], whatever the path's length.
    statics: StaticTable<T>,
    /// Patterns with a param or a wildcard.
    root: Node<T>,
}

/// An open-addressing table of the fully static patterns, keyed by [`static_key`]: the
/// length and the first and last eight bytes of the path, read as two words. A lookup is two
/// loads, a multiply and, on a hit, one comparison of the path; a path that is no static route
/// usually lands on an empty place at once, so dynamic lookups pay almost nothing for it.
#[derive(Debug)]
struct StaticTable<T> {
    /// `(tag, index + 1)` into `slots`, index 0 for an empty place; a power of two long, at
    /// most a quarter full (8 bytes a place: 2 KiB for 60 static routes). The tag is the key's low half, so a collision is told apart without
    /// comparing paths.
    places: Box<[(u32, u32)]>,
    /// One bit per [`static_key`] top 12 bits of the patterns: a path whose bit is clear is
    /// no static route, told with one load (most dynamic paths).
    bloom: [u64; 64],
    slots: Vec<Slot<T>>,
}

impl<T> Default for StaticTable<T> {
    fn default() -> Self {
        Self {
            places: vec![(0, 0); 8].into_boxed_slice(),
            bloom: [0; 64],
            slots: Vec::new(),
        }
    }
}

/// The hash of a static path: length, first and last eight bytes (fewer bytes zero-padded).
/// Paths that share all of that collide and are told apart by the comparison.
#[inline]
fn static_key(path: &[u8]) -> u64 {
    let n = path.len();
    let (head, tail) = match (path.first_chunk::<8>(), path.last_chunk::<8>()) {
        (Some(head), Some(tail)) => (u64::from_le_bytes(*head), u64::from_le_bytes(*tail)),
        // Shorter than eight bytes: the bytes one by one, without a call to `memcpy`.
        _ => (
            path.iter()
                .fold(0u64, |word, &b| (word << 8) | u64::from(b)),
            0,
        ),
    };
    (head ^ tail.rotate_left(31) ^ n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl<T> StaticTable<T> {
    /// The first place to probe for `key`: the multiply's high bits.
    #[inline]
    fn start(&self, key: u64) -> usize {
        (key >> 40) as usize & (self.places.len() - 1)
    }

    /// The index in `slots` of the pattern equal to `path`.
    #[inline]
    fn index_of(&self, path: &[u8]) -> Option<usize> {
        let key = static_key(path);
        let bit = (key >> 52) as usize;
        if self.bloom[bit / 64] & (1 << (bit % 64)) == 0 {
            return None;
        }
        let tag = key as u32;
        let mask = self.places.len() - 1;
        let mut i = self.start(key);
        loop {
            let (place_tag, index) = self.places[i];
            let index = (index as usize).checked_sub(1)?;
            if place_tag == tag && self.slots[index].pattern.as_bytes() == path {
                return Some(index);
            }
            i = (i + 1) & mask;
        }
    }

    #[inline]
    fn get(&self, path: &[u8]) -> Option<&Slot<T>> {
        self.index_of(path).map(|i| &self.slots[i])
    }

    fn entry(&mut self, pattern: &str, make: impl FnOnce() -> Slot<T>) -> &mut Slot<T> {
        let index = match self.index_of(pattern.as_bytes()) {
            Some(index) => index,
            None => {
                self.slots.push(make());
                let index = self.slots.len() - 1;
                if self.slots.len() * 4 > self.places.len() {
                    self.places = vec![(0, 0); self.places.len() * 2].into_boxed_slice();
                    for i in 0..self.slots.len() {
                        self.place(i);
                    }
                } else {
                    self.place(index);
                }
                index
            }
        };
        &mut self.slots[index]
    }

    /// Puts `slots[index]` at the first free place of its probe sequence.
    fn place(&mut self, index: usize) {
        let mask = self.places.len() - 1;
        let key = static_key(self.slots[index].pattern.as_bytes());
        let bit = (key >> 52) as usize;
        self.bloom[bit / 64] |= 1 << (bit % 64);
        let mut i = self.start(key);
        while self.places[i].1 != 0 {
            i = (i + 1) & mask;
        }
        // Route tables are far smaller than u32::MAX entries.
        self.places[i] = (key as u32, (index + 1) as u32);
    }
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
    /// The static children, in the order their patterns were added.
    children: Vec<Child<T>>,
    param: Option<Box<Node<T>>>,
    wildcard: Option<Box<Slot<T>>>,
    slot: Option<Box<Slot<T>>>,
    /// Neither `param` nor `wildcard`: a lookup through here never backtracks to it.
    only_statics: bool,
}

/// A static child: its segment, the segment's [`fingerprint`], and the node under it.
#[derive(Debug)]
struct Child<T> {
    print: u32,
    key: Box<[u8]>,
    node: Node<T>,
}

/// A segment's length (low 16 bits of it), first and last byte: siblings rarely share all
/// three, so the bytes of at most one child are usually compared.
#[inline]
fn fingerprint(segment: &[u8]) -> u32 {
    match (segment.first(), segment.last()) {
        (Some(&first), Some(&last)) => {
            ((segment.len() as u32) << 16) | (u32::from(first) << 8) | u32::from(last)
        }
        _ => 0,
    }
}

/// Byte equality of two segments whose fingerprints are equal (so same length below 64 KiB,
/// same first and last byte), without a call to `memcmp`: up to 16 bytes are two word
/// comparisons.
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    match (
        a.first_chunk::<8>().zip(a.last_chunk::<8>()),
        b.first_chunk::<8>().zip(b.last_chunk::<8>()),
    ) {
        (Some((a_head, a_tail)), Some((b_head, b_tail))) => {
            a_head == b_head && a_tail == b_tail && (a.len() <= 16 || a == b)
        }
        _ => match (
            a.first_chunk::<4>().zip(a.last_chunk::<4>()),
            b.first_chunk::<4>().zip(b.last_chunk::<4>()),
        ) {
            (Some((a_head, a_tail)), Some((b_head, b_tail))) => {
                a_head == b_head && a_tail == b_tail
            }
            // Three bytes or fewer: the fingerprint holds the first and last.
            _ => a.get(1) == b.get(1),
        },
    }
}

impl<T> Node<T> {
    /// The static child for `segment`: a scan of the fingerprints, then the bytes of the
    /// one that matches. Route tables have few children per node, where a scan beats a hash.
    #[inline]
    fn child(&self, segment: &[u8]) -> Option<&Node<T>> {
        let print = fingerprint(segment);
        self.children
            .iter()
            .find(|child| child.print == print && same(&child.key, segment))
            .map(|child| &child.node)
    }

    fn child_mut(&mut self, segment: &str) -> &mut Node<T> {
        let bytes = segment.as_bytes();
        let i = match self.children.iter().position(|c| *c.key == *bytes) {
            Some(i) => i,
            None => {
                self.children.push(Child {
                    print: fingerprint(bytes),
                    key: bytes.into(),
                    node: Node::default(),
                });
                self.children.len() - 1
            }
        };
        &mut self.children[i].node
    }
}

impl<T> Default for Node<T> {
    fn default() -> Self {
        Self {
            children: Vec::new(),
            param: None,
            wildcard: None,
            slot: None,
            only_statics: true,
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
    /// and are refused, as are malformed patterns.
    pub fn entry(&mut self, pattern: &str, make: impl FnOnce() -> T) -> Result<&mut T, String> {
        let segments = parse_pattern(pattern)?;
        let names: Vec<Box<str>> = segments
            .iter()
            .filter_map(|s| match s {
                Segment::Static(_) => None,
                Segment::Param(n) | Segment::Wildcard(n) => Some(Box::<str>::from(*n)),
            })
            .collect();
        let new_slot = || Slot {
            pattern: pattern.into(),
            names: names.into_boxed_slice(),
            value: make(),
        };
        if segments.iter().all(|s| matches!(s, Segment::Static(_))) {
            return Ok(&mut self.statics.entry(pattern, new_slot).value);
        }
        let (wildcard, path_segments) = match segments.split_last() {
            Some((Segment::Wildcard(_), init)) => (true, init),
            _ => (false, &segments[..]),
        };
        let mut node = &mut self.root;
        for segment in path_segments {
            match segment {
                Segment::Static(s) => node = node.child_mut(s),
                Segment::Param(_) => {
                    node.only_statics = false;
                    node = node.param.get_or_insert_with(Box::default);
                }
                // parse_pattern only allows a wildcard last, which split_last took off.
                Segment::Wildcard(_) => {}
            }
        }
        let place = if wildcard {
            node.only_statics = false;
            &mut node.wildcard
        } else {
            &mut node.slot
        };
        let slot = place.get_or_insert_with(|| Box::new(new_slot()));
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
        let bytes = path.as_bytes();
        if let Some(slot) = self.statics.get(bytes) {
            return Some(Match {
                slot,
                params: Params::default(),
            });
        }
        if bytes.first() != Some(&b'/') {
            return None;
        }
        let mut params = Params::default();
        let slot = find_in(&self.root, bytes, 1, &mut params)?;
        Some(Match { slot, params })
    }

    /// Every registered slot, in no particular order.
    pub fn slots(&self) -> Vec<&Slot<T>> {
        let mut out: Vec<&Slot<T>> = self.statics.slots.iter().collect();
        collect_slots(&self.root, &mut out);
        out
    }
}

fn collect_slots<'r, T>(node: &'r Node<T>, out: &mut Vec<&'r Slot<T>>) {
    out.extend(node.slot.as_deref());
    out.extend(node.wildcard.as_deref());
    for child in &node.children {
        collect_slots(&child.node, out);
    }
    if let Some(child) = &node.param {
        collect_slots(child, out);
    }
}

/// The slot for `path[start..]` under `node`: the segment's static child first, then the
/// param, then the wildcard, backtracking when a branch has no route for the rest. A level
/// with a single way on is walked in the loop; only a level with alternatives recurses, so
/// that it can come back to them.
fn find_in<'r, T>(
    mut node: &'r Node<T>,
    path: &[u8],
    mut start: usize,
    params: &mut Params,
) -> Option<&'r Slot<T>> {
    let mark = params.len;
    loop {
        let mut end = start;
        while end < path.len() && path[end] != b'/' {
            end += 1;
        }
        let last = end == path.len();
        let child = node.child(path.get(start..end).unwrap_or_default());
        if node.only_statics {
            // No param or wildcard here: nothing to come back to.
            let Some(next) = child else { break };
            if last {
                match next.slot.as_deref() {
                    Some(slot) => return Some(slot),
                    None => break,
                }
            }
            node = next;
            start = end + 1;
            continue;
        }
        let param = node.param.as_deref().filter(|_| end > start);
        let next = match (child, param, node.wildcard.as_deref()) {
            (Some(child), None, None) => child,
            (None, Some(param), None) => {
                params.push(start, end);
                param
            }
            (None, None, Some(wildcard)) => {
                params.push(start, path.len());
                return Some(wildcard);
            }
            (None, None, None) => break,
            (child, param, wildcard) => {
                let descend = |next: &'r Node<T>, params: &mut Params| {
                    if last {
                        next.slot.as_deref()
                    } else {
                        find_in(next, path, end + 1, params)
                    }
                };
                if let Some(slot) = child.and_then(|child| descend(child, params)) {
                    return Some(slot);
                }
                if let Some(param) = param {
                    params.push(start, end);
                    if let Some(slot) = descend(param, params) {
                        return Some(slot);
                    }
                    params.pop();
                }
                if let Some(wildcard) = wildcard {
                    params.push(start, path.len());
                    return Some(wildcard);
                }
                break;
            }
        };
        if last {
            match next.slot.as_deref() {
                Some(slot) => return Some(slot),
                None => break,
            }
        }
        node = next;
        start = end + 1;
    }
    params.len = mark;
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
    fn a_failed_branch_leaves_no_params_behind() {
        let r = table(&["/u/me/:p", "/u/:id/q/r", "/a/:x/b", "/a/*"]);
        assert_eq!(
            lookup(&r, "/u/me/q/r"),
            Some((1, vec![("id".into(), "me".into())]))
        );
        assert_eq!(
            lookup(&r, "/u/me/q"),
            Some((0, vec![("p".into(), "q".into())]))
        );
        assert_eq!(
            lookup(&r, "/a/1/c"),
            Some((3, vec![("*".into(), "1/c".into())]))
        );
    }

    #[test]
    fn siblings_with_the_same_fingerprint_are_told_apart() {
        // Same length, first and last byte: only the middle differs.
        let r = table(&["/abc/:x", "/axc/:x", "/a/:x/abcd", "/a/:x/axyd"]);
        assert_eq!(lookup(&r, "/abc/1").map(|m| m.0), Some(0));
        assert_eq!(lookup(&r, "/axc/1").map(|m| m.0), Some(1));
        assert_eq!(lookup(&r, "/aac/1"), None);
        assert_eq!(lookup(&r, "/a/1/abcd").map(|m| m.0), Some(2));
        assert_eq!(lookup(&r, "/a/1/axyd").map(|m| m.0), Some(3));
        assert_eq!(lookup(&r, "/a/1/abyd"), None);
        // Longer than 16 bytes: the head and tail words agree, the middle does not.
        let r = table(&["/x/:y/aaaaaaaaXaaaaaaaaa", "/x/:y/aaaaaaaaYaaaaaaaaa"]);
        assert_eq!(lookup(&r, "/x/1/aaaaaaaaYaaaaaaaaa").map(|m| m.0), Some(1));
        assert_eq!(lookup(&r, "/x/1/aaaaaaaaZaaaaaaaaa"), None);
    }

    #[test]
    fn many_static_routes_grow_the_table_and_all_stay_found() {
        let patterns: Vec<String> = (0..1000).map(|i| format!("/static/route/{i}")).collect();
        let mut r = Router::new();
        for (i, p) in patterns.iter().enumerate() {
            *r.entry(p, || 0).unwrap() = i;
        }
        // Same pattern again: the same entry, not a new one.
        assert_eq!(*r.entry("/static/route/7", || 0).unwrap(), 7);
        for (i, p) in patterns.iter().enumerate() {
            assert_eq!(lookup(&r, p), Some((i, vec![])), "{p}");
        }
        assert_eq!(lookup(&r, "/static/route/1000"), None);
        assert_eq!(lookup(&r, "/static/route/"), None);
        assert_eq!(lookup(&r, ""), None);
        assert_eq!(r.slots().len(), 1000);
    }

    #[test]
    fn a_static_route_beats_a_param_at_the_same_place() {
        let r = table(&[
            "/users/:id",
            "/users/me",
            "/users/:id/posts",
            "/users/me/posts",
        ]);
        assert_eq!(lookup(&r, "/users/me").map(|m| m.0), Some(1));
        assert_eq!(lookup(&r, "/users/me/posts").map(|m| m.0), Some(3));
        assert_eq!(lookup(&r, "/users/you/posts").map(|m| m.0), Some(2));
    }

    /// The rule the tree implements, written the slow way: of all patterns matching `path`,
    /// the one whose segment kinds (static 0, param 1, wildcard 2) are smallest in
    /// lexicographic order, which is the order the tree tries them in.
    fn reference<'p>(patterns: &[&'p str], path: &str) -> Option<(&'p str, Vec<String>)> {
        let parts: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
        let mut best: Option<(Vec<u8>, &str, Vec<String>)> = None;
        for pattern in patterns {
            let segments: Vec<&str> = pattern[1..].split('/').collect();
            let mut kinds = Vec::new();
            let mut values = Vec::new();
            let mut matched = true;
            for (i, segment) in segments.iter().enumerate() {
                if segment.starts_with('*') {
                    if i >= parts.len() {
                        matched = false;
                    } else {
                        kinds.push(2);
                        values.push(parts[i..].join("/"));
                    }
                    break;
                }
                let Some(part) = parts.get(i) else {
                    matched = false;
                    break;
                };
                if segment.starts_with(':') {
                    if part.is_empty() {
                        matched = false;
                        break;
                    }
                    kinds.push(1);
                    values.push((*part).to_owned());
                } else if segment == part {
                    kinds.push(0);
                } else {
                    matched = false;
                    break;
                }
                if i + 1 == segments.len() && parts.len() != segments.len() {
                    matched = false;
                }
            }
            if matched && best.as_ref().is_none_or(|(k, _, _)| kinds < *k) {
                best = Some((kinds, pattern, values));
            }
        }
        best.map(|(_, pattern, values)| (pattern, values))
    }

    #[test]
    fn agrees_with_the_reference_rule_on_random_tables() {
        let mut seed: u64 = 0x5eed;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as usize % n
        };
        let pattern_parts = ["a", "b", "ab", "ba", "", ":p", ":q", "*"];
        let path_parts = ["a", "b", "ab", "ba", "c", ""];
        for _ in 0..300 {
            let mut patterns: Vec<String> = Vec::new();
            for _ in 0..1 + next(12) {
                let depth = 1 + next(3);
                let mut segments = Vec::new();
                for d in 0..depth {
                    let mut part = pattern_parts[next(pattern_parts.len())];
                    if part == "*" && d + 1 < depth {
                        part = "a";
                    }
                    segments.push(part);
                }
                patterns.push(format!("/{}", segments.join("/")));
            }
            let mut r = Router::new();
            let mut kept: Vec<&str> = Vec::new();
            for p in &patterns {
                // Conflicting param names are refused; the reference must not see those.
                if r.entry(p, || p.clone()).is_ok() && !kept.contains(&p.as_str()) {
                    kept.push(p);
                }
            }
            for _ in 0..40 {
                let depth = 1 + next(4);
                let path: String = (0..depth)
                    .map(|_| format!("/{}", path_parts[next(path_parts.len())]))
                    .collect();
                let ours = r.find(&path).map(|m| {
                    let values = (0..m.params.len())
                        .map(|i| m.params.raw(&path, i).unwrap().to_owned())
                        .collect::<Vec<_>>();
                    (m.slot.value.as_str(), values)
                });
                assert_eq!(ours, reference(&kept, &path), "{path} in {kept:?}");
            }
        }
    }

    #[test]
    fn decodes_params_lazily() {
        assert!(matches!(decode_param("plain"), Cow::Borrowed("plain")));
        assert_eq!(decode_param("a%20b"), "a b");
    }
}

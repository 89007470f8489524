//! The patterns with a param or a wildcard: a tree of segments, searched with backtracking.

use super::params::Params;
use super::route::Route;
use route_pattern::Segment;

/// One level of the tree: the routes that end here and the ways on to the next segment.
#[derive(Debug)]
pub(super) struct Node<T> {
    /// The static children, in the order their patterns were added.
    children: Vec<Child<T>>,
    param: Option<Box<Node<T>>>,
    wildcard: Option<Box<Route<T>>>,
    route: Option<Box<Route<T>>>,
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

    /// The route at the end of `segments` (a parsed pattern) under this node, added with
    /// `make` when there is none. A route already there may be another spelling of the same
    /// pattern (other param names): the caller compares the patterns.
    pub(super) fn route_mut(
        &mut self,
        segments: &[Segment<'_>],
        make: impl FnOnce() -> Route<T>,
    ) -> &mut Route<T> {
        let (wildcard, path_segments) = match segments.split_last() {
            Some((Segment::Wildcard(_), init)) => (true, init),
            _ => (false, segments),
        };
        let mut node = self;
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
        let at = if wildcard {
            node.only_statics = false;
            &mut node.wildcard
        } else {
            &mut node.route
        };
        at.get_or_insert_with(|| Box::new(make()))
    }
}

impl<T> Default for Node<T> {
    fn default() -> Self {
        Self {
            children: Vec::new(),
            param: None,
            wildcard: None,
            route: None,
            only_statics: true,
        }
    }
}

/// Appends every route under `node` to `out`.
pub(super) fn collect_routes<'r, T>(node: &'r Node<T>, out: &mut Vec<&'r Route<T>>) {
    out.extend(node.route.as_deref());
    out.extend(node.wildcard.as_deref());
    for child in &node.children {
        collect_routes(&child.node, out);
    }
    if let Some(child) = &node.param {
        collect_routes(child, out);
    }
}

/// The route for `path[start..]` under `node`: the segment's static child first, then the
/// param, then the wildcard, backtracking when a branch has no route for the rest. A level
/// with a single way on is walked in the loop; only a level with alternatives recurses, so
/// that it can come back to them.
pub(super) fn find_in<'r, T>(
    mut node: &'r Node<T>,
    path: &[u8],
    mut start: usize,
    params: &mut Params,
) -> Option<&'r Route<T>> {
    let mark = params.len();
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
                match next.route.as_deref() {
                    Some(route) => return Some(route),
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
                        next.route.as_deref()
                    } else {
                        find_in(next, path, end + 1, params)
                    }
                };
                if let Some(route) = child.and_then(|child| descend(child, params)) {
                    return Some(route);
                }
                if let Some(param) = param {
                    params.push(start, end);
                    if let Some(route) = descend(param, params) {
                        return Some(route);
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
            match next.route.as_deref() {
                Some(route) => return Some(route),
                None => break,
            }
        }
        node = next;
        start = end + 1;
    }
    params.truncate(mark);
    None
}

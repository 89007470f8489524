//! One route of the table, as both the static table and the segment tree hold it.

/// A route: the pattern as written, its param names and the value routed there.
#[derive(Debug)]
pub struct Route<T> {
    pattern: Box<str>,
    param_names: Box<[Box<str>]>,
    /// What was routed here.
    pub value: T,
}

impl<T> Route<T> {
    pub(super) fn new(pattern: &str, param_names: Box<[Box<str>]>, value: T) -> Self {
        Self {
            pattern: pattern.into(),
            param_names,
            value,
        }
    }

    /// The pattern as registered, e.g. `/users/:id`.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// The param names in order (`*` for a bare wildcard): the names of a match's
    /// [`Params`](super::params::Params).
    pub fn param_names(&self) -> &[Box<str>] {
        &self.param_names
    }
}

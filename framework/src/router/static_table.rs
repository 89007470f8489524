//! The fully static patterns: an open-addressing hash table keyed by [`static_key`], with a
//! bloom filter in front so that a path which is no static route is usually told with one load.

use super::route::Route;

/// An open-addressing table of the fully static patterns, keyed by [`static_key`]: the
/// length and the first and last eight bytes of the path, read as two words. A lookup is two
/// loads, a multiply and, on a hit, one comparison of the path; a path that is no static route
/// usually lands on an empty bucket at once, so dynamic lookups pay almost nothing for it.
#[derive(Debug)]
pub(super) struct StaticTable<T> {
    /// `(tag, index + 1)` into `routes`, index 0 for an empty bucket. The length is a power of
    /// two and the table at most a quarter full (8 bytes a bucket: 2 KiB for 60 static routes).
    /// The tag is the key's low half, so a collision is told apart without comparing paths.
    buckets: Box<[(u32, u32)]>,
    /// One bit per [`static_key`] top 12 bits of the patterns: a path whose bit is clear is
    /// no static route, told with one load (most dynamic paths).
    bloom: [u64; 64],
    routes: Vec<Route<T>>,
}

impl<T> Default for StaticTable<T> {
    fn default() -> Self {
        Self {
            buckets: vec![(0, 0); 8].into_boxed_slice(),
            bloom: [0; 64],
            routes: Vec::new(),
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
    /// The first bucket to probe for `key`: the multiply's high bits.
    #[inline]
    fn first_bucket(&self, key: u64) -> usize {
        (key >> 40) as usize & (self.buckets.len() - 1)
    }

    /// The index in `routes` of the pattern equal to `path`.
    #[inline]
    fn index_of(&self, path: &[u8]) -> Option<usize> {
        let key = static_key(path);
        let bit = (key >> 52) as usize;
        if self.bloom[bit / 64] & (1 << (bit % 64)) == 0 {
            return None;
        }
        let tag = key as u32;
        let mask = self.buckets.len() - 1;
        let mut i = self.first_bucket(key);
        loop {
            let (bucket_tag, index) = self.buckets[i];
            let index = (index as usize).checked_sub(1)?;
            if bucket_tag == tag && self.routes[index].pattern().as_bytes() == path {
                return Some(index);
            }
            i = (i + 1) & mask;
        }
    }

    #[inline]
    pub(super) fn get(&self, path: &[u8]) -> Option<&Route<T>> {
        self.index_of(path).map(|i| &self.routes[i])
    }

    /// The route at `pattern`, added with `make` when there is none.
    pub(super) fn entry(
        &mut self,
        pattern: &str,
        make: impl FnOnce() -> Route<T>,
    ) -> &mut Route<T> {
        let index = match self.index_of(pattern.as_bytes()) {
            Some(index) => index,
            None => {
                self.routes.push(make());
                let index = self.routes.len() - 1;
                if self.routes.len() * 4 > self.buckets.len() {
                    self.buckets = vec![(0, 0); self.buckets.len() * 2].into_boxed_slice();
                    for i in 0..self.routes.len() {
                        self.insert_index(i);
                    }
                } else {
                    self.insert_index(index);
                }
                index
            }
        };
        &mut self.routes[index]
    }

    /// Every static route, in the order added.
    pub(super) fn routes(&self) -> &[Route<T>] {
        &self.routes
    }

    /// Puts `index` (of `routes`) in the first empty bucket of its route's probe sequence.
    fn insert_index(&mut self, index: usize) {
        let mask = self.buckets.len() - 1;
        let key = static_key(self.routes[index].pattern().as_bytes());
        let bit = (key >> 52) as usize;
        self.bloom[bit / 64] |= 1 << (bit % 64);
        let mut i = self.first_bucket(key);
        while self.buckets[i].1 != 0 {
            i = (i + 1) & mask;
        }
        // Route tables are far smaller than u32::MAX entries.
        self.buckets[i] = (key as u32, (index + 1) as u32);
    }
}

//! JSON serialised through a per-thread scratch buffer.
//!
//! `serde_json::to_vec` allocates a vector (128 bytes, grown by doubling for larger values),
//! and turning that vector into `Bytes` allocates again unless it happens to be exactly full
//! (`Bytes` needs a shared header for the spare capacity). Serialising into a buffer the thread
//! keeps and copying the result out costs one exact allocation instead: the responder's JSON
//! bodies and the session records of in-memory stores are written this way.
//!
//! The buffer is borrowed only while a value is serialised and its bytes handed on, never
//! across an `.await`. A `Serialize` impl that itself serialises JSON through here (re-entry)
//! gets a vector of its own instead. The buffer keeps at most [`SCRATCH_KEEP`] bytes between
//! uses: after a larger value it is released, so one big answer does not pin its size on the
//! thread for good.
//!
//! ```
//! let bytes = framework::json::to_bytes(&serde_json::json!({"message": "hi"})).unwrap();
//! assert_eq!(&bytes[..], br#"{"message":"hi"}"#);
//! ```

use std::cell::RefCell;

use bytes::Bytes;
use serde::Serialize;

/// The most capacity the scratch buffer keeps between uses (64 KiB per thread).
pub const SCRATCH_KEEP: usize = 64 * 1024;

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// `value` as JSON in `Bytes` of exactly its length: one allocation.
pub fn to_bytes<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Bytes> {
    with_serialized(value, Bytes::copy_from_slice)
}

/// Serialises `value` into the scratch buffer and hands its bytes to `f`.
pub(crate) fn with_serialized<T, R>(value: &T, f: impl FnOnce(&[u8]) -> R) -> serde_json::Result<R>
where
    T: Serialize + ?Sized,
{
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            let result = serde_json::to_writer(&mut *buf, value).map(|()| f(&buf));
            if buf.capacity() > SCRATCH_KEEP {
                *buf = Vec::new();
            }
            result
        }
        // Re-entered from inside a serialisation: this value gets a vector of its own.
        Err(_) => serde_json::to_vec(value).map(|bytes| f(&bytes)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_what_serde_json_writes() {
        let values = [
            serde_json::json!(null),
            serde_json::json!({"message": "Hello, World!"}),
            serde_json::json!([1, "two", {"three": 3.5}]),
            serde_json::json!("x".repeat(1000)),
        ];
        for value in &values {
            assert_eq!(to_bytes(value).unwrap(), serde_json::to_vec(value).unwrap());
        }
    }

    /// Serialises another value through the scratch buffer while its own serialisation holds it.
    struct Nested;

    impl Serialize for Nested {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let inner = to_bytes(&[1, 2, 3]).map_err(serde::ser::Error::custom)?;
            serializer.serialize_str(std::str::from_utf8(&inner).unwrap_or(""))
        }
    }

    #[test]
    fn a_nested_serialisation_gets_its_own_buffer() {
        assert_eq!(to_bytes(&Nested).unwrap(), br#""[1,2,3]""#.as_slice());
        assert_eq!(
            to_bytes(&[Nested, Nested]).unwrap(),
            br#"["[1,2,3]","[1,2,3]"]"#.as_slice()
        );
    }

    #[test]
    fn the_buffer_keeps_at_most_its_bound() {
        let capacity = || SCRATCH.with(|cell| cell.borrow().capacity());
        let just_under = "x".repeat(SCRATCH_KEEP / 4);
        to_bytes(&just_under).unwrap();
        let kept = capacity();
        assert!(kept > 0 && kept <= SCRATCH_KEEP, "{kept}");
        let big = "x".repeat(SCRATCH_KEEP + 1);
        assert_eq!(to_bytes(&big).unwrap().len(), SCRATCH_KEEP + 3);
        assert_eq!(capacity(), 0, "a buffer past the bound is released");
    }

    #[test]
    fn a_failed_serialisation_is_an_error_and_leaves_the_buffer_usable() {
        let mut map = std::collections::BTreeMap::new();
        map.insert(vec![1u8], 1);
        assert!(to_bytes(&map).is_err(), "JSON object keys must be strings");
        assert_eq!(to_bytes(&1).unwrap(), b"1".as_slice());
    }
}

//! A session's values.

use std::fmt;

use compact_str::CompactString;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use smallvec::SmallVec;

/// A session's values by key, as the session middleware and the stores hand them over.
///
/// Kept as a vector of entries in insertion order, looked up by a scan: a session holds a
/// handful of values, for which a scan costs less than a tree or a hash and needs no
/// allocation per key (keys of up to 24 bytes are kept inline, on 64-bit targets). The first
/// entry is kept inline too, so a one-value session (a login token, an account) has no
/// vector on the heap at all, neither in the request nor in a store.
///
/// Stored form: a JSON object (`{"key": value, ...}`), the record the byte stores (Redis) keep;
/// a duplicated key in a record keeps its last value, as `serde_json`'s maps do. The memory
/// store keeps the values themselves and skips JSON altogether.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct SessionData {
    entries: SmallVec<[(CompactString, Value); 1]>,
}

impl SessionData {
    /// No values.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, value)| value)
    }

    /// Sets `key` to `value`, returning the value it replaces.
    pub fn insert(&mut self, key: &str, value: Value) -> Option<Value> {
        if let Some((_, old)) = self.entries.iter_mut().find(|(k, _)| k == key) {
            return Some(std::mem::replace(old, value));
        }
        self.entries.push((CompactString::new(key), value));
        None
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let at = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(at).1)
    }

    /// The keys and values, in the order the keys were first set.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there is no value.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Gives back the spare slots, back inline when one value is left (a store does it before
    /// keeping the values).
    pub fn shrink_to_fit(&mut self) {
        self.entries.shrink_to_fit();
    }
}

impl Serialize for SessionData {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for SessionData {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;

        impl<'de> Visitor<'de> for Entries {
            type Value = SessionData;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of session values")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SessionData, A::Error> {
                let mut data = SessionData {
                    entries: SmallVec::with_capacity(map.size_hint().unwrap_or(0).min(64)),
                };
                while let Some((key, value)) = map.next_entry::<CompactString, Value>()? {
                    data.insert(&key, value);
                }
                Ok(data)
            }
        }

        deserializer.deserialize_map(Entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn insert_replace_remove_keep_the_order() {
        let mut data = SessionData::new();
        assert!(data.is_empty());
        assert_eq!(data.insert("b", json!(1)), None);
        assert!(!data.entries.spilled(), "one value, inline");
        assert_eq!(data.insert("a", json!("x")), None);
        assert_eq!(data.insert("b", json!(2)), Some(json!(1)));
        assert_eq!(data.len(), 2);
        assert_eq!(data.get("b"), Some(&json!(2)));
        assert_eq!(data.get("c"), None);
        let keys: Vec<&str> = data.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(data.remove("b"), Some(json!(2)));
        assert_eq!(data.remove("b"), None);
        assert_eq!(data.get("a"), Some(&json!("x")));
        assert_eq!(data.len(), 1);
        assert!(data.entries.spilled());
        data.shrink_to_fit();
        assert!(!data.entries.spilled(), "back inline");
        assert_eq!(data.get("a"), Some(&json!("x")));
    }

    #[test]
    fn a_json_object_both_ways() {
        let mut data = SessionData::new();
        data.insert("token", json!("abc"));
        data.insert("a key longer than twenty-four bytes", json!({"n": [1, 2]}));
        let record = serde_json::to_vec(&data).unwrap();
        assert_eq!(
            std::str::from_utf8(&record).unwrap(),
            r#"{"token":"abc","a key longer than twenty-four bytes":{"n":[1,2]}}"#
        );
        assert_eq!(
            serde_json::from_slice::<SessionData>(&record).unwrap(),
            data
        );
        // Escaped keys, and a repeated key keeps its last value.
        let parsed: SessionData = serde_json::from_str(r#"{"a\"b":1,"x":1,"x":2}"#).unwrap();
        assert_eq!(parsed.get("a\"b"), Some(&json!(1)));
        assert_eq!(parsed.get("x"), Some(&json!(2)));
        assert_eq!(parsed.len(), 2);
        // Anything but an object is refused.
        for bad in ["[]", "1", "\"s\"", "null", "{", ""] {
            assert!(serde_json::from_str::<SessionData>(bad).is_err(), "{bad}");
        }
        assert_eq!(
            serde_json::from_str::<SessionData>("{}").unwrap(),
            SessionData::new()
        );
    }
}

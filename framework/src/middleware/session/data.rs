//! A session's values.

use std::fmt;

use compact_str::CompactString;
use serde::de::value::BorrowedStrDeserializer;
use serde::de::{MapAccess, Unexpected, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use smallvec::SmallVec;

/// A session's values by key, as the session middleware and the stores hand them over.
///
/// Kept as a vector of entries in insertion order, looked up by a scan: a session holds a
/// handful of values, for which a scan costs less than a tree or a hash and needs no
/// allocation per key (keys of up to 24 bytes are kept inline, on 64-bit targets). The first
/// entry is kept inline too, so a one-value session (a login token, an account) has no
/// vector on the heap at all, neither in the request nor in a store. Text values are kept as
/// text ([`SessionValue::Text`]), inline up to 24 bytes as well.
///
/// Stored form: a JSON object (`{"key": value, ...}`), the record the byte stores (Redis) keep;
/// a duplicated key in a record keeps its last value, as `serde_json`'s maps do. The memory
/// store keeps the values themselves and skips JSON altogether.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct SessionData {
    entries: SmallVec<[(CompactString, SessionValue); 1]>,
}

/// One session value: a string as text, anything else as JSON.
///
/// Strings are what sessions hold most (an account, a token), and a JSON string is a heap
/// allocation to make, to copy on every load from the memory store and to free. As text, one
/// of up to 24 bytes is kept inline (on 64-bit targets): making, copying and dropping it
/// allocates nothing. Values made with [`From`], parsed from a record or inserted into
/// [`SessionData`] hold a string as [`SessionValue::Text`]; a `Json(Value::String(..))` built by
/// hand is still a string to [`SessionValue::as_str`] and to comparisons.
#[derive(Debug, Clone)]
pub enum SessionValue {
    /// A string.
    Text(CompactString),
    /// Any other JSON value.
    Json(Value),
}

impl SessionValue {
    /// The text, `None` for any other value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            SessionValue::Text(text) => Some(text),
            SessionValue::Json(Value::String(text)) => Some(text),
            SessionValue::Json(_) => None,
        }
    }

    /// Keeps a string as text (checked in place: most values are text already).
    #[inline]
    fn normalise(&mut self) {
        if let SessionValue::Json(Value::String(text)) = self {
            *self = std::mem::take(text).into();
        }
    }

    /// The value as JSON (a string for text).
    pub fn into_json(self) -> Value {
        match self {
            SessionValue::Text(text) => Value::String(text.into_string()),
            SessionValue::Json(value) => value,
        }
    }
}

impl From<Value> for SessionValue {
    fn from(value: Value) -> Self {
        match value {
            Value::String(text) => text.into(),
            value => SessionValue::Json(value),
        }
    }
}

impl From<&str> for SessionValue {
    #[inline]
    fn from(text: &str) -> Self {
        SessionValue::Text(CompactString::new(text))
    }
}

impl From<String> for SessionValue {
    fn from(text: String) -> Self {
        SessionValue::Text(CompactString::from(text))
    }
}

impl From<CompactString> for SessionValue {
    fn from(text: CompactString) -> Self {
        SessionValue::Text(text)
    }
}

/// Equal when both are the same string (text or a JSON string) or equal JSON values.
impl PartialEq for SessionValue {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (SessionValue::Json(a), SessionValue::Json(b)) => a == b,
            _ => self.as_str().is_some() && self.as_str() == other.as_str(),
        }
    }
}

impl From<SessionValue> for Value {
    fn from(value: SessionValue) -> Self {
        value.into_json()
    }
}

impl PartialEq<Value> for SessionValue {
    fn eq(&self, other: &Value) -> bool {
        match self {
            SessionValue::Json(value) => value == other,
            SessionValue::Text(text) => other.as_str() == Some(text.as_str()),
        }
    }
}

impl Serialize for SessionValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SessionValue::Text(text) => serializer.serialize_str(text),
            SessionValue::Json(value) => value.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for SessionValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(SessionValue::from)
    }
}

/// A text value as a deserialiser: what `serde_json` does with a JSON string value (a string;
/// `Some` of it for an `Option`; a unit variant's name for an enum; an `invalid type` error
/// for a number, a bool, a sequence, a map or unit), so that
/// [`Session::get`](super::Session::get) reads text as it reads any other value. (One
/// difference: `serde_json::value::RawValue` is not made from text.)
pub(crate) struct TextDeserializer<'a>(pub(crate) &'a str);

/// The methods of [`TextDeserializer`] that refuse a string, as `serde_json` does.
macro_rules! refuse_text {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $method<V: Visitor<'de>>(
            self,
            $($arg: $ty,)*
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            $(let _ = $arg;)*
            Err(serde::de::Error::invalid_type(Unexpected::Str(self.0), &visitor))
        }
    )*};
}

impl<'de> Deserializer<'de> for TextDeserializer<'de> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_borrowed_str(self.0)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_enum(BorrowedStrDeserializer::<Self::Error>::new(self.0))
    }

    refuse_text! {
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_f32();
        deserialize_f64();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_seq();
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
    }

    serde::forward_to_deserialize_any! {
        char str string bytes byte_buf identifier ignored_any
    }
}

impl SessionData {
    /// No values.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&SessionValue> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, value)| value)
    }

    /// The text under `key`; `None` when missing or not a string.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key)?.as_str()
    }

    /// Sets `key` to `value` (a [`Value`], a [`SessionValue`] or a `&str`), returning the
    /// value it replaces.
    pub fn insert(&mut self, key: &str, value: impl Into<SessionValue>) -> Option<SessionValue> {
        let mut value = value.into();
        value.normalise();
        if let Some((_, old)) = self.entries.iter_mut().find(|(k, _)| k == key) {
            return Some(std::mem::replace(old, value));
        }
        self.entries.push((CompactString::new(key), value));
        None
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<SessionValue> {
        let at = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(at).1)
    }

    /// The keys and values, in the order the keys were first set.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &SessionValue)> {
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
                while let Some((key, value)) = map.next_entry::<CompactString, SessionValue>()? {
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

    /// A value as the data holds it.
    fn v(value: Value) -> SessionValue {
        SessionValue::from(value)
    }

    #[test]
    fn insert_replace_remove_keep_the_order() {
        let mut data = SessionData::new();
        assert!(data.is_empty());
        assert_eq!(data.insert("b", json!(1)), None);
        assert!(!data.entries.spilled(), "one value, inline");
        assert_eq!(data.insert("a", json!("x")), None);
        assert_eq!(data.insert("b", json!(2)), Some(v(json!(1))));
        assert_eq!(data.len(), 2);
        assert_eq!(data.get("b"), Some(&v(json!(2))));
        assert_eq!(data.get("c"), None);
        let keys: Vec<&str> = data.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(data.remove("b"), Some(v(json!(2))));
        assert_eq!(data.remove("b"), None);
        assert_eq!(data.get_str("a"), Some("x"));
        assert_eq!(data.len(), 1);
        assert!(data.entries.spilled());
        data.shrink_to_fit();
        assert!(!data.entries.spilled(), "back inline");
        assert_eq!(data.get_str("a"), Some("x"));
    }

    /// A string is text however it comes in (a JSON string, a `&str`, a record), so values
    /// compare equal whatever way they were made; text of up to 24 bytes is inline.
    #[test]
    fn strings_are_text() {
        let from_json = v(json!("abc"));
        assert_eq!(from_json, SessionValue::from("abc"));
        assert_eq!(from_json, SessionValue::Text("abc".into()));
        assert_eq!(from_json.as_str(), Some("abc"));
        assert_eq!(from_json, json!("abc"));
        assert_ne!(from_json, json!(1));
        assert_eq!(v(json!(1)).as_str(), None);
        assert_eq!(v(json!(1)), json!(1));
        assert_eq!(from_json.clone().into_json(), json!("abc"));
        assert_eq!(Value::from(v(json!([1, "a"]))), json!([1, "a"]));
        let parsed: SessionValue = serde_json::from_str(r#""abc""#).unwrap();
        assert_eq!(parsed, from_json);
        if cfg!(target_pointer_width = "64") {
            let text = |value: &SessionValue| match value {
                SessionValue::Text(text) => text.is_heap_allocated(),
                SessionValue::Json(_) => panic!("not text"),
            };
            assert!(!text(&SessionValue::from("a 24-byte account name..")));
            assert!(text(&SessionValue::from("a 25-byte account name...")));
        }
        // Stays text through a record and back.
        let mut data = SessionData::new();
        data.insert("t", "abc");
        let record = serde_json::to_vec(&data).unwrap();
        let back: SessionData = serde_json::from_slice(&record).unwrap();
        assert!(matches!(back.get("t"), Some(SessionValue::Text(t)) if t == "abc"));
    }

    /// Text reads through `Session::get` as a JSON string does, whatever type is asked for:
    /// the same value, or the same refusal, as `serde_json` gives for the JSON string.
    #[test]
    fn text_deserialises_as_a_json_string() {
        use std::collections::BTreeMap;

        #[derive(Debug, PartialEq, Deserialize)]
        enum Role {
            Admin,
            Named(String),
        }
        #[derive(Debug, PartialEq, Deserialize)]
        struct Name(String);
        #[derive(Debug, PartialEq, Deserialize)]
        struct Unit;
        #[derive(Debug, PartialEq, Deserialize)]
        struct Record {
            a: String,
        }
        macro_rules! same {
            ($text:expr => $($ty:ty),* $(,)?) => {$(
                let json = json!($text);
                let ours = <$ty>::deserialize(TextDeserializer($text)).ok();
                let theirs = <$ty>::deserialize(&json).ok();
                assert_eq!(ours, theirs, "{} from {:?}", stringify!($ty), $text);
            )*};
        }
        for text in [
            "x", "xy", "", "1", "-1", "1.5", "true", "null", "Admin", "Named", "Unit",
        ] {
            same!(text =>
                String, CompactString, char, bool, u8, u32, u64, i64, i128, f32, f64, (),
                Unit, Vec<String>, (String,), BTreeMap<String, String>, Record,
                Option<String>, Option<Option<String>>, Option<u32>, Role, Name,
            );
        }
        // And the answers themselves, for the common cases.
        assert_eq!(String::deserialize(TextDeserializer("x")).unwrap(), "x");
        assert_eq!(
            Option::<String>::deserialize(TextDeserializer("x")).unwrap(),
            Some("x".to_owned())
        );
        assert_eq!(
            Role::deserialize(TextDeserializer("Admin")).unwrap(),
            Role::Admin
        );
        assert!(Role::deserialize(TextDeserializer("Named")).is_err());
        assert!(u32::deserialize(TextDeserializer("1")).is_err());
    }

    /// A JSON string built by hand is still a string: inserted, it becomes text; compared,
    /// it equals the same text; `as_str` gives it.
    #[test]
    fn a_hand_made_json_string_is_still_a_string() {
        let hand_made = SessionValue::Json(json!("abc"));
        assert_eq!(hand_made.as_str(), Some("abc"));
        assert_eq!(hand_made, SessionValue::from("abc"));
        assert_eq!(SessionValue::from("abc"), hand_made);
        assert_ne!(hand_made, SessionValue::from("abd"));
        assert_ne!(SessionValue::Json(json!(1)), SessionValue::from("1"));
        assert_eq!(SessionValue::Json(json!(1)), SessionValue::Json(json!(1)));
        let mut data = SessionData::new();
        data.insert("k", hand_made);
        assert!(matches!(data.get("k"), Some(SessionValue::Text(t)) if t == "abc"));
        assert_eq!(data.get_str("k"), Some("abc"));
        assert_eq!(
            SessionValue::from(String::from("s")),
            SessionValue::from("s")
        );
        assert_eq!(
            SessionValue::from(CompactString::new("s")),
            SessionValue::from("s")
        );
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
        assert_eq!(parsed.get("a\"b"), Some(&v(json!(1))));
        assert_eq!(parsed.get("x"), Some(&v(json!(2))));
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

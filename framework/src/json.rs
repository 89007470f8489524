//! Compact JSON for the responder: serde's data model written byte for byte as
//! `serde_json::to_writer` writes it, with one difference in how strings are written.
//!
//! serde_json looks up every byte of every string (keys and values) in its escape table before
//! it copies the string: about 9 instructions a byte (callgrind, the benchmark's `/json` and
//! the user service's login). Here a string is first checked for a byte that JSON must escape
//! (`"`, `\` or a control character below 0x20: serde_json's set) a word at a time, and one
//! with none, the usual case, is copied in one piece. A string that does need an escape, every
//! number, byte string and `collect_str` are written by serde_json's own serializer, made on
//! the spot over the same buffer, so their text cannot drift from serde_json's. The tests
//! compare the two over every shape of serde's data model.
//!
//! serde_json's private tokens are honoured: a `RawValue` (the `raw_value` feature, which the
//! workspace enables) is written as it is, and so is an arbitrary-precision `Number`. An
//! invalid map key fails with serde_json's message (`key must be a string`, `float key must be
//! finite (got NaN or +/-inf)`), as a custom error.

use serde::ser::{self, Impossible, Serialize};

type Result<T = ()> = std::result::Result<T, serde_json::Error>;

/// The struct names serde_json gives a `RawValue` and an arbitrary-precision `Number`: their
/// one field is JSON text, written without quotes or escapes.
const RAW_TOKENS: [&str; 2] = [
    "$serde_json::private::RawValue",
    "$serde_json::private::Number",
];

/// Appends `value` to `out` as compact JSON: the bytes `serde_json::to_writer` would write.
pub(crate) fn write<T: ?Sized + Serialize>(out: &mut Vec<u8>, value: &T) -> Result {
    value.serialize(&mut Writer { out, raw: false })
}

/// `value` as compact JSON: the bytes of `serde_json::to_vec`.
pub(crate) fn to_vec<T: ?Sized + Serialize>(value: &T) -> Result<Vec<u8>> {
    // serde_json's first room, so a value grows its buffer as it would there.
    let mut out = Vec::with_capacity(128);
    write(&mut out, value)?;
    Ok(out)
}

/// Whether `bytes` holds a byte JSON must escape: `"`, `\` or one below 0x20 (DEL and
/// non-ASCII bytes are written as they are, as serde_json does). Eight bytes are tested at
/// once: a string of 8 to 16 bytes as its first and last eight (overlapping), a longer one
/// word by word and then its last eight, one of four to seven bytes as its first and last
/// four. Only strings of at most three bytes go byte by byte.
#[inline]
fn needs_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    // The high bit of each byte of `w` that is below 0x20, `"` or `\` (and maybe of a byte
    // above such a one). "Below `n`" is the classic `(w - n·ONES) & !w & HIGH`: a borrow can
    // only mark a byte above one that is marked rightly, so the test for *any* is exact; a
    // byte equal to `c` is a zero byte of `w ^ c`.
    let marks = |w: u64| {
        let below = |w: u64, n: u64| w.wrapping_sub(n * ONES) & !w & HIGH;
        below(w, 0x20)
            | below(w ^ (u64::from(b'"') * ONES), 1)
            | below(w ^ (u64::from(b'\\') * ONES), 1)
    };
    let u64_at = |i: usize| {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(&bytes[i..i + 8]);
        u64::from_ne_bytes(eight)
    };
    let u32_at = |i: usize| {
        let mut four = [0u8; 4];
        four.copy_from_slice(&bytes[i..i + 4]);
        u64::from(u32::from_ne_bytes(four))
    };
    let len = bytes.len();
    if len > 16 {
        let mut found = 0;
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut eight = [0u8; 8];
            eight.copy_from_slice(word);
            found |= marks(u64::from_ne_bytes(eight));
        }
        (found | marks(u64_at(len - 8))) != 0
    } else if len >= 8 {
        (marks(u64_at(0)) | marks(u64_at(len - 8))) != 0
    } else if len >= 4 {
        marks(u32_at(0) | u32_at(len - 4) << 32) != 0
    } else {
        bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\')
    }
}

/// Writes serde's data model as JSON into `out`.
struct Writer<'a> {
    out: &'a mut Vec<u8>,
    /// The next string is JSON text already (the field of a `RawValue` or `Number`).
    raw: bool,
}

impl<'a> Writer<'a> {
    /// serde_json's serializer over the same buffer, for what is written as it writes it.
    #[inline]
    fn json(&mut self) -> serde_json::Serializer<&mut Vec<u8>> {
        serde_json::Serializer::new(&mut *self.out)
    }

    /// `s` as a JSON string: copied between quotes when it needs no escape, else written by
    /// serde_json.
    #[inline]
    fn string(&mut self, s: &str) -> Result {
        if needs_escape(s.as_bytes()) {
            return ser::Serializer::serialize_str(&mut self.json(), s);
        }
        self.out.reserve(s.len() + 2);
        self.out.push(b'"');
        self.out.extend_from_slice(s.as_bytes());
        self.out.push(b'"');
        Ok(())
    }

    /// Opens a compound: writes `open` and gives the state that writes its members and, at
    /// its end, `close`.
    #[inline]
    fn open<'w>(&'w mut self, open: &[u8], close: &'static [u8]) -> Compound<'w, 'a> {
        self.out.extend_from_slice(open);
        Compound {
            writer: self,
            first: true,
            close,
        }
    }

    /// Opens the object `{"variant":` of an enum's newtype, tuple or struct variant.
    #[inline]
    fn variant(&mut self, variant: &str) -> Result {
        self.out.push(b'{');
        self.string(variant)?;
        self.out.push(b':');
        Ok(())
    }
}

/// Forwards each listed method to serde_json's serializer.
macro_rules! to_serde_json {
    ($($method:ident($ty:ty)),* $(,)?) => {$(
        #[inline]
        fn $method(self, value: $ty) -> Result {
            ser::Serializer::$method(&mut self.json(), value)
        }
    )*};
}

impl<'w, 'a> ser::Serializer for &'w mut Writer<'a> {
    type Ok = ();
    type Error = serde_json::Error;
    type SerializeSeq = Compound<'w, 'a>;
    type SerializeTuple = Compound<'w, 'a>;
    type SerializeTupleStruct = Compound<'w, 'a>;
    type SerializeTupleVariant = Compound<'w, 'a>;
    type SerializeMap = Compound<'w, 'a>;
    type SerializeStruct = Compound<'w, 'a>;
    type SerializeStructVariant = Compound<'w, 'a>;

    to_serde_json! {
        serialize_bool(bool), serialize_i8(i8), serialize_i16(i16), serialize_i32(i32),
        serialize_i64(i64), serialize_i128(i128), serialize_u8(u8), serialize_u16(u16),
        serialize_u32(u32), serialize_u64(u64), serialize_u128(u128), serialize_f32(f32),
        serialize_f64(f64), serialize_bytes(&[u8]),
    }

    #[inline]
    fn serialize_char(self, value: char) -> Result {
        self.string(value.encode_utf8(&mut [0; 4]))
    }

    #[inline]
    fn serialize_str(self, value: &str) -> Result {
        if self.raw {
            self.out.extend_from_slice(value.as_bytes());
            return Ok(());
        }
        self.string(value)
    }

    #[inline]
    fn serialize_none(self) -> Result {
        self.serialize_unit()
    }

    #[inline]
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result {
        value.serialize(self)
    }

    #[inline]
    fn serialize_unit(self) -> Result {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    #[inline]
    fn serialize_unit_struct(self, _name: &'static str) -> Result {
        self.serialize_unit()
    }

    #[inline]
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result {
        self.string(variant)
    }

    #[inline]
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result {
        self.variant(variant)?;
        value.serialize(&mut *self)?;
        self.out.push(b'}');
        Ok(())
    }

    #[inline]
    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'w, 'a>> {
        Ok(self.open(b"[", b"]"))
    }

    #[inline]
    fn serialize_tuple(self, _len: usize) -> Result<Compound<'w, 'a>> {
        Ok(self.open(b"[", b"]"))
    }

    #[inline]
    fn serialize_tuple_struct(self, _name: &'static str, _len: usize) -> Result<Compound<'w, 'a>> {
        Ok(self.open(b"[", b"]"))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'w, 'a>> {
        self.variant(variant)?;
        Ok(self.open(b"[", b"]}"))
    }

    #[inline]
    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'w, 'a>> {
        Ok(self.open(b"{", b"}"))
    }

    #[inline]
    fn serialize_struct(self, name: &'static str, _len: usize) -> Result<Compound<'w, 'a>> {
        if RAW_TOKENS.contains(&name) {
            // Its one field is the text itself: no braces, no key.
            return Ok(self.open(b"", b""));
        }
        Ok(self.open(b"{", b"}"))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'w, 'a>> {
        self.variant(variant)?;
        Ok(self.open(b"{", b"}}"))
    }

    fn collect_str<T: ?Sized + std::fmt::Display>(self, value: &T) -> Result {
        self.json().collect_str(value)
    }
}

/// An array or object being written: whether the next member is its first, and what closes it.
/// A `RawValue` or `Number` opens with nothing and closes with nothing: its one field is
/// written as it is (see `field`).
pub(crate) struct Compound<'w, 'a> {
    writer: &'w mut Writer<'a>,
    first: bool,
    close: &'static [u8],
}

impl Compound<'_, '_> {
    /// Writes the comma before every member but the first.
    #[inline]
    fn member(&mut self) {
        if !std::mem::replace(&mut self.first, false) {
            self.writer.out.push(b',');
        }
    }

    #[inline]
    fn element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result {
        self.member();
        value.serialize(&mut *self.writer)
    }

    #[inline]
    fn field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> Result {
        if self.close.is_empty() {
            // The text of a `RawValue` or `Number`.
            self.writer.raw = true;
            let written = value.serialize(&mut *self.writer);
            self.writer.raw = false;
            return written;
        }
        self.member();
        self.writer.string(key)?;
        self.writer.out.push(b':');
        value.serialize(&mut *self.writer)
    }

    #[inline]
    fn close(self) -> Result {
        self.writer.out.extend_from_slice(self.close);
        Ok(())
    }
}

/// Implements the sequence-like compounds: elements separated by commas.
macro_rules! elements {
    ($($trait:ident::$method:ident),* $(,)?) => {$(
        impl ser::$trait for Compound<'_, '_> {
            type Ok = ();
            type Error = serde_json::Error;

            #[inline]
            fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> Result {
                self.element(value)
            }

            #[inline]
            fn end(self) -> Result {
                self.close()
            }
        }
    )*};
}

elements! {
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
}

/// Implements the struct-like compounds: `"key":value` members.
macro_rules! fields {
    ($($trait:ident),* $(,)?) => {$(
        impl ser::$trait for Compound<'_, '_> {
            type Ok = ();
            type Error = serde_json::Error;

            #[inline]
            fn serialize_field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> Result {
                self.field(key, value)
            }

            #[inline]
            fn end(self) -> Result {
                self.close()
            }
        }
    )*};
}

fields!(SerializeStruct, SerializeStructVariant);

impl ser::SerializeMap for Compound<'_, '_> {
    type Ok = ();
    type Error = serde_json::Error;

    #[inline]
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result {
        self.member();
        key.serialize(MapKey(&mut *self.writer))
    }

    #[inline]
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result {
        self.writer.out.push(b':');
        value.serialize(&mut *self.writer)
    }

    #[inline]
    fn end(self) -> Result {
        self.close()
    }
}

/// A map key: a string, or a number or `bool` written between quotes, as serde_json writes
/// keys.
struct MapKey<'w, 'a>(&'w mut Writer<'a>);

/// serde_json's error for a key that is not a string, number, `bool` or `char`.
fn key_must_be_a_string() -> serde_json::Error {
    ser::Error::custom("key must be a string")
}

/// Writes each listed value between quotes, as serde_json's serializer writes it.
macro_rules! quoted {
    ($($method:ident($ty:ty)),* $(,)?) => {$(
        #[inline]
        fn $method(self, value: $ty) -> Result {
            self.0.out.push(b'"');
            ser::Serializer::$method(&mut self.0.json(), value)?;
            self.0.out.push(b'"');
            Ok(())
        }
    )*};
}

/// Writes each listed float between quotes; a NaN or infinite one is no key.
macro_rules! quoted_float {
    ($($method:ident($ty:ty)),* $(,)?) => {$(
        fn $method(self, value: $ty) -> Result {
            if !value.is_finite() {
                return Err(ser::Error::custom("float key must be finite (got NaN or +/-inf)"));
            }
            self.0.out.push(b'"');
            ser::Serializer::$method(&mut self.0.json(), value)?;
            self.0.out.push(b'"');
            Ok(())
        }
    )*};
}

/// Refuses each listed method: no such value is a key.
macro_rules! no_key {
    ($($method:ident($($arg:ty),*) -> $ok:ty),* $(,)?) => {$(
        fn $method(self, $(_: $arg),*) -> Result<$ok> {
            Err(key_must_be_a_string())
        }
    )*};
}

impl ser::Serializer for MapKey<'_, '_> {
    type Ok = ();
    type Error = serde_json::Error;
    type SerializeSeq = Impossible<(), serde_json::Error>;
    type SerializeTuple = Impossible<(), serde_json::Error>;
    type SerializeTupleStruct = Impossible<(), serde_json::Error>;
    type SerializeTupleVariant = Impossible<(), serde_json::Error>;
    type SerializeMap = Impossible<(), serde_json::Error>;
    type SerializeStruct = Impossible<(), serde_json::Error>;
    type SerializeStructVariant = Impossible<(), serde_json::Error>;

    quoted! {
        serialize_bool(bool), serialize_i8(i8), serialize_i16(i16), serialize_i32(i32),
        serialize_i64(i64), serialize_i128(i128), serialize_u8(u8), serialize_u16(u16),
        serialize_u32(u32), serialize_u64(u64), serialize_u128(u128),
    }

    quoted_float!(serialize_f32(f32), serialize_f64(f64));

    no_key! {
        serialize_bytes(&[u8]) -> (),
        serialize_unit() -> (),
        serialize_unit_struct(&'static str) -> (),
        serialize_none() -> (),
        serialize_seq(Option<usize>) -> Self::SerializeSeq,
        serialize_tuple(usize) -> Self::SerializeTuple,
        serialize_tuple_struct(&'static str, usize) -> Self::SerializeTupleStruct,
        serialize_tuple_variant(&'static str, u32, &'static str, usize) -> Self::SerializeTupleVariant,
        serialize_map(Option<usize>) -> Self::SerializeMap,
        serialize_struct(&'static str, usize) -> Self::SerializeStruct,
        serialize_struct_variant(&'static str, u32, &'static str, usize) -> Self::SerializeStructVariant,
    }

    #[inline]
    fn serialize_str(self, value: &str) -> Result {
        self.0.string(value)
    }

    #[inline]
    fn serialize_char(self, value: char) -> Result {
        self.0.string(value.encode_utf8(&mut [0; 4]))
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result {
        self.0.string(variant)
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result {
        Err(key_must_be_a_string())
    }

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result {
        value.serialize(self)
    }

    fn collect_str<T: ?Sized + std::fmt::Display>(self, value: &T) -> Result {
        self.0.json().collect_str(value)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Serialize;
    use serde_json::json;

    use super::*;

    /// Asserts that `value` is written as serde_json writes it.
    fn same<T: ?Sized + Serialize>(value: &T) {
        let ours = to_vec(value).map(|v| String::from_utf8(v).unwrap());
        let theirs = serde_json::to_string(value);
        match (ours, theirs) {
            (Ok(ours), Ok(theirs)) => assert_eq!(ours, theirs),
            (Err(ours), Err(theirs)) => assert_eq!(ours.to_string(), theirs.to_string()),
            (ours, theirs) => panic!("ours {ours:?}, serde_json's {theirs:?}"),
        }
    }

    #[derive(Serialize)]
    struct Unit;

    #[derive(Serialize)]
    struct Newtype(String);

    #[derive(Serialize)]
    struct Pair(i32, &'static str);

    #[derive(Serialize)]
    enum Shape {
        Unit,
        Newtype(u8),
        Tuple(u8, Option<bool>),
        Struct { a: f64, b: Vec<Shape> },
    }

    #[derive(Serialize)]
    struct Everything {
        #[serde(rename = "quote\"d")]
        quoted: (),
        unit: Unit,
        newtype: Newtype,
        pair: Pair,
        shapes: Vec<Shape>,
        chars: [char; 3],
        #[serde(with = "serde_bytes_like")]
        bytes: Vec<u8>,
        none: Option<u8>,
        some: Option<&'static str>,
        numbers: (i8, i16, i32, i64, i128, u8, u16, u32, u64, u128),
        floats: (f32, f64, f64, f64, f64),
        empty: (Vec<u8>, BTreeMap<String, u8>, ()),
        #[serde(flatten)]
        flat: BTreeMap<&'static str, u8>,
        raw: Box<serde_json::value::RawValue>,
        value: serde_json::Value,
    }

    /// Writes the bytes with `serialize_bytes` (an array of numbers in JSON).
    mod serde_bytes_like {
        pub(super) fn serialize<S: serde::Serializer>(
            v: &[u8],
            s: S,
        ) -> std::result::Result<S::Ok, S::Error> {
            s.serialize_bytes(v)
        }
    }

    #[test]
    fn writes_every_shape_as_serde_json_does() {
        let everything = Everything {
            quoted: (),
            unit: Unit,
            newtype: Newtype("new".into()),
            pair: Pair(-1, "two"),
            shapes: vec![
                Shape::Unit,
                Shape::Newtype(7),
                Shape::Tuple(1, None),
                Shape::Struct {
                    a: 0.1,
                    b: vec![Shape::Tuple(2, Some(true))],
                },
            ],
            chars: ['a', '"', '\u{1F600}'],
            bytes: vec![0, 1, 255],
            none: None,
            some: Some("x"),
            numbers: (
                i8::MIN,
                i16::MIN,
                i32::MIN,
                i64::MIN,
                i128::MIN,
                u8::MAX,
                u16::MAX,
                u32::MAX,
                u64::MAX,
                u128::MAX,
            ),
            floats: (1.5, -0.0, f64::NAN, f64::INFINITY, 1e300),
            empty: (Vec::new(), BTreeMap::new(), ()),
            flat: BTreeMap::from([("f1", 1), ("f2", 2)]),
            raw: serde_json::value::RawValue::from_string("[1, \"a\" ]".into()).unwrap(),
            value: json!({"k": [1, 2.5, null, "s\n", {"e": {}}], "t": true}),
        };
        same(&everything);
        same(&Shape::Unit);
        same(&Unit);
        same(&"top");
        same(&42);
    }

    #[test]
    fn escapes_what_needs_escaping_at_every_length_and_place() {
        // Every length from 0 to 20, with each escaped byte at each place, and none.
        for len in 0..=20 {
            same(&"a".repeat(len));
            same(&"é".repeat(len));
            for place in 0..len {
                for special in ['"', '\\', '\n', '\u{0}', '\u{1f}', '\u{7f}', ' ', '/'] {
                    let mut s: Vec<char> = "abcdefghijklmnopqrstuvwxyz".chars().take(len).collect();
                    s[place] = special;
                    let s: String = s.into_iter().collect();
                    same(&s);
                    // As a key too.
                    same(&BTreeMap::from([(s.clone(), 1)]));
                }
            }
        }
        for byte in 0u8..=127 {
            same(&char::from(byte).to_string().repeat(9));
        }
    }

    #[test]
    fn map_keys_are_strings_numbers_and_bools_between_quotes() {
        same(&BTreeMap::from([(1, "a"), (-2, "b")]));
        same(&BTreeMap::from([(true, 1), (false, 2)]));
        same(&BTreeMap::from([('c', 1)]));
        same(&BTreeMap::from([(u128::MAX, 1)]));
        same(&std::collections::HashMap::from([(1.5f64.to_bits(), 1)]));
        #[derive(Serialize, PartialEq, Eq, PartialOrd, Ord)]
        enum Key {
            A,
            B(u8),
        }
        same(&BTreeMap::from([(Key::A, 1)]));
        same(&BTreeMap::from([(Key::B(1), 1)]));
        same(&BTreeMap::from([(Some(3), 1)]));
        same(&BTreeMap::from([(None::<u8>, 1)]));
        same(&BTreeMap::from([((), 1)]));
        same(&BTreeMap::from([(vec![1], 1)]));
        let floats = |f: f64| {
            let mut map = serde_json::Map::new();
            map.insert("k".into(), json!(f));
            map
        };
        same(&floats(2.5));
        /// A map whose one key is a float.
        struct FloatKey(f64);
        impl Serialize for FloatKey {
            fn serialize<S: serde::Serializer>(
                &self,
                s: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry(&self.0, &1)?;
                map.end()
            }
        }
        same(&FloatKey(2.5));
        same(&FloatKey(f64::NAN));
        same(&FloatKey(f64::NEG_INFINITY));
    }

    #[test]
    fn collect_str_and_appending_to_what_is_there() {
        /// A value written with `collect_str`.
        struct Shown(&'static str);
        impl Serialize for Shown {
            fn serialize<S: serde::Serializer>(
                &self,
                s: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                s.collect_str(&format_args!("<{}>", self.0))
            }
        }
        same(&Shown("a\"b"));
        same(&[Shown("x")]);
        let mut out = b"before ".to_vec();
        write(&mut out, &json!({"a": 1})).unwrap();
        assert_eq!(out, b"before {\"a\":1}");
    }

    /// Random documents, written as serde_json writes them: strings of random length from an
    /// alphabet of plain, escaped and multi-byte characters, numbers of every kind, nested
    /// arrays and objects.
    #[test]
    fn random_documents_are_written_as_serde_json_does() {
        use rand::{Rng, SeedableRng};
        const ALPHABET: [char; 10] = ['a', 'Z', ' ', '"', '\\', '\n', '\u{1}', '\u{7f}', 'é', '😀'];
        fn value(rng: &mut rand::rngs::SmallRng, depth: u32) -> serde_json::Value {
            let string = |rng: &mut rand::rngs::SmallRng| -> String {
                let len = rng.random_range(0..40);
                (0..len)
                    .map(|_| {
                        // Mostly plain letters, as real text is.
                        if rng.random_bool(0.8) {
                            'x'
                        } else {
                            ALPHABET[rng.random_range(0..ALPHABET.len())]
                        }
                    })
                    .collect()
            };
            match rng.random_range(0..if depth == 0 { 5 } else { 7 }) {
                0 => serde_json::Value::Null,
                1 => json!(rng.random_bool(0.5)),
                2 => json!(rng.random::<i64>()),
                3 => json!(rng.random::<f64>() * 1e6),
                4 => json!(string(rng)),
                5 => (0..rng.random_range(0..5))
                    .map(|_| value(rng, depth - 1))
                    .collect(),
                _ => serde_json::Value::Object(
                    (0..rng.random_range(0..5))
                        .map(|_| (string(rng), value(rng, depth - 1)))
                        .collect(),
                ),
            }
        }
        let mut rng = rand::rngs::SmallRng::seed_from_u64(34);
        for _ in 0..3000 {
            same(&value(&mut rng, 4));
        }
    }
}

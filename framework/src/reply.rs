//! What a handler answers with, before it is bytes: a [`Reply`] in [`Context::body`], and the
//! replies that write their answer themselves.
//!
//! A handler's returned value (or [`Content::set_value`]) becomes a [`Reply`]: text and bytes are
//! sent as they are, any other `Serialize` value is marshalled by the
//! [responder](crate::middleware::responder) (JSON by default) into
//! [`Content::set_bytes`]. Small plain values reuse a per-thread box, so an API that answers
//! the same type request after request does not allocate for it.
//!
//! The other replies set status, headers and body themselves, and describe themselves in the
//! OpenAPI document ([`DescribeReply`](crate::openapi::DescribeReply)):
//!
//! | reply | answers with |
//! |---|---|
//! | [`Created<T>`], [`NoContent`] | 201 with the value, 204 |
//! | [`Sse`] ([`Event`], [`LastEventId`]) | server-sent events, a keep-alive comment while quiet |
//! | [`JsonLines<T>`] | newline-delimited JSON, a value per line |
//! | [`Redirect`] | 303, 307 or 308 with a checked `Location`; [`Redirect::local`] for a target from the request |
//! | `NamedFile`, `Attachment` (feature `static-serve`) | a file, or bytes under a name: ranges, conditional requests, `Content-Disposition` ([`Disposition`]) |
//!
//! The guide's [streaming](crate::guide::streaming) chapter shows the streams, and its
//! [redirects and files](crate::guide::redirects_and_files) chapter the others.
//!
//! [`Context::body`]: crate::Context::body
//! [`Content::set_value`]: crate::context::Content::set_value
//! [`Content::set_bytes`]: crate::context::Content::set_bytes

mod disposition;
#[cfg(feature = "static-serve")]
pub mod file;
pub mod json_lines;
pub mod redirect;
pub mod sse;

pub use disposition::Disposition;
#[cfg(feature = "multipart")]
pub(crate) use disposition::is_invisible_or_bidi;
#[cfg(feature = "static-serve")]
pub use file::{Attachment, NamedFile};
pub use json_lines::JsonLines;
pub use redirect::Redirect;
pub use sse::{Event, LastEventId, Sse};

use std::any::{Any, TypeId};
use std::borrow::Cow;

use bytes::Bytes;
use serde::Serialize;

/// The response body a handler sets: converted to bytes by the responder.
pub enum Reply {
    /// Text, sent as `text/plain; charset=utf-8`.
    Text(Cow<'static, str>),
    /// Raw bytes, sent as `application/octet-stream`.
    Bytes(Bytes),
    /// Any other value, marshalled by the responder (JSON by default).
    Value(Box<dyn ReplyValue>),
}

/// A value the responder can marshal: JSON through the value's own (monomorphised) `Serialize`
/// impl, or any other format through `erased_serde`.
///
/// Implemented for every `Serialize + Send + Sync + 'static` type.
pub trait ReplyValue: erased_serde::Serialize + Any + Send + Sync {
    /// The value as JSON, without dynamic dispatch per field.
    fn to_json(&self) -> serde_json::Result<Vec<u8>>;

    /// Appends the value as JSON to `out` (the responder's reused buffer).
    #[doc(hidden)]
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()>;

    /// Hands the value's box back once the value has been marshalled. A small value with no
    /// drop glue (see [`Reply::from_value`]) keeps its box as this thread's spare, which the
    /// next value of the same type reuses instead of allocating; any other value is dropped.
    #[doc(hidden)]
    fn release(self: Box<Self>);
}

impl<T: Serialize + Send + Sync + 'static> ReplyValue for T {
    fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(self)
    }

    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        serde_json::to_writer(out, self)
    }

    #[inline]
    fn release(self: Box<Self>) {
        if recyclable::<T>() {
            // Replaces (and frees) a spare of another type; after thread-local destruction
            // the box is simply dropped.
            let _ = SPARE_VALUE.try_with(|spare| spare.set(Some(self)));
        }
    }
}

/// The largest value whose box is recycled: the spare a thread keeps is at most this size.
const SPARE_VALUE_MAX: usize = 64;

/// Whether a `T`'s box is kept as the thread's spare after marshalling: `T` allocates (not
/// zero-sized), is at most [`SPARE_VALUE_MAX`] bytes and has no drop glue, so a value kept in
/// the spare until the next one replaces it holds no memory, file or lock beyond its own few
/// bytes.
const fn recyclable<T>() -> bool {
    !std::mem::needs_drop::<T>()
        && std::mem::size_of::<T>() != 0
        && std::mem::size_of::<T>() <= SPARE_VALUE_MAX
}

thread_local! {
    /// One released value box per thread ([`ReplyValue::release`]). A handler returning the
    /// same plain type request after request (an API's usual answer) reuses one box instead
    /// of an allocation and a free per request.
    static SPARE_VALUE: std::cell::Cell<Option<Box<dyn ReplyValue>>> =
        const { std::cell::Cell::new(None) };
}

/// `value` boxed as a [`Reply::Value`], in the thread's spare box when that was a `T`'s.
fn box_value<T: ReplyValue>(value: T) -> Box<dyn ReplyValue> {
    if recyclable::<T>()
        && let Ok(Some(spare)) = SPARE_VALUE.try_with(std::cell::Cell::take)
    {
        let spare: Box<dyn Any> = spare;
        // A spare of another type is freed: the responder keeps this value's box instead.
        if let Ok(mut reused) = spare.downcast::<T>() {
            *reused = value;
            return reused;
        }
    }
    Box::new(value)
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reply::Text(t) => f.debug_tuple("Text").field(t).finish(),
            Reply::Bytes(b) => f.debug_tuple("Bytes").field(b).finish(),
            Reply::Value(_) => f.write_str("Value(..)"),
        }
    }
}

impl Reply {
    /// Sorts a value into the right kind without specialisation: `String`, `&'static str`,
    /// `Cow<'static, str>`, `Bytes` and `Vec<u8>` are recognised by type id; `()` means no body.
    /// Any other value becomes [`Reply::Value`]. Its box is allocated, except for a value of at
    /// most 64 bytes with no drop glue (plain data: numbers, `&'static str`, structs of them)
    /// when this thread's responder last marshalled a value of the same type: that value's
    /// box is reused. The responder keeps at most one such box per thread.
    pub fn from_value<T: Serialize + Send + Sync + 'static>(value: T) -> Option<Self> {
        let mut slot = Some(value);
        let any: &mut dyn Any = &mut slot;
        if TypeId::of::<T>() == TypeId::of::<()>() {
            return None;
        }
        if let Some(s) = any.downcast_mut::<Option<String>>() {
            return s.take().map(|s| Reply::Text(s.into()));
        }
        if let Some(s) = any.downcast_mut::<Option<&'static str>>() {
            return s.take().map(|s| Reply::Text(s.into()));
        }
        if let Some(s) = any.downcast_mut::<Option<Cow<'static, str>>>() {
            return s.take().map(Reply::Text);
        }
        if let Some(b) = any.downcast_mut::<Option<Bytes>>() {
            return b.take().map(Reply::Bytes);
        }
        if let Some(b) = any.downcast_mut::<Option<Vec<u8>>>() {
            return b.take().map(|b| Reply::Bytes(b.into()));
        }
        slot.map(|v| Reply::Value(box_value(v)))
    }
}

#[cfg(test)]
mod tests {
    use super::{Reply, ReplyValue, SPARE_VALUE};
    use std::any::TypeId;

    #[derive(serde::Serialize)]
    struct Plain {
        id: u32,
        name: &'static str,
    }

    #[derive(serde::Serialize)]
    struct Owning {
        name: String,
    }

    /// The type of the value in this thread's spare box, if there is one.
    fn spare_type() -> Option<TypeId> {
        let spare = SPARE_VALUE.take();
        let id = spare.as_ref().map(|v| (**v).type_id());
        SPARE_VALUE.set(spare);
        id
    }

    fn value(body: Option<Reply>) -> Box<dyn ReplyValue> {
        match body {
            Some(Reply::Value(value)) => value,
            other => panic!("not a value body: {other:?}"),
        }
    }

    fn json(value: &dyn ReplyValue) -> String {
        String::from_utf8(value.to_json().unwrap()).unwrap()
    }

    #[test]
    fn a_plain_value_box_is_kept_after_release_and_reused_by_the_next_value_of_its_type() {
        SPARE_VALUE.set(None);
        let first = value(Reply::from_value(Plain { id: 1, name: "a" }));
        assert_eq!(spare_type(), None);
        let address = std::ptr::from_ref::<dyn ReplyValue>(&*first).cast::<u8>();
        first.release();
        assert_eq!(spare_type(), Some(TypeId::of::<Plain>()));

        let second = value(Reply::from_value(Plain { id: 2, name: "b" }));
        assert_eq!(spare_type(), None, "the spare was taken");
        assert_eq!(
            std::ptr::from_ref::<dyn ReplyValue>(&*second).cast::<u8>(),
            address,
            "the same box"
        );
        assert_eq!(json(&*second), r#"{"id":2,"name":"b"}"#);
        second.release();
    }

    #[test]
    fn a_spare_of_another_type_is_freed_and_the_new_value_is_its_own() {
        SPARE_VALUE.set(None);
        value(Reply::from_value(Plain { id: 1, name: "a" })).release();
        let other = value(Reply::from_value((7u8, 9u16)));
        assert_eq!(json(&*other), "[7,9]");
        assert_eq!(spare_type(), None, "the Plain spare was taken and freed");
        other.release();
        assert_eq!(spare_type(), Some(TypeId::of::<(u8, u16)>()));
    }

    #[test]
    fn values_with_drop_glue_or_over_64_bytes_are_never_kept() {
        SPARE_VALUE.set(None);
        value(Reply::from_value(Plain { id: 1, name: "a" })).release();

        let owning = value(Reply::from_value(Owning { name: "x".into() }));
        owning.release();
        assert_eq!(spare_type(), Some(TypeId::of::<Plain>()), "left as it was");

        let big = value(Reply::from_value(([1u64; 4], [2u64; 4], 3u8)));
        assert_eq!(std::mem::size_of_val(&*big), 72);
        assert_eq!(json(&*big), "[[1,1,1,1],[2,2,2,2],3]");
        big.release();
        assert_eq!(spare_type(), Some(TypeId::of::<Plain>()), "left as it was");

        let at_limit = value(Reply::from_value(([1u64; 4], [2u64; 4])));
        assert_eq!(std::mem::size_of_val(&*at_limit), 64);
        at_limit.release();
        assert_eq!(spare_type(), Some(TypeId::of::<([u64; 4], [u64; 4])>()));
        SPARE_VALUE.set(None);
    }
}

/// A handler's answer with status `201 Created`: the value is the body
/// ([`IntoReply`](crate::IntoReply)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Created<T>(pub T);

// Documented as the value: it is the body.
crate::openapi::schema_of_inner!(Created);

/// A handler's answer with status `204 No Content` and no body; the OpenAPI document lists
/// the route's success as 204.
///
/// ```
/// use framework::reply::NoContent;
/// use framework::{Context, Result};
///
/// async fn forget(_ctx: &mut Context) -> Result<NoContent> {
///     Ok(NoContent)
/// }
/// # let _ = forget;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NoContent;

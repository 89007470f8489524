//! How `#[controller]` turns what a method returned into the answer, chosen by the returned
//! value's type, not by how the return type is spelled: a `Result` under any alias
//! (`framework::Result<T>`, `type ApiResult<T> = Result<T, ApiError>`), an `Option` whose
//! `None` is a 404, both, or a plain value.
//!
//! The choice is made at compile time by method resolution (autoref specialisation, as
//! [`Probe`](crate::openapi::Probe) is): `(&&&&ReturnProbe::of(&out)).tag()` finds the most
//! specific of four impls whose bounds hold, and the tag's `finish` is the matching function of
//! `into_reply`. A type that is no reply at all reaches [`ValueTag`], whose
//! `IntoReply` bound gives the one error, at the method's return type.
//!
//! The route's OpenAPI description asks the same tags (`ReturnProbe::<R>::new()`): whether
//! `None` is a 404, and the success value's type, which then describes itself
//! ([`DescribeReply`](crate::openapi::DescribeReply)) or gives its schema.

use std::marker::PhantomData;

use super::IntoReply;
use super::into_reply::{finish, finish_found, finish_found_value, finish_value};
use crate::context::Context;
use crate::error::Result;

/// The returned value's type, for the tags' choice.
pub struct ReturnProbe<R>(PhantomData<R>);

impl<R> ReturnProbe<R> {
    /// The probe of `out`'s type.
    #[inline]
    pub fn of(_out: &R) -> Self {
        ReturnProbe(PhantomData)
    }

    /// The probe of the type `R`, for the route's description (no value yet).
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        ReturnProbe(PhantomData)
    }
}

macro_rules! tags {
    ($($(#[$doc:meta])* $tag:ident, found: $found:literal;)*) => {$(
        $(#[$doc])*
        pub struct $tag<T>(PhantomData<T>);

        impl<T> $tag<T> {
            /// Whether `None` is a 404, for the route's description.
            pub fn found(&self) -> bool {
                $found
            }

            /// The success value's type, for the route's description
            /// ([`Probe`](crate::openapi::Probe)).
            pub fn value(&self) -> crate::openapi::Probe<T> {
                crate::openapi::Probe::new()
            }
        }
    )*};
}
tags! {
    /// `Result<Option<T>, E>`: [`finish_found`].
    FoundResultTag, found: true;
    /// `Result<T, E>`: [`finish`].
    ResultTag, found: false;
    /// `Option<T>`: [`finish_found_value`].
    FoundTag, found: true;
    /// Any other value: [`finish_value`].
    ValueTag, found: false;
}

impl<T: IntoReply> FoundResultTag<T> {
    /// `None` is a 404, an error goes to the error handler.
    #[inline]
    pub fn finish<E: Into<crate::Error>>(
        self,
        out: std::result::Result<Option<T>, E>,
        ctx: &mut Context,
    ) -> Result {
        finish_found(out, ctx)
    }
}

impl<T: IntoReply> ResultTag<T> {
    /// An error goes to the error handler.
    #[inline]
    pub fn finish<E: Into<crate::Error>>(
        self,
        out: std::result::Result<T, E>,
        ctx: &mut Context,
    ) -> Result {
        finish(out, ctx)
    }
}

impl<T: IntoReply> FoundTag<T> {
    /// `None` is a 404.
    #[inline]
    pub fn finish(self, out: Option<T>, ctx: &mut Context) -> Result {
        finish_found_value(out, ctx)
    }
}

impl<T> ValueTag<T> {
    /// The value is the answer.
    #[inline]
    pub fn finish(self, out: T, ctx: &mut Context) -> Result
    where
        T: IntoReply,
    {
        finish_value(out, ctx)
    }
}

/// Picks [`FoundResultTag`].
pub trait ViaFoundResult<T> {
    /// The tag.
    #[inline]
    fn tag(&self) -> FoundResultTag<T> {
        FoundResultTag(PhantomData)
    }
}
impl<T: IntoReply, E: Into<crate::Error>> ViaFoundResult<T>
    for &&&ReturnProbe<std::result::Result<Option<T>, E>>
{
}

/// Picks [`ResultTag`].
pub trait ViaResult<T> {
    /// The tag.
    #[inline]
    fn tag(&self) -> ResultTag<T> {
        ResultTag(PhantomData)
    }
}
impl<T: IntoReply, E: Into<crate::Error>> ViaResult<T>
    for &&ReturnProbe<std::result::Result<T, E>>
{
}

/// Picks [`FoundTag`].
pub trait ViaFound<T> {
    /// The tag.
    #[inline]
    fn tag(&self) -> FoundTag<T> {
        FoundTag(PhantomData)
    }
}
impl<T: IntoReply> ViaFound<T> for &ReturnProbe<Option<T>> {}

/// Picks [`ValueTag`]: any type, so a type that is no reply fails at `ValueTag::finish`'s bound.
pub trait ViaValue<T> {
    /// The tag.
    #[inline]
    fn tag(&self) -> ValueTag<T> {
        ValueTag(PhantomData)
    }
}
impl<R> ViaValue<R> for ReturnProbe<R> {}

/// The success status of a reply type ([`IntoReply`]'s hidden `STATUS`: `Created`'s 201, else
/// 200): `(&&probe).status()` for a [`Probe`](crate::openapi::Probe) of the value's type; 200
/// ([`ViaNoStatus`]) for a type that is no reply, whose error is reported where it is finished.
pub trait ViaStatus {
    /// The status.
    fn status(&self) -> u16;
}
impl<T: IntoReply> ViaStatus for &crate::openapi::Probe<T> {
    fn status(&self) -> u16 {
        T::STATUS
    }
}

/// [`ViaStatus`] of a type that is no reply: 200.
pub trait ViaNoStatus {
    /// 200.
    fn status(&self) -> u16;
}
impl<T: ?Sized> ViaNoStatus for crate::openapi::Probe<T> {
    fn status(&self) -> u16 {
        200
    }
}

#[cfg(test)]
// The borrows are the probe: each `&` is a step of the method resolution that picks the tag.
#[allow(clippy::needless_borrow)]
mod tests {
    use super::*;
    use crate::HttpError;

    type ApiResult<T> = std::result::Result<T, HttpError>;

    fn run<F: FnOnce(&mut Context) -> Result>(f: F) -> (Result, Option<http::StatusCode>) {
        let service = crate::App::new().build().expect("an app");
        let mut ctx = service.test_context(http::Request::new(crate::body::RequestBody::Empty));
        let out = f(&mut ctx);
        (out, ctx.status())
    }

    #[test]
    fn the_returned_type_not_its_spelling_picks_how_it_finishes() {
        // An alias of a `Result` is a `Result`: its error is the handler's error.
        let (out, _) = run(|ctx| {
            let out: ApiResult<String> = Err(HttpError::new("no"));
            (&&&&ReturnProbe::of(&out)).tag().finish(out, ctx)
        });
        assert_eq!(out.map_err(|e| e.status().as_u16()), Err(400));
        // `None` in a `Result` under an alias is a 404.
        let (out, _) = run(|ctx| {
            let out: ApiResult<Option<String>> = Ok(None);
            (&&&&ReturnProbe::of(&out)).tag().finish(out, ctx)
        });
        assert_eq!(out.map_err(|e| e.status().as_u16()), Err(404));
        let (out, _) = run(|ctx| {
            let out: Option<u32> = None;
            (&&&&ReturnProbe::of(&out)).tag().finish(out, ctx)
        });
        assert_eq!(out.map_err(|e| e.status().as_u16()), Err(404));
        let (out, status) = run(|ctx| {
            let out = crate::reply::NoContent;
            (&&&&ReturnProbe::of(&out)).tag().finish(out, ctx)
        });
        assert!(out.is_ok());
        assert_eq!(status, Some(http::StatusCode::NO_CONTENT));
    }
}

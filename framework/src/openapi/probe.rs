//! How the controller macro asks a type for its schema or its own description of a reply,
//! chosen at compile time ([`Probe`]).

use std::marker::PhantomData;

use schemars::{JsonSchema, Schema};

use super::{DescribeReply, Operation};

/// Asks for `T`'s schema when `T` has one: `(&Probe::<T>::new()).schema(d.generator())` is
/// `Some` for a `T: JsonSchema` ([`ViaSchema`]) and `None` for any other `T` ([`ViaNothing`]),
/// chosen at compile time by method resolution (autoref specialisation: the code
/// `#[controller]` writes names concrete types). A `T` that implements [`DescribeReply`] is
/// found first, by an inherent method (inherent methods win over trait methods at the same
/// step of method resolution, and one whose `where` clause does not hold is passed over): it
/// describes the operation's success itself and gives no schema, and the success the macro
/// writes next is left out.
#[doc(hidden)]
pub struct Probe<T: ?Sized>(PhantomData<T>);

impl<T: ?Sized> Probe<T> {
    /// The probe.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Probe(PhantomData)
    }
}

impl<T: DescribeReply + ?Sized> Probe<T> {
    /// `T`'s own description of the operation's success ([`DescribeReply`]); no schema.
    pub fn schema(&self, site: ProbeSite<'_, '_>) -> Option<Schema> {
        site.describe_reply(T::describe_reply)
    }
}

/// What a [`Probe`] works with ([`Operation::generator`]): the operation being described.
#[doc(hidden)]
pub struct ProbeSite<'o, 'g> {
    pub(super) operation: &'o mut Operation<'g>,
}

impl ProbeSite<'_, '_> {
    /// Lets `describe` write the operation's success responses, in place of the one the
    /// controller macro writes next; no schema.
    pub fn describe_reply(self, describe: impl FnOnce(&mut Operation<'_>)) -> Option<Schema> {
        self.operation.reply_described = true;
        describe(self.operation);
        None
    }
}

/// [`Probe`] of a type with a schema.
#[doc(hidden)]
pub trait ViaSchema {
    /// The type's schema.
    fn schema(&self, site: ProbeSite<'_, '_>) -> Option<Schema>;
}

impl<T: JsonSchema + ?Sized> ViaSchema for Probe<T> {
    fn schema(&self, site: ProbeSite<'_, '_>) -> Option<Schema> {
        Some(site.operation.components.generator.subschema_for::<T>())
    }
}

/// [`Probe`] of a type without one.
#[doc(hidden)]
pub trait ViaNothing {
    /// No schema.
    fn schema(&self, site: ProbeSite<'_, '_>) -> Option<Schema>;
}

impl<T: ?Sized> ViaNothing for &Probe<T> {
    fn schema(&self, _site: ProbeSite<'_, '_>) -> Option<Schema> {
        None
    }
}

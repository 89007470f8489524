//! How the controller macro asks a type for its schema or its own description of a reply,
//! chosen at compile time ([`Probe`]).

use std::marker::PhantomData;

use schemars::{JsonSchema, Schema};

use super::{DescribeReply, Operation};
use crate::extract::{Part, Reads};

/// Asks for `T`'s schema when `T` has one: `(&Probe::<T>::new()).schema(d.generator())` is
/// `Some` for a `T: JsonSchema` ([`ViaSchema`]) and `None` for any other `T` ([`ViaNothing`]),
/// chosen at compile time by method resolution (autoref specialisation: the code
/// `#[controller]` writes names concrete types). A reply type is asked with
/// `(&&&probe).reply_schema(..)`: one that implements [`DescribeReply`] describes the
/// operation's success itself ([`ViaDescribeReply`]) and the success the macro writes next is
/// left out; another gives its schema or none.
#[doc(hidden)]
pub struct Probe<T: ?Sized>(PhantomData<T>);

impl<T: ?Sized> Probe<T> {
    /// The probe.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Probe(PhantomData)
    }
}

/// A reply type that describes its own success responses ([`DescribeReply`]); no schema.
#[doc(hidden)]
pub trait ViaDescribeReply {
    /// `T::describe_reply` on the operation.
    fn reply_schema(&self, site: ProbeSite<'_, '_>) -> Option<Schema>;
}

impl<T: DescribeReply + ?Sized> ViaDescribeReply for &&Probe<T> {
    fn reply_schema(&self, site: ProbeSite<'_, '_>) -> Option<Schema> {
        site.describe_reply(T::describe_reply)
    }
}

/// A reply type with a schema.
#[doc(hidden)]
pub trait ViaReplySchema {
    /// The type's schema.
    fn reply_schema(&self, site: ProbeSite<'_, '_>) -> Option<Schema>;
}

impl<T: JsonSchema + ?Sized> ViaReplySchema for &Probe<T> {
    fn reply_schema(&self, site: ProbeSite<'_, '_>) -> Option<Schema> {
        Some(site.operation.components.generator.subschema_for::<T>())
    }
}

/// A reply type with neither.
#[doc(hidden)]
pub trait ViaNoReplySchema {
    /// No schema.
    fn reply_schema(&self, site: ProbeSite<'_, '_>) -> Option<Schema>;
}

impl<T: ?Sized> ViaNoReplySchema for Probe<T> {
    fn reply_schema(&self, _site: ProbeSite<'_, '_>) -> Option<Schema> {
        None
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

/// What an argument reads ([`Reads`]), described with the value's schema when it has one:
/// `(&&&Probe::<T>::new()).describe_reads(d)` picks [`ViaReadsSchema`] for a `Reads` with a
/// `JsonSchema` value, [`ViaReads`] for another `Reads`, and [`ViaNoReads`] (nothing) for any
/// other argument, by method resolution as [`Probe::schema`] does.
#[doc(hidden)]
pub trait ViaReadsSchema {
    /// Describes the part with the value's schema and rules.
    fn describe_reads(&self, operation: &mut Operation<'_>);
}

impl<A: Reads + ?Sized> ViaReadsSchema for &&Probe<A>
where
    A::Value: JsonSchema,
{
    fn describe_reads(&self, operation: &mut Operation<'_>) {
        let schema = Some(operation.components.generator.subschema_for::<A::Value>());
        describe_part(operation, A::PART, schema, A::describe_rules);
    }
}

/// [`ViaReadsSchema`] of a `Reads` whose value has no schema: the part, open.
#[doc(hidden)]
pub trait ViaReads {
    /// Describes the part without a schema.
    fn describe_reads(&self, operation: &mut Operation<'_>);
}

impl<A: Reads + ?Sized> ViaReads for &Probe<A> {
    fn describe_reads(&self, operation: &mut Operation<'_>) {
        describe_part(operation, A::PART, None, A::describe_rules);
    }
}

/// [`ViaReadsSchema`] of an argument that is no `Reads`: nothing.
#[doc(hidden)]
pub trait ViaNoReads {
    /// Nothing.
    fn describe_reads(&self, operation: &mut Operation<'_>);
}

impl<T: ?Sized> ViaNoReads for Probe<T> {
    fn describe_reads(&self, _operation: &mut Operation<'_>) {}
}

fn describe_part(
    operation: &mut Operation<'_>,
    part: Part,
    schema: Option<Schema>,
    rules: fn(&mut serde_json::Value),
) {
    let schema = operation.validated(schema, rules);
    match part {
        Part::Body { media_type } => operation.body(media_type, schema),
        Part::Query => operation.parameters_of("query", schema),
        Part::Path => operation.parameters_of("path", schema),
    }
}

//! An OpenAPI 3.1 document built from the controllers: [`App::openapi`](crate::App::openapi)
//! serves it.
//!
//! Each controller route is an operation: its path (`:id` written `{id}`), method, the
//! controller's name as its tag, the method's doc comment as summary (first paragraph) and
//! description (the rest), its typed arguments as parameters and request body, and its return
//! type as the success response (a reply that writes its own answer, such as
//! [`Sse`](crate::reply::Sse) or [`Redirect`](crate::reply::Redirect), describes its own:
//! [`DescribeReply`]). Schemas are JSON Schema 2020-12 from
//! [`schemars`](https://docs.rs/schemars): a type that derives `schemars::JsonSchema` is
//! described, one that does not is left open (`{}`), so documenting an API never stops a
//! handler from compiling. Referenced types live under `#/components/schemas`. Every
//! operation lists the error responses its arguments can cause (400 for an argument that is
//! parsed or validated, 415 and 413 for a body), the ones the handler declares
//! (`#[post("/v1/me", errors(409))]`), the ones the middleware on its route can give, and 500.
//!
//! Middleware describes itself through [`Middleware::describe`](crate::Middleware::describe):
//! the session middleware declares its cookie (an optional `apiKey` security scheme), jwt a
//! bearer scheme and 401, basic auth a basic scheme and 401, the limiters 429, and the error
//! handler how errors are written (the error object as `application/json`, or `text/plain`
//! when the client does not accept JSON). Without an error handler on the route an error is
//! `text/plain`.
//!
//! Routes added by hand (`App::get`, …) are not in the document: it describes controllers.

use std::collections::BTreeMap;

use schemars::generate::SchemaSettings;
use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

#[cfg(feature = "docs-ui")]
mod docs_page;
mod operation;
mod probe;

#[cfg(feature = "docs-ui")]
pub(crate) use docs_page::{DOCS_CSP, docs_files, docs_page};
pub use operation::Operation;
pub use probe::{
    Probe, ProbeSite, ViaDescribeReply, ViaNoReads, ViaNoReplySchema, ViaNothing, ViaReads,
    ViaReadsSchema, ViaReplySchema, ViaSchema,
};

/// What the whole document collects while its operations are described.
struct Components {
    generator: SchemaGenerator,
    security_schemes: Map<String, Value>,
}

/// An RFC 9457 problem details object, with the framework's extension members.
fn problem_schema() -> Value {
    json!({
        "type": "object",
        "required": ["type", "title", "status"],
        "properties": {
            "type": {"type": "string"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "detail": {"type": "string"},
            "instance": {"type": "string"},
            "category": {"type": "string"},
            "code": {"type": "string"},
            "errorTitle": {"type": "string"},
            "exception": {"type": "boolean"},
            "extra": {}
        }
    })
}

/// `{"type": "string"}`: a text answer.
#[doc(hidden)]
pub fn string_schema() -> Schema {
    schemars::json_schema!({"type": "string"})
}

/// A schema, or the open schema `{}` for a type that has none.
fn open(schema: Option<Schema>) -> Value {
    schema.map_or_else(|| json!({}), Schema::to_value)
}

fn reason(status: u16) -> &'static str {
    http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Response")
}

/// How a reply type a handler returns appears in the document, when it is not a value the
/// responder marshals: its statuses, media type and headers. The framework's own
/// ([`Sse`](crate::reply::Sse), [`JsonLines`](crate::reply::JsonLines),
/// [`Redirect`](crate::reply::Redirect), `NamedFile` and `Attachment`) implement it; a reply
/// type of your own (an [`IntoReply`](crate::IntoReply) that writes its answer itself) may
/// too. A controller method whose return type implements it is described by it instead of
/// as a JSON value.
///
/// ```
/// use framework::openapi::{DescribeReply, Operation};
///
/// /// A CSV export the handler streams itself.
/// struct Csv;
///
/// impl DescribeReply for Csv {
///     fn describe_reply(operation: &mut Operation<'_>) {
///         let text = framework::schemars::json_schema!({"type": "string"});
///         operation.reply(200, Some("text/csv"), Some(text));
///         operation.streamed();
///     }
/// }
/// ```
pub trait DescribeReply {
    /// Adds the success responses ([`Operation::reply`], [`Operation::reply_header`]) of an
    /// operation whose handler answers with this type.
    fn describe_reply(operation: &mut Operation<'_>);
}

/// `impl JsonSchema for Wrapper<T>` as `T`'s schema, for a wrapper whose body is its one value
/// (`Json<T>`, `Created<T>`), so a route answering with it is documented as answering with `T`.
macro_rules! schema_of_inner {
    ($wrapper:ident) => {
        impl<T: schemars::JsonSchema> schemars::JsonSchema for $wrapper<T> {
            fn inline_schema() -> bool {
                T::inline_schema()
            }
            fn schema_name() -> std::borrow::Cow<'static, str> {
                T::schema_name()
            }
            fn schema_id() -> std::borrow::Cow<'static, str> {
                T::schema_id()
            }
            fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                T::json_schema(generator)
            }
        }
    };
}
pub(crate) use schema_of_inner;

/// A controller route, as the document needs it.
pub(crate) struct DocRoute {
    pub(crate) method: &'static str,
    /// The full path, as the router reads it (`:id` or `{id}`).
    pub(crate) path: String,
    pub(crate) tag: &'static str,
    /// `<controller>::<method>`.
    pub(crate) handler: String,
    pub(crate) describe: fn(&mut Operation<'_>),
    /// What the middleware the route runs adds (each one's
    /// [`Middleware::describe`](crate::Middleware::describe), app-wide first).
    pub(crate) middleware: Box<dyn Fn(&mut Operation<'_>)>,
}

/// What a controller route needs of its chain, read off its own description: whether it
/// takes a request body the body parser reads (`Json<T>`, `Form<T>`; a multipart body is
/// streamed by its argument), and whether its handler leaves a value for a responder (a
/// success with a body that is not a stream the handler writes itself), and how many of its
/// arguments read the body.
pub(crate) fn route_needs(describe: fn(&mut Operation<'_>)) -> (bool, bool, u8) {
    let mut components = Components {
        generator: SchemaSettings::draft2020_12().into_generator(),
        security_schemes: Map::new(),
    };
    let mut operation = Operation::new(&mut components);
    describe(&mut operation);
    let body = operation.parsed_body;
    let value = !operation.streams
        && operation
            .success
            .values()
            .any(|response| response.get("content").is_some());
    (body, value, operation.bodies)
}

/// The document of these routes, as JSON bytes.
pub(crate) fn document(title: &str, version: &str, routes: &[DocRoute]) -> Vec<u8> {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
        })
        .into_generator();
    let mut components = Components {
        generator,
        security_schemes: Map::new(),
    };
    let mut paths: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    let mut tags: Vec<&str> = Vec::new();
    for route in routes {
        let path = route_pattern::openapi_template(&route.path);
        let mut describe = Operation::new(&mut components);
        (route.describe)(&mut describe);
        (route.middleware)(&mut describe);
        // A path parameter the handler does not take as an argument is still part of the
        // path: declared as text.
        for name in route_pattern::param_names(&route.path) {
            let declared = describe
                .parameters
                .iter()
                .any(|p| p["in"] == "path" && p["name"] == name);
            if !declared {
                describe.parameters.push(json!({
                    "name": name,
                    "in": "path",
                    "required": true,
                    "schema": {"type": "string"},
                }));
            }
        }
        let mut operation = describe.finish();
        operation["tags"] = json!([route.tag]);
        operation["operationId"] = json!(route.handler.replace("::", "_"));
        if !tags.contains(&route.tag) {
            tags.push(route.tag);
        }
        paths
            .entry(path)
            .or_default()
            .insert(route.method.to_ascii_lowercase(), operation);
    }
    let mut schemas: Map<String, Value> = components.generator.take_definitions(true);
    schemas.insert("Error".into(), error_schema());
    let mut sections = json!({ "schemas": schemas });
    if !components.security_schemes.is_empty() {
        sections["securitySchemes"] = Value::Object(components.security_schemes);
    }

    let document = json!({
        "openapi": "3.1.0",
        "info": {"title": title, "version": version},
        "tags": tags.iter().map(|t| json!({"name": t})).collect::<Vec<_>>(),
        "paths": paths,
        "components": sections,
    });
    serde_json::to_vec_pretty(&document).unwrap_or_default()
}

/// The error object the error handler sends
/// ([`error_handler`](crate::middleware::error_handler)).
fn error_schema() -> Value {
    json!({
        "type": "object",
        "required": ["statusCode", "category", "message"],
        "properties": {
            "statusCode": {"type": "integer", "minimum": 400, "maximum": 599},
            "code": {"type": "string"},
            "category": {"type": "string"},
            "title": {"type": "string"},
            "message": {"type": "string"},
            "exception": {"type": "boolean"},
            "extra": {},
        },
    })
}

//! [`Operation`]: one route's method and path being described, by the code `#[controller]`
//! writes and by each middleware on the route.

use std::collections::BTreeMap;

use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

use super::{Components, ProbeSite, open, problem_schema, reason};

/// One operation (a route's method and path) being described: what the code `#[controller]`
/// writes for a handler and each middleware on the route
/// ([`Middleware::describe`](crate::Middleware::describe)) fill in.
pub struct Operation<'g> {
    pub(super) components: &'g mut Components,
    pub(super) operation: Map<String, Value>,
    pub(super) parameters: Vec<Value>,
    pub(super) success: BTreeMap<String, Value>,
    pub(super) errors: std::collections::BTreeSet<u16>,
    pub(super) error_media: &'static [&'static str],
    pub(super) security: Vec<Value>,
    /// The handler answers with a stream it writes itself (no responder needed).
    pub(super) streams: bool,
    /// The handler's reply type described its own responses ([`DescribeReply`](super::DescribeReply)): the
    /// generic success the controller macro writes after it is left out.
    pub(super) reply_described: bool,
    /// The request body is one the body parser reads (`Json<T>`, `Form<T>`).
    pub(super) parsed_body: bool,
    /// How many arguments read the body ([`Operation::request_body`]): more than one is a
    /// route `build()` refuses.
    pub(super) bodies: u8,
    /// Media types a JSON answer also goes out in ([`Operation::also_media`]).
    pub(super) also_media: Vec<String>,
}

/// How errors are written when no error handler says otherwise: the error's text.
const TEXT_ERRORS: &[&str] = &["text/plain"];

impl<'g> Operation<'g> {
    pub(super) fn new(components: &'g mut Components) -> Self {
        Operation {
            components,
            operation: Map::new(),
            parameters: Vec::new(),
            success: BTreeMap::new(),
            errors: std::collections::BTreeSet::new(),
            error_media: TEXT_ERRORS,
            security: Vec::new(),
            also_media: Vec::new(),
            streams: false,
            reply_described: false,
            parsed_body: false,
            bodies: 0,
        }
    }

    /// What a [`Probe`] works with: the schema generator, and this operation for a reply type
    /// that describes its own responses ([`DescribeReply`](super::DescribeReply)).
    #[doc(hidden)]
    pub fn generator(&mut self) -> ProbeSite<'_, 'g> {
        ProbeSite { operation: self }
    }

    /// The schema generator: a [`DescribeReply`](super::DescribeReply) implementation asks it for the schema of a
    /// type its answer carries (`generator.subschema_for::<T>()`).
    pub fn schema_generator(&mut self) -> &mut SchemaGenerator {
        &mut self.components.generator
    }

    /// The method's doc comment: the first paragraph is the summary, the rest the description.
    #[doc(hidden)]
    pub fn doc(&mut self, doc: &str) {
        let doc = doc.trim();
        if doc.is_empty() {
            return;
        }
        let (summary, description) = doc.split_once("\n\n").unwrap_or((doc, ""));
        let summary = summary.split_whitespace().collect::<Vec<_>>().join(" ");
        self.operation.insert("summary".into(), summary.into());
        if !description.trim().is_empty() {
            self.operation
                .insert("description".into(), description.trim().into());
        }
    }

    /// `schema` with the type's `Validate` rules written in (on its component when it is a
    /// reference), for a `Json`, `Form` or `Query` argument.
    #[doc(hidden)]
    pub fn validated(&mut self, schema: Option<Schema>, rules: fn(&mut Value)) -> Option<Schema> {
        let mut schema = schema?;
        let name = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/components/schemas/"))
            .map(str::to_owned);
        match name {
            Some(name) => {
                if let Some(definition) = self.components.generator.definitions_mut().get_mut(&name)
                {
                    rules(definition);
                }
            }
            None => {
                let mut value = schema.to_value();
                rules(&mut value);
                schema = Schema::try_from(value).ok()?;
            }
        }
        Some(schema)
    }

    /// One parameter: `location` is `path`, `query`, `header` or `cookie`.
    #[doc(hidden)]
    pub fn parameter(
        &mut self,
        location: &str,
        name: &str,
        required: bool,
        schema: Option<Schema>,
    ) {
        self.parameters.push(json!({
            "name": name,
            "in": location,
            "required": required || location == "path",
            "schema": open(schema),
        }));
        self.error(400);
    }

    /// One parameter per property of an object schema (a `Query<T>` or `Path<T>`).
    #[doc(hidden)]
    pub fn parameters_of(&mut self, location: &str, schema: Option<Schema>) {
        let object = self.resolve(open(schema));
        let required: Vec<String> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|names| {
                names
                    .iter()
                    .filter_map(|n| n.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(properties) = object.get("properties").and_then(Value::as_object) {
            for (name, property) in properties {
                self.parameters.push(json!({
                    "name": name,
                    "in": location,
                    "required": location == "path" || required.contains(name),
                    "schema": property,
                }));
            }
        }
        self.error(400);
    }

    /// The request body of a `Json<T>` or `Form<T>` argument, of `media` type: one the body
    /// parser reads.
    #[doc(hidden)]
    pub fn body(&mut self, media: &str, schema: Option<Schema>) {
        self.parsed_body = true;
        self.request_body(media, json!({"schema": open(schema)}), None);
    }

    /// The route's request body: required, of `media` type, described by `media_type` (an
    /// OpenAPI Media Type Object: `{"schema": …}`, with `encoding` for a multipart body), with
    /// an optional `description`. The route can then answer 400, 413 and 415. How an argument
    /// that reads the body describes it
    /// ([`FromRequest::describe`](crate::extract::FromRequest::describe)).
    pub fn request_body(&mut self, media: &str, media_type: Value, description: Option<String>) {
        self.bodies = self.bodies.saturating_add(1);
        let mut content = Map::new();
        content.insert(media.to_owned(), media_type);
        let mut body = json!({"required": true});
        body["content"] = Value::Object(content);
        if let Some(description) = description {
            body["description"] = description.into();
        }
        self.operation.insert("requestBody".into(), body);
        for status in [400, 413, 415] {
            self.error(status);
        }
    }

    /// The success response the controller macro writes from the return type: `media` and
    /// its schema, or no body. Left out when the return type described its own
    /// ([`DescribeReply`](super::DescribeReply)).
    #[doc(hidden)]
    pub fn success(&mut self, status: u16, media: Option<&str>, schema: Option<Schema>) {
        if !self.reply_described {
            self.reply(status, media, schema);
        }
    }

    /// A success response (`status` below 400): `media` and its schema, or no body. What a
    /// [`DescribeReply`](super::DescribeReply) implementation calls, once per status its type can answer with.
    pub fn reply(&mut self, status: u16, media: Option<&str>, schema: Option<Schema>) {
        let mut response = json!({"description": reason(status)});
        if let Some(media) = media {
            response["content"] = json!({media: {"schema": open(schema)}});
        }
        self.success.insert(status.to_string(), response);
    }

    /// A header the success response `status` (added first with [`reply`](Self::reply))
    /// carries, such as a redirect's `Location`.
    pub fn reply_header(&mut self, status: u16, name: &str, schema: &Schema, required: bool) {
        if let Some(response) = self.success.get_mut(&status.to_string()) {
            response["headers"][name] = json!({"required": required, "schema": schema});
        }
    }

    /// The success body is a stream or a file the handler's reply writes itself: the route
    /// needs no responder ([`App::build`](crate::App::build) checks for one otherwise).
    pub fn streamed(&mut self) {
        self.streams = true;
    }

    /// Every JSON success of the route can also go out as `media`, with the same schema: the
    /// responder's negotiated formats
    /// ([`ResponderConfig::formats`](crate::middleware::responder::ResponderConfig::formats)).
    pub fn also_media(&mut self, media: &str) {
        if !self.also_media.iter().any(|m| m == media) {
            self.also_media.push(media.to_owned());
        }
    }

    /// The route can answer `status` (400 to 599) with an error.
    pub fn error(&mut self, status: u16) {
        self.errors.insert(status);
    }

    /// How errors are written on this route, as media types: `application/json` (the error
    /// object) and `text/plain` (its text). The error handler sets this; without one, errors
    /// are `text/plain`.
    pub fn error_media(&mut self, media: &'static [&'static str]) {
        self.error_media = media;
    }

    /// The route accepts the credentials of the security scheme `name` (an OpenAPI Security
    /// Scheme Object, e.g. `{"type": "http", "scheme": "bearer"}`), added to the document's
    /// `components/securitySchemes`. `required: false` says a request without them is also
    /// served (a session cookie the first request does not have yet).
    pub fn security(&mut self, name: &str, scheme: Value, required: bool) {
        self.components
            .security_schemes
            .entry(name.to_owned())
            .or_insert(scheme);
        if !required && self.security.is_empty() {
            self.security.push(json!({}));
        }
        self.security.push(json!({ name: [] }));
    }

    /// A schema of `#/components/schemas` in place of its reference.
    pub(super) fn resolve(&self, schema: Value) -> Value {
        let name = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/components/schemas/"));
        match name.and_then(|n| self.components.generator.definitions().get(n)) {
            Some(found) => found.clone(),
            None => schema,
        }
    }

    pub(super) fn finish(mut self) -> Value {
        self.error(500);
        let mut operation = self.operation;
        if !self.parameters.is_empty() {
            operation.insert("parameters".into(), Value::Array(self.parameters));
        }
        if !self.security.is_empty() {
            operation.insert("security".into(), Value::Array(self.security));
        }
        let mut content = Map::new();
        for media in self.error_media {
            let schema = match *media {
                "application/json" => json!({"$ref": "#/components/schemas/Error"}),
                "application/problem+json" => problem_schema(),
                _ => json!({"type": "string"}),
            };
            content.insert((*media).to_owned(), json!({ "schema": schema }));
        }
        let mut responses = self.success;
        for response in responses.values_mut() {
            let Some(content) = response.get_mut("content").and_then(Value::as_object_mut) else {
                continue;
            };
            let Some(json) = content
                .iter()
                .find(|(media, _)| media.starts_with("application/json"))
                .map(|(_, described)| described.clone())
            else {
                continue;
            };
            for media in &self.also_media {
                content.entry(media.clone()).or_insert_with(|| json.clone());
            }
        }
        for status in self.errors {
            responses.insert(
                status.to_string(),
                json!({"description": reason(status), "content": content}),
            );
        }
        operation.insert(
            "responses".into(),
            Value::Object(responses.into_iter().collect()),
        );
        Value::Object(operation)
    }
}

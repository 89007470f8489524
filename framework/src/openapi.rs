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
use std::marker::PhantomData;

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

/// What the whole document collects while its operations are described.
struct Components {
    generator: SchemaGenerator,
    security_schemes: Map<String, Value>,
}

/// One operation (a route's method and path) being described: what the code `#[controller]`
/// writes for a handler and each middleware on the route
/// ([`Middleware::describe`](crate::Middleware::describe)) fill in.
pub struct Operation<'g> {
    components: &'g mut Components,
    operation: Map<String, Value>,
    parameters: Vec<Value>,
    success: BTreeMap<String, Value>,
    errors: std::collections::BTreeSet<u16>,
    error_media: &'static [&'static str],
    security: Vec<Value>,
    /// The handler answers with a stream it writes itself (no responder needed).
    streams: bool,
    /// The handler's reply type described its own responses ([`DescribeReply`]): the
    /// generic success the controller macro writes after it is left out.
    reply_described: bool,
    /// The request body is one the body parser reads (`Json<T>`, `Form<T>`).
    parsed_body: bool,
    /// Media types a JSON answer also goes out in ([`Operation::also_media`]).
    also_media: Vec<String>,
}

/// How errors are written when no error handler says otherwise: the error's text.
const TEXT_ERRORS: &[&str] = &["text/plain"];

impl<'g> Operation<'g> {
    fn new(components: &'g mut Components) -> Self {
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
        }
    }

    /// What a [`Probe`] works with: the schema generator, and this operation for a reply type
    /// that describes its own responses ([`DescribeReply`]).
    #[doc(hidden)]
    pub fn generator(&mut self) -> ProbeSite<'_, 'g> {
        ProbeSite { operation: self }
    }

    /// The schema generator: a [`DescribeReply`] implementation asks it for the schema of a
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
    /// ([`DescribeReply`]).
    #[doc(hidden)]
    pub fn success(&mut self, status: u16, media: Option<&str>, schema: Option<Schema>) {
        if !self.reply_described {
            self.reply(status, media, schema);
        }
    }

    /// A success response (`status` below 400): `media` and its schema, or no body. What a
    /// [`DescribeReply`] implementation calls, once per status its type can answer with.
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
    fn resolve(&self, schema: Value) -> Value {
        let name = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/components/schemas/"));
        match name.and_then(|n| self.components.generator.definitions().get(n)) {
            Some(found) => found.clone(),
            None => schema,
        }
    }

    fn finish(mut self) -> Value {
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
    operation: &'o mut Operation<'g>,
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
/// success with a body that is not a stream the handler writes itself).
pub(crate) fn route_needs(describe: fn(&mut Operation<'_>)) -> (bool, bool) {
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
    (body, value)
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
        let path = openapi_path(&route.path);
        let mut describe = Operation::new(&mut components);
        (route.describe)(&mut describe);
        (route.middleware)(&mut describe);
        // A path parameter the handler does not take as an argument is still part of the
        // path: declared as text.
        for name in path_names(&path) {
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

/// The docs page served at `page` for the document at `document`: its HTML and the script
/// that starts Swagger UI, served as `page/swagger-initializer.js` beside Swagger UI's own files
/// ([`docs_file`]). No inline script: the page works under a `Content-Security-Policy` whose
/// `script-src` is `'self'` ([`DOCS_CSP`]).
#[cfg(feature = "docs-ui")]
pub(crate) fn docs_page(page: &str, document: &str, title: &str) -> (String, String) {
    let title = html_escape(title);
    let html = format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{title}: API docs</title>
  <link rel="stylesheet" href="{page}/swagger-ui.css">
  <link rel="stylesheet" href="{page}/index.css">
  <link rel="icon" type="image/png" href="{page}/favicon-32x32.png" sizes="32x32">
  <link rel="icon" type="image/png" href="{page}/favicon-16x16.png" sizes="16x16">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="{page}/swagger-ui-bundle.js"></script>
  <script src="{page}/swagger-ui-standalone-preset.js"></script>
  <script src="{page}/{DOCS_INITIALIZER}"></script>
</body>
</html>
"#
    );
    // `validatorUrl: "none"`: Swagger UI would otherwise load a badge from
    // validator.swagger.io; the page fetches nothing from outside the app.
    let script = format!(
        r##"window.onload = () => {{
  window.ui = SwaggerUIBundle({{
    url: {document},
    dom_id: "#swagger-ui",
    deepLinking: true,
    tryItOutEnabled: true,
    displayRequestDuration: true,
    validatorUrl: "none",
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: "StandaloneLayout",
  }});
}};
"##,
        document = Value::from(document),
    );
    (html, script)
}

/// The name of the docs page's own script, served beside Swagger UI's files.
#[cfg(feature = "docs-ui")]
pub(crate) const DOCS_INITIALIZER: &str = "swagger-initializer.js";

/// The docs page's `Content-Security-Policy`: scripts from the app only (no inline script),
/// Swagger UI's inline styles (its bundle applies some: without `'unsafe-inline'` the browser
/// test sees Chromium block them) and `data:` icons allowed, nothing from anywhere else. The
/// page sets it itself, so a stricter app-wide policy
/// ([`SecurityHeaders`](crate::middleware::security_headers)) leaves it alone.
#[cfg(feature = "docs-ui")]
pub(crate) const DOCS_CSP: &str = "default-src 'self'; img-src 'self' data:; \
                                   style-src 'self' 'unsafe-inline'; base-uri 'self'; \
                                   form-action 'self'; frame-ancestors 'none'; object-src 'none'";

/// The docs page's files: name, media type and bytes; the page's own script (`initializer`)
/// first, then Swagger UI's.
#[cfg(feature = "docs-ui")]
pub(crate) fn docs_files(
    initializer: String,
) -> impl Iterator<Item = (&'static str, &'static str, bytes::Bytes)> {
    let own = std::iter::once((
        DOCS_INITIALIZER,
        "text/javascript; charset=utf-8",
        bytes::Bytes::from(initializer),
    ));
    let swagger = swagger_ui_redist::SwaggerUi::static_files()
        .iter()
        .map(|(file, bytes)| {
            let name = file.file_name();
            let media = match name.rsplit('.').next() {
                Some("css") => "text/css; charset=utf-8",
                Some("js") => "text/javascript; charset=utf-8",
                Some("png") => "image/png",
                _ => "application/octet-stream",
            };
            (name, media, bytes::Bytes::from_static(bytes))
        });
    own.chain(swagger)
}

/// Text safe inside HTML.
#[cfg(feature = "docs-ui")]
fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `/users/:id` and `/files/*path` as OpenAPI writes them: `/users/{id}`, `/files/{path}`.
fn openapi_path(path: &str) -> String {
    let parts: Vec<String> = path
        .split('/')
        .map(|part| {
            if let Some(name) = part.strip_prefix(':') {
                format!("{{{name}}}")
            } else if let Some(name) = part.strip_prefix('*').filter(|n| !n.is_empty()) {
                format!("{{{name}}}")
            } else {
                part.to_owned()
            }
        })
        .collect();
    parts.join("/")
}

/// The `{name}` parameters of an OpenAPI path.
fn path_names(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|part| part.strip_prefix('{').and_then(|p| p.strip_suffix('}')))
        .collect()
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

#[cfg(test)]
mod tests;

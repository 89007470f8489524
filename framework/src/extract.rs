//! Typed handler arguments: what a controller method may take after `&self`.
//!
//! A controller method lists its inputs as arguments, and `#[controller]` makes each one from
//! the request before the method's body runs:
//!
//! | Argument | Made from | Missing or malformed |
//! |---|---|---|
//! | `body: Json<T>` | the request body, `T: Deserialize + Validate` ([`Context::bind`]) | 400 `validate`, naming the field; 415 for another media type |
//! | `form: Form<T>` | a `application/x-www-form-urlencoded` body, decoded by the body parser's form decoder | as `Json` |
//! | `query: Query<T>` | the query string, `T: Deserialize + Validate` | 400 `validate`, naming the field |
//! | `id: u64` (any `FromStr`) | the path parameter of the same name (`{id}` or `:id`) | 400 `validate`, naming it |
//! | `params: Path<T>` | all path parameters, by field name | 400 `validate` |
//! | `#[header("x-api-key")] key: String` | a request header; `Option<T>` when it may be absent | 400 `validate`, naming the header |
//! | `#[cookie("theme")] theme: Option<String>` | a cookie of the `Cookie` header | 400 `validate`, naming the cookie |
//! | `#[state] store: Arc<dyn Store>` | the app's state ([`crate::State`]), cloned | 500: the app did not provide it |
//! | `cookies: &mut Cookies` | the request's cookie jar ([`CookiesExt::cookies`]); changes are sent as `Set-Cookie` | — |
//! | `session: &mut Session` | the session middleware's session ([`FromContext`]) | 500: the middleware is not on the route |
//! | `ctx: &mut Context` | the context itself, for anything else | — |
//! | `cert: Arc<ClientCert>` (feature `tls`) | the connection's verified client certificate (`ctx.connection().client_cert()`, `framework::tls::ClientCert`); `Option<Arc<ClientCert>>` when it may be absent | 401 `framework-tls` |
//! | `form: Multipart` (feature `multipart`) | a `multipart/form-data` body, streamed part by part (`framework::multipart`) | 415 for another media type, 413 past a limit |
//! | anything implementing [`FromRequest`] | your own code | your error |
//!
//! Owned arguments are made first, in the order written; a borrowed one (`&mut Context`,
//! `&mut Session`, any `&mut T` or `&T` with `T:` [`FromContext`]) last, and a method takes at
//! most one. At most one argument reads the body (`Json` or `Form`). Misuse is a compile error
//! at the argument: an argument named like no path parameter whose type is a plain value, a
//! second body, a type that cannot be an argument.
//!
//! Extraction is synchronous: the body was read by the body parser before the handler runs, and
//! work that must wait on a backend belongs in a middleware that leaves its result in the
//! context's typed data ([`Context::insert_data`]) for an extractor to take. A method written
//! with typed arguments therefore costs what the same method written against `&mut Context`
//! costs (see `BENCHMARKS.md`).
//!
//! ```rust,standalone_crate
//! use framework::extract::{Json, Query};
//! use framework::{Context, Result, controller, get, post};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, framework::Validate)]
//! struct Page {
//!     #[validate(range(min = 1, max = 100))]
//!     size: u32,
//! }
//!
//! #[derive(Deserialize, Serialize, framework::Validate)]
//! struct Note {
//!     #[validate(length(min = 1, max = 200))]
//!     text: String,
//! }
//!
//! #[derive(framework::FromState)]
//! struct Notes;
//!
//! #[controller(prefix = "/notes")]
//! impl Notes {
//!     #[get("/{id}")]
//!     async fn one(&self, id: u64, page: Query<Page>) -> String {
//!         format!("note {id}, page size {}", page.size)
//!     }
//!
//!     #[post("/")]
//!     async fn add(&self, note: Json<Note>, ctx: &mut Context) -> Result<Json<Note>> {
//!         ctx.set_status(http::StatusCode::CREATED);
//!         Ok(note)
//!     }
//! }
//! ```

use std::borrow::Cow;
use std::convert::Infallible;
use std::str::FromStr;

use http::StatusCode;
use serde::de::DeserializeOwned;
use serde::{Serialize, Serializer};

use crate::body::FormDecoded;
use crate::context::Context;
use crate::cookies::CookiesExt;
use crate::error::HttpError;
pub use crate::error::{Rejection, Source};
use crate::header::is_form_media_type;
use crate::openapi::{Operation, Probe};
use crate::validate::{CATEGORY, Validate};

/// A value a controller method can take as an argument, made from the request before the
/// method runs. Its [`Rejection`](FromRequest::Rejection) answers the request instead of the
/// method; a method that takes `Result<T, T::Rejection>` gets the rejection as a value and
/// answers it itself.
///
/// ```
/// use framework::extract::FromRequest;
/// use framework::{Context, HttpError};
///
/// /// The client's preferred language, `en` when it names none.
/// struct Language(String);
///
/// impl FromRequest for Language {
///     type Rejection = HttpError;
///
///     fn from_request(ctx: &mut Context) -> Result<Self, HttpError> {
///         let first = ctx
///             .request_header(http::header::ACCEPT_LANGUAGE)
///             .and_then(|v| v.split([',', ';']).next())
///             .map(str::trim)
///             .filter(|v| !v.is_empty());
///         Ok(Language(first.unwrap_or("en").to_owned()))
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a handler argument",
    label = "not a path parameter of this route, and not something made from the request",
    note = "an argument is a path parameter by name (`id: u64` for `{{id}}`), `Json<T>`, \
            `Form<T>`, `Query<T>`, `Path<T>`, `#[header(\"name\")]`, `#[cookie(\"name\")]`, \
            `#[state]`, `&mut Context`, or a type implementing `framework::extract::FromRequest`"
)]
pub trait FromRequest: Sized {
    /// Why it may refuse a request: the framework's extractors answer with [`Rejection`], one
    /// of your own may answer with an [`HttpError`] or any type that converts into one.
    type Rejection: Into<HttpError>;

    /// Makes the argument.
    fn from_request(ctx: &mut Context) -> Result<Self, Self::Rejection>;

    /// Describes what the argument reads in the route's OpenAPI operation (a request body
    /// through [`Operation::request_body`], a parameter, an error status it answers). The
    /// default adds nothing; `Json`, `Form`, `Query` and `Path` are described by
    /// `#[controller]` from their type parameter.
    fn describe(operation: &mut Operation<'_>) {
        let _ = operation;
    }
}

/// What an argument deserialises, and from which part of the request: `#[controller]` asks
/// this trait, not the argument's spelling, so an alias (`type NewNote = Json<Note>`), a
/// re-export or `Result<Json<Note>, Rejection>` is documented as a body and gets its route a
/// body parser as `Json<Note>` does. [`Json`], [`Form`], [`Query`] and [`Path`] implement it;
/// an extractor of your own that reads a body the body parser decodes can too.
///
/// ```
/// use framework::extract::{Part, Reads};
///
/// /// A JSON body sent as `application/vnd.notes+json`.
/// struct NotesJson<T>(T);
///
/// impl<T> Reads for NotesJson<T> {
///     type Value = T;
///     const PART: Part = Part::Body {
///         media_type: "application/vnd.notes+json",
///     };
/// }
/// ```
pub trait Reads {
    /// The type deserialised (its JSON Schema, when it has one, describes the part).
    type Value;
    /// The part of the request it comes from.
    const PART: Part;

    /// Writes the value's validation rules into its schema ([`Validate::describe_rules`]);
    /// nothing by default.
    fn describe_rules(schema: &mut serde_json::Value) {
        let _ = schema;
    }
}

/// The part of the request a [`Reads`] argument deserialises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Part {
    /// The body, of this media type, read by the body parser before the handler runs: a
    /// route with such an argument needs one, and takes one body at most.
    Body {
        /// The media type, as the OpenAPI document names it.
        media_type: &'static str,
    },
    /// The query string's parameters, one per field.
    Query,
    /// The path parameters, one per field.
    Path,
}

macro_rules! reads {
    ($($name:ident: $part:expr, $($validate:ident)?;)*) => {$(
        impl<T $(: $validate)?> Reads for $name<T> {
            type Value = T;
            const PART: Part = $part;
            $(
                fn describe_rules(schema: &mut serde_json::Value) {
                    <T as $validate>::describe_rules(schema);
                }
            )?
        }
    )*};
}
reads! {
    Json: Part::Body { media_type: "application/json" }, Validate;
    Form: Part::Body { media_type: "application/x-www-form-urlencoded" }, Validate;
    Query: Part::Query, Validate;
    Path: Part::Path, ;
}

/// `Result<T, T::Rejection>` reads what `T` reads.
impl<T: Reads + FromRequest> Reads for Result<T, T::Rejection> {
    type Value = T::Value;
    const PART: Part = T::PART;

    fn describe_rules(schema: &mut serde_json::Value) {
        T::describe_rules(schema);
    }
}

/// `Result<T, T::Rejection>`: the argument's refusal handed to the method as a value instead of
/// answering the request, so the method can match on it. Described as `T` is.
impl<T: FromRequest> FromRequest for Result<T, T::Rejection> {
    type Rejection = Infallible;

    #[inline]
    fn from_request(ctx: &mut Context) -> Result<Self, Infallible> {
        Ok(T::from_request(ctx))
    }

    fn describe(operation: &mut Operation<'_>) {
        T::describe(operation);
    }
}

/// Describes a controller method's argument of type `T` when `T` is a [`FromRequest`]
/// ([`FromRequest::describe`]); [`NotFromRequest`] for any other `T`. Chosen at compile time
/// by method resolution, as [`Probe`]'s schema is, so an argument that is no `FromRequest`
/// gets its one compile error from the code that makes it, not a second one from here.
#[doc(hidden)]
pub trait ViaFromRequest {
    /// `T::describe`.
    fn describe_argument(&self, operation: &mut Operation<'_>);
}

impl<T: FromRequest> ViaFromRequest for Probe<T> {
    fn describe_argument(&self, operation: &mut Operation<'_>) {
        T::describe(operation);
    }
}

/// [`ViaFromRequest`] of a type that is no `FromRequest`: nothing.
#[doc(hidden)]
pub trait NotFromRequest {
    /// Nothing.
    fn describe_argument(&self, operation: &mut Operation<'_>);
}

impl<T: ?Sized> NotFromRequest for &Probe<T> {
    fn describe_argument(&self, _operation: &mut Operation<'_>) {}
}

/// A value a controller method borrows from the context (`&mut T` or `&T`): the context itself,
/// or something a middleware keeps in it for the request (the session). A method takes at most
/// one borrowed argument, made after all the others.
#[diagnostic::on_unimplemented(
    message = "`&mut {Self}` cannot be a handler argument",
    note = "a borrowed argument is `&mut Context`, `&mut Cookies`, `&mut Session`, or a type implementing \
            `framework::extract::FromContext`"
)]
pub trait FromContext {
    /// Borrows the argument from the context.
    fn from_context(ctx: &mut Context) -> Result<&mut Self, HttpError>;
}

/// A controller method may take `cookies: &mut Cookies`.
impl FromContext for crate::cookies::Cookies {
    #[inline]
    fn from_context(ctx: &mut Context) -> Result<&mut Self, HttpError> {
        Ok(ctx.cookies())
    }
}

impl FromContext for Context {
    #[inline]
    fn from_context(ctx: &mut Context) -> Result<&mut Self, HttpError> {
        Ok(ctx)
    }
}

/// A JSON body, deserialised and validated before the handler runs ([`Context::bind`]); as a
/// return value, the value sent as JSON.
///
/// A body of another media type is a **415** (the body parser adds `Accept-Post`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T: DeserializeOwned + Validate> FromRequest for Json<T> {
    type Rejection = Rejection;

    #[inline]
    fn from_request(ctx: &mut Context) -> Result<Self, Rejection> {
        // The body parser accepted the media type already; only a form it decoded into JSON
        // is not a JSON body (a mark, not a second parse of `Content-Type`).
        if ctx.data::<FormDecoded>().is_some() {
            return Err(unsupported(ctx, "application/json"));
        }
        ctx.bind().map(Json)
    }
}

// Documented as the inner value, so `Json<T>` is documented as `T` is.
crate::openapi::schema_of_inner!(Json);

/// Sent as the inner value's JSON, so a handler may return `Json<T>` as it would `T`.
impl<T: Serialize> Serialize for Json<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// An `application/x-www-form-urlencoded` body, validated before the handler runs. The body
/// parser must decode forms (`FormDecoder`, which turns the form into a JSON object: repeated
/// keys become arrays, every value is text); any other media type is a **415**.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Form<T>(pub T);

impl<T: DeserializeOwned + Validate> FromRequest for Form<T> {
    type Rejection = Rejection;

    fn from_request(ctx: &mut Context) -> Result<Self, Rejection> {
        if ctx.data::<FormDecoded>().is_some() {
            return ctx.bind().map(Form);
        }
        if is_form_media_type(ctx.request_headers()) {
            // A form nobody decoded: the app's mistake, not the client's.
            return Err(Rejection::BodyUnread {
                reader: "a Form argument",
                fix: "FormDecoder to the body parser \
                      (framework::middleware::body_parser::FormDecoder)",
            });
        }
        Err(unsupported(ctx, "application/x-www-form-urlencoded"))
    }
}

/// The query string as a `T`, validated. Numbers and booleans are parsed from their text; a
/// missing field is an error unless it is an `Option` or has `#[serde(default)]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Query<T>(pub T);

impl<T: DeserializeOwned + Validate> FromRequest for Query<T> {
    type Rejection = Rejection;

    fn from_request(ctx: &mut Context) -> Result<Self, Rejection> {
        from_pairs::<T>(ctx.raw_query().as_bytes(), "query").map(Query)
    }
}

/// All path parameters as a `T`, by field name (decoded, numbers parsed from their text).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Path<T>(pub T);

impl<T: DeserializeOwned> FromRequest for Path<T> {
    type Rejection = Rejection;

    fn from_request(ctx: &mut Context) -> Result<Self, Rejection> {
        let encoded = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(ctx.params().iter())
            .finish();
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(encoded.as_bytes()));
        serde_path_to_error::deserialize(de)
            .map(Path)
            .map_err(|e| pair_failure(&e, "path"))
    }
}

macro_rules! deref {
    ($($name:ident),*) => {$(
        impl<T> std::ops::Deref for $name<T> {
            type Target = T;
            fn deref(&self) -> &T {
                &self.0
            }
        }
        impl<T> std::ops::DerefMut for $name<T> {
            fn deref_mut(&mut self) -> &mut T {
                &mut self.0
            }
        }
    )*};
}
deref!(Json, Form, Query, Path);

/// The 415 for a body of another media type than the extractor reads.
fn unsupported(ctx: &Context, expected: &'static str) -> Rejection {
    Rejection::UnsupportedMediaType {
        received: ctx
            .request_header(http::header::CONTENT_TYPE)
            .map(str::to_owned),
        expected,
    }
}

/// `T` from `name=value` pairs (a query string), validated.
fn from_pairs<T: DeserializeOwned + Validate>(encoded: &[u8], what: &str) -> Result<T, Rejection> {
    let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(encoded));
    let value: T = serde_path_to_error::deserialize(de).map_err(|e| pair_failure(&e, what))?;
    value.validate().map_err(Rejection::Invalid)?;
    Ok(value)
}

/// The 400 for pairs that do not make the type asked for: the field, `required` or `invalid`,
/// why (the field is named as the `Validate` rules name it, without the source: `size: is
/// required`).
fn pair_failure(
    err: &serde_path_to_error::Error<serde::de::value::Error>,
    what: &str,
) -> Rejection {
    let reason = err.inner().to_string();
    Rejection::Invalid(
        crate::validate::field_failure(&err.path().to_string(), &reason).unwrap_or_else(|| {
            HttpError::with(
                StatusCode::BAD_REQUEST,
                CATEGORY,
                format!("{what}: {reason}"),
            )
            .with_code("invalid")
        }),
    )
}

/// The raw text of `name` in `source`.
fn source_text<'c>(ctx: &'c Context, source: Source, name: &str) -> Option<Cow<'c, str>> {
    match source {
        Source::Path => ctx.param(name),
        Source::Header => ctx.request_header(name).map(Cow::Borrowed),
        // Percent-decoded, as the cookie jar reads it.
        Source::Cookie => crate::header::cookie(ctx.request_headers(), name)
            .map(|raw| percent_encoding::percent_decode_str(raw).decode_utf8_lossy()),
    }
}

/// A named argument that must be present: parsed with `FromStr`. Used by `#[controller]`.
#[doc(hidden)]
#[inline]
pub fn required<T: FromStr>(
    ctx: &Context,
    source: Source,
    name: &'static str,
) -> Result<T, Rejection>
where
    T::Err: std::fmt::Display,
{
    match source_text(ctx, source, name) {
        Some(text) => parse(&text, source, name),
        None => Err(Rejection::Missing {
            source,
            name: Cow::Borrowed(name),
        }),
    }
}

/// A named argument that may be absent (`Option<T>`). Used by `#[controller]`.
#[doc(hidden)]
#[inline]
pub fn optional<T: FromStr>(
    ctx: &Context,
    source: Source,
    name: &'static str,
) -> Result<Option<T>, Rejection>
where
    T::Err: std::fmt::Display,
{
    source_text(ctx, source, name)
        .map(|text| parse(&text, source, name))
        .transpose()
}

fn parse<T: FromStr>(text: &str, source: Source, name: &'static str) -> Result<T, Rejection>
where
    T::Err: std::fmt::Display,
{
    text.parse().map_err(|e: T::Err| Rejection::Malformed {
        source,
        name: Cow::Borrowed(name),
        reason: e.to_string(),
    })
}

/// A value of the app's state, cloned (`#[state]`). Used by `#[controller]`.
#[doc(hidden)]
#[inline]
pub fn state<T: Clone + Send + Sync + 'static>(ctx: &Context) -> Result<T, Rejection> {
    ctx.state()
        .get::<T>()
        .cloned()
        .ok_or_else(|| Rejection::MissingState {
            type_name: crate::state::readable_type_name::<T>(),
        })
}

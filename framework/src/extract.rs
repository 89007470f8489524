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
use std::str::FromStr;

use http::StatusCode;
use serde::de::DeserializeOwned;
use serde::{Serialize, Serializer};

use crate::body::FormDecoded;
use crate::context::Context;
use crate::cookies::CookiesExt;
use crate::error::HttpError;
use crate::header::is_form_media_type;
use crate::openapi::{Operation, Probe};
use crate::validate::{CATEGORY, Validate, failure};

/// A value a controller method can take as an argument, made from the request before the
/// method runs. An error answers the request instead of the method.
///
/// ```
/// use framework::extract::FromRequest;
/// use framework::{Context, HttpError};
///
/// /// The client's preferred language, `en` when it names none.
/// struct Language(String);
///
/// impl FromRequest for Language {
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
    /// Makes the argument.
    fn from_request(ctx: &mut Context) -> Result<Self, HttpError>;

    /// Describes what the argument reads in the route's OpenAPI operation (a request body
    /// through [`Operation::request_body`], a parameter, an error status it answers). The
    /// default adds nothing; `Json`, `Form`, `Query` and `Path` are described by
    /// `#[controller]` from their type parameter.
    fn describe(operation: &mut Operation<'_>) {
        let _ = operation;
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
    #[inline]
    fn from_request(ctx: &mut Context) -> Result<Self, HttpError> {
        // The body parser accepted the media type already; only a form it decoded into JSON
        // is not a JSON body (a mark, not a second parse of `Content-Type`).
        if ctx.data::<FormDecoded>().is_some() {
            return Err(unsupported(ctx, "application/json"));
        }
        ctx.bind().map(Json)
    }
}

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
    fn from_request(ctx: &mut Context) -> Result<Self, HttpError> {
        if ctx.data::<FormDecoded>().is_some() {
            return ctx.bind().map(Form);
        }
        if is_form_media_type(ctx.request_headers()) {
            // A form nobody decoded: the app's mistake, not the client's.
            return Err(HttpError::with(
                StatusCode::INTERNAL_SERVER_ERROR,
                "framework-bind",
                "a Form argument found the form undecoded: add FormDecoder to the body parser \
                 (framework::middleware::body_parser::FormDecoder)",
            )
            .with_exception(true));
        }
        Err(unsupported(ctx, "application/x-www-form-urlencoded"))
    }
}

/// The query string as a `T`, validated. Numbers and booleans are parsed from their text; a
/// missing field is an error unless it is an `Option` or has `#[serde(default)]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Query<T>(pub T);

impl<T: DeserializeOwned + Validate> FromRequest for Query<T> {
    fn from_request(ctx: &mut Context) -> Result<Self, HttpError> {
        from_pairs::<T>(ctx.raw_query().as_bytes(), "query").map(Query)
    }
}

/// All path parameters as a `T`, by field name (decoded, numbers parsed from their text).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Path<T>(pub T);

impl<T: DeserializeOwned> FromRequest for Path<T> {
    fn from_request(ctx: &mut Context) -> Result<Self, HttpError> {
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
fn unsupported(ctx: &Context, expected: &str) -> HttpError {
    crate::validate::unsupported_media_type_expecting(
        ctx.request_header(http::header::CONTENT_TYPE),
        expected,
    )
}

/// `T` from `name=value` pairs (a query string), validated.
fn from_pairs<T: DeserializeOwned + Validate>(encoded: &[u8], what: &str) -> Result<T, HttpError> {
    let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(encoded));
    let value: T = serde_path_to_error::deserialize(de).map_err(|e| pair_failure(&e, what))?;
    value.validate()?;
    Ok(value)
}

/// The 400 for pairs that do not make the type asked for: the field, `required` or `invalid`,
/// why (the field is named as the `Validate` rules name it, without the source: `size: is
/// required`).
fn pair_failure(
    err: &serde_path_to_error::Error<serde::de::value::Error>,
    what: &str,
) -> HttpError {
    let reason = err.inner().to_string();
    crate::validate::field_failure(&err.path().to_string(), &reason).unwrap_or_else(|| {
        HttpError::with(
            StatusCode::BAD_REQUEST,
            CATEGORY,
            format!("{what}: {reason}"),
        )
        .with_code("invalid")
    })
}

/// What a named argument is read from, for its error message.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub enum Source {
    Path,
    Header,
    Cookie,
}

impl Source {
    fn name(self) -> &'static str {
        match self {
            Source::Path => "path parameter",
            Source::Header => "header",
            Source::Cookie => "cookie",
        }
    }

    /// The raw text of `name` in this source.
    fn text<'c>(self, ctx: &'c Context, name: &str) -> Option<Cow<'c, str>> {
        match self {
            Source::Path => ctx.param(name),
            Source::Header => ctx.request_header(name).map(Cow::Borrowed),
            // Percent-decoded, as the cookie jar reads it.
            Source::Cookie => crate::header::cookie(ctx.request_headers(), name)
                .map(|raw| percent_encoding::percent_decode_str(raw).decode_utf8_lossy()),
        }
    }
}

/// A named argument that must be present: parsed with `FromStr`. Used by `#[controller]`.
#[doc(hidden)]
#[inline]
pub fn required<T: FromStr>(ctx: &Context, source: Source, name: &str) -> Result<T, HttpError>
where
    T::Err: std::fmt::Display,
{
    match source.text(ctx, name) {
        Some(text) => parse(&text, source, name),
        None => Err(failure(
            &format!("{} {name}", source.name()),
            "required",
            "is required",
        )),
    }
}

/// A named argument that may be absent (`Option<T>`). Used by `#[controller]`.
#[doc(hidden)]
#[inline]
pub fn optional<T: FromStr>(
    ctx: &Context,
    source: Source,
    name: &str,
) -> Result<Option<T>, HttpError>
where
    T::Err: std::fmt::Display,
{
    source
        .text(ctx, name)
        .map(|text| parse(&text, source, name))
        .transpose()
}

fn parse<T: FromStr>(text: &str, source: Source, name: &str) -> Result<T, HttpError>
where
    T::Err: std::fmt::Display,
{
    text.parse()
        .map_err(|e| failure(&format!("{} {name}", source.name()), "invalid", e))
}

/// A value of the app's state, cloned (`#[state]`). Used by `#[controller]`.
#[doc(hidden)]
#[inline]
pub fn state<T: Clone + Send + Sync + 'static>(ctx: &Context) -> Result<T, HttpError> {
    ctx.state().require::<T>().cloned()
}

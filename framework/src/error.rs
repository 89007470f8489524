//! The error type every handler and middleware returns.
//!
//! [`HttpError`] is the seed's error object (statusCode, code, category, message, title,
//! exception). [`Error`] is what `?` produces: either an `HttpError`, or any other
//! `std::error::Error`, which the error handler answers with 500, category `framework-error` and
//! `exception: true`. Like `anyhow::Error`, [`Error`] itself does not implement
//! `std::error::Error`, which is what lets it convert from every error type.

use std::borrow::Cow;
use std::fmt;

use http::StatusCode;
use serde::Serialize;

mod build;
mod rejection;

pub use build::{BuildError, Component};
pub use rejection::{Rejection, Source};
/// Why a route pattern was refused: the router's, the macros' and the client's one grammar
/// (the `route-pattern` crate), met in [`BuildError::Pattern`].
pub use route_pattern::PatternError;

/// The category given to errors that are not an [`HttpError`].
pub const DEFAULT_CATEGORY: &str = "framework-error";

/// The result type of handlers and middleware. `T` defaults to `()`.
pub type Result<T = (), E = Error> = std::result::Result<T, E>;

/// An error with an HTTP status and the members the error handler serialises.
///
/// JSON members are omitted when empty; `exception` is only written when true.
///
/// ```
/// use framework::HttpError;
/// use http::StatusCode;
///
/// let err = HttpError::new("account already exists")
///     .with_status(StatusCode::CONFLICT)
///     .with_category("user");
/// assert_eq!(err.status().as_u16(), 409);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpError {
    #[serde(serialize_with = "serialize_status")]
    status_code: StatusCode,
    #[serde(skip_serializing_if = "str_is_empty")]
    code: Cow<'static, str>,
    #[serde(skip_serializing_if = "str_is_empty")]
    category: Cow<'static, str>,
    #[serde(skip_serializing_if = "str_is_empty")]
    title: Cow<'static, str>,
    message: Cow<'static, str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    exception: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra: Option<serde_json::Value>,
}

fn str_is_empty(s: &str) -> bool {
    s.is_empty()
}

fn serialize_status<S: serde::Serializer>(s: &StatusCode, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_u16(s.as_u16())
}

impl HttpError {
    /// A 400 error with the given message and no category.
    pub fn new(message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            status_code: StatusCode::BAD_REQUEST,
            code: Cow::Borrowed(""),
            category: Cow::Borrowed(""),
            title: Cow::Borrowed(""),
            message: message.into(),
            exception: false,
            extra: None,
        }
    }

    /// An error with status, category and message: the usual way components build theirs.
    pub fn with(
        status: StatusCode,
        category: impl Into<Cow<'static, str>>,
        message: impl Into<Cow<'static, str>>,
    ) -> Self {
        Self::new(message)
            .with_status(status)
            .with_category(category)
    }

    /// Sets the HTTP status.
    #[must_use]
    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status_code = status;
        self
    }
    /// Sets the code.
    #[must_use]
    pub fn with_code(mut self, code: impl Into<Cow<'static, str>>) -> Self {
        self.code = code.into();
        self
    }
    /// Sets the category.
    #[must_use]
    pub fn with_category(mut self, category: impl Into<Cow<'static, str>>) -> Self {
        self.category = category.into();
        self
    }
    /// Sets the title.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<Cow<'static, str>>) -> Self {
        self.title = title.into();
        self
    }
    /// Marks the error as an exception (an unexpected failure worth collecting).
    #[must_use]
    pub fn with_exception(mut self, exception: bool) -> Self {
        self.exception = exception;
        self
    }
    /// Attaches details, e.g. the failing field.
    #[must_use]
    pub fn with_extra(mut self, extra: serde_json::Value) -> Self {
        self.extra = Some(extra);
        self
    }

    /// HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status_code
    }
    /// Code identifying the kind of error ("" when unset).
    pub fn code(&self) -> &str {
        &self.code
    }
    /// Classification of the error ("" when unset).
    pub fn category(&self) -> &str {
        &self.category
    }
    /// Error title ("" when unset).
    pub fn title(&self) -> &str {
        &self.title
    }
    /// Error text.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// True when the error did not start as an `HttpError`.
    pub fn is_exception(&self) -> bool {
        self.exception
    }
    /// Details attached with [`HttpError::with_extra`].
    pub fn extra(&self) -> Option<&serde_json::Value> {
        self.extra.as_ref()
    }

    /// The JSON body the error handler writes.
    pub fn to_json(&self) -> Vec<u8> {
        // Serialising this struct cannot fail: every member is a string, number, bool or Value.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// The text body: `statusCode=<n>, category=<c>, message=<m>` (category left out when empty).
impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "statusCode={}", self.status_code.as_u16())?;
        if !self.category.is_empty() {
            write!(f, ", category={}", self.category)?;
        }
        write!(f, ", message={}", self.message)
    }
}

impl std::error::Error for HttpError {}

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Any error a handler or middleware returns: an [`HttpError`] or a plain error.
///
/// One pointer wide, so a [`Result`] is too (`Ok` is the null pointer) and travels in a
/// register: every hook and future of a chain returns one, and a middleware's
/// [`Before`](crate::Before) fits in two registers instead of going through memory (with the
/// two kinds side by side, an error was two words and a `Result` three, returned through
/// memory; the cost: BENCHMARKS.md, "Hand-written fast paths"). Errors are the rare path: an `HttpError` takes one allocation, a plain
/// error two.
pub struct Error(Box<Repr>);

enum Repr {
    Http(HttpError),
    Plain(BoxError),
}

impl Error {
    /// A plain error from a message: it is answered as a 500 exception.
    pub fn msg(message: impl fmt::Display) -> Self {
        Self(Box::new(Repr::Plain(message.to_string().into())))
    }

    /// The `HttpError` inside, if this error is one.
    pub fn as_http(&self) -> Option<&HttpError> {
        match &*self.0 {
            Repr::Http(e) => Some(e),
            Repr::Plain(_) => None,
        }
    }

    /// The status the response gets: the `HttpError`'s, else 500.
    pub fn status(&self) -> StatusCode {
        self.as_http()
            .map_or(StatusCode::INTERNAL_SERVER_ERROR, HttpError::status)
    }

    /// Converts to the error object: a plain error becomes 500, category `framework-error`,
    /// `exception: true`, with its text as the message.
    pub fn into_http(self) -> HttpError {
        match *self.0 {
            Repr::Http(e) => e,
            Repr::Plain(e) => HttpError::with(
                StatusCode::INTERNAL_SERVER_ERROR,
                DEFAULT_CATEGORY,
                e.to_string(),
            )
            .with_exception(true),
        }
    }

    /// The error text without the status and category: what a response without the error
    /// handler carries.
    pub fn text(&self) -> String {
        match &*self.0 {
            Repr::Http(e) => e.message().to_owned(),
            Repr::Plain(e) => e.to_string(),
        }
    }
}

impl<E> From<E> for Error
where
    E: std::error::Error + Send + Sync + 'static,
{
    fn from(err: E) -> Self {
        // An `HttpError` is taken as it is, without boxing it as a plain error first; an
        // extractor's `Rejection` as the `HttpError` it is answered with.
        let err = match crate::downcast::try_downcast::<HttpError, E>(err) {
            Ok(http) => return Self(Box::new(Repr::Http(http))),
            Err(err) => err,
        };
        let err = match crate::downcast::try_downcast::<Rejection, E>(err) {
            Ok(rejection) => return Self(Box::new(Repr::Http(rejection.into()))),
            Err(err) => err,
        };
        let plain: BoxError = Box::new(err);
        // A stalled upload is the client's doing: 408, not 500.
        if plain
            .downcast_ref::<crate::body::BodyError>()
            .is_some_and(crate::body::BodyError::is_timeout)
        {
            return HttpError::with(
                http::StatusCode::REQUEST_TIMEOUT,
                "framework-server",
                "request body read timed out",
            )
            .into();
        }
        // A refused cookie is the app's mistake, in the cookies' category.
        if let Some(cookie) = plain.downcast_ref::<crate::cookies::CookieError>() {
            return HttpError::from(cookie.clone()).into();
        }
        // The OS's words (paths, `File name too long (os error 36)`) are for the log,
        // never for the client.
        if let Some(io) = plain.downcast_ref::<std::io::Error>() {
            tracing::error!(error = %io, "i/o failed");
            return HttpError::with(
                http::StatusCode::INTERNAL_SERVER_ERROR,
                DEFAULT_CATEGORY,
                "internal i/o error",
            )
            .with_exception(true)
            .into();
        }
        Self(Box::new(Repr::Plain(plain)))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.0 {
            Repr::Http(e) => fmt::Display::fmt(e, f),
            Repr::Plain(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.0 {
            Repr::Http(e) => fmt::Debug::fmt(e, f),
            Repr::Plain(e) => fmt::Debug::fmt(e, f),
        }
    }
}

/// A 500 in category `framework-cookie` (`exception: true`): a refused cookie is the app's
/// mistake, not the client's.
impl From<crate::cookies::CookieError> for HttpError {
    fn from(err: crate::cookies::CookieError) -> Self {
        HttpError::with(
            StatusCode::INTERNAL_SERVER_ERROR,
            crate::cookies::CATEGORY,
            err.to_string(),
        )
        .with_exception(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error is one pointer, so a `Result` is one register and a hook's `Before` two.
    #[test]
    fn results_fit_in_registers() {
        assert_eq!(size_of::<Error>(), size_of::<usize>());
        assert_eq!(size_of::<Result>(), size_of::<usize>());
        assert!(size_of::<crate::Before>() <= 2 * size_of::<usize>());
    }

    #[test]
    fn http_error_survives_conversion() {
        let err: Error = HttpError::new("bad").with_category("user").into();
        let http = err.into_http();
        assert_eq!(http.status(), StatusCode::BAD_REQUEST);
        assert_eq!(http.category(), "user");
        assert!(!http.is_exception());
    }

    #[test]
    fn plain_error_becomes_exception() {
        #[derive(Debug)]
        struct DiskOnFire;
        impl fmt::Display for DiskOnFire {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("disk on fire")
            }
        }
        impl std::error::Error for DiskOnFire {}
        let err: Error = DiskOnFire.into();
        assert_eq!(err.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let http = err.into_http();
        assert_eq!(http.category(), DEFAULT_CATEGORY);
        assert_eq!(http.message(), "disk on fire");
        assert!(http.is_exception());
    }

    #[test]
    fn io_errors_keep_the_os_words_out_of_the_answer() {
        // Any OS error number will do: its text names the number, which must not leak.
        let long = std::io::Error::from_raw_os_error(36);
        assert!(long.to_string().contains("os error 36"));
        let http = Error::from(long).into_http();
        assert_eq!(http.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(http.category(), DEFAULT_CATEGORY);
        assert_eq!(http.message(), "internal i/o error");
        assert!(http.is_exception());
    }

    #[test]
    fn json_omits_empty_members() {
        let json: serde_json::Value =
            serde_json::from_slice(&HttpError::new("x").with_category("c").to_json()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"statusCode": 400, "category": "c", "message": "x"})
        );
    }

    #[test]
    fn text_form() {
        let e = HttpError::with(StatusCode::CONFLICT, "user", "taken");
        assert_eq!(
            e.to_string(),
            "statusCode=409, category=user, message=taken"
        );
    }
}

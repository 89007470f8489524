//! Why an extractor (`framework::extract`) could not make an argument from the request: [`Rejection`], a type a handler can
//! match on, answered as the same JSON error object as any [`HttpError`].

use std::borrow::Cow;
use std::convert::Infallible;
use std::fmt;

use http::StatusCode;

use super::HttpError;
use crate::validate::{CATEGORY, failure};

/// What a named argument is read from: a path parameter, a header or a cookie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// A path parameter (`{id}`).
    Path,
    /// A request header (`#[header("x-api-key")]`).
    Header,
    /// A cookie of the `Cookie` header (`#[cookie("theme")]`).
    Cookie,
}

impl Source {
    /// How the error message names the source: `path parameter`, `header`, `cookie`.
    pub fn name(self) -> &'static str {
        match self {
            Source::Path => "path parameter",
            Source::Header => "header",
            Source::Cookie => "cookie",
        }
    }
}

/// Why the framework's extractors ([`Json`](crate::extract::Json), [`Form`](crate::extract::Form),
/// [`Query`](crate::extract::Query), [`Path`](crate::extract::Path), named arguments, `#[state]`) and
/// [`Context::bind`](crate::Context::bind) refused a request.
///
/// Each variant has its status and category ([`Rejection::status`], [`Rejection::category`])
/// and is answered as the error object an [`HttpError`] is (`From<Rejection> for HttpError`;
/// `?` in a handler turns it into an [`Error`](crate::Error) that keeps the variant's status).
/// A handler that wants to answer a refusal itself takes `Result<T, T::Rejection>` instead of
/// `T` (as with axum's rejections):
///
/// ```
/// use framework::extract::{Json, Rejection};
///
/// fn answer(body: Result<Json<serde_json::Value>, Rejection>) -> String {
///     match body {
///         Ok(Json(value)) => value.to_string(),
///         Err(Rejection::UnsupportedMediaType { .. }) => "send JSON".to_owned(),
///         Err(other) => other.to_string(),
///     }
/// }
/// # assert_eq!(answer(Ok(Json(serde_json::json!(1)))), "1");
/// ```
///
/// The enum is `#[non_exhaustive]`: a match needs a `_` arm, and a new reason is not a
/// breaking change.
#[derive(Debug)]
#[non_exhaustive]
pub enum Rejection {
    /// A named argument that must be present is absent: **400** `validate`, code `required`,
    /// `header x-api-key: is required`.
    Missing {
        /// Where it is read from.
        source: Source,
        /// Its name: the path parameter, header or cookie.
        name: Cow<'static, str>,
    },
    /// A named argument's text does not parse as its type: **400** `validate`, code `invalid`,
    /// `path parameter id: invalid digit found in string`.
    Malformed {
        /// Where it is read from.
        source: Source,
        /// Its name.
        name: Cow<'static, str>,
        /// The parser's words.
        reason: String,
    },
    /// The body, the query string or the path parameters do not make the type, or break its
    /// `Validate` rules: **400** `validate`, naming the field (the error inside says which and
    /// why).
    Invalid(HttpError),
    /// A body of another media type than the argument reads: **415**
    /// `framework-body-parser`, naming both (the body parser adds `Accept-Post`).
    UnsupportedMediaType {
        /// The request's `Content-Type`, if it had one.
        received: Option<String>,
        /// The media type the argument reads.
        expected: &'static str,
    },
    /// The app's mistake, not the client's: the body reached the argument unread, because the
    /// route runs no body parser or its parser does not decode this media type. **500**
    /// `framework-bind`, an exception.
    BodyUnread {
        /// Who found it unread (`ctx.bind()`, `a Form argument`).
        reader: &'static str,
        /// What to add to the app.
        fix: &'static str,
    },
    /// A `#[state]` argument whose type the app did not provide: **500**
    /// `framework-error`, an exception.
    MissingState {
        /// The type, as written without its module path.
        type_name: String,
    },
}

impl Rejection {
    /// The status it is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            Rejection::Missing { .. } | Rejection::Malformed { .. } => StatusCode::BAD_REQUEST,
            Rejection::Invalid(err) => err.status(),
            Rejection::UnsupportedMediaType { .. } => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Rejection::BodyUnread { .. } | Rejection::MissingState { .. } => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
    }

    /// The category of its error object.
    pub fn category(&self) -> &str {
        match self {
            Rejection::Missing { .. } | Rejection::Malformed { .. } => CATEGORY,
            Rejection::Invalid(err) => err.category(),
            Rejection::UnsupportedMediaType { .. } => "framework-body-parser",
            Rejection::BodyUnread { .. } => "framework-bind",
            Rejection::MissingState { .. } => super::DEFAULT_CATEGORY,
        }
    }

    /// The error object it is answered with.
    pub fn to_http(&self) -> HttpError {
        match self {
            Rejection::Missing { source, name } => failure(
                &format!("{} {name}", source.name()),
                "required",
                "is required",
            ),
            Rejection::Malformed {
                source,
                name,
                reason,
            } => failure(&format!("{} {name}", source.name()), "invalid", reason),
            Rejection::Invalid(err) => err.clone(),
            Rejection::UnsupportedMediaType { received, expected } => {
                crate::validate::unsupported_media_type_expecting(received.as_deref(), expected)
            }
            Rejection::BodyUnread { reader, fix } => HttpError::with(
                StatusCode::INTERNAL_SERVER_ERROR,
                "framework-bind",
                format!("{reader} found the request body unread: add {fix}"),
            )
            .with_exception(true),
            Rejection::MissingState { type_name } => HttpError::with(
                StatusCode::INTERNAL_SERVER_ERROR,
                super::DEFAULT_CATEGORY,
                format!("no state of type {type_name} was registered"),
            )
            .with_exception(true),
        }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::Invalid(err) => fmt::Display::fmt(err, f),
            other => fmt::Display::fmt(&other.to_http(), f),
        }
    }
}

impl std::error::Error for Rejection {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Rejection::Invalid(err) => Some(err),
            _ => None,
        }
    }
}

impl From<Rejection> for HttpError {
    fn from(rejection: Rejection) -> Self {
        match rejection {
            Rejection::Invalid(err) => err,
            other => other.to_http(),
        }
    }
}

/// An argument that cannot be refused (`Result<T, T::Rejection>`) converts into any error.
impl From<Infallible> for HttpError {
    fn from(never: Infallible) -> Self {
        match never {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_variant_renders_as_its_http_error() {
        let missing = Rejection::Missing {
            source: Source::Header,
            name: "x-api-key".into(),
        };
        assert_eq!(missing.status(), StatusCode::BAD_REQUEST);
        let http = HttpError::from(missing);
        assert_eq!(
            (http.category(), http.code(), http.message()),
            ("validate", "required", "header x-api-key: is required")
        );
        let malformed = Rejection::Malformed {
            source: Source::Path,
            name: "id".into(),
            reason: "invalid digit found in string".into(),
        };
        assert_eq!(
            HttpError::from(malformed).message(),
            "path parameter id: invalid digit found in string"
        );
        let media = Rejection::UnsupportedMediaType {
            received: Some("text/plain; charset=utf-8".into()),
            expected: "application/json",
        };
        assert_eq!(media.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(media.category(), "framework-body-parser");
        assert_eq!(
            media.to_string(),
            HttpError::from(media).to_string(),
            "Display is the error object's"
        );
        let unread = HttpError::from(Rejection::BodyUnread {
            reader: "ctx.bind()",
            fix: "the body parser",
        });
        assert!(unread.is_exception());
        assert_eq!(unread.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let state = Rejection::MissingState {
            type_name: "Store".into(),
        };
        assert_eq!(state.category(), "framework-error");
        assert_eq!(
            HttpError::from(state).message(),
            "no state of type Store was registered"
        );
    }

    #[test]
    fn an_invalid_body_keeps_its_error_and_names_it_as_the_source() {
        let inner = failure("size", "invalid", "must be at most 100");
        let rejection = Rejection::Invalid(inner.clone());
        assert_eq!(rejection.category(), "validate");
        let source = std::error::Error::source(&rejection).map(ToString::to_string);
        assert_eq!(source, Some(inner.to_string()));
        assert_eq!(HttpError::from(rejection), inner);
    }

    #[test]
    fn a_rejection_returned_with_question_mark_keeps_its_status() {
        let err = crate::Error::from(Rejection::UnsupportedMediaType {
            received: None,
            expected: "application/json",
        });
        assert_eq!(err.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(
            err.as_http().map(HttpError::category),
            Some("framework-body-parser")
        );
    }
}

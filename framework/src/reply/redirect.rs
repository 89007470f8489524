//! [`Redirect`]: a reply that sends the client elsewhere with `303`, `307` or `308` and a
//! checked `Location`, and [`Redirect::local`], which takes a target from the request (a
//! login form's `?next=`) only when it stays on this site.

use http::StatusCode;
use http::header::{HeaderValue, LOCATION};
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};

use crate::context::Context;
use crate::error::HttpError;

/// Category of the errors a [`Redirect`] refuses its target with.
pub const CATEGORY: &str = "framework-redirect";

/// A redirect: the status and the `Location` header, no body.
///
/// | constructor | status | the client then |
/// |---|---|---|
/// | [`see_other`](Self::see_other) | 303 See Other | `GET`s the target: the answer to a form's `POST` |
/// | [`temporary`](Self::temporary) | 307 Temporary Redirect | repeats the same method and body at the target, this time |
/// | [`permanent`](Self::permanent) | 308 Permanent Redirect | repeats the same method and body, and remembers the move |
/// | [`local`](Self::local) | 303 See Other | as `see_other`, to a path on this site taken from the request |
///
/// The target is checked before anything is sent: one with a control character (a CR or LF
/// would start another header line) or an empty one is refused with an error naming it, never
/// a panic. Characters a URI cannot hold as they are (spaces, non-ASCII letters, `"`, `<`, `>`,
/// `\`, `^`, `` ` ``, `{`, `|`, `}`) are percent-encoded (RFC 3986 section 2.1), so
/// `/café menu` is sent as `/caf%C3%A9%20menu`; an existing `%XX` is kept.
///
/// `see_other`, `temporary` and `permanent` send the client wherever they are told, another
/// site included: give them targets the app chose, never one read from the request (an open
/// redirect lets a link on this site lead to a phishing page). A target from the request
/// goes through [`local`](Self::local).
///
/// The OpenAPI document lists a route whose controller method returns `Redirect` with
/// responses 303, 307 and 308, each with a required `Location` header.
///
/// ```
/// use framework::reply::Redirect;
/// use framework::{Context, HttpError, Result};
///
/// async fn old_home(_ctx: &mut Context) -> Result<Redirect> {
///     Ok(Redirect::permanent("/home")?)
/// }
///
/// // After a login form: back where the user was, on this site only.
/// async fn logged_in(ctx: &mut Context) -> Result<Redirect> {
///     let next = ctx.query("next").unwrap_or("/".into()).into_owned();
///     Ok(Redirect::local(&next)?)
/// }
///
/// assert_eq!(Redirect::see_other("https://example.com/a b")?.location(), "https://example.com/a%20b");
/// assert_eq!(Redirect::local("//evil.example").unwrap_err().status().as_u16(), 400);
/// assert_eq!(Redirect::temporary("/x\r\nSet-Cookie: a=b").unwrap_err().status().as_u16(), 500);
/// # let _ = (old_home, logged_in);
/// # Ok::<(), HttpError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct Redirect {
    status: StatusCode,
    location: HeaderValue,
}

/// What is percent-encoded in a target: the controls (refused before encoding), and the
/// characters RFC 3986 does not allow in a URI as they are. `%` is not in it, so a target
/// that is encoded already stays as it is; non-ASCII characters are always encoded, as
/// UTF-8.
const NOT_IN_URI: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'<')
    .add(b'>')
    .add(b'\\')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

impl Redirect {
    /// `303 See Other` to `target`, which the client fetches with `GET`: the answer to a
    /// form's `POST`. A target that is empty or holds a control character is a 500 error
    /// (category `framework-redirect`): the app chose it.
    pub fn see_other(target: impl AsRef<str>) -> Result<Self, HttpError> {
        Self::with(StatusCode::SEE_OTHER, target.as_ref())
    }

    /// `307 Temporary Redirect` to `target`: the client repeats the request (method and
    /// body) there, this time. Refuses a target as [`see_other`](Self::see_other) does.
    pub fn temporary(target: impl AsRef<str>) -> Result<Self, HttpError> {
        Self::with(StatusCode::TEMPORARY_REDIRECT, target.as_ref())
    }

    /// `308 Permanent Redirect` to `target`: the client repeats the request (method and
    /// body) there, and may remember the move (browsers cache it). Refuses a target as
    /// [`see_other`](Self::see_other) does.
    pub fn permanent(target: impl AsRef<str>) -> Result<Self, HttpError> {
        Self::with(StatusCode::PERMANENT_REDIRECT, target.as_ref())
    }

    /// `303 See Other` to `path` when it is a path on this site ([`is_local`]): `/`, then
    /// anything but a second `/` or a `\` (`//evil.example` and `/\evil.example` name
    /// another host to a browser), with no control character (browsers drop tabs and line
    /// breaks from a URL, so `/\t/evil.example` is `//evil.example` to them). Anything else
    /// (another scheme, `http:`, `javascript:`, a host, a relative path, a leading space) is
    /// refused with **400** (category `framework-redirect`): the target came from the
    /// request. What a login form's `?next=` goes through.
    pub fn local(path: impl AsRef<str>) -> Result<Self, HttpError> {
        let path = path.as_ref();
        if !is_local(path) {
            return Err(HttpError::with(
                StatusCode::BAD_REQUEST,
                CATEGORY,
                "the redirect target must be a path on this site (starting with one `/`)",
            ));
        }
        Self::with(StatusCode::SEE_OTHER, path)
    }

    fn with(status: StatusCode, target: &str) -> Result<Self, HttpError> {
        let refused = |message: &'static str| {
            Err(
                HttpError::with(StatusCode::INTERNAL_SERVER_ERROR, CATEGORY, message)
                    .with_exception(true),
            )
        };
        if target.is_empty() {
            return refused("the redirect target is empty");
        }
        if target.chars().any(char::is_control) {
            return refused(
                "the redirect target holds a control character (a CR or LF would start another header)",
            );
        }
        let encoded = utf8_percent_encode(target, NOT_IN_URI).to_string();
        match HeaderValue::try_from(encoded) {
            Ok(location) => Ok(Self { status, location }),
            // Unreachable in practice: every byte left is visible ASCII.
            Err(_) => refused("the redirect target is not a valid header value"),
        }
    }

    /// The status: 303, 307 or 308.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The `Location` sent, percent-encoded.
    pub fn location(&self) -> &str {
        self.location.to_str().unwrap_or_default()
    }
}

/// Whether `path` is a path on this site, safe to redirect to whoever wrote it: it starts
/// with `/`, its second character is neither `/` nor `\`, and it holds no control
/// character (as ASP.NET Core's `IsLocalUrl`). What [`Redirect::local`] checks.
pub fn is_local(path: &str) -> bool {
    let mut bytes = path.bytes();
    bytes.next() == Some(b'/')
        && !matches!(bytes.next(), Some(b'/' | b'\\'))
        && !path.chars().any(char::is_control)
}

/// `path` (a request's path, or one made from it) as a `Location` that stays on this site: a
/// run of `/` and `\` at its start becomes one `/`. A request path may begin with `//`
/// (`GET //evil.example/`), and a location made from it by appending `/` would be
/// `//evil.example/`, which a browser reads as another host (`/\` too). What every redirect
/// the framework builds from a request path goes through: a static directory's, a nested
/// service's.
#[cfg(any(feature = "static-serve", feature = "tower"))]
pub(crate) fn on_this_site(path: &str) -> std::borrow::Cow<'_, str> {
    let rest = path.trim_start_matches(['/', '\\']);
    if path.len() - rest.len() > 1 || path.starts_with('\\') {
        std::borrow::Cow::Owned(format!("/{rest}"))
    } else {
        std::borrow::Cow::Borrowed(path)
    }
}

impl crate::IntoReply for Redirect {
    const LEAVES_VALUE: bool = false;
    fn into_reply(self, ctx: &mut Context) {
        ctx.set_status(self.status);
        ctx.set_response_header(LOCATION, self.location);
        ctx.body_mut().clear();
    }
}

/// 303, 307 and 308, each with its `Location`: the status is chosen when the handler runs.
impl crate::openapi::DescribeReply for Redirect {
    fn describe_reply(operation: &mut crate::openapi::Operation<'_>) {
        let uri = schemars::json_schema!({"type": "string", "format": "uri-reference"});
        for status in [303, 307, 308] {
            operation.reply(status, None, None);
            operation.reply_header(status, "Location", &uri, true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Redirect, is_local};

    #[test]
    #[cfg(any(feature = "static-serve", feature = "tower"))]
    fn a_location_from_a_request_path_stays_on_this_site() {
        use super::on_this_site;
        for (path, location) in [
            ("/sub/", "/sub/"),
            ("/", "/"),
            ("//sub/", "/sub/"),
            ("///evil.example/", "/evil.example/"),
            ("/\\evil.example/", "/evil.example/"),
            ("\\/evil.example/", "/evil.example/"),
            ("/files//sub/", "/files//sub/"),
            ("sub/", "sub/"),
        ] {
            assert_eq!(on_this_site(path), location, "{path}");
            assert!(is_local(&on_this_site(path)) || !path.starts_with(['/', '\\']));
        }
    }

    #[test]
    fn local_paths_and_the_attacks_refused() {
        for ok in [
            "/",
            "/x",
            "/a/b?c=d#e",
            "/./x",
            "/%2F%2Fevil.example",
            "/a//b",
            "/a\\b",
        ] {
            assert!(is_local(ok), "{ok}");
        }
        for bad in [
            "",
            "x",
            "//evil.example",
            "/\\evil.example",
            "\\\\evil.example",
            "http://evil.example",
            "https:evil.example",
            "javascript:alert(1)",
            " /x",
            "/\t/evil.example",
            "/\n/evil.example",
            "/x\r\nSet-Cookie: a=b",
            "../x",
            "?next=x",
            "#x",
        ] {
            assert!(!is_local(bad), "{bad:?}");
            let err = Redirect::local(bad).unwrap_err();
            assert_eq!(
                (err.status().as_u16(), err.category()),
                (400, "framework-redirect")
            );
        }
    }

    #[test]
    fn targets_are_encoded_or_refused() {
        let r = Redirect::see_other("/café menu?q=\"x\"").unwrap();
        assert_eq!(r.location(), "/caf%C3%A9%20menu?q=%22x%22");
        assert_eq!(r.status().as_u16(), 303);
        assert_eq!(Redirect::temporary("/a%20b").unwrap().location(), "/a%20b");
        assert_eq!(Redirect::permanent("/p").unwrap().status().as_u16(), 308);
        assert_eq!(Redirect::local("/p").unwrap().status().as_u16(), 303);
        for bad in [
            "",
            "/x\ny",
            "/x\rSet-Cookie: a",
            "/\0",
            "/\u{7f}",
            "/\u{85}",
        ] {
            let err = Redirect::see_other(bad).unwrap_err();
            assert_eq!(
                (err.status().as_u16(), err.category()),
                (500, "framework-redirect")
            );
        }
    }
}

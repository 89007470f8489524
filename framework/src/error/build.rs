//! [`BuildError`]: why [`App::build`](crate::App::build) refused the configuration, as a
//! value a program can match (the route, the name, the component to add), printed as the
//! sentence a developer reads.

use std::fmt;

use super::PatternError;

/// Why [`App::build`](crate::App::build) refused the configuration. Each variant names what
/// to fix; [`Display`](fmt::Display) says it in a sentence, and a path the router refused
/// keeps its [`PatternError`] as the [`source`](std::error::Error::source).
///
/// ```
/// use framework::{App, BuildError, Context};
///
/// let hello = |_ctx: &mut Context| async { Ok("hi") };
/// let err = App::new().get("/a", hello).get("/a", hello).build().err().unwrap();
/// assert!(matches!(err, BuildError::DuplicateRoute { ref path, .. } if path == "/a"));
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildError {
    /// A route's path is not a pattern the router takes.
    Pattern {
        /// What names the route: its handler.
        route: String,
        /// Why the router refused it.
        source: PatternError,
    },
    /// Two routes answer the same method at the same path.
    DuplicateRoute {
        /// The method.
        method: http::Method,
        /// The path.
        path: String,
        /// The handler added first.
        first: String,
        /// The handler added second.
        second: String,
    },
    /// A route names middleware no [`App::register_middleware`](crate::App::register_middleware)
    /// registered.
    UnknownMiddleware {
        /// Who named it: a controller.
        owner: String,
        /// The name.
        name: String,
    },
    /// A route's chain lacks a component the route needs (only an
    /// [`App::bare`](crate::App::bare) app's can).
    MissingComponent {
        /// The route: method, path and handler.
        route: String,
        /// What to add.
        component: Component,
    },
    /// A controller method takes more than one argument that reads the request body (two
    /// `Json`, a `Json` and a `Form`, under any name or alias): a body is read once.
    BodyReadTwice {
        /// The route: method, path and handler.
        route: String,
    },
    /// A route's CSRF check runs inside its session, so every forged request would load a
    /// session before its 403.
    CsrfInsideSession {
        /// The route: method, path and handler.
        route: String,
    },
    /// A controller could not be built from the app's state (a `#[state]` field missing).
    State {
        /// The controller.
        controller: String,
        /// Why, as the state said it.
        message: String,
    },
    /// A route's method is not an HTTP method.
    BadMethod {
        /// The route: its handler.
        route: String,
        /// The method as written.
        method: String,
    },
    /// An app setting that cannot work as given.
    Setting {
        /// The setting, as its method is named (`App::openapi_docs`).
        setting: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// Anything else, said in a sentence ([`BuildError::new`]): for code that assembles an
    /// app around [`App::build`](crate::App::build).
    Other(String),
}

/// A component a route's chain must have.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    /// A responder, for a handler that returns a value to turn into the body.
    Responder,
    /// A body parser, for a handler that takes `Json<T>` or `Form<T>`.
    BodyParser,
}

impl BuildError {
    /// A build error with `message` ([`BuildError::Other`]), for code that assembles an app
    /// around [`App::build`](crate::App::build).
    pub fn new(message: impl Into<String>) -> Self {
        Self::Other(message.into())
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Pattern { route, source } => write!(f, "{route}: {source}"),
            Self::DuplicateRoute {
                method,
                path,
                first,
                second,
            } => write!(f, "duplicate route {method} {path}: {first} and {second}"),
            Self::UnknownMiddleware { owner, name } => write!(
                f,
                "{owner}: middleware `{name}` is not registered (use App::register_middleware)"
            ),
            Self::MissingComponent {
                route,
                component: Component::Responder,
            } => write!(
                f,
                "{route} returns a value, and no responder turns it into the body: add \
                 framework::middleware::responder::Responder to the app (App::new() has one)"
            ),
            Self::MissingComponent {
                route,
                component: Component::BodyParser,
            } => write!(
                f,
                "{route} takes a request body (Json or Form), and no body parser reads it: add \
                 framework::middleware::body_parser::BodyParser to the app (App::new() has one)"
            ),
            Self::CsrfInsideSession { route } => write!(
                f,
                "{route}: csrf runs inside session, so every forged request loads a session \
                 before its 403; mount csrf before session (route middleware run after the \
                 app's and the controller's: name `session` on the routes, after `csrf`)"
            ),
            Self::State {
                controller,
                message,
            } => write!(f, "controller {controller} could not be built: {message}"),
            Self::BadMethod { route, method } => write!(f, "{route}: bad method {method}"),
            Self::BodyReadTwice { route } => write!(
                f,
                "{route} takes two arguments that read the request body: a body is read once, \
                 by one Json, Form or Multipart argument"
            ),
            Self::Setting { setting, message } => write!(f, "{setting}: {message}"),
            Self::Other(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Pattern { source, .. } => Some(source),
            _ => None,
        }
    }
}

//! The application builder: [`App`] and [`Group`], two scopes of one builder, [`Routes`].
//!
//! An [`App`] collects global middleware, groups (a prefix plus shared middleware), routes,
//! named middleware that controllers refer to, and state. [`App::build`] checks everything
//! (duplicate routes, unknown middleware names, malformed paths) and returns a [`Service`],
//! which answers requests in process ([`Service::handle`]) or on a socket
//! ([`Service::serve`]). Everything that adds middleware or routes is written once, on
//! [`Routes`], and reads the same on an app and on a group.
//!
//! Chain order for a route: global middleware, then group middleware, then route middleware,
//! then the handler. A 404 or 405 answer runs the global middleware only.
//!
//! [`App::new`] adds recover, the error handler, the responder and the body parser where a
//! route needs them and mounts the linked controllers ([`crate::middleware::defaults`]);
//! [`App::bare`] starts empty, and its [`build`](App::build) refuses a route whose chain lacks a component
//! the route needs (a handler returning a value with no responder, a `Json<T>` argument with
//! no body parser), naming the route and the middleware to add.
//!
//! The app's files: the builder and [`App::build`] here; mounting the `#[controller]`s
//! (`controllers.rs`); the OpenAPI document and its docs page (`openapi.rs`).

mod build;
mod controllers;
mod openapi;
mod routes;

use std::any::{Any, type_name};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use http::Method;

pub use crate::error::BuildError;
use crate::error::Result;
use crate::handler::{
    Endpoint, HandlerFn, IntoReply, Middleware, SharedMiddleware, handler_fn, share,
};
use crate::limits::ServerLimits;
pub use crate::route::{ROUTER_CATEGORY, RouteInfo};
pub use crate::service::{Service, TrailingSlash};
use crate::state::State;

/// A middleware as written at registration: built already, or named for later resolution.
enum MiddlewareRef {
    Shared(SharedMiddleware),
    Named(&'static str),
}

struct RouteSpec {
    method: Method,
    path: String,
    handler: Cow<'static, str>,
    /// Who asked for the named middleware: a controller name, for error messages.
    owner: Cow<'static, str>,
    middleware: Vec<MiddlewareRef>,
    endpoint: Arc<dyn Endpoint>,
    kind: Kind,
}

/// What answers a route, for the defaults it gets and the components its chain must have.
#[derive(Clone, Copy)]
enum Kind {
    /// A handler; `value`: it returns a value for a responder (not `()`, a stream or
    /// `NoContent`).
    Handler { value: bool },
    /// A controller method, whose needs its description tells.
    Controller(fn(&mut crate::openapi::Operation<'_>)),
    /// An [`Endpoint`]: it writes its own answer and reads its own request body.
    Endpoint,
}

/// Whether a handler returning `T` leaves a value for a responder to turn into the body
/// (`()`, which is `Serialize`, leaves what the handler set in the context).
fn leaves_value<T: IntoReply>() -> bool {
    T::LEAVES_VALUE && std::any::TypeId::of::<T>() != std::any::TypeId::of::<()>()
}

/// Middleware and routes of one scope: the whole app ([`App`]) or a group under a prefix
/// ([`Group`]). What adds middleware or routes is defined here, once, for both: on an app
/// the middleware is global (every request, 404 and 405 answers included), on a group it runs
/// for the group's routes.
pub struct Routes<Scope> {
    scope: Scope,
    middleware: Vec<SharedMiddleware>,
    routes: Vec<RouteSpec>,
}

/// A group's scope: its prefix, and the groups inside it.
pub struct Prefix {
    path: String,
    groups: Vec<Group>,
}

/// Routes under a common prefix sharing middleware. A group may hold groups
/// ([`Group::group`]), to any depth: an inner group's prefix follows its outer group's, and its
/// routes run the outer group's middleware, then its own.
///
/// ```
/// use framework::{App, Context, Group};
///
/// let stats = |_ctx: &mut Context| async { Ok("42") };
/// let v1 = Group::new("/v1").get("/stats", stats);
/// let admin = Group::new("/admin").group(v1);
/// let service = App::new().group(admin).build().unwrap();
/// assert_eq!(service.routes()[0].path, "/admin/v1/stats");
/// ```
pub type Group = Routes<Prefix>;

/// The application builder.
///
/// ```
/// use framework::{App, Context, Result};
///
/// async fn hello(_ctx: &mut Context) -> Result<&'static str> {
///     Ok("hello")
/// }
///
/// let service = App::new()
///     .use_middleware(framework::middleware::responder::Responder::default())
///     .get("/hello", hello)
///     .build()
///     .unwrap();
/// assert_eq!(service.routes()[0].path, "/hello");
/// ```
pub type App = Routes<AppScope>;

/// The app's scope: what only the whole app has (groups, named middleware, state, server
/// settings).
pub struct AppScope {
    named: HashMap<&'static str, SharedMiddleware>,
    groups: Vec<Group>,
    state: State,
    trusted_proxies: crate::client_ip::TrustedProxies,
    limits: ServerLimits,
    #[cfg(feature = "tls")]
    tls: Option<crate::tls::Tls>,
    mount_controllers: bool,
    /// The components [`App::new`] adds where a route lacks them, in reference order.
    defaults: Option<fn() -> Vec<SharedMiddleware>>,
    /// Where the OpenAPI document is served, with the API's title and version.
    openapi: Option<openapi::OpenApiSettings>,
    trailing_slash: TrailingSlash,
    /// What answers a path no route matches ([`App::fallback`]); the 404 when unset.
    fallback: Option<Special>,
    /// What answers a method a path has no route for ([`App::method_not_allowed`]); the 405
    /// when unset.
    not_allowed: Option<Special>,
}

/// A handler or endpoint that answers requests no route takes: the fallback, or the 405.
struct Special {
    handler: &'static str,
    endpoint: Arc<dyn Endpoint>,
    kind: Kind,
}

impl Special {
    fn handler<F, T>(handler: F) -> Self
    where
        F: for<'a> HandlerFn<'a, Output = Result<T>>,
        T: IntoReply,
    {
        Special {
            handler: type_name::<F>(),
            endpoint: handler_fn(handler),
            kind: Kind::Handler {
                value: leaves_value::<T>(),
            },
        }
    }

    fn endpoint<E: Endpoint>(endpoint: E) -> Self {
        Special {
            handler: type_name::<E>(),
            endpoint: Arc::new(endpoint),
            kind: Kind::Endpoint,
        }
    }
}

impl App {
    /// An empty app: no middleware (not even the defaults of [`App::new`]), no routes, no
    /// controllers mounted, proxies not trusted, default [`ServerLimits`]. For an app that
    /// assembles every layer itself: [`build`](Self::build) refuses a route that needs a
    /// responder or a body parser its chain lacks.
    pub fn bare() -> Self {
        Self {
            scope: AppScope {
                named: HashMap::new(),
                groups: Vec::new(),
                state: State::new(),
                trusted_proxies: crate::client_ip::TrustedProxies::None,
                limits: ServerLimits::default(),
                #[cfg(feature = "tls")]
                tls: None,
                mount_controllers: false,
                defaults: None,
                openapi: None,
                trailing_slash: TrailingSlash::Strict,
                fallback: None,
                not_allowed: None,
            },
            middleware: Vec::new(),
            routes: Vec::new(),
        }
    }

    /// What a path that only misses or adds a trailing slash gets: see [`TrailingSlash`]
    /// (default [`TrailingSlash::Strict`], a 404).
    #[must_use]
    pub fn trailing_slash(mut self, policy: TrailingSlash) -> Self {
        self.scope.trailing_slash = policy;
        self
    }

    /// Names a middleware so controllers can ask for it with `middleware(name)`.
    #[must_use]
    pub fn register_middleware<M: Middleware>(mut self, name: &'static str, middleware: M) -> Self {
        self.scope.named.insert(name, share(middleware));
        self
    }

    /// Adds shared state, read by controllers and handlers.
    #[must_use]
    pub fn with_state<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.scope.state.insert(value);
        self
    }

    /// Which proxies in front of the app are believed for the client IP (a hop count or their
    /// networks); see [`crate::client_ip`]. The client IP is taken from the right of
    /// `X-Forwarded-For`, never from its leftmost entry, which the client controls.
    #[must_use]
    pub fn trusted_proxies(mut self, trusted: crate::client_ip::TrustedProxies) -> Self {
        self.scope.trusted_proxies = trusted;
        self
    }

    /// How long graceful shutdown waits for in-flight requests (default 30 s); shorthand for
    /// [`ServerLimits::shutdown_timeout`].
    #[must_use]
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.scope.limits.shutdown_timeout = timeout;
        self
    }

    /// The server's connection limits: slow and idle clients, connection count, shutdown grace.
    /// See [`ServerLimits`] for each one and its default.
    #[must_use]
    pub fn server_limits(mut self, limits: ServerLimits) -> Self {
        self.scope.limits = limits;
        self
    }

    /// Serves HTTPS: every connection the service accepts speaks TLS with this certificate
    /// (HTTP/2 or HTTP/1.1 by ALPN), reloaded on `SIGHUP` and when its files change. See
    /// [`crate::tls`]. Needs the `tls` feature.
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn tls(mut self, tls: crate::tls::Tls) -> Self {
        self.scope.tls = Some(tls);
        self
    }

    /// Adds a group (which may hold groups of its own, see [`Group`]).
    #[must_use]
    pub fn group(mut self, group: Group) -> Self {
        self.scope.groups.push(group);
        self
    }

    /// Answers the requests whose path no route matches (after the
    /// [trailing-slash](Self::trailing_slash) policy), in place of the 404, through the app's
    /// middleware as a route would be (and with the defaults of [`App::new`] it needs): a
    /// page of your own, or the `index.html` of a single-page app.
    ///
    /// The response's status is the one the handler sets, **200** when it sets none, as
    /// axum's `Router::fallback` and actix-web's `default_service` answer: a "not found" page
    /// sets 404 itself. A path that has routes, but not for the request's method, still gets
    /// the 405 ([`method_not_allowed`](Self::method_not_allowed) changes that one).
    ///
    /// ```
    /// use framework::{App, Context, Result};
    /// use http::StatusCode;
    ///
    /// async fn not_here(ctx: &mut Context) -> Result<String> {
    ///     ctx.set_status(StatusCode::NOT_FOUND);
    ///     Ok(format!("nothing at {}", ctx.path()))
    /// }
    ///
    /// let app = App::new().fallback(not_here);
    /// # let _ = app.build().unwrap();
    /// ```
    #[must_use]
    pub fn fallback<F, T>(mut self, handler: F) -> Self
    where
        F: for<'a> HandlerFn<'a, Output = Result<T>>,
        T: IntoReply,
    {
        self.scope.fallback = Some(Special::handler(handler));
        self
    }

    /// [`fallback`](Self::fallback) answered by an [`Endpoint`], such as
    /// [`StaticServe`](crate::middleware::static_serve::StaticServe) for the files of a
    /// single-page app.
    #[must_use]
    pub fn fallback_endpoint<E: Endpoint>(mut self, endpoint: E) -> Self {
        self.scope.fallback = Some(Special::endpoint(endpoint));
        self
    }

    /// Answers a request whose path has routes, but none for its method, in place of the
    /// framework's 405, through the app's middleware. The handler runs with the status
    /// already **405** and the `Allow` header set (the methods the path has), so one that
    /// only writes a body keeps both; it may change them.
    #[must_use]
    pub fn method_not_allowed<F, T>(mut self, handler: F) -> Self
    where
        F: for<'a> HandlerFn<'a, Output = Result<T>>,
        T: IntoReply,
    {
        self.scope.not_allowed = Some(Special::handler(handler));
        self
    }

    /// Mounts every `#[controller]` linked into the program when the app is built
    /// ([`App::new`] does; a [bare](App::bare) app mounts them with this).
    #[must_use]
    pub fn mount_controllers(mut self) -> Self {
        self.scope.mount_controllers = true;
        self
    }

    /// Adds `defaults` (in reference order) to the routes that lack them: what
    /// [`App::new`] does, from the middleware module, which the app's module does not name.
    pub(crate) fn with_defaults(mut self, defaults: fn() -> Vec<SharedMiddleware>) -> Self {
        self.scope.defaults = Some(defaults);
        self
    }
}

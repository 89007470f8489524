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

mod controllers;
mod openapi;

use std::any::{Any, type_name};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use http::Method;

use crate::context::Context;
use crate::controller::ControllerDef;
pub use crate::error::BuildError;
use crate::error::Result;
use crate::handler::{
    Endpoint, HandlerFn, IntoReply, Middleware, Role, SharedMiddleware, handler_fn, share, when,
};
use crate::limits::ServerLimits;
pub use crate::route::{ROUTER_CATEGORY, RouteInfo};
use crate::service::{PlannedRoute, Settings};
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

/// `post`, `put`, `patch`, `delete`, `head` and `options` beside `get`: each adds a route for
/// one method (an explicit `head` route wins over the HEAD a GET route answers).
macro_rules! method_routes {
    ($($name:ident => $method:ident, $label:literal);*) => {
        $(
            #[doc = concat!("Adds a ", $label, " route.")]
            #[must_use]
            pub fn $name<F, T>(self, path: &str, handler: F) -> Self
            where
                F: for<'a> HandlerFn<'a, Output = Result<T>>,
                T: IntoReply,
            {
                self.route(Method::$method, path, handler)
            }
        )*
    };
}

impl<Scope> Routes<Scope> {
    /// Adds middleware, in order: any [`Middleware`], a built-in one as it is or an `async fn`
    /// through [`from_fn`](crate::from_fn). On an [`App`] it runs for every request (404s
    /// included); on a [`Group`] for the group's routes, after the app's own.
    #[must_use]
    pub fn use_middleware<M: Middleware>(mut self, middleware: M) -> Self {
        self.middleware.push(share(middleware));
        self
    }

    /// Adds middleware that runs only for the requests `predicate` accepts; the others pass
    /// it by, as if it were not there. This is how any middleware is skipped for some requests
    /// (a health probe without access log, a public path without authentication): see
    /// [`When`](crate::When).
    #[must_use]
    pub fn use_when<P, M>(self, predicate: P, middleware: M) -> Self
    where
        P: Fn(&Context) -> bool + Send + Sync + 'static,
        M: Middleware,
    {
        self.use_middleware(when(predicate, middleware))
    }

    /// Adds a route with its own middleware (build the list with
    /// [`share`] and [`when`]).
    #[must_use]
    pub fn route_with<F, T>(
        mut self,
        method: Method,
        path: &str,
        middleware: Vec<SharedMiddleware>,
        handler: F,
    ) -> Self
    where
        F: for<'a> HandlerFn<'a, Output = Result<T>>,
        T: IntoReply,
    {
        self.routes.push(RouteSpec {
            method,
            path: path.to_owned(),
            handler: Cow::Borrowed(type_name::<F>()),
            owner: Cow::Borrowed(""),
            middleware: middleware.into_iter().map(MiddlewareRef::Shared).collect(),
            endpoint: handler_fn(handler),
            kind: Kind::Handler {
                value: leaves_value::<T>(),
            },
        });
        self
    }

    /// Adds a route.
    #[must_use]
    pub fn route<F, T>(self, method: Method, path: &str, handler: F) -> Self
    where
        F: for<'a> HandlerFn<'a, Output = Result<T>>,
        T: IntoReply,
    {
        self.route_with(method, path, Vec::new(), handler)
    }

    /// Adds a GET route (it answers HEAD too).
    #[must_use]
    pub fn get<F, T>(self, path: &str, handler: F) -> Self
    where
        F: for<'a> HandlerFn<'a, Output = Result<T>>,
        T: IntoReply,
    {
        self.route(Method::GET, path, handler)
    }

    method_routes!(
        post => POST, "POST";
        put => PUT, "PUT";
        patch => PATCH, "PATCH";
        delete => DELETE, "DELETE";
        head => HEAD, "HEAD";
        options => OPTIONS, "OPTIONS"
    );

    /// Adds a route answered by an [`Endpoint`], such as
    /// [`StaticServe`](crate::middleware::static_serve::StaticServe) on a wildcard path.
    #[must_use]
    pub fn endpoint<E: Endpoint>(self, method: Method, path: &str, endpoint: E) -> Self {
        self.add_endpoint(
            &[method],
            path,
            &(Arc::new(endpoint) as Arc<dyn Endpoint>),
            type_name::<E>(),
        )
    }

    /// Adds `endpoint` for every method a proxy forwards: GET (and so HEAD), POST, PUT, PATCH,
    /// DELETE and OPTIONS. Typically on a catch-all path such as `/*`.
    #[must_use]
    pub fn any<E: Endpoint>(self, path: &str, endpoint: E) -> Self {
        let methods = [
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
            Method::OPTIONS,
        ];
        self.add_endpoint(
            &methods,
            path,
            &(Arc::new(endpoint) as Arc<dyn Endpoint>),
            type_name::<E>(),
        )
    }

    fn add_endpoint(
        mut self,
        methods: &[Method],
        path: &str,
        endpoint: &Arc<dyn Endpoint>,
        name: &'static str,
    ) -> Self {
        for method in methods {
            self.routes.push(RouteSpec {
                method: method.clone(),
                path: path.to_owned(),
                handler: Cow::Borrowed(name),
                owner: Cow::Borrowed(""),
                middleware: Vec::new(),
                endpoint: Arc::clone(endpoint),
                kind: Kind::Endpoint,
            });
        }
        self
    }
}

impl Group {
    /// A group at `prefix` (e.g. `/users`; `""` for the root).
    pub fn new(prefix: impl Into<String>) -> Self {
        Self {
            scope: Prefix {
                path: prefix.into(),
                groups: Vec::new(),
            },
            middleware: Vec::new(),
            routes: Vec::new(),
        }
    }

    /// Adds a group inside this one: its prefix follows this group's, and its routes run this
    /// group's middleware before its own.
    #[must_use]
    pub fn group(mut self, group: Group) -> Self {
        self.scope.groups.push(group);
        self
    }

    /// This group and the groups inside it (innermost first), each flat: its whole prefix
    /// after `prefix`, and its whole middleware after `outer` (the outer groups').
    fn flatten(self, prefix: &str, outer: &[SharedMiddleware], out: &mut Vec<Group>) {
        let Routes {
            scope: Prefix { path, groups },
            middleware: own,
            routes,
        } = self;
        let path = if prefix.is_empty() {
            path
        } else {
            join_path(prefix, &path)
        };
        let mut middleware = outer.to_vec();
        middleware.extend(own);
        for group in groups {
            group.flatten(&path, &middleware, out);
        }
        out.push(Group {
            scope: Prefix {
                path,
                groups: Vec::new(),
            },
            middleware,
            routes,
        });
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

    /// Checks the configuration and builds the service.
    ///
    /// Routes are sorted by path, method and handler name before they are added, so the result
    /// (and any error) does not depend on link order. Fails on a duplicate method and path
    /// (naming both handlers), a middleware name nobody registered (naming the controller), a
    /// malformed path, or a route whose chain lacks a component it needs (a handler returning
    /// a value with no responder, a controller method taking `Json<T>` or `Form<T>` with no
    /// body parser: only a [bare](App::bare) app can lack them).
    pub fn build(mut self) -> Result<Service, BuildError> {
        let defaults = self.scope.defaults.map(|make| make()).unwrap_or_default();
        let mut groups = Vec::new();
        for group in std::mem::take(&mut self.scope.groups) {
            group.flatten("", &[], &mut groups);
        }
        groups.push(Group {
            scope: Prefix {
                path: String::new(),
                groups: Vec::new(),
            },
            middleware: Vec::new(),
            routes: std::mem::take(&mut self.routes),
        });
        if self.scope.mount_controllers {
            groups.extend(self.controller_groups()?);
        } else if let Some(def) = inventory::iter::<ControllerDef>.into_iter().next() {
            // A bare app that forgot them would answer 404 everywhere without a word.
            tracing::warn!(
                controller = def.name,
                "controllers are linked into the program but not mounted: call \
                 App::mount_controllers() (App::new() does)"
            );
        }
        if let Some(settings) = &self.scope.openapi {
            groups.push(self.openapi_routes(settings)?);
        }
        let mut routes = Vec::new();
        for group in groups {
            for spec in group.routes {
                let mut inner = group.middleware.clone();
                for m in &spec.middleware {
                    inner.push(self.resolve(m, &spec.owner)?);
                }
                let needs = Needs::of(spec.kind);
                let chain = complete(&self.middleware, inner, &defaults, needs);
                routes.push((
                    PlannedRoute {
                        path: join_path(&group.scope.path, &spec.path),
                        method: spec.method,
                        handler: spec.handler,
                        chain,
                        endpoint: spec.endpoint,
                    },
                    needs,
                ));
            }
        }
        // Checked in the order of the route table, so the error does not depend on link order.
        routes.sort_by(|(a, _), (b, _)| {
            (&a.path, a.method.as_str(), &a.handler).cmp(&(&b.path, b.method.as_str(), &b.handler))
        });
        for (route, needs) in &routes {
            let what = || format!("{} {} ({})", route.method, route.path, route.handler);
            needs.check(&route.chain, what)?;
            check_order(&route.chain, what)?;
        }
        let routes = routes.into_iter().map(|(route, _)| route).collect();
        // 404 and 405 answers: the app's middleware and the default error handler.
        let global = complete(&self.middleware, Vec::new(), &defaults, Needs::default());
        let special = |special: Option<Special>, what: &str| {
            special
                .map(|special| {
                    let needs = Needs::of(special.kind);
                    let chain = complete(&self.middleware, Vec::new(), &defaults, needs);
                    needs.check(&chain, || format!("{what} ({})", special.handler))?;
                    Ok((chain, special.endpoint))
                })
                .transpose()
        };
        let fallback = special(self.scope.fallback.take(), "the fallback")?;
        let not_allowed = special(
            self.scope.not_allowed.take(),
            "the method-not-allowed handler",
        )?;
        Service::compile(
            routes,
            Settings {
                global,
                fallback,
                not_allowed,
                trailing_slash: self.scope.trailing_slash,
                catcher: defaults
                    .iter()
                    .find(|m| m.role() == Some(Role::Recover))
                    .cloned(),
                trusted_proxies: self.scope.trusted_proxies,
                state: self.scope.state,
                limits: self.scope.limits,
                #[cfg(feature = "tls")]
                tls: self.scope.tls,
            },
        )
    }

    /// The middleware a route names, registered under that name; `owner` (a controller) is
    /// named in the error.
    fn resolve(&self, m: &MiddlewareRef, owner: &str) -> Result<SharedMiddleware, BuildError> {
        match m {
            MiddlewareRef::Shared(m) => Ok(Arc::clone(m)),
            MiddlewareRef::Named(name) => self.scope.named.get(name).cloned().ok_or_else(|| {
                BuildError::new(format!(
                    "{owner}: middleware `{name}` is not registered (use App::register_middleware)"
                ))
            }),
        }
    }
}

/// What a route needs of its chain besides the error handler: a responder for what a handler
/// answers (`value`: it returns one for sure), a body parser for the `Json<T>` or `Form<T>` it
/// takes.
#[derive(Clone, Copy, Default)]
struct Needs {
    /// A handler or a controller method (not an endpoint): it may leave a value, returned or
    /// set through the context (`ctx.created(value)`).
    handler: bool,
    value: bool,
    body: bool,
}

impl Needs {
    fn of(kind: Kind) -> Self {
        match kind {
            Kind::Handler { value } => Self {
                handler: true,
                value,
                body: false,
            },
            Kind::Controller(describe) => {
                let (body, value) = crate::openapi::route_needs(describe);
                Self {
                    handler: true,
                    value,
                    body,
                }
            }
            Kind::Endpoint => Self::default(),
        }
    }

    /// Whether a default of `role` goes on the route.
    fn wants(self, role: Role) -> bool {
        match role {
            Role::Recover | Role::ErrorHandler => true,
            Role::Responder => self.handler,
            Role::BodyParser => self.body,
            _ => false,
        }
    }

    /// Refuses a route whose chain lacks what it needs (only a bare app's can).
    /// `what` names the route (method, path and handler) in the error.
    fn check(
        self,
        chain: &[SharedMiddleware],
        what: impl FnOnce() -> String,
    ) -> Result<(), BuildError> {
        let has = |roles: &[Role]| {
            chain
                .iter()
                .any(|m| m.role().is_some_and(|r| roles.contains(&r)))
        };
        if self.value && !has(&[Role::Responder, Role::Renderer]) {
            return Err(BuildError::new(format!(
                "{} returns a value, and no responder turns it into \
                 the body: add framework::middleware::responder::Responder to the app \
                 (App::new() has one)",
                what()
            )));
        }
        if self.body && !has(&[Role::BodyParser]) {
            return Err(BuildError::new(format!(
                "{} takes a request body (Json or Form), and no body \
                 parser reads it: add framework::middleware::body_parser::BodyParser to the \
                 app (App::new() has one)",
                what()
            )));
        }
        Ok(())
    }
}

/// Refuses a chain whose CSRF check runs inside its session: every forged request would cost
/// a session load (a store round trip) before its 403. `what` names the route.
fn check_order(chain: &[SharedMiddleware], what: impl Fn() -> String) -> Result<(), BuildError> {
    let at = |role| chain.iter().position(|m| m.role() == Some(role));
    if let (Some(session), Some(csrf)) = (at(Role::Session), at(Role::Csrf))
        && session < csrf
    {
        return Err(BuildError::new(format!(
            "{}: csrf runs inside session, so every forged request loads a session before its \
             403; mount csrf before session (route middleware run after the app's and the \
             controller's: name `session` on the routes, after `csrf`)",
            what()
        )));
    }
    Ok(())
}

/// A route's chain: the app's middleware `outer` with each of `defaults` the route `needs`
/// and does not have already (anywhere in its chain), then `inner` (its group's and its own).
/// A default goes before the first middleware of `outer` whose [`Role`] comes later in the
/// reference order, else after all of `outer`: inside what the app mounted, so a logger sees
/// the error handler's answer and compress the responder's bytes. The default recover goes
/// first, outside everything: a panic anywhere in the chain is answered, and the compiled
/// route runs it as its catcher (`Route::new`).
fn complete(
    outer: &[SharedMiddleware],
    inner: Vec<SharedMiddleware>,
    defaults: &[SharedMiddleware],
    needs: Needs,
) -> Vec<SharedMiddleware> {
    let mut chain = outer.to_vec();
    for default in defaults {
        let Some(role) = default.role() else { continue };
        let has = |m: &SharedMiddleware| m.role() == Some(role);
        if !needs.wants(role) || chain.iter().any(has) || inner.iter().any(has) {
            continue;
        }
        let at = if role == Role::Recover {
            0
        } else {
            chain
                .iter()
                .position(|m| m.role().is_some_and(|r| r > role))
                .unwrap_or(chain.len())
        };
        chain.insert(at, Arc::clone(default));
    }
    chain.extend(inner);
    chain
}
fn join_path(prefix: &str, path: &str) -> String {
    let prefix = prefix.trim_end_matches('/');
    if path.is_empty() || path == "/" && !prefix.is_empty() {
        return if prefix.is_empty() {
            "/".to_owned()
        } else {
            prefix.to_owned()
        };
    }
    format!("{prefix}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_prefix_and_path() {
        assert_eq!(join_path("/users", "/v1/me"), "/users/v1/me");
        assert_eq!(join_path("/users/", "/v1/me"), "/users/v1/me");
        assert_eq!(join_path("/users", "/"), "/users");
        assert_eq!(join_path("", "/"), "/");
        assert_eq!(join_path("", "/a"), "/a");
    }
}

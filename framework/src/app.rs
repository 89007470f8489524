//! The application builder.
//!
//! An [`App`] collects global middleware, groups (a prefix plus shared middleware), routes,
//! named middleware that controllers refer to, and state. [`App::build`] checks everything
//! (duplicate routes, unknown middleware names, malformed paths) and returns a [`Service`],
//! which answers requests in process ([`Service::handle`]) or on a socket
//! ([`Service::serve`]).
//!
//! Chain order for a route: global middleware, then group middleware, then route middleware,
//! then the handler. A 404 or 405 answer runs the global middleware only.

use std::any::{Any, type_name};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderValue, Method};
use serde::Serialize;

use crate::controller::ControllerDef;
use crate::error::Result;
use crate::handler::{Endpoint, HandlerFn, SharedMiddleware, handler_fn};
use crate::route::{AppShared, Route};
pub use crate::route::{ROUTER_CATEGORY, RouteInfo};
use crate::router::Router;
use crate::server::ServerLimits;
pub use crate::service::Service;
use crate::service::{CompiledPath, MethodNotAllowed, NotFound, SlashRedirect};
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
}

/// `post`, `put`, `patch`, `delete`, `head` and `options` beside `get`, for [`Group`] and
/// [`App`]: each adds a route for one method (an explicit `head` route wins over the HEAD a
/// GET route answers).
macro_rules! method_routes {
    () => {
        method_routes!(
            post => POST, "POST";
            put => PUT, "PUT";
            patch => PATCH, "PATCH";
            delete => DELETE, "DELETE";
            head => HEAD, "HEAD";
            options => OPTIONS, "OPTIONS"
        );
    };
    ($($name:ident => $method:ident, $label:literal);*) => {
        $(
            #[doc = concat!("Adds a ", $label, " route.")]
            #[must_use]
            pub fn $name<F, T>(self, path: &str, handler: F) -> Self
            where
                F: for<'a> HandlerFn<'a, Output = Result<T>>,
                T: Serialize + Send + Sync + 'static,
            {
                self.route(Method::$method, path, handler)
            }
        )*
    };
}

/// Routes under a common prefix sharing middleware.
pub struct Group {
    prefix: String,
    middleware: Vec<SharedMiddleware>,
    routes: Vec<RouteSpec>,
}

impl Group {
    /// A group at `prefix` (e.g. `/users`; `""` for the root).
    pub fn new(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
            middleware: Vec::new(),
            routes: Vec::new(),
        }
    }

    /// Adds middleware run for every route of the group.
    #[must_use]
    pub fn use_middleware(mut self, middleware: SharedMiddleware) -> Self {
        self.middleware.push(middleware);
        self
    }

    /// Adds a route with its own middleware.
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
        T: Serialize + Send + Sync + 'static,
    {
        self.routes.push(RouteSpec {
            method,
            path: path.to_owned(),
            handler: Cow::Borrowed(type_name::<F>()),
            owner: Cow::Borrowed(""),
            middleware: middleware.into_iter().map(MiddlewareRef::Shared).collect(),
            endpoint: handler_fn(handler),
        });
        self
    }

    /// Adds a route.
    #[must_use]
    pub fn route<F, T>(self, method: Method, path: &str, handler: F) -> Self
    where
        F: for<'a> HandlerFn<'a, Output = Result<T>>,
        T: Serialize + Send + Sync + 'static,
    {
        self.route_with(method, path, Vec::new(), handler)
    }

    /// Adds a GET route (it answers HEAD too).
    #[must_use]
    pub fn get<F, T>(self, path: &str, handler: F) -> Self
    where
        F: for<'a> HandlerFn<'a, Output = Result<T>>,
        T: Serialize + Send + Sync + 'static,
    {
        self.route(Method::GET, path, handler)
    }

    method_routes!();

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
            });
        }
        self
    }
}

/// Why [`App::build`] refused the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError(String);

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BuildError {}

impl BuildError {
    /// A build error with `message`, for code that assembles an app around [`App::build`].
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

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
///     .use_middleware(framework::middleware::responder::Responder::default().into_shared())
///     .get("/hello", hello)
///     .build()
///     .unwrap();
/// assert_eq!(service.routes()[0].path, "/hello");
/// ```
pub struct App {
    middleware: Vec<SharedMiddleware>,
    named: HashMap<&'static str, SharedMiddleware>,
    groups: Vec<Group>,
    root: Group,
    state: State,
    trusted_proxies: crate::client_ip::TrustedProxies,
    limits: ServerLimits,
    mount_controllers: bool,
    trailing_slash: TrailingSlash,
}

/// What a request path that differs from a route only by a trailing slash gets; set with
/// [`App::trailing_slash`].
///
/// The policy is only consulted when the path as sent matches no route, so an app that
/// registers both `/a` and `/a/` keeps both, and matched requests pay nothing for it. The
/// other form is the path with one trailing slash removed (`/notes/` → `/notes`) or added
/// (`/notes` → `/notes/`); `/` is left alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TrailingSlash {
    /// `/notes/` and `/notes` are different paths: the one without a route is a 404. The
    /// default, as in axum and actix-web.
    #[default]
    Strict,
    /// `308 Permanent Redirect` to the form that has a route, keeping the query; 308 keeps the
    /// method and the body, so a POST is redirected as a POST. A path that would redirect to a
    /// protocol-relative location (`//host/…`) is a 404 instead, so this is never an open
    /// redirect.
    Redirect,
    /// The request is routed as if it had been sent in the form that has a route (like
    /// tower-http's `NormalizePath`): `ctx.path()` and `ctx.uri()` show that form.
    Ignore,
}

impl Default for App {
    fn default() -> Self {
        Self::new()
    }
}

impl App {
    /// An empty app: no middleware, no routes, proxies not trusted, default [`ServerLimits`].
    pub fn new() -> Self {
        Self {
            middleware: Vec::new(),
            named: HashMap::new(),
            groups: Vec::new(),
            root: Group::new(""),
            state: State::new(),
            trusted_proxies: crate::client_ip::TrustedProxies::None,
            limits: ServerLimits::default(),
            mount_controllers: false,
            trailing_slash: TrailingSlash::Strict,
        }
    }

    /// What a path that only misses or adds a trailing slash gets: see [`TrailingSlash`]
    /// (default [`TrailingSlash::Strict`], a 404).
    #[must_use]
    pub fn trailing_slash(mut self, policy: TrailingSlash) -> Self {
        self.trailing_slash = policy;
        self
    }

    /// Adds global middleware (runs for every request, 404s included), in order.
    #[must_use]
    pub fn use_middleware(mut self, middleware: SharedMiddleware) -> Self {
        self.middleware.push(middleware);
        self
    }

    /// Names a middleware so controllers can ask for it with `middleware(name)`.
    #[must_use]
    pub fn register_middleware(mut self, name: &'static str, middleware: SharedMiddleware) -> Self {
        self.named.insert(name, middleware);
        self
    }

    /// Adds shared state, read by controllers and handlers.
    #[must_use]
    pub fn with_state<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.state.insert(value);
        self
    }

    /// Believe one proxy in front of the app (`true`) or none (`false`): shorthand for
    /// [`App::trusted_proxies`] with one hop.
    #[must_use]
    pub fn trust_proxy(self, trust: bool) -> Self {
        self.trusted_proxies(if trust {
            crate::client_ip::TrustedProxies::Hops(1)
        } else {
            crate::client_ip::TrustedProxies::None
        })
    }

    /// Which proxies in front of the app are believed for the client IP (a hop count or their
    /// networks); see [`crate::client_ip`]. The client IP is taken from the right of
    /// `X-Forwarded-For`, never from its leftmost entry, which the client controls.
    #[must_use]
    pub fn trusted_proxies(mut self, trusted: crate::client_ip::TrustedProxies) -> Self {
        self.trusted_proxies = trusted;
        self
    }

    /// How long graceful shutdown waits for in-flight requests (default 30 s); shorthand for
    /// [`ServerLimits::shutdown_timeout`].
    #[must_use]
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.limits.shutdown_timeout = timeout;
        self
    }

    /// The server's connection limits: slow and idle clients, connection count, shutdown grace.
    /// See [`ServerLimits`] for each one and its default.
    #[must_use]
    pub fn server_limits(mut self, limits: ServerLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Adds a group.
    #[must_use]
    pub fn group(mut self, group: Group) -> Self {
        self.groups.push(group);
        self
    }

    /// Adds a route at the root.
    #[must_use]
    pub fn route<F, T>(mut self, method: Method, path: &str, handler: F) -> Self
    where
        F: for<'a> HandlerFn<'a, Output = Result<T>>,
        T: Serialize + Send + Sync + 'static,
    {
        self.root = self.root.route(method, path, handler);
        self
    }

    /// Adds a GET route at the root (it answers HEAD too).
    #[must_use]
    pub fn get<F, T>(self, path: &str, handler: F) -> Self
    where
        F: for<'a> HandlerFn<'a, Output = Result<T>>,
        T: Serialize + Send + Sync + 'static,
    {
        self.route(Method::GET, path, handler)
    }

    method_routes!();

    /// Adds a route at the root answered by an [`Endpoint`]: see [`Group::endpoint`].
    #[must_use]
    pub fn endpoint<E: Endpoint>(mut self, method: Method, path: &str, endpoint: E) -> Self {
        self.root = self.root.endpoint(method, path, endpoint);
        self
    }

    /// Adds `endpoint` at the root for every method a proxy forwards: see [`Group::any`].
    #[must_use]
    pub fn any<E: Endpoint>(mut self, path: &str, endpoint: E) -> Self {
        self.root = self.root.any(path, endpoint);
        self
    }

    /// Mounts every `#[controller]` linked into the program when the app is built.
    #[must_use]
    pub fn mount_controllers(mut self) -> Self {
        self.mount_controllers = true;
        self
    }

    fn controller_groups(&self) -> Result<Vec<Group>, BuildError> {
        let mut groups = Vec::new();
        for def in inventory::iter::<ControllerDef> {
            let instance = (def.build)(&self.state).map_err(|e| {
                BuildError(format!("controller {} could not be built: {e}", def.name))
            })?;
            let mut group = Group::new(def.prefix);
            for route in def.routes {
                let method = Method::from_bytes(route.method.as_bytes()).map_err(|_| {
                    BuildError(format!("{}: bad method {}", route.handler, route.method))
                })?;
                let endpoint = (route.endpoint)(&instance).ok_or_else(|| {
                    BuildError(format!("{}: controller type mismatch", route.handler))
                })?;
                let middleware = def
                    .middleware
                    .iter()
                    .chain(route.middleware)
                    .map(|name| MiddlewareRef::Named(name))
                    .collect();
                group.routes.push(RouteSpec {
                    method,
                    path: route.path.to_owned(),
                    handler: Cow::Borrowed(route.handler),
                    owner: Cow::Borrowed(def.name),
                    middleware,
                    endpoint,
                });
            }
            groups.push(group);
        }
        Ok(groups)
    }

    /// Checks the configuration and builds the service.
    ///
    /// Routes are sorted by path, method and handler name before they are added, so the result
    /// (and any error) does not depend on link order. Fails on a duplicate method and path
    /// (naming both handlers), a middleware name nobody registered (naming the controller), or
    /// a malformed path.
    pub fn build(mut self) -> Result<Service, BuildError> {
        let mut groups = std::mem::take(&mut self.groups);
        groups.push(std::mem::replace(&mut self.root, Group::new("")));
        if self.mount_controllers {
            groups.extend(self.controller_groups()?);
        }

        let mut specs = Vec::new();
        for group in groups {
            for spec in group.routes {
                let path = join_path(&group.prefix, &spec.path);
                let mut chain = self.middleware.clone();
                chain.extend(group.middleware.iter().cloned());
                for m in &spec.middleware {
                    chain.push(match m {
                        MiddlewareRef::Shared(m) => Arc::clone(m),
                        MiddlewareRef::Named(name) => {
                            Arc::clone(self.named.get(name).ok_or_else(|| {
                                BuildError(format!(
                                    "{}: middleware `{name}` is not registered \
                                     (use App::register_middleware)",
                                    spec.owner
                                ))
                            })?)
                        }
                    });
                }
                specs.push((path, spec.method, spec.handler, chain, spec.endpoint));
            }
        }
        specs.sort_by(|a, b| (&a.0, a.1.as_str(), &a.2).cmp(&(&b.0, b.1.as_str(), &b.2)));

        let mut router: Router<PathRoutes> = Router::new();
        let mut listing = Vec::with_capacity(specs.len());
        for (path, method, handler, chain, endpoint) in specs {
            let entry = router
                .entry(&path, PathRoutes::default)
                .map_err(|e| BuildError(format!("{handler}: {e}")))?;
            if let Some(existing) = entry.methods.iter().find(|r| r.method == method) {
                return Err(BuildError(format!(
                    "duplicate route {method} {path}: {} and {handler}",
                    existing.handler
                )));
            }
            listing.push(RouteInfo {
                method: method.to_string(),
                path: path.clone(),
                handler: handler.to_string(),
            });
            entry.methods.push(PendingRoute {
                method,
                handler,
                chain,
                endpoint,
            });
        }
        let mut compiled: Router<CompiledPath> = Router::new();
        for slot in router.slots() {
            let names: Box<[Box<str>]> = slot.param_names().into();
            let paths = &slot.value;
            let mut allow: Vec<&str> = paths.methods.iter().map(|r| r.method.as_str()).collect();
            if allow.contains(&"GET") && !allow.contains(&"HEAD") {
                allow.push("HEAD");
            }
            allow.sort_unstable();
            let allow = HeaderValue::try_from(allow.join(", "))
                .map_err(|_| BuildError(format!("bad method in {}", slot.pattern())))?;
            let make = |chain: Box<[SharedMiddleware]>, endpoint| {
                Arc::new(Route {
                    pattern: slot.pattern().into(),
                    param_names: names.clone(),
                    chain,
                    endpoint,
                })
            };
            let methods = paths
                .methods
                .iter()
                .map(|r| {
                    let chain = r.chain.clone().into_boxed_slice();
                    (r.method.clone(), make(chain, Arc::clone(&r.endpoint)))
                })
                .collect();
            let not_allowed = make(
                self.middleware.clone().into_boxed_slice(),
                Arc::new(MethodNotAllowed { allow }),
            );
            // Same pattern, same shape: this cannot conflict.
            *compiled
                .entry(slot.pattern(), CompiledPath::default)
                .map_err(BuildError)? = CompiledPath {
                methods,
                not_allowed: Some(not_allowed),
            };
        }
        listing.sort_by(|a, b| (&a.path, &a.method).cmp(&(&b.path, &b.method)));

        let not_found = Arc::new(Route {
            pattern: "".into(),
            param_names: Box::new([]),
            chain: self.middleware.clone().into_boxed_slice(),
            endpoint: Arc::new(NotFound),
        });
        let redirect = Arc::new(Route {
            pattern: "".into(),
            param_names: Box::new([]),
            chain: self.middleware.clone().into_boxed_slice(),
            endpoint: Arc::new(SlashRedirect),
        });
        Ok(Service {
            router: compiled,
            not_found,
            redirect,
            trailing_slash: self.trailing_slash,
            listing,
            shared: Arc::new(AppShared {
                trusted_proxies: self.trusted_proxies,
                state: self.state,
            }),
            limits: self.limits,
        })
    }
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

struct PendingRoute {
    method: Method,
    handler: Cow<'static, str>,
    chain: Vec<SharedMiddleware>,
    endpoint: Arc<dyn Endpoint>,
}

#[derive(Default)]
struct PathRoutes {
    methods: Vec<PendingRoute>,
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

//! The built application: its routes compiled, a request routed, its chain run.
//!
//! [`App`](crate::App) collects routes and settings; [`Service::compile`] turns them into the
//! routing table (one chain per method of a path, with the app's 404, 405 and trailing-slash
//! answers), and [`Service::handle`] answers requests with it.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::Arc;

use http::{HeaderValue, Method, Request, Response, header};

use crate::body::{RequestBody, ResponseBody};
use crate::client_ip::TrustedProxies;
use crate::context::{ConnectionInfo, Context};
use crate::error::BuildError;
use futures_util::FutureExt;

use crate::handler::{Endpoint, Next, SharedMiddleware};
use crate::limits::ServerLimits;
use crate::route::{AppShared, MatchedRoute, RouteInfo};
use crate::router::Router;
use crate::state::State;

mod answers;

use answers::{MethodNotAllowed, NotFound, SlashRedirect, allow_header};

/// What a request path that differs from a route only by a trailing slash gets; set with
/// [`App::trailing_slash`](crate::App::trailing_slash).
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

/// One route, ready to run: what its requests see ([`MatchedRoute`]), its chain and endpoint.
pub(crate) struct Route {
    meta: Arc<MatchedRoute>,
    chain: Box<[SharedMiddleware]>,
    endpoint: Arc<dyn Endpoint>,
    /// [`App::new`](crate::App::new)'s default recover, taken off the front of the chain:
    /// the chain runs under one `catch_unwind` instead of the recover's nested part of the
    /// chain (see `run_route!`).
    catcher: Option<SharedMiddleware>,
}

impl Route {
    /// The route of `chain` and `endpoint`; when the chain starts with `catcher` (the app's
    /// default recover, outermost of every chain it is in), that middleware becomes the
    /// route's catcher.
    fn new(
        meta: Arc<MatchedRoute>,
        chain: &[SharedMiddleware],
        endpoint: Arc<dyn Endpoint>,
        catcher: Option<&SharedMiddleware>,
    ) -> Self {
        let (catcher, chain) = match (catcher, chain.split_first()) {
            (Some(catcher), Some((first, rest))) if std::ptr::addr_eq(&**catcher, &**first) => {
                (Some(Arc::clone(first)), rest)
            }
            _ => (None, chain),
        };
        Self {
            meta,
            chain: chain.into(),
            endpoint,
            catcher,
        }
    }

    fn next(&self) -> Next<'_> {
        Next::new(&self.chain, &*self.endpoint)
    }
}

/// Runs `route`'s chain, its panics answered by the route's catcher when it has one: written
/// out where the chain is run (no future of its own around the chain's), since every
/// request pays for each layer of futures it is polled through.
macro_rules! run_route {
    ($route:expr, $ctx:expr) => {{
        let route = $route;
        match route.catcher.as_deref() {
            None => route.next().run($ctx).await,
            Some(catcher) => {
                let outcome = std::panic::AssertUnwindSafe(route.next().run($ctx))
                    .catch_unwind()
                    .await;
                match outcome {
                    Ok(result) => result,
                    Err(payload) => catcher.recovered($ctx, payload),
                }
            }
        }
    }};
}

/// A route as the app hands it over to be compiled: its full path, method and handler name,
/// and its whole chain (global, group and route middleware, in order).
pub(crate) struct PlannedRoute {
    pub(crate) path: String,
    pub(crate) method: Method,
    pub(crate) handler: Cow<'static, str>,
    pub(crate) chain: Vec<SharedMiddleware>,
    pub(crate) endpoint: Arc<dyn Endpoint>,
}

/// The app-wide settings a service is compiled with.
pub(crate) struct Settings {
    /// The middleware every request runs, 404 and 405 answers included.
    pub(crate) global: Vec<SharedMiddleware>,
    /// The chain and endpoint that answer a path no route matches, in place of the 404.
    pub(crate) fallback: Option<(Vec<SharedMiddleware>, Arc<dyn Endpoint>)>,
    /// The chain and endpoint that answer a method a path has no route for, in place of the
    /// 405 (which sets `Allow` and the status first).
    pub(crate) not_allowed: Option<(Vec<SharedMiddleware>, Arc<dyn Endpoint>)>,
    pub(crate) trailing_slash: TrailingSlash,
    /// The app's default recover, at the front of the chains it is in: run as each such
    /// route's catcher ([`Route::new`]).
    pub(crate) catcher: Option<SharedMiddleware>,
    pub(crate) trusted_proxies: TrustedProxies,
    pub(crate) state: State,
    pub(crate) limits: ServerLimits,
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<crate::tls::Tls>,
}

/// The routes of one path pattern, by method.
struct CompiledPath {
    methods: Vec<(Method, Route)>,
    not_allowed: Route,
}

impl CompiledPath {
    fn for_method(&self, method: &Method) -> Option<&Route> {
        let find = |m: &Method| self.methods.iter().find(|(k, _)| k == m).map(|(_, r)| r);
        find(method).or_else(|| {
            if *method == Method::HEAD {
                find(&Method::GET)
            } else {
                None
            }
        })
    }
}

/// A built application: answers requests.
pub struct Service {
    router: Router<CompiledPath>,
    not_found: Route,
    redirect: Route,
    trailing_slash: TrailingSlash,
    listing: Vec<RouteInfo>,
    shared: Arc<AppShared>,
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) limits: ServerLimits,
    /// Served over TLS when set.
    #[cfg(feature = "tls")]
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) tls: Option<crate::tls::Tls>,
}

impl Service {
    /// Compiles the routes: sorted by path, method and handler name first, so the result (and
    /// any error) does not depend on the order they were added or linked in. Fails on a
    /// duplicate method and path (naming both handlers) or a malformed path.
    pub(crate) fn compile(
        mut routes: Vec<PlannedRoute>,
        settings: Settings,
    ) -> Result<Self, BuildError> {
        routes.sort_by(|a, b| {
            (&a.path, a.method.as_str(), &a.handler).cmp(&(&b.path, b.method.as_str(), &b.handler))
        });
        let mut by_path: Router<Vec<PlannedRoute>> = Router::new();
        let mut listing = Vec::with_capacity(routes.len());
        for route in routes {
            let entry =
                by_path
                    .entry(&route.path, Vec::new)
                    .map_err(|source| BuildError::Pattern {
                        route: route.handler.to_string(),
                        source,
                    })?;
            if let Some(existing) = entry.iter().find(|r| r.method == route.method) {
                return Err(BuildError::DuplicateRoute {
                    method: route.method.clone(),
                    path: route.path.clone(),
                    first: existing.handler.to_string(),
                    second: route.handler.to_string(),
                });
            }
            listing.push(RouteInfo {
                method: route.method.to_string(),
                path: route.path.clone(),
                handler: route.handler.to_string(),
            });
            entry.push(route);
        }
        listing.sort_by(|a, b| (&a.path, &a.method).cmp(&(&b.path, &b.method)));

        let catcher = settings.catcher.as_ref();
        let mut router: Router<CompiledPath> = Router::new();
        let mut route_count: u32 = 0;
        for path in by_path.routes() {
            let meta = |method: Option<&str>, index: Option<u32>| {
                Arc::new(MatchedRoute::new(
                    method,
                    path.pattern(),
                    path.param_names(),
                    index,
                ))
            };
            let methods = path
                .value
                .iter()
                .map(|r| {
                    let meta = meta(Some(r.method.as_str()), Some(route_count));
                    route_count += 1;
                    let route = Route::new(meta, &r.chain, Arc::clone(&r.endpoint), catcher);
                    (r.method.clone(), route)
                })
                .collect();
            let allow = allow_header(&path.value)
                .ok_or_else(|| BuildError::new(format!("bad method in {}", path.pattern())))?;
            let (chain, handler) = match &settings.not_allowed {
                Some((chain, handler)) => (chain, Some(Arc::clone(handler))),
                None => (&settings.global, None),
            };
            let not_allowed = Route::new(
                meta(None, None),
                chain,
                Arc::new(MethodNotAllowed { allow, handler }),
                catcher,
            );
            let compiled = CompiledPath {
                methods,
                not_allowed,
            };
            // Same pattern, same shape: this cannot conflict.
            router
                .entry(path.pattern(), move || compiled)
                .map_err(|e| BuildError::new(e.to_string()))?;
        }

        let unrouted = || Arc::new(MatchedRoute::new(None, "", &[], None));
        Ok(Service {
            router,
            not_found: match settings.fallback {
                Some((chain, fallback)) => Route::new(unrouted(), &chain, fallback, catcher),
                None => Route::new(unrouted(), &settings.global, Arc::new(NotFound), catcher),
            },
            redirect: Route::new(
                unrouted(),
                &settings.global,
                Arc::new(SlashRedirect),
                catcher,
            ),
            trailing_slash: settings.trailing_slash,
            listing,
            shared: Arc::new(AppShared {
                trusted_proxies: settings.trusted_proxies,
                state: settings.state,
                draining: std::sync::atomic::AtomicBool::new(false),
                drain: tokio_util::sync::CancellationToken::new(),
            }),
            limits: settings.limits,
            #[cfg(feature = "tls")]
            tls: settings.tls,
        })
    }

    /// The route table, sorted by path then method.
    pub fn routes(&self) -> &[RouteInfo] {
        &self.listing
    }

    /// The route table as aligned text, one route a line.
    pub fn route_table(&self) -> String {
        let width = self.listing.iter().map(|r| r.path.len()).max().unwrap_or(0);
        self.listing
            .iter()
            .map(|r| format!("{:<7} {:<width$}  {}\n", r.method, r.path, r.handler))
            .collect()
    }

    /// The application state.
    pub fn state(&self) -> &State {
        &self.shared.state
    }

    /// Answers one request: routing, the chain, then the response.
    pub async fn handle(
        &self,
        request: Request<RequestBody>,
        remote_addr: SocketAddr,
    ) -> Response<ResponseBody> {
        let (parts, body) = request.into_parts();
        let mut ctx = self.context(parts, body, remote_addr);
        self.respond(&mut ctx).await
    }

    /// The context of a request.
    #[inline]
    pub(crate) fn context(
        &self,
        parts: http::request::Parts,
        body: RequestBody,
        connection: impl Into<ConnectionInfo>,
    ) -> Context {
        Context::new(parts, body, connection.into(), Arc::clone(&self.shared))
    }

    /// The context of `request` as if from `127.0.0.1:1`, for the crate's unit tests.
    #[cfg(test)]
    pub(crate) fn test_context(&self, request: http::Request<RequestBody>) -> Context {
        let (parts, body) = request.into_parts();
        self.context(parts, body, SocketAddr::from(([127, 0, 0, 1], 1)))
    }

    /// Routes `ctx`, runs its chain and turns the finished context into the response.
    pub(crate) async fn respond(&self, ctx: &mut Context) -> Response<ResponseBody> {
        let mut found = self.router.find(ctx.path());
        if found.is_none() && self.trailing_slash != TrailingSlash::Strict {
            match self.other_slash_form(ctx) {
                SlashForm::Routed(other) => found = Some(other),
                SlashForm::Redirect => {
                    let result = run_route!(&self.redirect, ctx);
                    return ctx.take_response(result);
                }
                SlashForm::None => {}
            }
        }
        let route = match found {
            Some(found) => {
                let path = &found.route.value;
                let route = path
                    .for_method(ctx.method())
                    .or_else(|| extended_connect(ctx).then(|| path.for_method(&Method::GET))?)
                    .unwrap_or(&path.not_allowed);
                ctx.set_route(&route.meta, found.params);
                route
            }
            None => &self.not_found,
        };
        let result = run_route!(route, ctx);
        ctx.take_response(result)
    }
}

/// What the other trailing-slash form of an unrouted path gives.
enum SlashForm<'r> {
    /// [`TrailingSlash::Ignore`]: the URI now has the other form, which matched.
    Routed(crate::router::Match<'r, CompiledPath>),
    /// [`TrailingSlash::Redirect`]: `Location` is set; answer 308.
    Redirect,
    /// No route either way (or [`TrailingSlash::Strict`]): 404.
    None,
}

impl Service {
    /// Says the service is draining: from now on [`Context::is_draining`] is true, so readiness
    /// probes fail while requests are still served. The server calls it when a graceful
    /// shutdown begins, [`ServerLimits::drain_delay`](crate::ServerLimits::drain_delay)
    /// before it stops accepting; a program with its own accept loop calls it itself.
    pub fn start_draining(&self) {
        self.shared
            .draining
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.shared.drain.cancel();
    }

    /// True once [`Service::start_draining`] was called.
    pub fn is_draining(&self) -> bool {
        self.shared
            .draining
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// For a path with no route: whether its other trailing-slash form has one, and what the
    /// policy does with it. Only runs on what would otherwise be a 404.
    fn other_slash_form(&self, ctx: &mut Context) -> SlashForm<'_> {
        let path = ctx.path();
        let other = match path.strip_suffix('/') {
            Some("") => return SlashForm::None,
            Some(trimmed) => trimmed.to_owned(),
            None => format!("{path}/"),
        };
        // `//host` would be a protocol-relative location, and is no path this app routes.
        if other.starts_with("//") || self.router.find(&other).is_none() {
            return SlashForm::None;
        }
        let target = match ctx.uri().query() {
            Some(query) => format!("{other}?{query}"),
            None => other,
        };
        match self.trailing_slash {
            TrailingSlash::Strict => SlashForm::None,
            TrailingSlash::Redirect => match HeaderValue::try_from(target) {
                Ok(location) => {
                    ctx.set_response_header(header::LOCATION, location);
                    SlashForm::Redirect
                }
                Err(_) => SlashForm::None,
            },
            TrailingSlash::Ignore => match ctx.set_path_and_query(&target) {
                Ok(()) => self
                    .router
                    .find(ctx.path())
                    .map_or(SlashForm::None, SlashForm::Routed),
                Err(_) => SlashForm::None,
            },
        }
    }
}

/// An HTTP/2 extended `CONNECT` (RFC 8441) for a WebSocket: routed as the `GET` of the same
/// path, the route an HTTP/1.1 WebSocket upgrade takes, so one route serves both. Only looked
/// at when the path has no route for `CONNECT`.
fn extended_connect(ctx: &Context) -> bool {
    #[cfg(feature = "websocket")]
    {
        ctx.method() == Method::CONNECT
            && ctx
                .extensions()
                .get::<hyper::ext::Protocol>()
                .is_some_and(|p| p.as_str().eq_ignore_ascii_case("websocket"))
    }
    #[cfg(not(feature = "websocket"))]
    {
        let _ = ctx;
        false
    }
}

#[cfg(test)]
mod tests;

//! What adds middleware and routes, written once for an app and a group ([`Routes`]), and
//! what only a group has (its prefix, its inner groups, and their flattening at build).

use std::any::type_name;
use std::borrow::Cow;
use std::sync::Arc;

use http::Method;

use crate::context::Context;
use crate::error::Result;
use crate::handler::{
    Endpoint, HandlerFn, IntoReply, Middleware, SharedMiddleware, handler_fn, share, when,
};

use super::{Group, Kind, MiddlewareRef, Prefix, RouteSpec, Routes, leaves_value};

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
    /// through [`from_fn`](crate::from_fn). On an [`App`](crate::App) it runs for every request (404s
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
    pub(super) fn flatten(self, prefix: &str, outer: &[SharedMiddleware], out: &mut Vec<Group>) {
        let Routes {
            scope: Prefix { path, groups },
            middleware: own,
            routes,
        } = self;
        let path = if prefix.is_empty() {
            path
        } else {
            route_pattern::join(prefix, &path)
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

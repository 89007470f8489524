//! Mounting the `#[controller]`s linked into the program: the routes [`App::build`] serves and
//! the routes the OpenAPI document describes, two walks of the same `inventory` side by side,
//! resolving middleware names by the same rule ([`App::resolve`](super::App)).

use std::borrow::Cow;

use http::Method;

use super::build::{Needs, complete};
use super::{App, Group, Kind, MiddlewareRef, RouteSpec};
use crate::controller::ControllerDef;
use crate::error::BuildError;

impl App {
    pub(super) fn controller_groups(&self) -> Result<Vec<Group>, BuildError> {
        let mut groups = Vec::new();
        for def in inventory::iter::<ControllerDef> {
            let instance = (def.build)(&self.scope.state).map_err(|e| {
                // The message alone: a build error is read by a developer, not a client.
                BuildError::State {
                    controller: def.name.to_owned(),
                    message: e.text(),
                }
            })?;
            let mut group = Group::new(def.prefix);
            for route in def.routes {
                let method = Method::from_bytes(route.method.as_bytes()).map_err(|_| {
                    BuildError::BadMethod {
                        route: format!("{}::{}", def.name, route.name),
                        method: route.method.to_owned(),
                    }
                })?;
                let endpoint = (route.endpoint)(&instance).ok_or_else(|| {
                    BuildError::new(format!(
                        "{}::{}: controller type mismatch",
                        def.name, route.name
                    ))
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
                    handler: Cow::Owned(format!("{}::{}", def.name, route.name)),
                    owner: Cow::Borrowed(def.name),
                    middleware,
                    endpoint,
                    kind: Kind::Controller(route.describe),
                });
            }
            groups.push(group);
        }
        Ok(groups)
    }
}

/// Every registered controller route, for the OpenAPI document, with the middleware it runs
/// (the app's, then the controller's and the route's by name; a name nobody registered is left
/// out here and fails [`App::build`]).
pub(super) fn controller_doc_routes(app: &App) -> Vec<crate::openapi::DocRoute> {
    let mut routes = Vec::new();
    // The document lists what is served: no controllers unless they are mounted.
    if !app.scope.mount_controllers {
        return routes;
    }
    let defaults = app.scope.defaults.map(|make| make()).unwrap_or_default();
    for def in inventory::iter::<ControllerDef> {
        for route in def.routes {
            let inner = def
                .middleware
                .iter()
                .chain(route.middleware)
                .filter_map(|name| app.resolve(&MiddlewareRef::Named(name), def.name).ok())
                .collect();
            let needs = Needs::of(Kind::Controller(route.describe));
            let chain = complete(&app.middleware, inner, &defaults, needs);
            routes.push(crate::openapi::DocRoute {
                method: route.method,
                path: route_pattern::join(def.prefix, route.path),
                tag: def.name,
                handler: format!("{}::{}", def.name, route.name),
                describe: route.describe,
                middleware: Box::new(move |operation| {
                    for middleware in &chain {
                        middleware.describe(operation);
                    }
                }),
            });
        }
    }
    // Link order is not stable: the document is.
    routes.sort_by(|a, b| (&a.path, a.method).cmp(&(&b.path, b.method)));
    routes
}

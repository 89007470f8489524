//! What a request can see of its route and of the app: the small part of a built app that
//! [`Context`](crate::Context) depends on. The runnable part of a route (its chain and
//! endpoint) stays in the service.

use serde::Serialize;

use crate::state::State;

/// Category of routing errors (404, 405).
pub const ROUTER_CATEGORY: &str = "framework-router";

/// What every request can see of the app.
pub(crate) struct AppShared {
    pub(crate) trusted_proxies: crate::client_ip::TrustedProxies,
    pub(crate) state: State,
}

/// A route as its requests see it: the pattern (for logs and per-route limits) and the names
/// of its parameters (for [`Context::param`](crate::Context::param)).
pub(crate) struct RouteMeta {
    pub(crate) pattern: Box<str>,
    pub(crate) param_names: Box<[Box<str>]>,
}

/// A line of the route table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RouteInfo {
    /// Method, e.g. `GET`.
    pub method: String,
    /// Full path pattern, prefix included.
    pub path: String,
    /// The handler's name, e.g. `UserController::me`.
    pub handler: String,
}

//! A built route and what every request can see of the app: the small part of the app that
//! [`Context`](crate::Context) depends on.

use std::sync::Arc;

use serde::Serialize;

use crate::handler::{Endpoint, SharedMiddleware};
use crate::state::State;

/// Category of routing errors (404, 405).
pub const ROUTER_CATEGORY: &str = "framework-router";

/// What every request can see of the app.
pub(crate) struct AppShared {
    pub(crate) trusted_proxies: crate::client_ip::TrustedProxies,
    pub(crate) state: State,
}

/// One route, ready to run.
pub(crate) struct Route {
    pub(crate) pattern: Box<str>,
    pub(crate) param_names: Box<[Box<str>]>,
    pub(crate) chain: Box<[SharedMiddleware]>,
    pub(crate) endpoint: Arc<dyn Endpoint>,
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

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
    /// Set when a graceful shutdown begins ([`crate::Service::start_draining`]).
    pub(crate) draining: std::sync::atomic::AtomicBool,
    /// Cancelled at the same moment: what [`Context::shutdown`](crate::Context::shutdown)
    /// waits for. The flag above stays for the reads on every HTTP/1 answer: the token's
    /// `is_cancelled` takes a lock.
    pub(crate) drain: tokio_util::sync::CancellationToken,
}

/// The route that answers a request, as [`Context::route`](crate::Context::route) gives it:
/// its pattern, its key `<METHOD> <pattern>` (what logs and per-route limits go by) and its
/// number (what per-route tables are indexed by).
#[derive(Debug)]
pub struct MatchedRoute {
    /// `GET /users/:id`; for a path's 405 answer, just the pattern.
    key: Box<str>,
    /// Where the pattern starts in `key`.
    pattern_at: usize,
    pub(crate) param_names: Box<[Box<str>]>,
    /// The route's number, below the service's route count; `u32::MAX` for 404/405 answers.
    index: u32,
}

impl MatchedRoute {
    /// The route of `method` (none: the path's 405 answer) at `pattern`.
    pub(crate) fn new(
        method: Option<&str>,
        pattern: &str,
        param_names: &[Box<str>],
        index: Option<u32>,
    ) -> Self {
        let (key, pattern_at) = match method {
            Some(method) => (format!("{method} {pattern}"), method.len() + 1),
            None => (pattern.to_owned(), 0),
        };
        Self {
            key: key.into(),
            pattern_at,
            param_names: param_names.into(),
            index: index.unwrap_or(u32::MAX),
        }
    }

    /// The route's number: dense, from 0 to the number of the app's routes (methods and
    /// patterns, [`Service::routes`](crate::Service::routes)) exclusive, the same for every
    /// request of the route, so per-route tables (metrics) are indexed by it instead of
    /// hashing the pattern. `None` for a path's 405 answer.
    pub fn index(&self) -> Option<usize> {
        (self.index != u32::MAX).then_some(self.index as usize)
    }

    /// The pattern as registered, prefix included, e.g. `/users/:id`.
    pub fn pattern(&self) -> &str {
        &self.key[self.pattern_at..]
    }

    /// The route as `<METHOD> <pattern>`, e.g. `GET /users/:id`: a HEAD request that the GET
    /// route answers gives `GET /users/:id`. `None` for a path's 405 answer, which no
    /// method's route gives. Per-route settings (limits, metrics) key on it.
    pub fn key(&self) -> Option<&str> {
        (self.pattern_at > 0).then_some(&*self.key)
    }
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

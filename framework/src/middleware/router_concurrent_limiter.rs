//! Caps how many requests run at once on given routes.
//!
//! Limits are keyed `<METHOD> <route pattern>`, e.g. `POST /users/v1/login` (the pattern as
//! registered, params and all: `GET /files/:id`); a HEAD request counts against its route's
//! `GET` entry when it has none of its own. Routes without an entry are not limited. Over the
//! limit: **429** `too many requests, current: N, max: M` (N counts the refused request too,
//! as the Go reference reports it), category `framework-router-concurrent-limiter`. One atomic
//! per route, looked up without allocating; the slot is freed by a guard's `Drop` whichever
//! way the request ends, after a streamed body has been sent. The slot is taken in `before` and
//! held by the context until the whole request ends (the middleware outside this one
//! included), so the limiter needs no future of its own; a middleware outside it that runs the
//! rest of the chain twice (a retry) takes a second slot while the first is held.
//!
//! ```
//! use std::collections::HashMap;
//! use framework::middleware::router_concurrent_limiter::{
//!     RouterConcurrentLimiter, RouterConcurrentLimiterConfig,
//! };
//!
//! let limiter = RouterConcurrentLimiter::new(RouterConcurrentLimiterConfig::default()
//!     .limits(HashMap::from([("POST /users/v1/login".to_owned(), 10)])))
//! .expect("valid limits");
//! let app = framework::App::new().use_middleware(limiter);
//! # let _ = app;
//! ```

use std::collections::HashMap;

use http::{Method, StatusCode};
use rustc_hash::FxHashMap;

use crate::context::Context;
use crate::error::HttpError;
use crate::handler::{Before, Middleware};
use crate::middleware::ConfigError;
use crate::slot::Slots;

/// Category of rejections.
pub const CATEGORY: &str = "framework-router-concurrent-limiter";

/// Router concurrent limiter settings.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct RouterConcurrentLimiterConfig {
    /// `"<METHOD> <route pattern>"` to the number of requests allowed at once.
    pub limits: HashMap<String, u32>,
}

crate::config::setters!(RouterConcurrentLimiterConfig {
    limits: HashMap<String, u32>,
});

/// The router concurrent limiter.
pub struct RouterConcurrentLimiter {
    /// By route key, `<METHOD> <pattern>` as [`MatchedRoute::key`](crate::context::MatchedRoute::key) gives it: checked and
    /// normalised once, here, so a request looks its route up as the router found it (a HEAD
    /// request answered by the GET route has the GET route's key) and parses nothing.
    routes: FxHashMap<Box<str>, Slots>,
}

fn refuse(message: String) -> ConfigError {
    ConfigError::new("router concurrent limiter", message)
}

impl RouterConcurrentLimiter {
    /// Checks the keys (`<METHOD> <path>`) and builds the limiter.
    pub fn new(config: RouterConcurrentLimiterConfig) -> std::result::Result<Self, ConfigError> {
        let mut routes = FxHashMap::default();
        for (key, max) in config.limits {
            let (method, path) = key
                .split_once(' ')
                .ok_or_else(|| refuse(format!("`{key}`: expected `<METHOD> <path>`")))?;
            let method = Method::from_bytes(method.as_bytes())
                .map_err(|_| refuse(format!("`{key}`: bad method")))?;
            if !path.starts_with('/') {
                return Err(refuse(format!("`{key}`: the path must start with `/`")));
            }
            routes.insert(format!("{method} {path}").into(), Slots::new(max));
        }
        Ok(Self { routes })
    }

    /// Requests running now on `<METHOD> <pattern>`; `None` for a route without a limit.
    pub fn current(&self, method: &Method, pattern: &str) -> Option<u32> {
        self.routes
            .get(format!("{method} {pattern}").as_str())
            .map(Slots::current)
    }
}

impl Middleware for RouterConcurrentLimiter {
    /// 429 when the route's slots are taken.
    fn describe(&self, operation: &mut crate::openapi::Operation<'_>) {
        operation.error(429);
    }

    /// Takes the route's slot before the chain and leaves it with the context
    /// ([`Context::hold`](crate::Context::hold)), which gives it back when the request ends: no future of its
    /// own.
    fn before(&self, ctx: &mut Context) -> Before {
        if ctx.is_committed() {
            return Before::Pass;
        }
        let Some(slots) = ctx
            .route()
            .and_then(|route| route.key())
            .and_then(|key| self.routes.get(key))
        else {
            return Before::Pass;
        };
        match slots.try_take() {
            Ok(slot) => {
                ctx.hold(slot);
                Before::Pass
            }
            Err(current) => {
                crate::telemetry::counters()
                    .refused(crate::telemetry::Refusal::RouterConcurrentLimiter);
                Before::Answer(Err(HttpError::with(
                    StatusCode::TOO_MANY_REQUESTS,
                    CATEGORY,
                    format!(
                        "too many requests, current: {current}, max: {}",
                        slots.max()
                    ),
                )
                .into()))
            }
        }
    }
}

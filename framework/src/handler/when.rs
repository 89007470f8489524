//! A middleware for some requests only: [`When`] and [`when`].

use std::any::Any;

use super::chain::{Before, BoxFuture, Middleware, Next, Role};
use crate::context::Context;
use crate::error::Result;

/// A middleware that runs only for the requests `predicate` accepts: the others pass it
/// straight on, as if it were not in the chain. What [`App::use_when`](crate::App::use_when)
/// and [`Group::use_when`](crate::Group::use_when) mount; build one with [`when`] for a
/// route's own middleware list.
///
/// Skipping is the chain's business, so no middleware has a skipper of its own (like salvo's
/// `hoop_when` and tower's `option_layer`). The predicate sees the request before the
/// middleware does; it may run twice for one request (once in the synchronous fast path, once
/// more when the middleware needs its async `handle`), so it should be a cheap, pure look at
/// the request (method, path, a header).
pub struct When<P, M> {
    predicate: P,
    middleware: M,
}

/// `middleware` for the requests `predicate` accepts only: see [`When`].
///
/// ```
/// use framework::middleware::logger::{Logger, LoggerConfig};
/// use framework::{App, Context};
///
/// // No access log lines for the health probe.
/// let logger = Logger::new(LoggerConfig::default());
/// let app = App::new().use_when(|ctx: &Context| ctx.path() != "/health", logger);
/// # let _ = app;
/// ```
pub fn when<P, M>(predicate: P, middleware: M) -> When<P, M>
where
    P: Fn(&Context) -> bool + Send + Sync + 'static,
    M: Middleware,
{
    When {
        predicate,
        middleware,
    }
}

impl<P, M> Middleware for When<P, M>
where
    P: Fn(&Context) -> bool + Send + Sync + 'static,
    M: Middleware,
{
    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        if (self.predicate)(ctx) {
            self.middleware.handle(ctx, next)
        } else {
            Box::pin(next.run(ctx))
        }
    }
    #[inline]
    fn before(&self, ctx: &mut Context) -> Before {
        if (self.predicate)(ctx) {
            self.middleware.before(ctx)
        } else {
            Before::Pass
        }
    }
    #[inline]
    fn after(&self, ctx: &mut Context, result: Result) -> Result {
        // Only called after `before` said `Continue`: the predicate accepted the request.
        self.middleware.after(ctx, result)
    }
    fn recovered(&self, ctx: &mut Context, payload: Box<dyn Any + Send>) -> Result {
        self.middleware.recovered(ctx, payload)
    }
    /// Described as the middleware it runs: a route lists what it can answer whenever the
    /// predicate accepts.
    fn describe(&self, operation: &mut crate::openapi::Operation<'_>) {
        self.middleware.describe(operation);
    }
    /// The role of the middleware it runs: a component mounted for some requests only is
    /// still the app's choice, and no default is added beside it.
    fn role(&self) -> Option<Role> {
        self.middleware.role()
    }
}

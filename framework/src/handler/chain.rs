//! The chain engine: the [`Middleware`] trait and its synchronous hooks, [`Next`] (the rest
//! of the chain) and how it runs them, and panic catching. `Middleware` and `Next` name each
//! other, so they share this file.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::FutureExt;

use super::endpoint::Endpoint;
use crate::context::Context;
use crate::downcast::try_downcast;
use crate::error::Result;

/// A boxed, sendable future: what dyn-compatible async traits return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Code that runs around the rest of the chain.
///
/// [`handle`](Middleware::handle) is the general form: an async function around `next`. A
/// middleware that never awaits anything of its own (it looks at the request, lets the rest
/// run, then looks at the response) can instead implement the two synchronous hooks
/// [`before`](Middleware::before) and [`after`](Middleware::after): the chain then calls them
/// directly, without a boxed future for this middleware, which is most of what a middleware
/// costs per request. The default `handle` runs the hooks ([`handle_with_hooks`]); it is what
/// runs when a middleware is called on its own. A middleware that implements `handle` and
/// hooks both must make them do the same.
///
/// ```
/// use framework::{Before, Context, Middleware, Result};
///
/// struct PoweredBy;
///
/// impl Middleware for PoweredBy {
///     fn before(&self, _ctx: &mut Context) -> Before {
///         Before::Continue
///     }
///     fn after(&self, ctx: &mut Context, result: Result) -> Result {
///         result?;
///         ctx.set_response_header("x-powered-by", http::HeaderValue::from_static("framework"));
///         Ok(())
///     }
/// }
/// ```
pub trait Middleware: Send + Sync + 'static {
    /// Handles the request; call `next.run(ctx)` to run the rest of the chain. The default
    /// runs the hooks, [`before`](Middleware::before) and [`after`](Middleware::after)
    /// ([`handle_with_hooks`]); a middleware that implements neither passes every request on.
    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        handle_with_hooks(self, ctx, next)
    }

    /// The synchronous fast path, on the way in: what to do with this request. The default,
    /// [`Before::Handle`], runs [`handle`](Middleware::handle) (with the default `handle`, the
    /// same as [`Before::Continue`]).
    #[inline]
    fn before(&self, _ctx: &mut Context) -> Before {
        Before::Handle
    }

    /// The synchronous fast path, on the way out: called with the rest of the chain's result
    /// after [`before`](Middleware::before) said [`Before::Continue`]; what it returns goes on
    /// outwards. Not called when the rest panicked or the request was dropped (the client went
    /// away), as code after `next.run(ctx).await` would not run either.
    #[inline]
    fn after(&self, _ctx: &mut Context, result: Result) -> Result {
        result
    }

    /// The answer when the rest of the chain panicked, after [`before`](Middleware::before)
    /// said [`Before::CatchPanic`]: `payload` is what the panic carried. The default lets the
    /// panic go on unwinding.
    ///
    /// The context is as the panicking code left it: a middleware that answers here decides
    /// what to reset (recover resets the response, status and headers; values, the session and
    /// the request body stay, and the middleware outside see them). A middleware that wraps
    /// another and forwards its `before` must forward `recovered` too, or a panic goes on
    /// unwinding.
    fn recovered(&self, _ctx: &mut Context, payload: Box<dyn Any + Send>) -> Result {
        std::panic::resume_unwind(payload)
    }

    /// What this middleware adds to the OpenAPI description of each controller route it runs
    /// on ([`crate::openapi`]): the error statuses it can answer with, the credentials it
    /// reads (a security scheme), how it writes errors. Called once, when the document is
    /// built; the default adds nothing. A middleware that wraps another forwards it.
    fn describe(&self, _operation: &mut crate::openapi::Operation<'_>) {}

    /// Which of the framework's core components this middleware is, if any: what
    /// [`App::new`](crate::App::new) looks for in a route's chain before it adds its default
    /// one ([`crate::middleware::defaults`]), and what [`App::build`](crate::App::build) checks
    /// a route needs. The framework's error handler, responder, body parser, renderer, JSON
    /// picker and response size limiter say so; a middleware of your own that does one of
    /// their jobs (a responder of your own) says so too, and no default is added beside it.
    /// A middleware that wraps another forwards it. The default is `None`.
    fn role(&self) -> Option<Role> {
        None
    }
}

/// A core component's job, in the reference order of the chain (outermost first): where
/// [`App::new`](crate::App::new) puts a default among the middleware you mounted, and what
/// [`App::build`](crate::App::build) looks for when a route needs one. See
/// [`Middleware::role`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Role {
    /// Turns a panic into a 500 answer ([`Recover`](crate::middleware::recover)).
    Recover,
    /// Turns an error into the answer ([`ErrorHandler`](crate::middleware::error_handler)).
    ErrorHandler,
    /// Limits the response's size
    /// ([`response_size_limiter`](crate::middleware::response_size_limiter)).
    ResponseSizeLimiter,
    /// Picks fields of the JSON body ([`json_picker`](crate::middleware::json_picker)).
    JsonPicker,
    /// Turns the handler's value into the body ([`responder`](crate::middleware::responder)).
    Responder,
    /// Turns a returned template and its data into the page (the renderer).
    Renderer,
    /// Reads the request body before the handler ([`body_parser`](crate::middleware::body_parser)).
    BodyParser,
    /// Refuses forged cross-site requests ([`csrf`](crate::middleware::csrf)): before the
    /// session, so a forged request costs no session load; [`App::build`](crate::App::build)
    /// refuses a route whose chain has it inside the session.
    Csrf,
    /// Loads the session before the rest and saves it after
    /// ([`session`](crate::middleware::session)).
    Session,
}

/// What a middleware's [`before`](Middleware::before) hook decides for a request. More
/// decisions may come: a `match` on it needs a `_` arm.
#[derive(Debug)]
#[non_exhaustive]
pub enum Before {
    /// Run the rest of the chain, then this middleware's [`after`](Middleware::after).
    Continue,
    /// Run the rest of the chain; this middleware has nothing to do on the way out.
    Pass,
    /// Answer now with this result: the rest of the chain does not run, nor this middleware's
    /// `after` (the middleware outside it see the result as usual).
    Answer(Result),
    /// This request needs the middleware's async [`handle`](Middleware::handle) (e.g. it has a
    /// body to read).
    Handle,
    /// Run the rest of the chain with panics caught: a panic ends the rest there (the `after`
    /// hooks inside it do not run, as code after a panicking `.await` would not) and this
    /// middleware's [`recovered`](Middleware::recovered) answers in its place. Either result
    /// goes on outwards; this middleware has no `after`. The first such middleware of a chain
    /// costs no allocation; one nested inside it boxes its part of the chain.
    CatchPanic,
}

impl Before {
    /// [`Before::Pass`] when the response is already taken over
    /// ([`Context::is_committed`]), else [`Before::Continue`]: the `before` of a middleware that
    /// only works on the way out.
    pub fn continue_unless_committed(ctx: &Context) -> Self {
        if ctx.is_committed() {
            Before::Pass
        } else {
            Before::Continue
        }
    }
}

/// [`Middleware::handle`] for a middleware written as [`before`](Middleware::before) and
/// [`after`](Middleware::after) hooks: the same steps, as one future (the default `handle`).
/// A `before` that says [`Before::Handle`] is taken as [`Before::Continue`] here (this *is*
/// the handle).
pub fn handle_with_hooks<'a, M: Middleware + ?Sized>(
    middleware: &'a M,
    ctx: &'a mut Context,
    next: Next<'a>,
) -> BoxFuture<'a, Result> {
    Box::pin(async move {
        match middleware.before(ctx) {
            Before::Continue | Before::Handle => {
                let result = next.run(ctx).await;
                middleware.after(ctx, result)
            }
            Before::Pass => next.run(ctx).await,
            Before::Answer(result) => result,
            // Already in a box of its own: the rest may catch in place.
            Before::CatchPanic => catching::<Inline, _>(middleware, ctx, next).await,
        }
    })
}

/// What a chain does with a [`Before::CatchPanic`] met on its way in. A chain's future cannot
/// contain itself, so the two forms alternate: the first catcher of a chain runs in place
/// ([`Inline`]) and runs the rest of the chain as [`Boxed`], whose catcher (one nested inside
/// the first) is boxed and runs its rest inline again.
trait Catch {
    fn catch<'a>(
        middleware: &'a dyn Middleware,
        ctx: &'a mut Context,
        rest: Next<'a>,
    ) -> impl Future<Output = Result> + Send + 'a;
}

/// The catcher runs in place.
struct Inline;
/// The catcher is boxed.
struct Boxed;

impl Catch for Inline {
    #[inline]
    fn catch<'a>(
        middleware: &'a dyn Middleware,
        ctx: &'a mut Context,
        rest: Next<'a>,
    ) -> impl Future<Output = Result> + Send + 'a {
        catching::<Boxed, _>(middleware, ctx, rest)
    }
}

impl Catch for Boxed {
    fn catch<'a>(
        middleware: &'a dyn Middleware,
        ctx: &'a mut Context,
        rest: Next<'a>,
    ) -> impl Future<Output = Result> + Send + 'a {
        let boxed: BoxFuture<'a, Result> = Box::pin(catching::<Inline, _>(middleware, ctx, rest));
        boxed
    }
}

/// The rest of the chain (run as `C`) with its panics answered by `middleware`
/// ([`Before::CatchPanic`]).
async fn catching<C: Catch, M: Middleware + ?Sized>(
    middleware: &M,
    ctx: &mut Context,
    rest: Next<'_>,
) -> Result {
    // Unwind safety is the catcher's to keep: see `Middleware::recovered`.
    match AssertUnwindSafe(rest.run_as::<C>(ctx)).catch_unwind().await {
        Ok(result) => result,
        Err(payload) => middleware.recovered(ctx, payload),
    }
}

/// A shared middleware, as stored in chains.
pub type SharedMiddleware = Arc<dyn Middleware>;

/// The rest of the chain.
#[derive(Clone, Copy)]
pub struct Next<'a> {
    rest: &'a [SharedMiddleware],
    endpoint: &'a dyn Endpoint,
}

impl<'a> Next<'a> {
    /// A chain of `middleware` around `endpoint`.
    pub(crate) fn new(middleware: &'a [SharedMiddleware], endpoint: &'a dyn Endpoint) -> Self {
        Self {
            rest: middleware,
            endpoint,
        }
    }

    /// Runs the rest of the chain.
    ///
    /// Middleware with synchronous hooks ([`Middleware::before`]) are run in a loop: their
    /// `before` on the way in, their `after` in reverse order on the way out, with no future of
    /// their own. The first middleware that needs its async `handle` (or the endpoint) is
    /// awaited there, and runs the rest of the chain itself. Hooks are used for the first 64
    /// middleware of a chain; any further ones run through `handle`.
    pub fn run(self, ctx: &mut Context) -> impl Future<Output = Result> + Send {
        self.run_as::<Inline>(ctx)
    }

    /// [`Next::run`], with a [`Before::CatchPanic`] handled as `C` says.
    async fn run_as<C: Catch>(self, ctx: &mut Context) -> Result {
        let mut afters = 0;
        let result = match self.enter(ctx, &mut afters) {
            Entered::Endpoint => self.endpoint.call(ctx).await,
            Entered::Answer(result) => result,
            Entered::Handle(middleware, rest) => middleware.handle(ctx, rest).await,
            Entered::CatchPanic(middleware, rest) => C::catch(middleware, ctx, rest).await,
        };
        self.leave(ctx, afters, result)
    }

    /// The way in: `before` hooks until one needs an await, or the endpoint is reached.
    /// Bit i of `afters`: middleware i said `Continue` and waits for its `after`.
    #[inline]
    fn enter(self, ctx: &mut Context, afters: &mut u64) -> Entered<'a> {
        for (index, middleware) in self.rest.iter().enumerate() {
            let before = if index < 64 {
                middleware.before(ctx)
            } else {
                Before::Handle
            };
            let rest = Next {
                rest: &self.rest[index + 1..],
                endpoint: self.endpoint,
            };
            match before {
                Before::Continue => *afters |= 1 << index,
                Before::Pass => {}
                Before::Answer(result) => return Entered::Answer(result),
                Before::Handle => return Entered::Handle(&**middleware, rest),
                Before::CatchPanic => return Entered::CatchPanic(&**middleware, rest),
            }
        }
        Entered::Endpoint
    }

    /// The way out: the waiting `after` hooks, innermost first.
    #[inline]
    fn leave(self, ctx: &mut Context, mut afters: u64, mut result: Result) -> Result {
        while afters != 0 {
            let last = 63 - afters.leading_zeros() as usize;
            afters &= !(1 << last);
            result = self.rest[last].after(ctx, result);
        }
        result
    }
}

/// Where the way in stopped: what the chain awaits next.
enum Entered<'a> {
    Endpoint,
    Answer(Result),
    Handle(&'a dyn Middleware, Next<'a>),
    CatchPanic(&'a dyn Middleware, Next<'a>),
}

/// A shared middleware is a middleware: what [`from_fn`](super::from_fn) returns, or a middleware kept in an
/// `Arc` to be mounted in several places, goes wherever a middleware goes.
impl<M: Middleware + ?Sized> Middleware for Arc<M> {
    #[inline]
    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        (**self).handle(ctx, next)
    }
    #[inline]
    fn before(&self, ctx: &mut Context) -> Before {
        (**self).before(ctx)
    }
    #[inline]
    fn after(&self, ctx: &mut Context, result: Result) -> Result {
        (**self).after(ctx, result)
    }
    fn recovered(&self, ctx: &mut Context, payload: Box<dyn Any + Send>) -> Result {
        (**self).recovered(ctx, payload)
    }
    fn describe(&self, operation: &mut crate::openapi::Operation<'_>) {
        (**self).describe(operation);
    }
    fn role(&self) -> Option<Role> {
        (**self).role()
    }
}

/// `middleware` as it is stored in a chain. A [`SharedMiddleware`] is taken as it is (no second
/// `Arc` around the first, so no second indirection per call); any other middleware is put in
/// an `Arc`.
pub fn share<M: Middleware>(middleware: M) -> SharedMiddleware {
    try_downcast::<SharedMiddleware, M>(middleware)
        .unwrap_or_else(|middleware| Arc::new(middleware))
}

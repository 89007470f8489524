//! The onion chain: middleware, `Next`, and endpoints (the handler at the centre).
//!
//! A middleware receives the context and a [`Next`]; `next.run(ctx).await` runs the rest of the
//! chain and returns its result, so code before it sees the request and code after it sees the
//! response. A plain `async fn` works as middleware through [`from_fn`]:
//!
//! ```
//! use framework::{Context, Next, Result, from_fn};
//!
//! async fn powered_by(ctx: &mut Context, next: Next<'_>) -> Result {
//!     next.run(ctx).await?;
//!     ctx.set_header("x-powered-by", http::HeaderValue::from_static("framework"));
//!     Ok(())
//! }
//!
//! let mw = from_fn(powered_by);
//! # let _ = mw;
//! ```

use std::any::Any;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::FutureExt;
use serde::Serialize;

use crate::body::BodyStream;
use crate::context::Context;
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
///         ctx.set_header("x-powered-by", http::HeaderValue::from_static("framework"));
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
    /// ([`Context::committed`]), else [`Before::Continue`]: the `before` of a middleware that
    /// only works on the way out.
    pub fn continue_unless_committed(ctx: &Context) -> Self {
        if ctx.committed() {
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

/// The bytes an [`EndpointFuture`] holds in place. An endpoint's future this size or smaller
/// lives inside the future of the chain that awaits it, with no allocation of its own; a
/// larger one (a handler that holds big values across an `.await`) is boxed, as any future
/// returned through a trait object would be.
pub const ENDPOINT_FUTURE_INLINE: usize = 128;

/// The future an [`Endpoint`] returns: a `dyn Future` stored in place (up to
/// [`ENDPOINT_FUTURE_INLINE`] bytes) rather than always in a box. Make one with
/// [`endpoint_future`].
pub type EndpointFuture<'a> = stackfuture::StackFuture<'a, Result, ENDPOINT_FUTURE_INLINE>;

/// Wraps an endpoint's work as its [`EndpointFuture`]: in place when the future fits in
/// [`ENDPOINT_FUTURE_INLINE`] bytes and is no more aligned than a pointer, else boxed.
#[inline]
pub fn endpoint_future<'a, F>(future: F) -> EndpointFuture<'a>
where
    F: Future<Output = Result> + Send + 'a,
{
    EndpointFuture::from_or_box(future)
}

/// The centre of the chain: a route's handler.
///
/// ```
/// use framework::{Context, Endpoint, EndpointFuture, Result, endpoint_future};
///
/// struct Hello;
///
/// impl Endpoint for Hello {
///     fn call<'a>(&'a self, ctx: &'a mut Context) -> EndpointFuture<'a> {
///         endpoint_future(async move {
///             ctx.body_buffer = Some("hello".into());
///             Ok(())
///         })
///     }
/// }
/// ```
pub trait Endpoint: Send + Sync + 'static {
    /// Handles the request.
    fn call<'a>(&'a self, ctx: &'a mut Context) -> EndpointFuture<'a>;
}

/// A shared endpoint is an endpoint, so one built with [`handler_fn`] can be registered with
/// [`App::endpoint`](crate::App::endpoint) or [`App::any`](crate::App::any).
impl<E: Endpoint + ?Sized> Endpoint for Arc<E> {
    fn call<'a>(&'a self, ctx: &'a mut Context) -> EndpointFuture<'a> {
        (**self).call(ctx)
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
    pub fn new(middleware: &'a [SharedMiddleware], endpoint: &'a dyn Endpoint) -> Self {
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

/// An `async fn(&mut Context, Next) -> Result`, for any lifetime. Implemented for every such
/// function; it exists because Rust cannot yet name "a closure returning a future that borrows
/// its arguments" directly.
pub trait MiddlewareFn<'a>: Send + Sync + 'static {
    /// The future the function returns.
    type Fut: Future<Output = Result> + Send + 'a;
    /// Calls the function.
    fn call(&self, ctx: &'a mut Context, next: Next<'a>) -> Self::Fut;
}

impl<'a, F, Fut> MiddlewareFn<'a> for F
where
    F: Fn(&'a mut Context, Next<'a>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result> + Send + 'a,
{
    type Fut = Fut;
    fn call(&self, ctx: &'a mut Context, next: Next<'a>) -> Fut {
        self(ctx, next)
    }
}

struct FnMiddleware<F>(F);

impl<F> Middleware for FnMiddleware<F>
where
    F: for<'a> MiddlewareFn<'a>,
{
    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        Box::pin(self.0.call(ctx, next))
    }
}

/// Middleware from an `async fn(&mut Context, Next<'_>) -> Result`.
pub fn from_fn<F>(f: F) -> SharedMiddleware
where
    F: for<'a> MiddlewareFn<'a>,
{
    Arc::new(FnMiddleware(f))
}

/// An `async fn(&mut Context) -> Result<T>`, for any lifetime: a handler outside a controller.
pub trait HandlerFn<'a>: Send + Sync + 'static {
    /// What the handler returns.
    type Output;
    /// The future the function returns.
    type Fut: Future<Output = Self::Output> + Send + 'a;
    /// Calls the function.
    fn call(&self, ctx: &'a mut Context) -> Self::Fut;
}

impl<'a, F, Fut> HandlerFn<'a> for F
where
    F: Fn(&'a mut Context) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'a,
{
    type Output = Fut::Output;
    type Fut = Fut;
    fn call(&self, ctx: &'a mut Context) -> Fut {
        self(ctx)
    }
}

struct FnEndpoint<F, T>(F, PhantomData<fn() -> T>);

impl<F, T> Endpoint for FnEndpoint<F, T>
where
    F: for<'a> HandlerFn<'a, Output = Result<T>>,
    T: IntoReply,
{
    fn call<'a>(&'a self, ctx: &'a mut Context) -> EndpointFuture<'a> {
        endpoint_future(async move {
            let out = self.0.call(ctx).await;
            finish(out, ctx)
        })
    }
}

/// An endpoint from an `async fn(&mut Context) -> Result<T>`; a returned value other than `()`
/// becomes the body.
pub fn handler_fn<F, T>(f: F) -> Arc<dyn Endpoint>
where
    F: for<'a> HandlerFn<'a, Output = Result<T>>,
    T: IntoReply,
{
    Arc::new(FnEndpoint(f, PhantomData))
}

/// What a handler may return: its value becomes the answer.
///
/// | the handler returns | the answer |
/// |---|---|
/// | `String`, `&'static str`, `Cow<'static, str>` | the text, `text/plain; charset=utf-8` |
/// | `Bytes`, `Vec<u8>` | the bytes, `application/octet-stream` |
/// | any other `Serialize` value (a struct, `serde_json::Value`, a tuple…) | marshalled by the responder, JSON by default |
/// | `()` | whatever the handler put in the context (status, body, stream) |
/// | [`BodyStream`] | the stream, sent as the client reads it |
/// | [`RenderData`](crate::middleware::renderer::RenderData) (feature `renderer`) | the page the renderer makes of it |
///
/// Each may come in a [`Result`]: `Ok(value)` is the answer above, an error goes
/// to the error handler. A controller method's `Result<T, E>` may carry the app's own error
/// type, any `E: Into<framework::Error>` (see [errors](crate::guide::errors)). A value type of
/// your own implements `Serialize`; the responder's
/// marshaller decides its format.
#[diagnostic::on_unimplemented(
    message = "a handler cannot return `{Self}`",
    label = "not a reply",
    note = "a handler returns a value that implements `serde::Serialize` (text, bytes and \
            JSON values), a `framework::body::BodyStream`, `()`, or `framework::Result` of \
            one of them; in a controller, a return type is taken as a `Result` when its name \
            ends in `Result`"
)]
pub trait IntoReply: Send + 'static {
    /// Whether the value is left in the context for a responder to turn into the body (a
    /// `Serialize` value) rather than being the answer already (a stream, `NoContent`, a
    /// WebSocket's 101): what [`App::build`](crate::App::build) checks a route's chain for.
    #[doc(hidden)]
    const LEAVES_VALUE: bool = true;
    /// Puts the value into the context as its answer.
    fn into_reply(self, ctx: &mut Context);
}

impl<T: Serialize + Send + Sync + 'static> IntoReply for T {
    #[inline]
    fn into_reply(self, ctx: &mut Context) {
        if let Some(body) = crate::reply::Reply::from_value(self) {
            ctx.body = Some(body);
        }
    }
}

/// `201 Created` with the value as the body (as [`Context::created`]); the OpenAPI document
/// lists the route's success as 201.
///
/// ```
/// use framework::reply::Created;
/// use framework::{Context, Result};
///
/// async fn register(_ctx: &mut Context) -> Result<Created<String>> {
///     Ok(Created("ada".to_owned()))
/// }
/// # let _ = register;
/// ```
impl<T: Serialize + Send + Sync + 'static> IntoReply for crate::reply::Created<T> {
    fn into_reply(self, ctx: &mut Context) {
        ctx.created(self.0);
    }
}

/// A stream is sent as the body: [`Context::set_body_stream`].
impl IntoReply for BodyStream {
    const LEAVES_VALUE: bool = false;
    fn into_reply(self, ctx: &mut Context) {
        ctx.set_body_stream(self);
    }
}

/// Puts a handler's returned value into the context ([`IntoReply`]; `()` leaves the body as the
/// handler set it). The error may be any type that converts into the framework's
/// [`Error`](crate::Error): an app's own error enum (see [errors](crate::guide::errors));
/// for the framework's own, the conversion is the identity.
pub fn finish<T: IntoReply, E: Into<crate::Error>>(
    out: std::result::Result<T, E>,
    ctx: &mut Context,
) -> Result {
    finish_value(out.map_err(Into::into)?, ctx)
}

/// [`finish`] for a controller handler that returns a plain value or `()` instead of a
/// `Result`.
pub fn finish_value<T: IntoReply>(out: T, ctx: &mut Context) -> Result {
    out.into_reply(ctx);
    Ok(())
}

/// [`finish`] for a controller handler that returns `Result<Option<T>>`: `None` is **404**
/// `not found` (category `framework-router`, as for a path no route has), not a `null` body.
#[doc(hidden)]
pub fn finish_found<T: IntoReply, E: Into<crate::Error>>(
    out: std::result::Result<Option<T>, E>,
    ctx: &mut Context,
) -> Result {
    finish_found_value(out.map_err(Into::into)?, ctx)
}

/// [`finish_found`] for a controller handler that returns `Option<T>`.
#[doc(hidden)]
pub fn finish_found_value<T: IntoReply>(out: Option<T>, ctx: &mut Context) -> Result {
    match out {
        Some(value) => {
            value.into_reply(ctx);
            Ok(())
        }
        None => Err(crate::HttpError::with(
            http::StatusCode::NOT_FOUND,
            crate::route::ROUTER_CATEGORY,
            "not found",
        )
        .into()),
    }
}

/// `204 No Content`, no body.
impl IntoReply for crate::reply::NoContent {
    const LEAVES_VALUE: bool = false;
    fn into_reply(self, ctx: &mut Context) {
        ctx.no_content();
    }
}

/// A shared middleware is a middleware: what [`from_fn`] returns, or a middleware kept in an
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
    let mut slot = Some(middleware);
    let any: &mut dyn Any = &mut slot;
    match any.downcast_mut::<Option<SharedMiddleware>>() {
        Some(shared) => shared.take().unwrap_or_else(|| unreachable!("just filled")),
        None => Arc::new(slot.unwrap_or_else(|| unreachable!("not taken"))),
    }
}

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

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

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;

use crate::context::Context;
use crate::error::Result;

/// A boxed, sendable future: what dyn-compatible async traits return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Code that runs around the rest of the chain.
pub trait Middleware: Send + Sync + 'static {
    /// Handles the request; call `next.run(ctx)` to run the rest of the chain.
    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result>;
}

/// The centre of the chain: a route's handler.
pub trait Endpoint: Send + Sync + 'static {
    /// Handles the request.
    fn call<'a>(&'a self, ctx: &'a mut Context) -> BoxFuture<'a, Result>;
}

/// A shared endpoint is an endpoint, so one built with [`handler_fn`] can be registered with
/// [`App::endpoint`](crate::App::endpoint) or [`App::any`](crate::App::any).
impl<E: Endpoint + ?Sized> Endpoint for Arc<E> {
    fn call<'a>(&'a self, ctx: &'a mut Context) -> BoxFuture<'a, Result> {
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
    pub async fn run(self, ctx: &mut Context) -> Result {
        match self.rest.split_first() {
            Some((first, rest)) => {
                first
                    .handle(
                        ctx,
                        Next {
                            rest,
                            endpoint: self.endpoint,
                        },
                    )
                    .await
            }
            None => self.endpoint.call(ctx).await,
        }
    }
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
    T: Serialize + Send + Sync + 'static,
{
    fn call<'a>(&'a self, ctx: &'a mut Context) -> BoxFuture<'a, Result> {
        Box::pin(async move {
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
    T: Serialize + Send + Sync + 'static,
{
    Arc::new(FnEndpoint(f, PhantomData))
}

/// Puts a handler's returned value into the body (`()` leaves the body as the handler set it).
pub fn finish<T: Serialize + Send + Sync + 'static>(out: Result<T>, ctx: &mut Context) -> Result {
    let value = out?;
    if let Some(body) = crate::context::Body::from_value(value) {
        ctx.body = Some(body);
    }
    Ok(())
}

/// [`finish`] for a controller handler that returns a plain value or `()` instead of a
/// `Result`.
#[diagnostic::on_unimplemented(
    message = "a controller handler cannot return `{Self}`",
    label = "not `Serialize`",
    note = "a handler returns `framework::Result<T>`, a value that implements \
            `serde::Serialize` (the body), or `()`; a return type is taken as a `Result` when \
            its name ends in `Result`"
)]
pub trait PlainReply: Serialize + Send + Sync + 'static {}

impl<T: Serialize + Send + Sync + 'static> PlainReply for T {}

/// Puts a plain returned value into the body, as [`finish`] does for `Ok(value)`.
pub fn finish_value<T: PlainReply>(out: T, ctx: &mut Context) -> Result {
    finish(Ok(out), ctx)
}

/// A per-request predicate: `true` makes a middleware pass the request straight on.
pub type Skipper = Arc<dyn Fn(&Context) -> bool + Send + Sync>;

/// True when a middleware with this skipper should pass the request straight on: the skipper
/// says so, or the response is already committed.
pub fn should_skip(ctx: &Context, skipper: Option<&Skipper>) -> bool {
    ctx.committed() || skipper.is_some_and(|s| s(ctx))
}

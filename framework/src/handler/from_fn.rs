//! Middleware from a plain `async fn(&mut Context, Next<'_>) -> Result`.

use std::future::Future;
use std::sync::Arc;

use super::chain::{BoxFuture, Middleware, Next, SharedMiddleware};
use crate::context::Context;
use crate::error::Result;

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

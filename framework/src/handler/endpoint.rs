//! The centre of the chain: the [`Endpoint`] trait, the in-place future it returns, and
//! [`handler_fn`], which makes an endpoint of an `async fn(&mut Context) -> Result<T>`.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use super::into_reply::{IntoReply, finish};
use crate::context::Context;
use crate::error::Result;

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
///             ctx.body_mut().set_bytes("hello");
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

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
//!     ctx.set_response_header("x-powered-by", http::HeaderValue::from_static("framework"));
//!     Ok(())
//! }
//!
//! let mw = from_fn(powered_by);
//! # let _ = mw;
//! ```
//!
//! The module's files, one concern each: the chain engine ([`Middleware`], its hooks and
//! [`Before`], [`Next`]) in `chain.rs`; the centre, [`Endpoint`] and [`handler_fn`], in
//! `endpoint.rs`; [`from_fn`] in `from_fn.rs`; what a handler may return, [`IntoReply`], in
//! `into_reply.rs`; and [`When`], a middleware for some requests only, in `when.rs`.

mod chain;
mod endpoint;
mod from_fn;
mod into_reply;
mod when;

pub use chain::{
    Before, BoxFuture, Middleware, Next, Role, SharedMiddleware, handle_with_hooks, share,
};
pub use endpoint::{
    ENDPOINT_FUTURE_INLINE, Endpoint, EndpointFuture, HandlerFn, endpoint_future, handler_fn,
};
pub use from_fn::{MiddlewareFn, from_fn};
pub use into_reply::IntoReply;
#[doc(hidden)]
pub use into_reply::{finish, finish_found, finish_found_value, finish_value};
#[doc(hidden)]
pub mod returned;
pub use when::{When, when};

//! The controller registry: what `#[controller]` expands to. Each controller submits a
//! [`ControllerDef`] through `inventory`; [`App::mount_controllers`](crate::App::mount_controllers)
//! collects them, builds each controller once from the state and binds its methods as endpoints.

use std::any::Any;
use std::sync::Arc;

use crate::context::Context;
use crate::error::Result;
use crate::handler::{Endpoint, EndpointFuture};
use crate::state::{FromState, State};

/// A controller registered by `#[controller]`; collected with `inventory`.
#[doc(hidden)]
pub struct ControllerDef {
    pub name: &'static str,
    pub prefix: &'static str,
    pub middleware: &'static [&'static str],
    pub build: fn(&State) -> Result<Arc<dyn Any + Send + Sync>>,
    pub routes: &'static [RouteDef],
}

/// What `#[api]` writes of a trait's routes, as its hidden associated constant; the
/// `#[controller] impl` of the trait puts it into the implementor's [`ControllerDef`].
#[doc(hidden)]
pub struct ApiDef {
    pub prefix: &'static str,
    pub middleware: &'static [&'static str],
    pub routes: &'static [RouteDef],
}

/// The controller middleware of a trait's implementor: the impl's `middleware(..)`, else the
/// trait's. Both naming some is refused when the program compiles (a constant's panic).
#[doc(hidden)]
pub const fn api_middleware(
    of_impl: &'static [&'static str],
    of_trait: &'static [&'static str],
) -> &'static [&'static str] {
    if of_impl.is_empty() {
        of_trait
    } else if of_trait.is_empty() {
        of_impl
    } else {
        panic!(
            "controller middleware is named on both the #[api] trait and the #[controller] impl: \
             name it on one of them"
        )
    }
}

/// A controller method's route.
#[doc(hidden)]
pub struct RouteDef {
    pub method: &'static str,
    pub path: &'static str,
    /// The method's name: the handler is `<controller>::<name>`.
    pub name: &'static str,
    pub middleware: &'static [&'static str],
    pub endpoint: EndpointFactory,
    /// Describes the route for the OpenAPI document.
    pub describe: fn(&mut crate::openapi::Operation<'_>),
}

/// Binds a route's generated wrapper to the type-erased controller instance.
#[doc(hidden)]
pub type EndpointFactory = fn(&Arc<dyn Any + Send + Sync>) -> Option<Arc<dyn Endpoint>>;

inventory::collect!(ControllerDef);

/// Builds a controller through [`FromState`], type-erased for the registry.
#[doc(hidden)]
pub fn build_controller<C: FromState>(state: &State) -> Result<Arc<dyn Any + Send + Sync>> {
    Ok(Arc::new(C::from_state(state)?))
}

/// A controller method bound to its controller instance.
struct MethodEndpoint<C> {
    controller: Arc<C>,
    call: for<'a> fn(&'a C, &'a mut Context) -> EndpointFuture<'a>,
}

impl<C: Send + Sync + 'static> Endpoint for MethodEndpoint<C> {
    fn call<'a>(&'a self, ctx: &'a mut Context) -> EndpointFuture<'a> {
        (self.call)(&self.controller, ctx)
    }
}

/// Binds a generated method wrapper to the controller instance; `None` on a type mismatch,
/// which only a bug in the macro could cause.
#[doc(hidden)]
pub fn method_endpoint<C: Send + Sync + 'static>(
    controller: &Arc<dyn Any + Send + Sync>,
    call: for<'a> fn(&'a C, &'a mut Context) -> EndpointFuture<'a>,
) -> Option<Arc<dyn Endpoint>> {
    let controller = Arc::clone(controller).downcast::<C>().ok()?;
    Some(Arc::new(MethodEndpoint { controller, call }))
}

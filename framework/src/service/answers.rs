//! The answers no route gives: 404, the trailing-slash redirect, and 405 with its `Allow`.

use std::sync::Arc;

use http::{HeaderValue, StatusCode, header};

use crate::context::Context;
use crate::error::HttpError;

use super::PlannedRoute;
use crate::handler::{Endpoint, EndpointFuture, endpoint_future};
use crate::route::ROUTER_CATEGORY;

pub(super) struct NotFound;

impl Endpoint for NotFound {
    fn call<'a>(&'a self, _ctx: &'a mut Context) -> EndpointFuture<'a> {
        endpoint_future(async {
            Err(HttpError::with(StatusCode::NOT_FOUND, ROUTER_CATEGORY, "not found").into())
        })
    }
}

/// The 308 of [`TrailingSlash::Redirect`]; the location was put in the context's headers.
pub(super) struct SlashRedirect;

impl Endpoint for SlashRedirect {
    fn call<'a>(&'a self, ctx: &'a mut Context) -> EndpointFuture<'a> {
        ctx.set_status(StatusCode::PERMANENT_REDIRECT);
        endpoint_future(std::future::ready(Ok(())))
    }
}

/// A path's 405: `Allow` set to its methods, then the app's own handler
/// ([`App::method_not_allowed`](crate::App::method_not_allowed)) with the status 405, or the
/// framework's error.
pub(super) struct MethodNotAllowed {
    pub(super) allow: HeaderValue,
    pub(super) handler: Option<Arc<dyn Endpoint>>,
}

impl Endpoint for MethodNotAllowed {
    fn call<'a>(&'a self, ctx: &'a mut Context) -> EndpointFuture<'a> {
        endpoint_future(async move {
            ctx.set_response_header(header::ALLOW, self.allow.clone());
            match &self.handler {
                Some(handler) => {
                    ctx.set_status(StatusCode::METHOD_NOT_ALLOWED);
                    handler.call(ctx).await
                }
                None => Err(HttpError::with(
                    StatusCode::METHOD_NOT_ALLOWED,
                    ROUTER_CATEGORY,
                    "method not allowed",
                )
                .into()),
            }
        })
    }
}

/// The `Allow` header of a path's 405: its methods, with HEAD where GET is.
pub(super) fn allow_header(routes: &[PlannedRoute]) -> Option<HeaderValue> {
    let mut allow: Vec<&str> = routes.iter().map(|r| r.method.as_str()).collect();
    if allow.contains(&"GET") && !allow.contains(&"HEAD") {
        allow.push("HEAD");
    }
    allow.sort_unstable();
    HeaderValue::try_from(allow.join(", ")).ok()
}

//! The built application: routing a request, running its chain, and turning the finished
//! context into the response.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};

use crate::app::TrailingSlash;
use crate::body::{RequestBody, ResponseBody};
use crate::context::Context;
use crate::error::{HttpError, Result};
use crate::handler::{Endpoint, EndpointFuture, Next, endpoint_future};
use crate::route::{AppShared, ROUTER_CATEGORY, Route, RouteInfo};
use crate::router::Router;
use crate::server::ServerLimits;
use crate::state::State;

/// The routes of one path pattern, by method.
#[derive(Default)]
pub(crate) struct CompiledPath {
    pub(crate) methods: Vec<(Method, Arc<Route>)>,
    pub(crate) not_allowed: Option<Arc<Route>>,
}

impl CompiledPath {
    fn for_method(&self, method: &Method) -> Option<&Arc<Route>> {
        let find = |m: &Method| self.methods.iter().find(|(k, _)| k == m).map(|(_, r)| r);
        find(method).or_else(|| {
            if *method == Method::HEAD {
                find(&Method::GET)
            } else {
                None
            }
        })
    }
}

pub(crate) struct NotFound;

impl Endpoint for NotFound {
    fn call<'a>(&'a self, _ctx: &'a mut Context) -> EndpointFuture<'a> {
        endpoint_future(async {
            Err(HttpError::with(StatusCode::NOT_FOUND, ROUTER_CATEGORY, "not found").into())
        })
    }
}

/// The 308 of [`TrailingSlash::Redirect`]; the location was put in the context's headers.
pub(crate) struct SlashRedirect;

impl Endpoint for SlashRedirect {
    fn call<'a>(&'a self, ctx: &'a mut Context) -> EndpointFuture<'a> {
        ctx.set_status(StatusCode::PERMANENT_REDIRECT);
        endpoint_future(std::future::ready(Ok(())))
    }
}

pub(crate) struct MethodNotAllowed {
    pub(crate) allow: HeaderValue,
}

impl Endpoint for MethodNotAllowed {
    fn call<'a>(&'a self, ctx: &'a mut Context) -> EndpointFuture<'a> {
        endpoint_future(async move {
            ctx.set_header(header::ALLOW, self.allow.clone());
            Err(HttpError::with(
                StatusCode::METHOD_NOT_ALLOWED,
                ROUTER_CATEGORY,
                "method not allowed",
            )
            .into())
        })
    }
}

/// A built application: answers requests.
pub struct Service {
    pub(crate) router: Router<CompiledPath>,
    pub(crate) not_found: Arc<Route>,
    pub(crate) redirect: Arc<Route>,
    pub(crate) trailing_slash: TrailingSlash,
    pub(crate) listing: Vec<RouteInfo>,
    pub(crate) shared: Arc<AppShared>,
    pub(crate) limits: ServerLimits,
}

impl Service {
    /// The route table, sorted by path then method.
    pub fn routes(&self) -> &[RouteInfo] {
        &self.listing
    }

    /// The route table as aligned text, one route a line.
    pub fn route_table(&self) -> String {
        let width = self.listing.iter().map(|r| r.path.len()).max().unwrap_or(0);
        self.listing
            .iter()
            .map(|r| format!("{:<7} {:<width$}  {}\n", r.method, r.path, r.handler))
            .collect()
    }

    /// The application state.
    pub fn state(&self) -> &State {
        &self.shared.state
    }

    /// Answers one request: routing, the chain, then the response.
    pub async fn handle(
        &self,
        request: Request<RequestBody>,
        remote_addr: SocketAddr,
    ) -> Response<ResponseBody> {
        let (parts, body) = request.into_parts();
        let mut ctx = self.context(parts, body, remote_addr);
        self.respond(&mut ctx).await
    }

    /// The context of a request.
    #[inline]
    pub(crate) fn context(
        &self,
        parts: http::request::Parts,
        body: RequestBody,
        remote_addr: SocketAddr,
    ) -> Context {
        Context::new(parts, body, remote_addr, Arc::clone(&self.shared))
    }

    /// Routes `ctx`, runs its chain and turns the finished context into the response.
    pub(crate) async fn respond(&self, ctx: &mut Context) -> Response<ResponseBody> {
        let mut found = self.router.find(ctx.path());
        if found.is_none() && self.trailing_slash != TrailingSlash::Strict {
            match self.other_slash_form(ctx) {
                SlashForm::Routed(other) => found = Some(other),
                SlashForm::Redirect => {
                    let result = Next::new(&self.redirect.chain, &*self.redirect.endpoint)
                        .run(ctx)
                        .await;
                    return into_response(ctx, result);
                }
                SlashForm::None => {}
            }
        }
        let route = match found {
            Some(found) => {
                let path = &found.slot.value;
                let route = match path.for_method(ctx.method()) {
                    Some(route) => route,
                    None => path.not_allowed.as_ref().unwrap_or(&self.not_found),
                };
                ctx.set_route(Arc::clone(route), found.params);
                route
            }
            None => &self.not_found,
        };
        let result = Next::new(&route.chain, &*route.endpoint).run(ctx).await;
        into_response(ctx, result)
    }
}

/// What the other trailing-slash form of an unrouted path gives.
enum SlashForm<'r> {
    /// [`TrailingSlash::Ignore`]: the URI now has the other form, which matched.
    Routed(crate::router::Match<'r, CompiledPath>),
    /// [`TrailingSlash::Redirect`]: `Location` is set; answer 308.
    Redirect,
    /// No route either way (or [`TrailingSlash::Strict`]): 404.
    None,
}

impl Service {
    /// For a path with no route: whether its other trailing-slash form has one, and what the
    /// policy does with it. Only runs on what would otherwise be a 404.
    fn other_slash_form(&self, ctx: &mut Context) -> SlashForm<'_> {
        let path = ctx.path();
        let other = match path.strip_suffix('/') {
            Some("") => return SlashForm::None,
            Some(trimmed) => trimmed.to_owned(),
            None => format!("{path}/"),
        };
        // `//host` would be a protocol-relative location, and is no path this app routes.
        if other.starts_with("//") || self.router.find(&other).is_none() {
            return SlashForm::None;
        }
        let target = match ctx.uri().query() {
            Some(query) => format!("{other}?{query}"),
            None => other,
        };
        match self.trailing_slash {
            TrailingSlash::Strict => SlashForm::None,
            TrailingSlash::Redirect => match HeaderValue::try_from(target) {
                Ok(location) => {
                    ctx.set_header(header::LOCATION, location);
                    SlashForm::Redirect
                }
                Err(_) => SlashForm::None,
            },
            TrailingSlash::Ignore => match ctx.set_path_and_query(&target) {
                Ok(()) => self
                    .router
                    .find(ctx.path())
                    .map_or(SlashForm::None, SlashForm::Routed),
                Err(_) => SlashForm::None,
            },
        }
    }
}

/// Turns the finished context into the response.
///
/// An error that reached here (no error handler) becomes its status (500 for a plain error)
/// with the error text as `text/plain`. Otherwise the status is the one set, or 200, and the
/// body is the stream if one was set, else `body_buffer`: a `body` value that no responder
/// converted sends nothing. HEAD answers keep `Content-Length` (a stream's when its length is
/// known) and drop the body, which also releases whatever the stream held open.
fn into_response(ctx: &mut Context, result: Result) -> Response<ResponseBody> {
    let (status, body) = match result {
        Ok(()) => {
            let status = ctx.status().unwrap_or(StatusCode::OK);
            match ctx.take_body_stream() {
                Some(mut stream) => {
                    // The request is over when its body has been sent (a HEAD answer drops
                    // the stream below, and the slots with the context).
                    if ctx.method() != Method::HEAD {
                        let held = ctx.take_held_slots();
                        if !held.is_empty() {
                            stream = stream.with_guard(held);
                        }
                    }
                    (status, ResponseBody::stream(stream))
                }
                None => (
                    status,
                    ResponseBody::full(ctx.body_buffer.take().unwrap_or_default()),
                ),
            }
        }
        Err(err) => {
            ctx.response_headers_mut()
                .insert(header::CONTENT_TYPE, crate::header::TEXT_UTF8);
            (err.status(), ResponseBody::full(Bytes::from(err.text())))
        }
    };
    let body = if ctx.method() == Method::HEAD {
        let headers = ctx.response_headers_mut();
        match &body {
            ResponseBody::Full(bytes) => {
                let len = bytes.as_ref().map_or(0, Bytes::len);
                headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
            }
            ResponseBody::Stream(_) => {
                if let Some(len) = http_body::Body::size_hint(&body).exact()
                    && !headers.contains_key(header::CONTENT_LENGTH)
                {
                    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
                }
            }
        }
        ResponseBody::empty()
    } else {
        body
    };
    let request_id = ctx.take_request_id();
    let mut response = Response::new(body);
    *response.status_mut() = status;
    // Swapped, not moved: the context keeps the empty map the response came with.
    let headers = response.headers_mut();
    std::mem::swap(headers, ctx.response_headers_mut());
    headers.insert(crate::header::X_REQUEST_ID, request_id);
    // The request is over: its header map, emptied, will carry the next response's headers.
    ctx.release_request_headers();
    response
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_context_value_set_again_replaces_the_first() {
        let service = crate::App::new().build().unwrap();
        let (parts, body) = http::Request::new(crate::body::RequestBody::Empty).into_parts();
        let mut ctx = service.context(parts, body, "127.0.0.1:1".parse().unwrap());
        ctx.set_value("a", 1u32);
        ctx.set_value("b", "x");
        ctx.set_value(String::from("a"), 2u32);
        assert_eq!(ctx.value::<u32>("a"), Some(&2));
        assert_eq!(ctx.value::<String>("a"), None);
        assert_eq!(ctx.value_str("b"), Some("x"));
        assert_eq!(ctx.value::<u32>("c"), None);
    }
}

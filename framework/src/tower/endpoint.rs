//! A tower service as the endpoint of a route: [`ServiceEndpoint`], and
//! [`Routes::route_service`] and [`Routes::nest_service`], which mount one.

use http::uri::{PathAndQuery, Uri};

use super::ChainService;
use crate::app::Routes;
use crate::body::RequestBody;
use crate::context::Context;
use crate::handler::{Endpoint, EndpointFuture, endpoint_future};

/// A tower service as an [`Endpoint`]: each request gets a clone of the service (tower's
/// usual way: a service is cloned per call, and cloning a `ServeDir` or an axum `Router` is a
/// reference count), its readiness is awaited, and its response becomes the context's (status,
/// headers, body), which the route's middleware then see on their way out. Its error is
/// answered as a [`layer`](super::layer)'s is: an [`HttpError`](crate::HttpError) as it is,
/// else a 500 in [`TOWER_CATEGORY`](super::TOWER_CATEGORY).
///
/// The request the service gets is the context's: method, URI, version, headers, extensions
/// and the raw body (unread, unless a body parser on the route read it first: then the body
/// is the bytes it read). Mounted with [`Routes::nest_service`], the URI's path is the part
/// after the prefix, as axum's `nest_service` gives it.
pub struct ServiceEndpoint<S> {
    service: S,
    /// The prefix to take off the path, for a nested service.
    strip: Option<Box<str>>,
}

impl<S> ServiceEndpoint<S> {
    /// `service` as an endpoint, seeing the request's path as it is.
    pub fn new(service: S) -> Self {
        Self {
            service,
            strip: None,
        }
    }
}

impl<S> Endpoint for ServiceEndpoint<S>
where
    S: ChainService + Clone + Sync + 'static,
{
    fn call<'a>(&'a self, ctx: &'a mut Context) -> EndpointFuture<'a> {
        let mut request = ctx.take_http_request();
        if !request.body().has_data() && !ctx.request_body().is_empty() {
            // A body parser on the route read the body: the service gets its bytes.
            *request.body_mut() = RequestBody::Full(ctx.request_body().clone());
        }
        if let Some(prefix) = &self.strip {
            *request.uri_mut() = strip_prefix(request.uri(), prefix);
        }
        let service = self.service.clone();
        endpoint_future(async move {
            match service.serve(request).await {
                Ok(mut response) => {
                    if let Some(prefix) = &self.strip {
                        mount_location(response.headers_mut(), prefix);
                    }
                    ctx.put_http_response(response, None)
                }
                Err(failure) => {
                    if let Some(request) = failure.request {
                        ctx.put_http_request(request);
                    }
                    Err(super::layer_error(failure.error))
                }
            }
        })
    }
}

/// A nested service's `Location` in the app's paths: the service saw the path without
/// `prefix`, so an absolute path it answers with (`ServeDir`'s `/sub/` for `GET /files/sub`)
/// is under the prefix (`/files/sub/`), and one that would begin with `//` or `/\` (from
/// `GET /files//sub`) is made a path on this site first. A location with a scheme, or a
/// relative one, is left as it is.
fn mount_location(headers: &mut http::HeaderMap, prefix: &str) {
    let Some(location) = headers.get(http::header::LOCATION) else {
        return;
    };
    let Ok(location) = location.to_str() else {
        return;
    };
    if !location.starts_with(['/', '\\']) {
        return;
    }
    let mounted = format!("{prefix}{}", crate::reply::redirect::on_this_site(location));
    let mounted = crate::reply::redirect::on_this_site(&mounted).into_owned();
    if let Ok(value) = http::HeaderValue::try_from(mounted) {
        headers.insert(http::header::LOCATION, value);
    }
}

/// `uri` with `prefix` taken off its path (`/` when nothing is left), query kept.
fn strip_prefix(uri: &Uri, prefix: &str) -> Uri {
    let path = uri.path().strip_prefix(prefix).unwrap_or(uri.path());
    let path = if path.is_empty() { "/" } else { path };
    let path_and_query = match uri.query() {
        Some(query) => format!("{path}?{query}"),
        None => path.to_owned(),
    };
    let mut parts = uri.clone().into_parts();
    // A suffix of a valid path and its query is a valid path and query.
    parts.path_and_query = PathAndQuery::try_from(path_and_query).ok();
    Uri::from_parts(parts).unwrap_or_else(|_| uri.clone())
}

impl<Scope> Routes<Scope> {
    /// Mounts a tower service (tower-http's `ServeDir`, an axum `Router`, any
    /// `Service<http::Request<RequestBody>>` that is `Clone`) as the endpoint of `path`, for
    /// every method [`any`](Routes::any) takes, with the route's middleware around it (those
    /// of the app and of the group). The service sees the path as it is; see
    /// [`ServiceEndpoint`] for what it gets and how its answer is used. Feature `tower`.
    ///
    /// ```
    /// use framework::App;
    /// use tower_service::Service;
    ///
    /// // Any `Clone` tower service of `http::Request<RequestBody>`.
    /// #[derive(Clone)]
    /// struct Hello;
    /// impl Service<http::Request<framework::body::RequestBody>> for Hello {
    ///     type Response = http::Response<String>;
    ///     type Error = std::convert::Infallible;
    ///     type Future = std::future::Ready<Result<Self::Response, Self::Error>>;
    ///     fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
    ///         std::task::Poll::Ready(Ok(()))
    ///     }
    ///     fn call(&mut self, _: http::Request<framework::body::RequestBody>) -> Self::Future {
    ///         std::future::ready(Ok(http::Response::new("hello".to_owned())))
    ///     }
    /// }
    ///
    /// let app = App::new().route_service("/hello", Hello);
    /// # let _ = app;
    /// ```
    #[must_use]
    pub fn route_service<S>(self, path: &str, service: S) -> Self
    where
        S: ChainService + Clone + Sync + 'static,
    {
        self.any(path, ServiceEndpoint::new(service))
    }

    /// Mounts a tower service under `prefix`: the prefix itself and every path below it
    /// (`{prefix}/*`), for every method [`any`](Routes::any) takes, with the route's
    /// middleware around it. The service sees the path without the prefix (`/api/users` →
    /// `/users`, `/api` → `/`), as with axum's `nest_service`; a trailing `/` on `prefix` is
    /// ignored. A `Location` the service answers with that is an absolute path is in the
    /// service's paths, so it is put under the prefix (`ServeDir`'s redirect of
    /// `GET /api/docs` to `/docs/` reaches the client as `/api/docs/`), and never begins with
    /// `//` or `/\`, which a browser reads as another host. Feature `tower`.
    #[must_use]
    pub fn nest_service<S>(self, prefix: &str, service: S) -> Self
    where
        S: ChainService + Clone + Sync + 'static,
    {
        let prefix = prefix.trim_end_matches('/');
        let endpoint = |service| ServiceEndpoint {
            service,
            strip: Some(prefix.into()),
        };
        let root = if prefix.is_empty() { "/" } else { prefix };
        self.any(root, endpoint(service.clone()))
            .any(&format!("{prefix}/*"), endpoint(service))
    }
}

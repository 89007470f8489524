//! tower both ways (feature `tower`): any tower [`Layer`](tower_layer::Layer) as middleware,
//! any tower [`Service`] as an endpoint, and the app as a tower
//! `Service`.
//!
//! - [`layer`] makes a [`Middleware`](crate::Middleware) of a layer (tower-http's `TraceLayer`,
//!   `CorsLayer`, `CompressionLayer`, `TimeoutLayer`, `RequestDecompressionLayer`…): it wraps
//!   the rest of the chain, in the request's own task.
//! - [`App::route_service`](crate::App::route_service) and
//!   [`App::nest_service`](crate::App::nest_service) (and the same on
//!   [`Group`](crate::Group)) mount a service (tower-http's `ServeDir`, an axum `Router`) as
//!   the endpoint of a route, with the route's middleware around it.
//! - [`AppService`] is the built app as a service of `http::Request<B>` for any body of
//!   `Bytes`: wrapped in tower-http layers, nested in an axum `Router` (`nest_service`), served
//!   by hyper-util's server. The peer address and TLS come from the request's
//!   [`ConnectInfo`] extension when the host puts one there.
//!
//! ```
//! use framework::{App, Context};
//! use tower_layer::layer_fn;
//!
//! let service = App::new()
//!     // A layer as middleware (here one that adds nothing).
//!     .use_middleware(framework::tower::layer(layer_fn(|inner| inner)))
//!     .get("/hello", |_ctx: &mut Context| async { Ok("hello") })
//!     .build()
//!     .expect("app builds");
//! // The app as a tower service, for a tower-based host.
//! let tower_service = framework::tower::AppService::new(service);
//! # let _ = tower_service;
//! ```
//!
//! The guide's [tower chapter](crate::guide::tower) shows each with tower-http and axum, and
//! the same service written for axum and for this framework, layer by layer.

mod app;
mod endpoint;
mod layer;

use std::future::Future;

use bytes::Bytes;
use http::StatusCode;
use http_body::Body;
use http_body_util::BodyExt;
use tower_service::Service;

pub use app::{AppService, ConnectInfo};
pub use endpoint::ServiceEndpoint;
pub use layer::{Rest, RestFuture, TowerLayer, layer};

use crate::body::{BoxError, RequestBody, ResponseBody};
use crate::error::{Error, HttpError};

/// The error category of a layer's or a service's error that is not an [`HttpError`].
pub const TOWER_CATEGORY: &str = "framework-tower";

/// A tower service of `http::Request<RequestBody>` the framework can call: any
/// [`Service`] whose response is an `http::Response` of a body of `Bytes` and whose error is
/// an error. Implemented for every such service; it names the bounds once, for
/// [`TowerLayer`] and [`ServiceEndpoint`].
pub trait ChainService: Send {
    /// Waits until the service is ready, calls it, and gives its response with the body as a
    /// [`ResponseBody`] (kept as it is when it is one, else boxed).
    fn serve(
        self,
        request: http::Request<RequestBody>,
    ) -> impl Future<Output = Result<http::Response<ResponseBody>, Failure>> + Send;
}

/// Why a service gave no response: its error, and the request when it failed before it was
/// called (not ready), so the context can have it back.
pub struct Failure {
    error: BoxError,
    request: Option<http::Request<RequestBody>>,
}

impl std::fmt::Debug for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Failure")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl<S, B> ChainService for S
where
    S: Service<http::Request<RequestBody>, Response = http::Response<B>> + Send,
    S::Future: Send,
    S::Error: Into<BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    async fn serve(
        self,
        request: http::Request<RequestBody>,
    ) -> Result<http::Response<ResponseBody>, Failure> {
        match ready_then_call(self, request).await {
            Ok(response) => Ok(response.map(response_body)),
            Err((error, request)) => Err(Failure {
                error: error.into(),
                request,
            }),
        }
    }
}

/// The ready-then-call of a service, as one future.
async fn ready_then_call<S, R>(
    mut service: S,
    request: R,
) -> Result<S::Response, (S::Error, Option<R>)>
where
    S: Service<R>,
{
    if let Err(error) = std::future::poll_fn(|cx| service.poll_ready(cx)).await {
        return Err((error, Some(request)));
    }
    service.call(request).await.map_err(|error| (error, None))
}

/// A service's response body as the framework's: as it is when it is one, else boxed.
fn response_body<B>(body: B) -> ResponseBody
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    crate::downcast::try_downcast::<ResponseBody, B>(body)
        .unwrap_or_else(|body| ResponseBody::Stream(Box::pin(body.map_err(Into::into))))
}

/// A layer's or a service's error as the chain's: an [`HttpError`] as it is, any other a 500
/// in [`TOWER_CATEGORY`] with the error's text.
fn layer_error(error: BoxError) -> Error {
    match error.downcast::<HttpError>() {
        Ok(http) => (*http).into(),
        Err(error) => HttpError::with(
            StatusCode::INTERNAL_SERVER_ERROR,
            TOWER_CATEGORY,
            error.to_string(),
        )
        .with_exception(true)
        .into(),
    }
}

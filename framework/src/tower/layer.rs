//! A tower [`Layer`] as middleware: [`layer`], [`TowerLayer`], and [`Rest`], the inner service
//! the layer wraps, which hands each request back to the chain it came from.

use std::convert::Infallible;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context as TaskContext, Poll, Waker};

use bytes::Bytes;
use http_body::Body;
use tower_layer::Layer;
use tower_service::Service;

use super::ChainService;
use crate::body::{BoxError, RequestBody, ResponseBody};
use crate::context::Context;
use crate::error::Result;
use crate::handler::{BoxFuture, Middleware, Next};

/// A tower [`Layer`] mounted as middleware: made by [`layer`].
///
/// The layer is applied once, when it is mounted, to [`Rest`]; each request calls a clone of
/// the service it made (tower's way: cloning a tower-http service is a few reference counts),
/// in the request's own task: no `Buffer`, no channel to another task, no task of its own.
/// When the layer calls its inner service, the request is handed back to this middleware,
/// which runs the rest of the chain on the context and hands the response back to the
/// layer's future; both are polled by the request's task. The service's readiness
/// (`poll_ready`) is awaited first, so a layer that limits concurrency makes the request wait
/// without blocking the worker, and state the layer keeps (tower's `ConcurrencyLimitLayer`,
/// `RateLimitLayer`) is shared by the requests of every route it is mounted on.
pub struct TowerLayer<S> {
    service: S,
}

/// `layer`, any tower [`Layer`] of [`Rest`], as a [`Middleware`]: it mounts as any other
/// middleware does ([`App::use_middleware`](crate::App::use_middleware),
/// [`use_when`](crate::App::use_when), by name in `#[controller(middleware(..))]` through
/// [`App::register_middleware`](crate::App::register_middleware)), and wraps the rest of the
/// chain as its inner service.
///
/// What the layer sees and what it changes:
///
/// - **The request** is an `http::Request<RequestBody>` made from the context: method, URI,
///   version, headers, extensions and the raw body. The request the rest of the chain sees is
///   the one the layer passes on: headers it set, extensions it added, a URI it rewrote, a
///   body it wrapped (a decompressing or size-limited body comes through as
///   [`RequestBody::Stream`](crate::body::RequestBody::Stream), read by the body parser as any
///   other). A layer that rewrites the path does not route the request again: the route's
///   params are gone, since they were read from the path the route matched.
/// - **The response** the layer sees is the rest of the chain's: status, headers, and the
///   body as bytes or a stream. Mounted on the app, the layer is outside the error handler and
///   the responder (see [`crate::middleware::defaults`]) and sees the answer as the client
///   will; mounted on a route, it is inside them: a handler's value not yet turned into bytes
///   reaches the layer as an empty body (the responder outside fills it, so a compression layer
///   belongs on the app, where the framework's own compress goes), and an error reaches it as
///   an empty response of the error's status which, if the layer passes it on, goes back out
///   as the error itself, with the headers the layer added, for the error handler to answer.
///   What the layer changes in the response (headers, status, a wrapped body) goes on
///   outwards.
/// - **The layer's own error** (a `tower::timeout` that elapsed, a refused load) is answered
///   through the error handler: an [`HttpError`](crate::HttpError) as it is, any other error as
///   a 500 ([`TOWER_CATEGORY`](super::TOWER_CATEGORY), with the error's text). Turn an error
///   into another status with tower's `MapErrLayer` (into an `HttpError`) or
///   `HandleErrorLayer`.
/// - A layer that answers without calling the rest of the chain (a CORS preflight) keeps the
///   request: the middleware outside it then see the request without its headers.
/// - The rest of the chain runs in the request's task: a layer that calls its inner service
///   from another task (tower's `Buffer`) still works, at the cost of that hop.
///
/// ```
/// use framework::App;
/// use tower_layer::layer_fn;
///
/// // Any `Layer`: here one that passes the service on unchanged.
/// let app = App::new().use_middleware(framework::tower::layer(layer_fn(|service| service)));
/// # let _ = app;
/// ```
pub fn layer<L>(layer: L) -> TowerLayer<L::Service>
where
    L: Layer<Rest>,
    TowerLayer<L::Service>: Middleware,
{
    TowerLayer {
        service: layer.layer(Rest { _private: () }),
    }
}

/// The rest of a chain as a tower [`Service`]: what [`layer`] gives the layer to wrap. Its
/// call hands the request (as the layer changed it) back to the [`TowerLayer`] it came from,
/// which runs the rest of the chain and hands the response back. Always ready.
///
/// A request that did not come from a `TowerLayer` (a layer that made a new request, or called
/// it twice) is answered 500.
#[derive(Debug, Clone)]
pub struct Rest {
    _private: (),
}

/// One request's way through a layer: the request the layer passes on, then the response the
/// chain made. Shared by the middleware and [`Rest`]'s future through the request's
/// extensions.
struct Exchange(Mutex<Handover>);

enum Handover {
    /// The layer has not called the inner service yet; the waker is the middleware's task's,
    /// for a layer that calls it from another task.
    Waiting(Option<Waker>),
    /// The layer called it: the request, for the chain, and the waker of [`Rest`]'s future
    /// if it was polled before the middleware took the request.
    Request(http::Request<RequestBody>, Option<Waker>),
    /// The chain is running; the waker is the one of the task polling [`Rest`]'s future.
    Running(Option<Waker>),
    /// The chain's response, for the layer.
    Response(http::Response<ResponseBody>),
    /// Handed over.
    Done,
}

/// The exchange, as a request extension.
#[derive(Clone)]
struct ExchangeHandle(Arc<Exchange>);

impl Exchange {
    fn new() -> Self {
        Self(Mutex::new(Handover::Waiting(None)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Handover> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The request the layer passed on, if it called the inner service; else `waker` is
    /// woken when it does.
    fn take_request(&self, waker: &Waker) -> Option<http::Request<RequestBody>> {
        // Matched in place: the state holds a whole request or response, not moved for a look.
        let mut handover = self.lock();
        match &mut *handover {
            Handover::Request(_, rest_waker) => {
                let rest_waker = rest_waker.take();
                match std::mem::replace(&mut *handover, Handover::Running(rest_waker)) {
                    Handover::Request(request, _) => Some(request),
                    _ => None,
                }
            }
            Handover::Waiting(stored) => {
                if !stored.as_ref().is_some_and(|w| w.will_wake(waker)) {
                    *stored = Some(waker.clone());
                }
                None
            }
            _ => None,
        }
    }

    /// Hands the chain's response to [`Rest`]'s future, and wakes it if it waits.
    fn respond(&self, response: http::Response<ResponseBody>) {
        let mut handover = self.lock();
        let waker = match &mut *handover {
            Handover::Running(waker) => waker.take(),
            _ => None,
        };
        *handover = Handover::Response(response);
        drop(handover);
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Forgets the waker of [`Rest`]'s future when it is `ours`: the middleware polls that
    /// future itself next, and a wake of its own task would only poll the connection again
    /// for nothing.
    fn forget_own_waker(&self, ours: &Waker) {
        if let Handover::Running(waker) = &mut *self.lock()
            && waker.as_ref().is_some_and(|w| w.will_wake(ours))
        {
            *waker = None;
        }
    }
}

/// [`Rest`]'s future: the chain's response, once the middleware hands it over.
pub struct RestFuture(Option<Arc<Exchange>>);

impl Future for RestFuture {
    type Output = std::result::Result<http::Response<ResponseBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let Some(exchange) = &self.0 else {
            return Poll::Ready(Ok(not_from_a_layer()));
        };
        let mut handover = exchange.lock();
        let waiting = match &mut *handover {
            Handover::Running(waker) | Handover::Request(_, waker) => waker,
            Handover::Response(_) => {
                return match std::mem::replace(&mut *handover, Handover::Done) {
                    Handover::Response(response) => Poll::Ready(Ok(response)),
                    _ => Poll::Ready(Ok(not_from_a_layer())),
                };
            }
            // The response was already given.
            Handover::Waiting(_) | Handover::Done => return Poll::Ready(Ok(not_from_a_layer())),
        };
        if !waiting.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            *waiting = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl std::fmt::Debug for RestFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RestFuture")
    }
}

/// A 500 for a call [`Rest`] cannot answer.
fn not_from_a_layer() -> http::Response<ResponseBody> {
    let mut response = http::Response::new(ResponseBody::full(Bytes::from_static(
        b"the rest of the chain was called without a request of its own",
    )));
    *response.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
    response
}

impl<B> Service<http::Request<B>> for Rest
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<ResponseBody>;
    type Error = Infallible;
    type Future = RestFuture;

    fn poll_ready(
        &mut self,
        _cx: &mut TaskContext<'_>,
    ) -> Poll<std::result::Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> RestFuture {
        let (mut parts, body) = request.into_parts();
        let Some(ExchangeHandle(exchange)) = parts.extensions.remove::<ExchangeHandle>() else {
            return RestFuture(None);
        };
        let request = http::Request::from_parts(parts, RequestBody::from_body(body));
        let waker = {
            let mut handover = exchange.lock();
            let Handover::Waiting(waker) = &mut *handover else {
                // Called a second time: the first call's state stays.
                return RestFuture(None);
            };
            let waker = waker.take();
            *handover = Handover::Request(request, None);
            waker
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        RestFuture(Some(exchange))
    }
}

impl<S> Middleware for TowerLayer<S>
where
    S: ChainService + Clone + Sync + 'static,
{
    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        Box::pin(async move {
            let exchange = Arc::new(Exchange::new());
            let mut request = ctx.take_http_request();
            request
                .extensions_mut()
                .insert(ExchangeHandle(Arc::clone(&exchange)));
            let mut layered = pin!(self.service.clone().serve(request));
            // Until the layer calls the rest of the chain, or answers without it.
            let called = std::future::poll_fn(|cx| {
                if let Poll::Ready(served) = layered.as_mut().poll(cx) {
                    return Poll::Ready(Err(served));
                }
                match exchange.take_request(cx.waker()) {
                    Some(request) => Poll::Ready(Ok(request)),
                    None => Poll::Pending,
                }
            })
            .await;
            let mut chain_error = None;
            let served = match called {
                Err(served) => served,
                Ok(request) => {
                    ctx.put_http_request(request);
                    // The chain, while the layer's future may still answer first (a timeout).
                    let ran = {
                        let mut chain = pin!(next.run(ctx));
                        std::future::poll_fn(|cx| {
                            if let Poll::Ready(served) = layered.as_mut().poll(cx) {
                                return Poll::Ready(Err(served));
                            }
                            let ran = chain.as_mut().poll(cx);
                            if ran.is_ready() {
                                exchange.forget_own_waker(cx.waker());
                            }
                            ran.map(Ok)
                        })
                        .await
                    };
                    match ran {
                        Err(served) => served,
                        Ok(result) => {
                            let (response, error) = ctx.take_http_response(result);
                            chain_error = error;
                            exchange.respond(response);
                            layered.await
                        }
                    }
                }
            };
            match served {
                Ok(response) => ctx.put_http_response(response, chain_error),
                Err(failure) => {
                    if let Some(mut request) = failure.request {
                        request.extensions_mut().remove::<ExchangeHandle>();
                        ctx.put_http_request(request);
                    }
                    Err(super::layer_error(failure.error))
                }
            }
        })
    }
}

#![doc = include_str!("../README.md")]

pub mod app;
#[cfg(feature = "static-serve")]
mod blocking_file;
pub mod body;
#[cfg(feature = "client")]
pub mod client;
pub mod client_ip;
pub mod conditional;
mod config;
pub mod connection;
pub mod context;
mod controller;
pub mod cookies;
mod data;
mod downcast;
pub mod error;
pub mod extract;
pub mod guide;
pub mod handler;
pub mod header;
mod ids;
mod limits;
pub mod listener;
pub mod middleware;
#[cfg(feature = "multipart")]
pub mod multipart;
pub mod negotiation;
pub mod openapi;
pub mod origin;
#[cfg(any(
    feature = "session-redis",
    feature = "limiter-redis",
    feature = "cache-redis",
    feature = "ws-redis"
))]
pub mod redis_connection;
pub mod reply;
#[cfg(feature = "static-serve")]
pub mod representation;
pub mod request_key;
mod route;
/// The route table: public for the router benchmarks and allocation test, not part of the API.
#[doc(hidden)]
pub mod router;
#[cfg(feature = "server")]
mod server;
mod service;
pub mod slot;
pub mod state;
pub mod telemetry;
pub mod testing;
#[cfg(feature = "tls")]
pub mod tls;
#[cfg(feature = "tower")]
pub mod tower;
pub mod validate;
mod view;
#[cfg(feature = "websocket")]
pub mod ws;

pub use app::{App, BuildError, Group, RouteInfo, Routes, Service, TrailingSlash};
pub use context::Context;
pub use error::{Error, HttpError, Result};
pub use framework_macros::{
    FromState, Validate, api, controller, delete, get, head, options, patch, post, put, validator,
};
pub use handler::{
    Before, BoxFuture, ENDPOINT_FUTURE_INLINE, Endpoint, EndpointFuture, IntoReply, Middleware,
    Next, Role, SharedMiddleware, When, endpoint_future, from_fn, handle_with_hooks, handler_fn,
    share, when,
};
/// The `http` crate the API is written in (methods, status codes, header names and values),
/// re-exported: `framework::http::StatusCode` is always the version the framework uses.
pub use http;
pub use limits::{HttpVersions, MinDataRate, ServerLimits, default_max_connections};
pub use reply::Reply;
/// The `schemars` crate the OpenAPI document is built with: a type the document describes
/// derives `schemars::JsonSchema` of this version (`schemars = "1"`).
pub use schemars;
#[cfg(feature = "server")]
pub use server::shutdown_signal;
pub use state::{FromState, State};
pub use validate::Validate;
pub use view::RequestView;

/// What a handler or middleware module usually imports: the core types and every feature's
/// extension trait on [`Context`] (`ctx.cookies()`, `ctx.real_ip()`, `ctx.session()`, …).
///
/// ```
/// use framework::prelude::*;
///
/// async fn hello(ctx: &mut Context) -> Result<String> {
///     let theme = ctx.cookies().value("theme").unwrap_or("light").to_owned();
///     Ok(format!("{theme} for {}", ctx.real_ip()))
/// }
/// # let _ = hello;
/// ```
pub mod prelude {
    pub use crate::client_ip::ClientIpExt;
    pub use crate::cookies::CookiesExt;
    pub use crate::middleware::csrf::CsrfExt;
    pub use crate::middleware::logger::LogFieldsExt;
    pub use crate::middleware::session::SessionExt;
    pub use crate::middleware::trace::TraceExt;
    #[cfg(feature = "websocket")]
    pub use crate::ws::WebSocketExt;
    pub use crate::{App, Context, Error, HttpError, IntoReply, Middleware, Result, http};
}

/// Its input when the `client` feature is on, nothing otherwise: the typed client `#[api]`
/// generates exists only with the client runtime.
#[cfg(feature = "client")]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_client {
    ($($item:tt)*) => { $($item)* };
}

/// Its input when the `client` feature is on, nothing otherwise: the typed client `#[api]`
/// generates exists only with the client runtime.
#[cfg(not(feature = "client"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_client {
    ($($item:tt)*) => {};
}

/// What the macros expand to. Not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::__if_client as if_client;
    pub use crate::controller::{
        ApiDef, ControllerDef, EndpointFactory, RouteDef, api_middleware, build_controller,
        method_endpoint,
    };
    pub use crate::extract::{FromContext, FromRequest, Source, optional, required, state};
    pub use crate::handler::{
        BoxFuture, EndpointFuture, endpoint_future, finish, finish_found, finish_found_value,
        finish_value, returned,
    };
    pub use crate::state::field as state_field;
    pub use crate::validate::{
        JsonMap, NamedValidator, ViaPlainFunction, ViaValidatorSchema, charset_pattern, constrain,
        constrain_property, failure, rules,
    };
    pub use inventory;
    pub use serde_json::{Value as JsonValue, json};
    /// The OpenAPI description the macros write.
    pub mod openapi {
        pub use crate::extract::{NotFromRequest, ViaFromRequest};
        pub use crate::openapi::{
            Operation, Probe, ViaDescribeReply, ViaNoReads, ViaNoReplySchema, ViaNothing, ViaReads,
            ViaReadsSchema, ViaReplySchema, ViaSchema, string_schema,
        };
    }
}

//! The guide: from a first app to several instances sharing PostgreSQL and Redis, one chapter
//! per module. The chapters are the Markdown files in `framework/docs/`, pulled in with
//! `include_str!`, so every code block in them is compiled and run by `cargo test --doc`.
//!
//! 1. [Getting started](getting_started): a route, a server, a test.
//! 2. [Controllers and routing](controllers_and_routing): paths, groups, `#[controller]`,
//!    `#[derive(FromState)]`, what a handler may return.
//! 3. [Middleware](middleware): `from_fn`, the `Middleware` trait, the onion order.
//! 4. [Validation](validation): `#[derive(Validate)]`, built-in rules, custom validators,
//!    `ctx.bind()`.
//! 5. [Errors](errors): `HttpError`, `?`, JSON or text answers, panics.
//! 6. [State](state): `App::with_state`, `FromState`, what is shared and how.
//! 7. [Sessions](sessions): the session middleware, in memory or in Redis.
//! 8. [Testing](testing): `TestClient`, a real socket, tests that need a database.
//! 9. [Deployment](deployment): PostgreSQL, Redis, proxies, shutdown, server limits, HTTPS and
//!    client certificates (mTLS), HTTPS only, Unix sockets and socket activation, health,
//!    metrics, traces.
//! 10. [Streaming](streaming): `BodyStream`, the crates it needs (re-exported), what it holds;
//!     server-sent events (`Sse`) and JSON lines (`JsonLines`).
//! 11. [Typed handlers and API docs](typed_handlers): arguments made from the request (`Json`,
//!     `Query`, path parameters by name, headers, state, the session), what the compiler
//!     catches, what it costs; the OpenAPI document built from them.
//! 12. [WebSockets](websockets) (feature `websocket`): taking a connection over, which pages
//!     may connect, limits and close codes.
//! 13. [Redirects and files](redirects_and_files): `Redirect` (and `Redirect::local` for a
//!     target from the request), `NamedFile` and `Attachment` with ranges, conditional requests
//!     and `Content-Disposition`.
//! 14. [File uploads](uploads) (feature `multipart`): `multipart/form-data` read part by part,
//!     files to temporary files or any sink, the limits, the API document, serving the bytes
//!     back.
//! 15. [Cookies](cookies): the cookie jar, every attribute, prefixes, signed and private
//!     cookies, keys and their rotation.
//! 16. [tower both ways](tower) (feature `tower`): any tower layer as middleware, any tower
//!     service as an endpoint, the app as a tower service.
//! 17. [Coming from axum](coming_from_axum) (feature `tower`): the same service written both
//!     ways, what maps to what, moving over a route at a time.
//! 18. [API crates and clients](api_crates_and_clients) (feature `client`): routes declared
//!     once on an `#[api]` trait in a crate without the server, implemented by a controller,
//!     and the typed client generated from the same declaration.
//!
//! Runnable programs for each idea are in the repository's `examples/` folder.

#[doc = include_str!("../docs/01-getting-started.md")]
pub mod getting_started {}

#[doc = include_str!("../docs/02-controllers-and-routing.md")]
pub mod controllers_and_routing {}

#[doc = include_str!("../docs/03-middleware.md")]
pub mod middleware {}

#[doc = include_str!("../docs/04-validation.md")]
pub mod validation {}

#[doc = include_str!("../docs/05-errors.md")]
pub mod errors {}

#[doc = include_str!("../docs/06-state.md")]
pub mod state {}

#[doc = include_str!("../docs/07-sessions.md")]
pub mod sessions {}

#[doc = include_str!("../docs/08-testing.md")]
pub mod testing {}

#[doc = include_str!("../docs/09-deployment.md")]
pub mod deployment {}

#[doc = include_str!("../docs/10-streaming.md")]
pub mod streaming {}

#[doc = include_str!("../docs/11-typed-handlers.md")]
pub mod typed_handlers {}

#[cfg(feature = "websocket")]
#[doc = include_str!("../docs/12-websockets.md")]
pub mod websockets {}

#[cfg(feature = "static-serve")]
#[doc = include_str!("../docs/13-redirects-and-files.md")]
pub mod redirects_and_files {}
#[cfg(feature = "multipart")]
#[doc = include_str!("../docs/14-uploads.md")]
pub mod uploads {}

#[doc = include_str!("../docs/15-cookies.md")]
pub mod cookies {}

#[cfg(feature = "tower")]
#[doc = include_str!("../docs/16-tower.md")]
pub mod tower {}

#[cfg(feature = "tower")]
#[doc = include_str!("../docs/17-coming-from-axum.md")]
pub mod coming_from_axum {}

#[cfg(feature = "client")]
#[doc = include_str!("../docs/18-api-crates-and-clients.md")]
pub mod api_crates_and_clients {}

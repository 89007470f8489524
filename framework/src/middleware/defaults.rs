//! What [`App::new`] adds: [`Recover`] and the error handler on every request, the responder
//! on every handler and controller route, the body parser (JSON and forms) on the controller routes
//! that take `Json<T>` or `Form<T>`, and every linked `#[controller]` mounted, so an app that
//! leaves out every middleware is a working JSON API, as it is with axum, poem or salvo.
//! [`App::bare`] starts empty instead.
//!
//! | default | on | as |
//! |---|---|---|
//! | [`Recover`] | every request, outermost | `Recover::default()`: a panic in a handler or any middleware is a 500 `framework-recover` (`internal server error`, never the panic's text) and an error event in `tracing` with the request id, not a connection dropped without an answer; its answer passes through no middleware (mount one yourself inside those that should see it) |
//! | [`ErrorHandler`] | every request (404 and 405 answers too) | `ErrorHandler::default()`: JSON for clients that accept it, else text |
//! | [`Responder`] | handler and controller routes | `Responder::default()`: text, bytes, JSON; a handler that answers nothing at all gets its 500 `invalid response` |
//! | [`BodyParser`] | controller routes taking `Json<T>` or `Form<T>` | `BodyParser::default()` plus [`FormDecoder`]: JSON and `application/x-www-form-urlencoded`, in any content coding compiled in (gzip, deflate, br, zstd), 50 KiB |
//!
//! Every other route keeps its request body unread: a plain handler reads it raw
//! ([`Context::take_raw_body`](crate::Context::take_raw_body)) or mounts a body parser to call
//! [`Context::bind`](crate::Context::bind) (without one, `bind` answers a 500 naming it), and
//! an [`Endpoint`](crate::Endpoint) (a proxy, static files) gets its stream as it comes.
//!
//! The defaults take their places in the [reference order](crate::guide::middleware): inside
//! the middleware you mount on the app (so a logger sees the error handler's status, and
//! compress and etag the responder's bytes), and around a `response_size_limiter`,
//! `json_picker` or `renderer` you mount (they belong between the error handler, the responder
//! and the body parser). A component you mount yourself anywhere in a route's chain (your
//! `Responder` with a pretty marshaller, your `BodyParser` with a 1 MiB limit) replaces its
//! default: a middleware says which component it is through
//! [`Middleware::role`](crate::Middleware::role), so one of your own that does a component's
//! job can say so too.
//!
//! A bare app gets nothing it did not ask for, and [`App::build`] refuses a route that needs a
//! component its chain lacks: a handler that returns a value (not `()`, a `BodyStream` or
//! `NoContent`) with no responder (or renderer), a controller method taking `Json<T>` or
//! `Form<T>` with no body parser. The [`BuildError`](crate::BuildError) names the route and
//! the middleware to add. (A `()` handler that sets a value through the context,
//! `ctx.created(value)`, needs a responder too; the build cannot see that one.)
//!
//! ```
//! use framework::{App, Context, Result};
//!
//! #[derive(serde::Serialize)]
//! struct Health {
//!     ok: bool,
//! }
//!
//! async fn health(_ctx: &mut Context) -> Result<Health> {
//!     Ok(Health { ok: true })
//! }
//!
//! // Error handler, responder and body parser included: `{"ok":true}`.
//! let service = App::new().get("/health", health).build().unwrap();
//! # let _ = service;
//!
//! // Empty: the same route is refused, naming the responder to add.
//! let refused = App::bare().get("/health", health).build().err().unwrap();
//! assert!(refused.to_string().contains("Responder"), "{refused}");
//! ```

use crate::app::App;
use crate::handler::{SharedMiddleware, share};
use crate::middleware::body_parser::{
    BodyParser, BodyParserConfig, FormDecoder, JsonDecoder, json_and_form_content_type,
};
use crate::middleware::error_handler::ErrorHandler;
use crate::middleware::recover::Recover;
use crate::middleware::responder::Responder;

impl App {
    /// An app with recover, the error handler, the responder and the body parser (JSON and
    /// forms) on the routes that need them, and every `#[controller]` linked into the program mounted:
    /// see [`crate::middleware::defaults`] for where each goes and how to replace one.
    /// [`App::bare`] starts empty.
    pub fn new() -> Self {
        Self::bare().mount_controllers().with_defaults(defaults)
    }
}

impl Default for App {
    /// [`App::new`].
    fn default() -> Self {
        Self::new()
    }
}

/// The default components, in reference order.
fn defaults() -> Vec<SharedMiddleware> {
    let parser = BodyParser::new(BodyParserConfig {
        content_type_validate: json_and_form_content_type,
        accept: "application/json, application/x-www-form-urlencoded",
        ..BodyParserConfig::default()
    });
    let parser = parser
        .add_content_decoders()
        .add_decoder(JsonDecoder)
        .add_decoder(FormDecoder);
    vec![
        share(Recover::default()),
        share(ErrorHandler::default()),
        share(Responder::default()),
        share(parser),
    ]
}

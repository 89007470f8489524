//! Catches a panic anywhere inside it and answers 500 instead of dropping the connection.
//!
//! The answer is category `framework-recover`, `exception: true`, message
//! `internal server error`, as JSON or text exactly like the error handler would write it. The
//! panic text goes to the `on_panic` hook (default: an error event in `tracing`), never to the
//! client. The server keeps serving. Put it first, so it wraps everything else.
//!
//! Streams: a panic in the chain, before the stream starts, is answered as above and a stream
//! already set is dropped. A panic while the stream is being polled (after the chain returned)
//! ends that connection; other connections are not affected.
//!
//! ```
//! use framework::middleware::recover::Recover;
//!
//! let app = framework::App::new().use_middleware(Recover::default());
//! # let _ = app;
//! ```

use std::any::Any;
use std::sync::Arc;

use http::StatusCode;

use crate::context::Context;
use crate::error::{HttpError, Result};
use crate::handler::{Before, Middleware};
use crate::middleware::error_handler::write_error;
use crate::view::RequestView;

/// Category of recovered panics.
pub const CATEGORY: &str = "framework-recover";

/// Called with the panic text and a view of the request that panicked.
pub type OnPanic = Arc<dyn Fn(&str, &RequestView) + Send + Sync>;

/// Recover settings.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct RecoverConfig {
    /// Receives the panic text (default: logged with `tracing::error!`).
    pub on_panic: Option<OnPanic>,
}

crate::config::setters!(RecoverConfig {
    on_panic: Option<OnPanic>,
});

/// The recover middleware.
#[derive(Clone, Default)]
pub struct Recover {
    config: RecoverConfig,
}

impl Recover {
    /// A recover middleware with `config`.
    pub fn new(config: RecoverConfig) -> Self {
        Self { config }
    }
}

fn panic_text(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&'static str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("panic with a non-text payload")
}

/// The chain catches the panics of the rest for it ([`Before::CatchPanic`]): no future of
/// its own.
impl Middleware for Recover {
    fn before(&self, _ctx: &mut Context) -> Before {
        Before::CatchPanic
    }

    /// [`App::new`](crate::App::new) puts a default one on every route, outside every
    /// middleware; one mounted anywhere in a route's chain replaces it.
    fn role(&self) -> Option<crate::handler::Role> {
        Some(crate::handler::Role::Recover)
    }

    fn recovered(&self, ctx: &mut Context, payload: Box<dyn Any + Send>) -> Result {
        // The response (status, headers, body) is reset below, so nothing of what the
        // panicking code had written of it goes out; values and the session stay as it left
        // them (see `Middleware::recovered`).
        let text = panic_text(&*payload);
        match &self.config.on_panic {
            Some(hook) => hook(text, &ctx.view()),
            None => tracing::error!(
                request_id = ctx.request_id(),
                panic = text,
                "handler panicked"
            ),
        }
        ctx.reset_response();
        let err = HttpError::with(
            StatusCode::INTERNAL_SERVER_ERROR,
            CATEGORY,
            "internal server error",
        )
        .with_exception(true);
        write_error(ctx, &err, false);
        Ok(())
    }
}

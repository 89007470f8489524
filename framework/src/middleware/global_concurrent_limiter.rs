//! Caps how many requests the whole app handles at once.
//!
//! At most `max` requests run at the same time; request `max + 1` is answered **429** `too many
//! requests`, category `framework-global-concurrent-limiter` (the Go reference let `max + 1`
//! through). The count is one atomic, no lock. A request's slot is freed when it ends in any
//! way — success, error, panic, or the client going away and the request being dropped —
//! because a guard's `Drop` frees it; for a streamed response the slot is held until the body
//! has been sent. The slot is taken in `before` and held by the context until the whole
//! request ends (the middleware outside this one included), so the limiter needs no future of
//! its own; a middleware outside it that runs the rest of the chain twice (a retry) takes a
//! second slot while the first is held.
//!
//! ```
//! use framework::middleware::global_concurrent_limiter::{
//!     GlobalConcurrentLimiter, GlobalConcurrentLimiterConfig,
//! };
//!
//! let limiter = GlobalConcurrentLimiter::new(GlobalConcurrentLimiterConfig::default()
//!     .max(1000));
//! let app = framework::App::new().use_middleware(limiter);
//! # let _ = app;
//! ```

use std::sync::Arc;
use std::sync::atomic::AtomicU32;

use http::StatusCode;

use crate::context::Context;
use crate::error::HttpError;
use crate::handler::{Before, Middleware};
use crate::slot::Slots;

/// Category of rejections.
pub const CATEGORY: &str = "framework-global-concurrent-limiter";

/// Global concurrent limiter settings.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct GlobalConcurrentLimiterConfig {
    /// Requests allowed at once. Default 10 000 (anything above it is refused, not queued).
    pub max: u32,
}

crate::config::setters!(GlobalConcurrentLimiterConfig { max: u32 });

impl Default for GlobalConcurrentLimiterConfig {
    fn default() -> Self {
        Self { max: 10_000 }
    }
}

/// The global concurrent limiter.
pub struct GlobalConcurrentLimiter {
    slots: Slots,
}

impl GlobalConcurrentLimiter {
    /// A limiter with `config`.
    pub fn new(config: GlobalConcurrentLimiterConfig) -> Self {
        Self {
            slots: Slots::new(config.max),
        }
    }

    /// Requests being handled now.
    pub fn current(&self) -> u32 {
        self.slots.current()
    }

    /// A handle on the counter, to watch it after the limiter went into the app.
    pub fn counter(&self) -> Arc<AtomicU32> {
        self.slots.counter()
    }
}

impl Middleware for GlobalConcurrentLimiter {
    /// 429 when every slot is taken.
    fn describe(&self, operation: &mut crate::openapi::Operation<'_>) {
        operation.error(429);
    }

    /// Takes the slot before the chain and leaves it with the context
    /// ([`Context::hold`](crate::Context::hold)), which gives it back when the request ends: no future of its
    /// own.
    fn before(&self, ctx: &mut Context) -> Before {
        if ctx.is_committed() {
            return Before::Pass;
        }
        match self.slots.try_take() {
            Ok(slot) => {
                ctx.hold(slot);
                Before::Pass
            }
            Err(_) => {
                crate::telemetry::counters()
                    .refused(crate::telemetry::Refusal::GlobalConcurrentLimiter);
                Before::Answer(Err(HttpError::with(
                    StatusCode::TOO_MANY_REQUESTS,
                    CATEGORY,
                    "too many requests",
                )
                .into()))
            }
        }
    }
}

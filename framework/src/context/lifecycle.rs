//! A request's life as middleware sees it: the clock it is measured by, the guards it holds
//! until it ends, whether its response has been taken over, and the server's shutdown.

use super::Context;
use crate::downcast::try_downcast;
use crate::slot::Slot;

impl Context {
    /// The instant this request's time is measured from: read from the clock by the first
    /// call, the same instant for every later one. Middleware that measure a request's
    /// latency (stats, the logger) start it in their `before`, so they share one reading and
    /// an app that measures nothing reads no clock.
    pub(crate) fn start_clock(&mut self) -> std::time::Instant {
        *self.clock.get_or_insert_with(std::time::Instant::now)
    }
    /// The instant [`Context::start_clock`] set, if a middleware started it.
    pub(crate) fn clock_started(&self) -> Option<std::time::Instant> {
        self.clock
    }
    /// True once the server has begun a graceful shutdown and is draining
    /// ([`Service::start_draining`](crate::Service::start_draining)): still serving, but about
    /// to stop, so readiness probes should fail (the health component's `/readyz` answers 503).
    pub fn is_draining(&self) -> bool {
        self.shared
            .draining
            .load(std::sync::atomic::Ordering::Relaxed)
    }
    /// Completes when the server begins a graceful shutdown (when
    /// [`is_draining`](Self::is_draining) turns true; at once if it is already), for a handler
    /// whose answer would otherwise hold the shutdown up: a stream of events ends with
    /// `events.take_until(ctx.shutdown())`, so its client gets a complete body and reconnects
    /// elsewhere, and the server stops without waiting out its shutdown timeout. The
    /// framework's WebSockets close with 1001 at that moment. The future owns what it needs
    /// (`'static`): it may move into a stream or a task.
    pub fn shutdown(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.shared.drain.clone().cancelled_owned()
    }
    /// Keeps `guard` until the request is over: the guard is dropped with the context when the
    /// response has been made or the request was dropped (an error, a panic, the client going
    /// away), or, when the response is a stream, moved into the body and dropped once the body
    /// has been sent or the client went away. This is how a middleware ties work to the end of
    /// a request (give back a count, write a log line, release a lock) without a future of its
    /// own: take the guard in [`before`](crate::Middleware::before) and hold it here.
    ///
    /// A [`Slot`] is kept in place (no allocation for the first one); any other guard is boxed.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::AtomicU32;
    /// use framework::{Before, Context, Middleware, slot::Slot};
    ///
    /// struct InFlight(Arc<AtomicU32>);
    ///
    /// impl Middleware for InFlight {
    ///     fn before(&self, ctx: &mut Context) -> Before {
    ///         ctx.hold(Slot::take(&self.0));
    ///         Before::Pass
    ///     }
    /// }
    /// ```
    pub fn hold<G: Send + 'static>(&mut self, guard: G) {
        match try_downcast::<Slot, G>(guard) {
            Ok(slot) => self.held.push_slot(slot),
            Err(guard) => self.held.push_boxed(Box::new(guard)),
        }
    }
    /// True once something has taken over the response ([`Context::commit`]); middleware then
    /// leaves the response alone.
    pub fn is_committed(&self) -> bool {
        self.committed
    }
    /// Marks the response as taken over (e.g. by a proxy streaming it): middleware on its way
    /// out leaves it as it is. There is no way back: a response once handed over stays so.
    pub fn commit(&mut self) {
        self.committed = true;
    }
}

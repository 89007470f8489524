//! HTTP/2 streams run inside their connection's task: [`StreamExecutor`], the executor hyper
//! is given, and [`WithStreams`], the connection future that polls them.
//!
//! hyper's HTTP/2 server hands each stream (the service's future and the sending of its
//! answer) to its executor. With tokio's, every stream is a task of its own, and on tokio's
//! multi-thread runtime a task that wakes another puts it in the worker's "LIFO slot", to run
//! next. So the connection's task ran right after each stream's task had queued its answer,
//! and wrote that one answer: 8 streams in flight cost about 4 `writev` calls where one would
//! do. Measured with `strace -c` under h2load (`-c32 -m8`, 100 000 requests of `GET /json`, one
//! worker): 44 084 `writev` and 22 203 `recvfrom` for the framework, 12 576 and 12 867 for
//! actix-web, whose workers are single-threaded runtimes, and for the framework on a
//! current-thread runtime. The kernel time per request was 2.0 µs against actix-web's 0.8.
//!
//! Here the streams are polled by the connection's own task, as actix-web's dispatcher and
//! hyper on a current-thread runtime have them: the connection reads every frame that came,
//! the streams it started are run, and the connection is polled again, so the answers of all
//! the streams that were ready leave in one write. It also saves a task (an allocation and a
//! scheduling) per stream.
//!
//! What changes for a stream:
//!
//! - It runs where its connection runs: the streams of one connection take turns on one
//!   worker instead of spreading over several. A handler that computes for long holds up the
//!   other streams of its connection (as one on HTTP/1 holds up its connection); what awaits
//!   (I/O, a timer, `spawn_blocking`) does not.
//! - It ends with its connection: when the connection is closed (the client left, a fatal
//!   protocol error, a forced shutdown), its unfinished streams are dropped with it and their
//!   guards run (the logger's record, a limiter's slot), as hyper's stream tasks dropped theirs
//!   on seeing the connection's streams reset. A graceful shutdown still waits for every stream
//!   to finish: the connection only ends once they have.
//! - A panic in one stream is caught ([`catch_unwind`](futures_util::FutureExt::catch_unwind))
//!   and ends that stream alone, which hyper resets, as tokio did for a spawned stream's task.
//!
//! A stream hyper starts outside the connection's poll (none does today) is spawned as before.

use std::cell::RefCell;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::FutureExt;
use futures_util::stream::{FuturesUnordered, StreamExt};

use super::driver::Graceful;

/// A stream's future, boxed to go through the task-local inbox.
type StreamFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

tokio::task_local! {
    /// The streams hyper started while the connection was being polled: set around each poll
    /// of the connection by [`WithStreams`], read by [`StreamExecutor`].
    static STARTED: RefCell<Vec<StreamFuture>>;
}

/// How many times one wake-up of the connection's task goes around (connection, streams,
/// connection) while the streams keep finishing or new ones keep coming, before it lets other
/// tasks run: the rounds after the first only happen under load, and tokio's cooperative
/// budget bounds each of them too.
const ROUNDS: usize = 4;

/// hyper's executor for HTTP/2 streams: a stream started while its connection is polled by
/// [`WithStreams`] is handed to that connection's task; any other is spawned on tokio.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StreamExecutor;

impl<F> hyper::rt::Executor<F> for StreamExecutor
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, stream: F) {
        let mut stream = Some(stream);
        let _ = STARTED.try_with(|started| {
            if let Some(stream) = stream.take() {
                started.borrow_mut().push(Box::pin(stream));
            }
        });
        if let Some(stream) = stream {
            tokio::spawn(stream);
        }
    }
}

/// An HTTP/2 connection and the streams it started, polled together: see the module's doc.
pub(crate) struct WithStreams<C> {
    connection: Pin<Box<C>>,
    streams: FuturesUnordered<futures_util::future::CatchUnwind<AssertUnwindSafe<StreamFuture>>>,
}

impl<C> WithStreams<C> {
    pub(crate) fn new(connection: C) -> Self {
        Self {
            connection: Box::pin(connection),
            streams: FuturesUnordered::new(),
        }
    }
}

impl<C: Future> WithStreams<C> {
    /// Polls the connection with the inbox set; the streams it started join the others. True
    /// when it started any.
    fn poll_connection(&mut self, cx: &mut Context<'_>) -> (Poll<C::Output>, bool) {
        let connection = self.connection.as_mut();
        let (polled, started) = STARTED.sync_scope(RefCell::new(Vec::new()), || {
            let polled = connection.poll(cx);
            (polled, STARTED.with(RefCell::take))
        });
        let any = !started.is_empty();
        for mut stream in started {
            // Most streams answer at their first poll (the handler does not wait): polled here
            // with the task's own waker, such a stream never takes a place in the set. One
            // that waits joins the set, which polls it again at once with its own waker.
            let first = std::panic::catch_unwind(AssertUnwindSafe(|| stream.as_mut().poll(cx)));
            match first {
                Ok(Poll::Ready(())) => {}
                Ok(Poll::Pending) => self.streams.push(AssertUnwindSafe(stream).catch_unwind()),
                Err(_) => panicked(),
            }
        }
        (polled, any)
    }

    /// Polls the streams that are ready; true when any finished.
    fn poll_streams(&mut self, cx: &mut Context<'_>) -> bool {
        let mut finished = false;
        while let Poll::Ready(Some(result)) = self.streams.poll_next_unpin(cx) {
            finished = true;
            if result.is_err() {
                panicked();
            }
        }
        finished
    }
}

/// Says that a stream panicked (the stream is dropped, which resets it).
fn panicked() {
    tracing::error!("an HTTP/2 stream panicked; it is reset, its connection goes on");
}

impl<C: Future> Future for WithStreams<C> {
    type Output = C::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<C::Output> {
        let this = self.get_mut();
        for _ in 0..ROUNDS {
            let (polled, started) = this.poll_connection(cx);
            if let Poll::Ready(output) = polled {
                // The connection is closed: what is left of its streams can no longer be sent.
                return Poll::Ready(output);
            }
            let finished = this.poll_streams(cx);
            if !started && !finished {
                break;
            }
            // Streams answered (their frames are queued in the connection) or new ones came:
            // go around once more so the connection writes them now, together.
        }
        Poll::Pending
    }
}

impl<C: Graceful> Graceful for WithStreams<C> {
    fn graceful_shutdown(self: Pin<&mut Self>) {
        self.get_mut().connection.as_mut().graceful_shutdown();
    }
}

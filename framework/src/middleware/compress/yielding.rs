//! A compressed stream that gives its worker thread back after each chunk.

use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::body::{BodyStream, BoxError, DynBody};

/// Wraps a compressed stream so that, after each chunk it yields, the next poll first returns
/// `Pending` once (and wakes itself at once): the encoder does its work a chunk (8 KiB of
/// output, some tens of KiB of input) at a time, and between two chunks the worker runs other
/// tasks. Without it, a connection whose socket keeps taking data compresses a whole large
/// body in one poll, and every other request on that worker waits for it. Costs one wake-up
/// per chunk, small beside the compression of the chunk.
pub(super) fn yielding(stream: BodyStream) -> BodyStream {
    BodyStream::new(Yielding {
        inner: stream.into_inner(),
        yield_next: false,
    })
}

struct Yielding {
    inner: DynBody,
    yield_next: bool,
}

impl Body for Yielding {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if self.yield_next {
            self.yield_next = false;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let polled = self.inner.as_mut().poll_frame(cx);
        if matches!(polled, Poll::Ready(Some(Ok(_)))) {
            self.yield_next = true;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    /// Every chunk comes through, in order, with a `Pending` between two chunks.
    #[tokio::test]
    async fn chunks_pass_with_a_pause_between_them() {
        let chunks = ["a", "b", "c"].map(|c| Ok::<_, std::io::Error>(Bytes::from(c)));
        let body = yielding(BodyStream::from_stream(futures_util::stream::iter(chunks)));
        let mut inner = body.into_inner();
        let mut cx = TaskContext::from_waker(std::task::Waker::noop());
        let mut seen = Vec::new();
        let mut pauses = 0;
        loop {
            match inner.as_mut().poll_frame(&mut cx) {
                Poll::Pending => pauses += 1,
                Poll::Ready(Some(frame)) => seen.push(frame.unwrap().into_data().unwrap()),
                Poll::Ready(None) => break,
            }
        }
        assert_eq!(seen, ["a", "b", "c"]);
        assert_eq!(pauses, 3);
        let again = yielding(BodyStream::from_stream(futures_util::stream::iter(
            ["x", "y"].map(|c| Ok::<_, std::io::Error>(Bytes::from(c))),
        )));
        let collected = BodyStream::into_inner(again)
            .collect()
            .await
            .unwrap()
            .to_bytes();
        assert_eq!(collected, "xy");
    }
}

//! The source of a compressed stream, fed to the encoder a slice at a time.

use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::body::{BodyStream, BoxError, DynBody};

/// Input between two pauses: 32 KiB, some tenths of a millisecond of brotli 4 or gzip 6.
const SLICE: usize = 32 * 1024;

/// Feeds `source` to an encoder in slices of [`SLICE`] bytes (a larger chunk is cut, nothing
/// copied) and, after each [`SLICE`] of input, pauses once: returns `Pending` and wakes itself
/// at once. `async-compression`'s encoders flush when their source pauses, so the encoder
/// works (and its output goes out) a slice at a time, and between two slices the worker
/// thread runs the other tasks waiting for it. Without the pauses, a body whose bytes are all
/// ready (a large answer made in memory) is compressed in one poll: brotli keeps up to
/// megabytes of input before it writes a byte, then compresses it all at the end, and every
/// other request on that worker waits. Small chunks are not paused after each (a flush per
/// server-sent event costs a few bytes; per byte it would cost more than it saves): only once
/// a slice's worth has gone through.
pub(super) fn paced(source: BodyStream) -> BodyStream {
    BodyStream::new(Paced {
        inner: source.into_inner(),
        rest: Bytes::new(),
        since_pause: 0,
        pause_next: false,
    })
}

struct Paced {
    inner: DynBody,
    /// What is left of a chunk larger than a slice.
    rest: Bytes,
    /// Bytes given since the last pause.
    since_pause: usize,
    pause_next: bool,
}

impl Paced {
    /// The next slice of `chunk`, keeping the rest for later.
    fn slice(&mut self, mut chunk: Bytes) -> Bytes {
        if chunk.len() > SLICE {
            self.rest = chunk.split_off(SLICE);
        }
        self.since_pause += chunk.len();
        if self.since_pause >= SLICE {
            self.pause_next = true;
        }
        chunk
    }
}

impl Body for Paced {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if self.pause_next {
            self.pause_next = false;
            self.since_pause = 0;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if !self.rest.is_empty() {
            let rest = std::mem::take(&mut self.rest);
            let slice = self.slice(rest);
            return Poll::Ready(Some(Ok(Frame::data(slice))));
        }
        match self.inner.as_mut().poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                Ok(chunk) => {
                    let slice = self.slice(chunk);
                    Poll::Ready(Some(Ok(Frame::data(slice))))
                }
                Err(frame) => Poll::Ready(Some(Ok(frame))),
            },
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let inner = self.inner.size_hint();
        let rest = self.rest.len() as u64;
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + rest);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + rest);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Polls `body` to its end with a waker that does nothing: the slices it gives and the
    /// pauses between them.
    fn drain(body: BodyStream) -> (Vec<usize>, usize) {
        let mut inner = body.into_inner();
        let mut cx = TaskContext::from_waker(std::task::Waker::noop());
        let (mut slices, mut pauses) = (Vec::new(), 0);
        loop {
            match inner.as_mut().poll_frame(&mut cx) {
                Poll::Pending => pauses += 1,
                Poll::Ready(Some(frame)) => slices.push(frame.unwrap().into_data().unwrap().len()),
                Poll::Ready(None) => return (slices, pauses),
            }
        }
    }

    /// A large chunk is cut into slices with a pause after each; small chunks pass together
    /// until a slice's worth has gone through. The bytes are all there, in order.
    #[test]
    fn slices_with_a_pause_after_each() {
        let big = BodyStream::new(http_body_util::Full::new(Bytes::from(vec![1u8; 100_000])));
        let mut sized = big;
        assert_eq!(sized.size_hint().exact(), Some(100_000));
        let paced_big = paced(sized);
        let (slices, pauses) = drain(paced_big);
        assert_eq!(slices, [SLICE, SLICE, SLICE, 100_000 - 3 * SLICE]);
        assert_eq!(pauses, 3);

        let small: Vec<Result<Bytes, std::io::Error>> = (0..10)
            .map(|_| Ok(Bytes::from(vec![2u8; 10_000])))
            .collect();
        let (slices, pauses) = drain(paced(BodyStream::from_stream(futures_util::stream::iter(
            small,
        ))));
        assert_eq!(slices, [10_000; 10]);
        // After the 4th chunk (40 000 bytes) and the 8th (40 000 more).
        assert_eq!(pauses, 2);
    }

    #[test]
    fn a_known_length_is_kept() {
        let mut body = paced(BodyStream::new(http_body_util::Full::new(Bytes::from(
            vec![0u8; 70_000],
        ))));
        assert_eq!(body.size_hint().exact(), Some(70_000));
    }
}

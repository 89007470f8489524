//! An endpoint's future is stored in place up to `ENDPOINT_FUTURE_INLINE` bytes and boxed
//! beyond, counted with dhat's heap profiler in testing mode.
//!
//! Its own test binary without libtest's harness (`harness = false`), so `main` is the only
//! thread and every block counted is the future's (see `router_alloc.rs` for why the harness's
//! own waiting thread spoils an exact count).

use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::task::{Context, Poll};

use framework::{ENDPOINT_FUTURE_INLINE, EndpointFuture, endpoint_future};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// A future of exactly `N` bytes (alignment 1) that is ready at once.
struct Exact<const N: usize>([u8; N]);

impl<const N: usize> Future for Exact<N> {
    type Output = framework::Result;
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        assert_eq!(black_box(self.0[N - 1]), 1);
        Poll::Ready(Ok(()))
    }
}

/// Allocations made while `make` builds the future.
fn blocks_to_make<'a>(make: impl FnOnce() -> EndpointFuture<'a>) -> (u64, EndpointFuture<'a>) {
    let before = dhat::HeapStats::get().total_blocks;
    let future = make();
    (dhat::HeapStats::get().total_blocks - before, future)
}

fn main() {
    futures_up_to_the_limit_are_stored_in_place_and_larger_ones_boxed();
    println!(
        "endpoint_alloc: futures_up_to_the_limit_are_stored_in_place_and_larger_ones_boxed ... ok"
    );
}

fn futures_up_to_the_limit_are_stored_in_place_and_larger_ones_boxed() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();

    let (at_limit, future) =
        blocks_to_make(|| endpoint_future(Exact([1u8; ENDPOINT_FUTURE_INLINE])));
    runtime.block_on(future).unwrap();
    let (over, future) =
        blocks_to_make(|| endpoint_future(Exact([1u8; ENDPOINT_FUTURE_INLINE + 1])));
    runtime.block_on(future).unwrap();
    // An async block that waits once, holding a value across the wait, either way.
    let (small, future) = blocks_to_make(|| {
        endpoint_future(async {
            let bytes = black_box([1u8; 16]);
            tokio::task::yield_now().await;
            assert_eq!(black_box(bytes)[15], 1);
            Ok(())
        })
    });
    runtime.block_on(future).unwrap();
    let (large, future) = blocks_to_make(|| {
        endpoint_future(async {
            let bytes = black_box([1u8; 4 * ENDPOINT_FUTURE_INLINE]);
            tokio::task::yield_now().await;
            assert_eq!(black_box(bytes)[0], 1);
            Ok(())
        })
    });
    runtime.block_on(future).unwrap();

    assert_eq!(at_limit, 0, "a future of exactly the limit was boxed");
    assert_eq!(
        over, 1,
        "a future one byte over the limit was not boxed once"
    );
    assert_eq!(small, 0, "a small async block was boxed");
    assert_eq!(large, 1, "a large async block was not boxed once");
}

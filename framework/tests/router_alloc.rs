//! Route lookup allocates nothing, counted with dhat's heap profiler in testing mode.
//!
//! Its own test binary without libtest's harness (`harness = false`): the harness runs a test on
//! a thread of its own while its main thread waits on a channel, and that wait allocates the first
//! time it blocks, at a moment that races with the count (CI saw 4 blocks). Here `main` is the
//! only thread, so every block counted is the router's.

use framework::router::Router;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn main() {
    lookups_do_not_allocate();
    println!("router_alloc: lookups_do_not_allocate ... ok");
}

fn lookups_do_not_allocate() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let mut router = Router::new();
    for i in 0..100 {
        *router.entry(&format!("/static/{i}/page"), || 0).unwrap() = i;
        *router.entry(&format!("/users/:id/item{i}"), || 0).unwrap() = 1000 + i;
    }
    router.entry("/files/*", || 0).unwrap();
    let paths = [
        "/static/42/page",
        "/users/7/item99",
        "/files/a/b/c",
        "/missing/path",
    ];
    let before = dhat::HeapStats::get().total_blocks;
    let mut found = 0;
    for _ in 0..1000 {
        for p in paths {
            found += usize::from(router.find(p).is_some());
        }
    }
    let after = dhat::HeapStats::get().total_blocks;
    assert_eq!(found, 3000);
    assert_eq!(after - before, 0, "lookups allocated");
}

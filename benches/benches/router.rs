//! Route lookup cost: `framework::router::Router` against `matchit::Router`.
//!
//! Both routers hold the same 100 routes (60 static, 35 with one or two params, 5 trailing
//! wildcards) and look up the same fixed set of paths: static hits, param hits, wildcard hits
//! and misses. Before measuring, the bench checks that both resolve every path to the same
//! route index with the same param values, so the comparison is between equal answers.
//! Two groups: `router/static` looks up the 4 static hits, `router/dynamic` the 8 others
//! (param and wildcard hits, misses). One iteration looks up every path of its set once; the
//! reported throughput is in lookups.
//!
//! Why the framework's router is not matchit's design, a prefix-compressed radix tree over
//! bytes: routes are sets of segments, and a byte-level tree pays for that with splits inside
//! segments and params that must be re-scanned for their end. The framework's segment tree
//! answers the same questions with fewer branches; this bench compares the two on the same
//! 100 routes.
//!
//! Run with `cargo bench -p benches --bench router` (add `-- --quick` for a fast pass).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use framework::router::Router;

/// The route table in the framework's syntax (`:name` params, trailing `*`).
const ROUTES: &[&str] = &[
    // Static (60).
    "/",
    "/health",
    "/ready",
    "/metrics",
    "/version",
    "/favicon.ico",
    "/robots.txt",
    "/login",
    "/logout",
    "/signup",
    "/about",
    "/contact",
    "/docs",
    "/docs/api",
    "/docs/changelog",
    "/api/v1/users",
    "/api/v1/users/me",
    "/api/v1/users/me/settings",
    "/api/v1/users/me/avatar",
    "/api/v1/users/me/notifications",
    "/api/v1/users/search",
    "/api/v1/posts",
    "/api/v1/posts/trending",
    "/api/v1/posts/recent",
    "/api/v1/posts/drafts",
    "/api/v1/comments",
    "/api/v1/comments/recent",
    "/api/v1/tags",
    "/api/v1/tags/popular",
    "/api/v1/categories",
    "/api/v1/auth/login",
    "/api/v1/auth/logout",
    "/api/v1/auth/refresh",
    "/api/v1/auth/register",
    "/api/v1/auth/password/reset",
    "/api/v1/auth/password/change",
    "/api/v1/auth/verify",
    "/api/v1/admin/users",
    "/api/v1/admin/stats",
    "/api/v1/admin/settings",
    "/api/v1/admin/audit",
    "/api/v1/admin/jobs",
    "/api/v1/search",
    "/api/v1/feed",
    "/api/v1/notifications",
    "/api/v1/messages",
    "/api/v1/messages/unread",
    "/api/v1/uploads",
    "/api/v1/billing/plans",
    "/api/v1/billing/invoices",
    "/api/v1/billing/subscription",
    "/api/v1/orgs",
    "/api/v1/teams",
    "/api/v1/projects",
    "/api/v1/webhooks",
    "/api/v2/users",
    "/api/v2/users/me",
    "/api/v2/posts",
    "/api/v2/search",
    "/api/v2/feed",
    // One or two params (35).
    "/api/v1/users/:id",
    "/api/v1/users/:id/posts",
    "/api/v1/users/:id/posts/:post",
    "/api/v1/users/:id/followers",
    "/api/v1/users/:id/following",
    "/api/v1/users/:id/avatar",
    "/api/v1/posts/:id",
    "/api/v1/posts/:id/comments",
    "/api/v1/posts/:id/comments/:comment",
    "/api/v1/posts/:id/likes",
    "/api/v1/posts/:id/tags",
    "/api/v1/comments/:id",
    "/api/v1/comments/:id/replies",
    "/api/v1/tags/:tag",
    "/api/v1/tags/:tag/posts",
    "/api/v1/categories/:slug",
    "/api/v1/categories/:slug/posts",
    "/api/v1/admin/users/:id",
    "/api/v1/admin/users/:id/ban",
    "/api/v1/admin/jobs/:id",
    "/api/v1/messages/:id",
    "/api/v1/messages/:id/attachments/:file",
    "/api/v1/orgs/:org",
    "/api/v1/orgs/:org/members",
    "/api/v1/orgs/:org/members/:user",
    "/api/v1/orgs/:org/teams/:team",
    "/api/v1/teams/:team",
    "/api/v1/projects/:project",
    "/api/v1/projects/:project/issues",
    "/api/v1/projects/:project/issues/:issue",
    "/api/v1/webhooks/:id",
    "/api/v1/billing/invoices/:invoice",
    "/api/v2/users/:id",
    "/api/v2/posts/:id",
    "/api/v2/users/:id/posts/:post",
    // Trailing wildcards (5).
    "/static/*",
    "/assets/*",
    "/downloads/*",
    "/docs/guides/*",
    "/api/v1/uploads/*",
];

/// The looked-up paths: 4 static hits, 4 param hits, 2 wildcard hits, 2 misses.
const PATHS: &[&str] = &[
    "/health",
    "/api/v1/users/me",
    "/api/v1/auth/password/reset",
    "/api/v2/search",
    "/api/v1/users/42",
    "/api/v1/users/42/posts/7",
    "/api/v1/orgs/acme/members/alice",
    "/api/v1/projects/p-1/issues/1234",
    "/static/css/app.min.css",
    "/api/v1/uploads/2024/05/photo.jpg",
    "/api/v1/nope/123",
    "/api/v3/users",
];

/// The same pattern in matchit's syntax: `:id` becomes `{id}`, a trailing `*` becomes
/// `{*rest}`.
fn to_matchit(pattern: &str) -> String {
    pattern
        .split('/')
        .map(|segment| {
            if let Some(name) = segment.strip_prefix(':') {
                format!("{{{name}}}")
            } else if segment == "*" {
                "{*rest}".to_owned()
            } else {
                segment.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn build_framework() -> Router<usize> {
    let mut router = Router::new();
    for (index, pattern) in ROUTES.iter().enumerate() {
        *router
            .entry(pattern, || index)
            .unwrap_or_else(|e| panic!("framework refused {pattern}: {e}")) = index;
    }
    router
}

fn build_matchit() -> matchit::Router<usize> {
    let mut router = matchit::Router::new();
    for (index, pattern) in ROUTES.iter().enumerate() {
        let converted = to_matchit(pattern);
        router
            .insert(converted.as_str(), index)
            .unwrap_or_else(|e| panic!("matchit refused {converted}: {e}"));
    }
    router
}

/// Route index and raw param values, as the framework sees `path`.
fn framework_answer(router: &Router<usize>, path: &str) -> Option<(usize, Vec<String>)> {
    let found = router.find(path)?;
    let values = (0..found.params.len())
        .map(|i| found.params.raw(path, i).unwrap_or_default().to_owned())
        .collect();
    Some((found.route.value, values))
}

/// Route index and raw param values, as matchit sees `path`.
fn matchit_answer(router: &matchit::Router<usize>, path: &str) -> Option<(usize, Vec<String>)> {
    let found = router.at(path).ok()?;
    let values = found.params.iter().map(|(_, v)| v.to_owned()).collect();
    Some((*found.value, values))
}

/// Panics unless the table has the intended mix and both routers agree on every path.
fn check_same_answers(framework: &Router<usize>, matchit: &matchit::Router<usize>) {
    let wildcards = ROUTES.iter().filter(|r| r.ends_with('*')).count();
    let params = ROUTES
        .iter()
        .filter(|r| r.contains(':') && !r.ends_with('*'))
        .count();
    assert_eq!(
        (
            ROUTES.len(),
            ROUTES.len() - params - wildcards,
            params,
            wildcards
        ),
        (100, 60, 35, 5),
        "route mix (total, static, params, wildcards)"
    );
    let mut hits = 0;
    for path in PATHS {
        let ours = framework_answer(framework, path);
        let theirs = matchit_answer(matchit, path);
        assert_eq!(ours, theirs, "routers disagree on {path}");
        hits += usize::from(ours.is_some());
    }
    assert_eq!(hits, PATHS.len() - 2, "expected exactly two misses");
}

/// The static hits of `PATHS`, and the rest (params, wildcards, misses).
fn lookup_sets() -> [(&'static str, Vec<&'static str>); 2] {
    let (statics, dynamic): (Vec<&str>, Vec<&str>) = PATHS.iter().partition(|p| ROUTES.contains(p));
    assert_eq!(
        (statics.len(), dynamic.len()),
        (4, 8),
        "static and dynamic lookups"
    );
    [("static", statics), ("dynamic", dynamic)]
}

fn bench_router(c: &mut Criterion) {
    let framework = build_framework();
    let matchit = build_matchit();
    check_same_answers(&framework, &matchit);

    for (set, paths) in lookup_sets() {
        let mut group = c.benchmark_group(format!("router/{set}"));
        group.throughput(Throughput::Elements(paths.len() as u64));
        group.bench_function("framework", |b| {
            b.iter(|| {
                for path in &paths {
                    black_box(framework.find(black_box(path)));
                }
            });
        });
        group.bench_function("matchit", |b| {
            b.iter(|| {
                for path in &paths {
                    let _ = black_box(matchit.at(black_box(path)));
                }
            });
        });
        group.finish();
    }
}

criterion_group!(benches, bench_router);
criterion_main!(benches);

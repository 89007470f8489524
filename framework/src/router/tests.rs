use std::borrow::Cow;

use super::*;

fn table(patterns: &[&str]) -> Router<usize> {
    let mut r = Router::new();
    for (i, p) in patterns.iter().enumerate() {
        *r.entry(p, || 0).unwrap() = i;
    }
    r
}

fn lookup(r: &Router<usize>, path: &str) -> Option<(usize, Vec<(String, String)>)> {
    let m = r.find(path)?;
    let params = m
        .route
        .param_names()
        .iter()
        .enumerate()
        .map(|(i, n)| (n.to_string(), m.params.raw(path, i).unwrap().to_string()))
        .collect();
    Some((m.route.value, params))
}

#[test]
fn static_param_wildcard_priority() {
    let r = table(&[
        "/users/me",
        "/users/:id",
        "/files/*",
        "/users/:id/posts/{post}",
    ]);
    assert_eq!(lookup(&r, "/users/me"), Some((0, vec![])));
    assert_eq!(
        lookup(&r, "/users/42"),
        Some((1, vec![("id".into(), "42".into())]))
    );
    assert_eq!(
        lookup(&r, "/users/7/posts/x"),
        Some((
            3,
            vec![("id".into(), "7".into()), ("post".into(), "x".into())]
        ))
    );
    assert_eq!(
        lookup(&r, "/files/a/b.txt"),
        Some((2, vec![("*".into(), "a/b.txt".into())]))
    );
    assert_eq!(
        lookup(&r, "/files/"),
        Some((2, vec![("*".into(), String::new())]))
    );
    assert_eq!(lookup(&r, "/files"), None);
    assert_eq!(lookup(&r, "/users/"), None);
    assert_eq!(lookup(&r, "/users/me/"), None);
    assert_eq!(lookup(&r, "/nope"), None);
}

#[test]
fn backtracks_from_static_to_param() {
    let r = table(&["/a/b/c", "/a/:x/d"]);
    assert_eq!(
        lookup(&r, "/a/b/d"),
        Some((1, vec![("x".into(), "b".into())]))
    );
}

#[test]
fn root_and_named_wildcard() {
    let r = table(&["/", "/static/*path"]);
    assert_eq!(lookup(&r, "/"), Some((0, vec![])));
    assert_eq!(
        lookup(&r, "/static/css/a.css"),
        Some((1, vec![("path".into(), "css/a.css".into())]))
    );
}

/// Eight params and a wildcard: one more than [`MAX_PARAMS`].
const NINE_PARAMS: &str = "/:a/:b/:c/:d/:e/:f/:g/:h/*";

#[test]
fn rejects_bad_patterns_by_kind() {
    let refused = |pattern: &str| validate_pattern(pattern).unwrap_err();
    assert_eq!(
        refused("users"),
        PatternError::MissingLeadingSlash {
            pattern: "users".into()
        }
    );
    assert_eq!(
        refused("/a/*/b"),
        PatternError::WildcardNotLast {
            pattern: "/a/*/b".into()
        }
    );
    for (bad, segment) in [("/a/x*", "x*"), ("/a/{b", "{b"), ("/a/b}", "b}")] {
        assert_eq!(
            refused(bad),
            PatternError::BadSegment {
                pattern: bad.into(),
                segment: segment.into()
            }
        );
    }
    for (bad, segment) in [("/a/:", ":"), ("/a/{}", "{}")] {
        assert_eq!(
            refused(bad),
            PatternError::UnnamedParam {
                pattern: bad.into(),
                segment: segment.into()
            }
        );
    }
    for (bad, segment) in [("/a/:b-c", ":b-c"), ("/a/{b.c}", "{b.c}")] {
        assert_eq!(
            refused(bad),
            PatternError::InvalidParamName {
                pattern: bad.into(),
                segment: segment.into()
            }
        );
    }
    assert_eq!(
        refused(NINE_PARAMS),
        PatternError::TooManyParams {
            pattern: NINE_PARAMS.into(),
            count: 9
        }
    );
    assert_eq!(validate_pattern("/:a/:b/:c/:d/:e/:f/:g/*"), Ok(()));
}

#[test]
fn refuses_another_spelling_of_a_route_naming_it() {
    let mut r: Router<()> = Router::new();
    r.entry("/u/:id", || ()).unwrap();
    r.entry("/f/*", || ()).unwrap();
    for (pattern, with) in [
        ("/u/:name", "/u/:id"),
        ("/u/{id}", "/u/:id"),
        ("/f/*rest", "/f/*"),
    ] {
        assert_eq!(
            r.entry(pattern, || ()).unwrap_err(),
            PatternError::Conflict {
                pattern: pattern.into(),
                with: with.into()
            }
        );
    }
    // The same spelling again is the same route.
    r.entry("/u/:id", || ()).unwrap();
    assert_eq!(r.routes().len(), 2);
}

#[test]
fn pattern_errors_keep_their_messages() {
    let cases = [
        ("users", "route path `users` must start with `/`"),
        (
            "/a/*/b",
            "route path `/a/*/b`: the wildcard `*` must be the last segment",
        ),
        ("/a/x*", "route path `/a/x*`: bad segment `x*`"),
        ("/a/{}", "route path `/a/{}`: param `{}` has no name"),
        (
            "/a/:b-c",
            "route path `/a/:b-c`: param names are letters, digits or `_`, got `:b-c`",
        ),
        (
            NINE_PARAMS,
            "route path `/:a/:b/:c/:d/:e/:f/:g/:h/*` has 9 params, at most 8 are allowed",
        ),
    ];
    for (bad, message) in cases {
        assert_eq!(validate_pattern(bad).unwrap_err().to_string(), message);
    }
    let mut r: Router<()> = Router::new();
    r.entry("/u/:id", || ()).unwrap();
    assert_eq!(
        r.entry("/u/:name", || ()).unwrap_err().to_string(),
        "route path `/u/:name` conflicts with `/u/:id`"
    );
}

#[test]
fn a_failed_branch_leaves_no_params_behind() {
    let r = table(&["/u/me/:p", "/u/:id/q/r", "/a/:x/b", "/a/*"]);
    assert_eq!(
        lookup(&r, "/u/me/q/r"),
        Some((1, vec![("id".into(), "me".into())]))
    );
    assert_eq!(
        lookup(&r, "/u/me/q"),
        Some((0, vec![("p".into(), "q".into())]))
    );
    assert_eq!(
        lookup(&r, "/a/1/c"),
        Some((3, vec![("*".into(), "1/c".into())]))
    );
}

#[test]
fn siblings_with_the_same_fingerprint_are_told_apart() {
    // Same length, first and last byte: only the middle differs.
    let r = table(&["/abc/:x", "/axc/:x", "/a/:x/abcd", "/a/:x/axyd"]);
    assert_eq!(lookup(&r, "/abc/1").map(|m| m.0), Some(0));
    assert_eq!(lookup(&r, "/axc/1").map(|m| m.0), Some(1));
    assert_eq!(lookup(&r, "/aac/1"), None);
    assert_eq!(lookup(&r, "/a/1/abcd").map(|m| m.0), Some(2));
    assert_eq!(lookup(&r, "/a/1/axyd").map(|m| m.0), Some(3));
    assert_eq!(lookup(&r, "/a/1/abyd"), None);
    // Longer than 16 bytes: the head and tail words agree, the middle does not.
    let r = table(&["/x/:y/aaaaaaaaXaaaaaaaaa", "/x/:y/aaaaaaaaYaaaaaaaaa"]);
    assert_eq!(lookup(&r, "/x/1/aaaaaaaaYaaaaaaaaa").map(|m| m.0), Some(1));
    assert_eq!(lookup(&r, "/x/1/aaaaaaaaZaaaaaaaaa"), None);
}

#[test]
fn many_static_routes_grow_the_table_and_all_stay_found() {
    let patterns: Vec<String> = (0..1000).map(|i| format!("/static/route/{i}")).collect();
    let mut r = Router::new();
    for (i, p) in patterns.iter().enumerate() {
        *r.entry(p, || 0).unwrap() = i;
    }
    // Same pattern again: the same entry, not a new one.
    assert_eq!(*r.entry("/static/route/7", || 0).unwrap(), 7);
    for (i, p) in patterns.iter().enumerate() {
        assert_eq!(lookup(&r, p), Some((i, vec![])), "{p}");
    }
    assert_eq!(lookup(&r, "/static/route/1000"), None);
    assert_eq!(lookup(&r, "/static/route/"), None);
    assert_eq!(lookup(&r, ""), None);
    assert_eq!(r.routes().len(), 1000);
}

#[test]
fn a_static_route_beats_a_param_in_the_same_segment() {
    let r = table(&[
        "/users/:id",
        "/users/me",
        "/users/:id/posts",
        "/users/me/posts",
    ]);
    assert_eq!(lookup(&r, "/users/me").map(|m| m.0), Some(1));
    assert_eq!(lookup(&r, "/users/me/posts").map(|m| m.0), Some(3));
    assert_eq!(lookup(&r, "/users/you/posts").map(|m| m.0), Some(2));
}

/// The rule the tree implements, written the slow way: of all patterns matching `path`,
/// the one whose segment kinds (static 0, param 1, wildcard 2) are smallest in
/// lexicographic order, which is the order the tree tries them in.
fn reference<'p>(patterns: &[&'p str], path: &str) -> Option<(&'p str, Vec<String>)> {
    let parts: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
    let mut best: Option<(Vec<u8>, &str, Vec<String>)> = None;
    for pattern in patterns {
        let segments: Vec<&str> = pattern[1..].split('/').collect();
        let mut kinds = Vec::new();
        let mut values = Vec::new();
        let mut matched = true;
        for (i, segment) in segments.iter().enumerate() {
            if segment.starts_with('*') {
                if i >= parts.len() {
                    matched = false;
                } else {
                    kinds.push(2);
                    values.push(parts[i..].join("/"));
                }
                break;
            }
            let Some(part) = parts.get(i) else {
                matched = false;
                break;
            };
            if segment.starts_with(':') {
                if part.is_empty() {
                    matched = false;
                    break;
                }
                kinds.push(1);
                values.push((*part).to_owned());
            } else if segment == part {
                kinds.push(0);
            } else {
                matched = false;
                break;
            }
            if i + 1 == segments.len() && parts.len() != segments.len() {
                matched = false;
            }
        }
        if matched && best.as_ref().is_none_or(|(k, _, _)| kinds < *k) {
            best = Some((kinds, pattern, values));
        }
    }
    best.map(|(_, pattern, values)| (pattern, values))
}

#[test]
fn agrees_with_the_reference_rule_on_random_tables() {
    let mut seed: u64 = 0x5eed;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize % n
    };
    let pattern_parts = ["a", "b", "ab", "ba", "", ":p", ":q", "*"];
    let path_parts = ["a", "b", "ab", "ba", "c", ""];
    for _ in 0..300 {
        let mut patterns: Vec<String> = Vec::new();
        for _ in 0..1 + next(12) {
            let depth = 1 + next(3);
            let mut segments = Vec::new();
            for d in 0..depth {
                let mut part = pattern_parts[next(pattern_parts.len())];
                if part == "*" && d + 1 < depth {
                    part = "a";
                }
                segments.push(part);
            }
            patterns.push(format!("/{}", segments.join("/")));
        }
        let mut r = Router::new();
        let mut kept: Vec<&str> = Vec::new();
        for p in &patterns {
            // Conflicting param names are refused; the reference must not see those.
            if r.entry(p, || p.clone()).is_ok() && !kept.contains(&p.as_str()) {
                kept.push(p);
            }
        }
        for _ in 0..40 {
            let depth = 1 + next(4);
            let path: String = (0..depth)
                .map(|_| format!("/{}", path_parts[next(path_parts.len())]))
                .collect();
            let ours = r.find(&path).map(|m| {
                let values = (0..m.params.len())
                    .map(|i| m.params.raw(&path, i).unwrap().to_owned())
                    .collect::<Vec<_>>();
                (m.route.value.as_str(), values)
            });
            assert_eq!(ours, reference(&kept, &path), "{path} in {kept:?}");
        }
    }
}

#[test]
fn decodes_params_lazily() {
    assert!(matches!(decode_param("plain"), Cow::Borrowed("plain")));
    assert_eq!(decode_param("a%20b"), "a b");
}

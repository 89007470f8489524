use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};

use super::*;

/// What the client escaped a param's value with before `fill` came here.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// And a wildcard's, which keeps its slashes.
const REST: &AsciiSet = &SEGMENT.remove(b'/');

fn filled(pattern: &str, value: &str) -> String {
    let mut out = String::new();
    Pattern::parse(pattern)
        .unwrap()
        .fill(&mut out, |_| Some(value))
        .unwrap();
    out
}

#[test]
fn fill_escapes_as_the_percent_encoding_crate_does() {
    let mut every: String = (0u8..0x80).map(char::from).collect();
    every.push_str("é€😀 a/b%2F");
    for c in every.chars() {
        let text = format!("x{c}y");
        assert_eq!(
            filled("/p/:v", &text),
            format!("/p/{}", utf8_percent_encode(&text, SEGMENT)),
            "{c:?} in a param"
        );
        assert_eq!(
            filled("/p/*", &text),
            format!("/p/{}", utf8_percent_encode(&text, REST)),
            "{c:?} in a wildcard"
        );
    }
    assert_eq!(filled("/f/*rest", "a/b c"), "/f/a/b%20c");
    assert_eq!(filled("/u/:id", "a/b"), "/u/a%2Fb");
}

#[test]
fn fill_asks_each_name_and_names_the_one_missing() {
    let pattern = Pattern::parse("/u/{id}/files/*").unwrap();
    let mut asked = Vec::new();
    let mut out = String::new();
    pattern
        .fill(&mut out, |name| {
            asked.push(name.to_owned());
            Some("1")
        })
        .unwrap();
    assert_eq!(out, "/u/1/files/1");
    assert_eq!(asked, ["id", WILDCARD]);
    let missing = pattern
        .fill(&mut String::new(), |name| (name == "id").then_some("1"))
        .unwrap_err();
    assert_eq!(missing, MissingParam { name: "*" });
    assert_eq!(missing.to_string(), "no value for the path parameter *");
    let mut root = String::new();
    Pattern::parse("/")
        .unwrap()
        .fill(&mut root, |_| None)
        .unwrap();
    assert_eq!(root, "/");
}

#[test]
fn segments_and_names() {
    let pattern = Pattern::parse("/a/:b/{c}/*").unwrap();
    assert_eq!(
        pattern.segments(),
        [
            Segment::Static("a"),
            Segment::Param("b"),
            Segment::Param("c"),
            Segment::Wildcard(WILDCARD)
        ]
    );
    assert_eq!(pattern.param_names().collect::<Vec<_>>(), ["b", "c", "*"]);
    assert!(!pattern.is_static());
    assert!(Pattern::parse("/a//b/").unwrap().is_static());
    assert_eq!(
        param_names("/x/:id/{n}/*rest").collect::<Vec<_>>(),
        ["id", "n", "rest"]
    );
    assert_eq!(pattern.as_str(), "/a/:b/{c}/*");
}

#[test]
fn openapi_templates_name_every_param_and_the_bare_wildcard() {
    assert_eq!(
        openapi_template("/users/:id/notes/{n}"),
        "/users/{id}/notes/{n}"
    );
    assert_eq!(openapi_template("/files/*path"), "/files/{path}");
    assert_eq!(openapi_template("/files/*"), "/files/{*}");
    assert_eq!(openapi_template("/"), "/");
}

#[test]
fn joins_as_the_app_does() {
    for (prefix, path, joined) in [
        ("/users", "/v1/me", "/users/v1/me"),
        ("/users/", "/v1/me", "/users/v1/me"),
        ("/users", "/", "/users"),
        ("/users//", "", "/users"),
        ("", "/", "/"),
        ("", "", "/"),
        ("", "/a", "/a"),
        ("/a", "b", "/ab"),
    ] {
        assert_eq!(join(prefix, path), joined, "{prefix:?} + {path:?}");
    }
}

#[test]
fn prefixes_may_be_empty_but_hold_no_wildcard() {
    assert_eq!(validate_prefix(""), Ok(()));
    assert_eq!(validate_prefix("/users/:org"), Ok(()));
    assert_eq!(
        validate_prefix("/f/*"),
        Err(PatternError::WildcardNotLast {
            pattern: "/f/*".into()
        })
    );
    assert_eq!(
        validate_prefix("users"),
        Err(PatternError::MissingLeadingSlash {
            pattern: "users".into()
        })
    );
}

#[test]
fn refuses_by_kind_with_the_router_s_words() {
    let nine = "/:a/:b/:c/:d/:e/:f/:g/:h/*";
    let cases = [
        ("users", "route path `users` must start with `/`"),
        (
            "/a/*/b",
            "route path `/a/*/b`: the wildcard `*` must be the last segment",
        ),
        ("/a/x*", "route path `/a/x*`: bad segment `x*`"),
        ("/a/{b", "route path `/a/{b`: bad segment `{b`"),
        ("/a/:", "route path `/a/:`: param `:` has no name"),
        ("/a/{}", "route path `/a/{}`: param `{}` has no name"),
        (
            "/a/:b-c",
            "route path `/a/:b-c`: param names are letters, digits or `_`, got `:b-c`",
        ),
        (
            "/a/{*x}",
            "route path `/a/{*x}`: param names are letters, digits or `_`, got `{*x}`",
        ),
        (
            nine,
            "route path `/:a/:b/:c/:d/:e/:f/:g/:h/*` has 9 params, at most 8 are allowed",
        ),
    ];
    for (bad, message) in cases {
        assert_eq!(validate(bad).unwrap_err().to_string(), message, "{bad}");
    }
    assert_eq!(validate("/:a/:b/:c/:d/:e/:f/:g/*"), Ok(()));
    assert_eq!(validate("/ünïcode/:naïve"), Ok(()));
}

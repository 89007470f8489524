use super::*;

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    pairs
        .iter()
        .map(|(k, v)| (HeaderName::from_static(k), HeaderValue::from_static(v)))
        .collect()
}

#[test]
fn cache_directives_by_name_in_any_value() {
    let has = |values: &[&'static str], directive| {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(header::CACHE_CONTROL, HeaderValue::from_static(v));
        }
        has_cache_directive(&headers, directive)
    };
    assert!(has(&["no-store"], "no-store"));
    assert!(has(&["private, No-Store"], "no-store"));
    assert!(has(&["max-age=60", " no-store "], "no-store"));
    assert!(has(&["public, max-age=60"], "max-age"));
    assert!(!has(&[], "no-store"));
    assert!(!has(&["no-cache"], "no-store"));
    assert!(!has(&["no-storeage"], "no-store"));
    assert!(!has(&["max-age=60"], "no-store"));
    assert!(!has(&["no-stor"], "no-store"));
    assert!(!has(&["no-store-x, public"], "no-store"));
    assert!(has(&["private=\"x\", no-store"], "no-store"));
    assert!(has(&["max-age=60,no-store"], "no-store"));
    // The directive alone, as written and in other cases.
    assert!(has(&["No-Store"], "no-store"));
    assert!(has(&["public", "no-store"], "no-store"));
    let seconds = |values: &[&'static str], directive| {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(header::CACHE_CONTROL, HeaderValue::from_static(v));
        }
        cache_directive_seconds(&headers, directive)
    };
    assert_eq!(seconds(&["public, max-age=60"], "max-age"), Some(60));
    assert_eq!(seconds(&["s-maxage=\"5\""], "s-maxage"), Some(5));
    assert_eq!(seconds(&["Max-Age = 7"], "max-age"), Some(7));
    assert_eq!(seconds(&["max-age=x"], "max-age"), None);
    assert_eq!(seconds(&["max-age=x", "max-age=9"], "max-age"), Some(9));
    assert_eq!(seconds(&["no-store"], "max-age"), None);
    assert_eq!(seconds(&["max-age"], "max-age"), None);
    assert_eq!(seconds(&["max-age", "max-age=3"], "max-age"), Some(3));
    assert_eq!(seconds(&["s-maxage=5"], "max-age"), None);
}

#[test]
fn media_types() {
    assert!(is_json_media_type(&headers(&[(
        "content-type",
        "Application/JSON; charset=utf-8"
    )])));
    assert!(is_json_media_type(&headers(&[(
        "content-type",
        "application/problem+json"
    )])));
    assert!(!is_json_media_type(&headers(&[(
        "content-type",
        "text/json"
    )])));
    assert!(accepts_json(&headers(&[(
        "accept",
        "text/html, application/json;q=0.9"
    )])));
    assert!(!accepts_json(&headers(&[("accept", "*/*")])));
}

#[test]
fn cookies() {
    let h = headers(&[("cookie", "a=1; sid=xyz; b=2")]);
    assert_eq!(cookie(&h, "sid"), Some("xyz"));
    assert_eq!(cookie(&h, "c"), None);
    assert_eq!(cookie(&headers(&[("host", "h")]), "sid"), None);
    // Several Cookie headers, other headers between them, a name that only starts like
    // the one asked for, a quoted value, `=` inside a value, stray spaces and semicolons.
    let h = headers(&[
        ("cookie", "sidx=1;;  "),
        ("host", "h"),
        ("cookie", " t=a=b ; sid=\"q\" "),
    ]);
    assert_eq!(cookie(&h, "sid"), Some("q"));
    assert_eq!(cookie(&h, "t"), Some("a=b"));
    assert_eq!(cookie(&h, "sidx"), Some("1"));
}

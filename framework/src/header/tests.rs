use super::*;

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    pairs
        .iter()
        .map(|(k, v)| (HeaderName::from_static(k), HeaderValue::from_static(v)))
        .collect()
}

#[test]
fn base64url_128_writes_what_the_base64_crate_writes() {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use rand::{Rng, SeedableRng};
    let mut cases = vec![[0u8; 16], [0xff; 16], *b"0123456789abcdef"];
    // Every value of the last byte (its two characters) and of one byte in each 3-byte
    // group, at each of the three positions across the groups.
    cases.extend((0..=255u8).map(|b| {
        let mut bits = [0u8; 16];
        for (group, position) in [(0, 0), (1, 1), (2, 2), (3, 0), (4, 1)] {
            bits[3 * group + position] = b.rotate_left(group as u32);
        }
        bits[15] = b;
        bits
    }));
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    cases.extend((0..1000).map(|_| rng.random::<[u8; 16]>()));
    for bits in cases {
        assert_eq!(
            base64url_128(bits).as_slice(),
            URL_SAFE_NO_PAD.encode(bits).as_bytes(),
            "{bits:?}"
        );
    }
}

/// Every byte value at every position, and random ones, against the `hex` crate.
#[test]
fn hex_128_is_lowercase_hex() {
    use rand::{Rng, SeedableRng};
    let mut cases: Vec<[u8; 16]> = (0..=255u8)
        .map(|b| std::array::from_fn(|i| b.wrapping_add(i as u8)))
        .collect();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
    cases.extend((0..1000).map(|_| rng.random::<[u8; 16]>()));
    for bits in cases {
        assert_eq!(hex_128(bits).as_slice(), hex::encode(bits).as_bytes());
    }
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
fn request_ids() {
    assert!(is_valid_request_id(b"abc-123"));
    assert!(!is_valid_request_id(b""));
    assert!(!is_valid_request_id(b"a b"));
    assert!(!is_valid_request_id(&[b'a'; 129]));
    let id = new_request_id();
    assert_eq!(id.len(), 32);
    assert_ne!(id, new_request_id());
    // Across chunks: every id of several chunks is well-formed and distinct.
    let ids: std::collections::HashSet<HeaderValue> =
        (0..3 * IDS_PER_CHUNK).map(|_| new_request_id()).collect();
    assert_eq!(ids.len(), 3 * IDS_PER_CHUNK);
    assert!(ids.iter().all(|id| {
        id.len() == 32
            && id
                .as_bytes()
                .iter()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    }));
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
fn accept_encoding() {
    let h = headers(&[("accept-encoding", "gzip;q=0.5, br, *;q=0.1")]);
    assert_eq!(accept_encoding_q(&h, "br"), 1.0);
    assert_eq!(accept_encoding_q(&h, "gzip"), 0.5);
    assert_eq!(accept_encoding_q(&h, "zstd"), 0.1);
    let h = headers(&[("accept-encoding", "br;q=0, gzip")]);
    assert_eq!(accept_encoding_q(&h, "br"), 0.0);
    assert_eq!(accept_encoding_q(&HeaderMap::new(), "gzip"), 0.0);
    let h = headers(&[("accept-encoding", "GZIP; Q=0.8")]);
    assert_eq!(accept_encoding_q(&h, "gzip"), 0.8);
}

#[test]
fn compressible_types() {
    for ok in [
        "text/html; charset=utf-8",
        "application/json",
        "image/svg+xml",
        "application/javascript",
        "font/woff2",
        "application/wasm",
    ] {
        assert!(is_compressible(ok), "{ok}");
    }
    for no in [
        "image/png",
        "application/zip",
        "video/mp4",
        "application/octet-stream",
        "application/grpc",
        "application/grpc+json",
        "application/grpc-web+json",
    ] {
        assert!(!is_compressible(no), "{no}");
    }
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

use super::*;

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

use super::{is_valid_id, new_id};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// An id is 22 base64url characters (the padding of the buffer it is checked in is not
/// part of it) that decode to 128 bits, and each id is new.
#[test]
fn new_ids_are_22_base64url_characters_of_128_bits_each_new() {
    let ids: Vec<_> = (0..1000).map(|_| new_id().unwrap()).collect();
    for id in &ids {
        assert!(is_valid_id(id), "{id}");
        assert_eq!(
            URL_SAFE_NO_PAD.decode(id.as_str()).unwrap().len(),
            16,
            "{id}"
        );
    }
    let distinct: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(distinct.len(), ids.len());
}

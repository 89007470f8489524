//! Random ids: request ids (made, and checked when a client sends one), lock tokens, session
//! ids and trace ids, from one fast per-thread generator seeded from the OS. Unique, not
//! secret: a secret comes from the cryptographic generator.

use http::HeaderValue;
use rand::Rng;

/// A client-sent request id is kept when it is 1-128 characters of letters, digits, `-`, `_`,
/// `.` or `:`; anything else is replaced, so ids are safe to log and echo.
pub(crate) fn is_valid_request_id(id: &[u8]) -> bool {
    (1..=128).contains(&id.len())
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

/// 128 bits as 22 base64url characters without padding (RFC 4648 section 5): session ids and
/// ETag digests.
pub(crate) fn base64url_128(bits: [u8; 16]) -> [u8; 22] {
    use base64::Engine;
    let mut out = [0u8; 22];
    // 16 bytes are exactly 22 characters: the slice always fits.
    let _ = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode_slice(bits, &mut out);
    out
}

/// 128 bits as 32 lowercase hex characters: request ids and lock tokens.
pub(crate) fn hex_128(bits: [u8; 16]) -> [u8; 32] {
    let mut out = [0u8; 32];
    // 16 bytes are exactly 32 digits: the slice always fits.
    let _ = hex::encode_to_slice(bits, &mut out);
    out
}

/// How many request ids are made at once, into one shared buffer.
const IDS_PER_CHUNK: usize = 256;

thread_local! {
    /// Request ids need to be unique, not secret: a fast generator seeded from the OS per
    /// thread is enough, and costs a fraction of the cryptographic thread RNG. Ids are made
    /// [`IDS_PER_CHUNK`] at a time into one buffer that each id then shares, so a request pays
    /// neither an allocation nor a copy for its id (a chunk lives until its last id is gone:
    /// 8 KiB).
    static REQUEST_IDS: std::cell::RefCell<(rand::rngs::SmallRng, bytes::Bytes)> =
        std::cell::RefCell::new((rand::SeedableRng::from_os_rng(), bytes::Bytes::new()));
}

/// `N` random bytes from this thread's id generator (a small fast generator seeded from the
/// OS, the one request ids come from), in one draw: for ids that must not collide, not for
/// secrets.
pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    REQUEST_IDS.with(|cell| {
        let mut bytes = [0u8; N];
        rand::RngCore::fill_bytes(&mut cell.borrow_mut().0, &mut bytes);
        bytes
    })
}

/// 128 random bits as 32 lowercase hex characters.
pub(crate) fn new_request_id() -> HeaderValue {
    REQUEST_IDS.with(|cell| {
        let mut state = cell.borrow_mut();
        let (rng, chunk) = &mut *state;
        if chunk.is_empty() {
            // Each id is made on the stack and appended: zeroing the buffer first would write
            // every byte twice.
            let mut buf = Vec::with_capacity(32 * IDS_PER_CHUNK);
            for _ in 0..IDS_PER_CHUNK {
                let bits: u128 = rng.random();
                buf.extend_from_slice(&hex_128(bits.to_be_bytes()));
            }
            *chunk = bytes::Bytes::from(buf);
        }
        let id = chunk.split_to(32);
        HeaderValue::from_maybe_shared(id).unwrap_or_else(|_| HeaderValue::from_static("0"))
    })
}

#[cfg(test)]
mod tests;

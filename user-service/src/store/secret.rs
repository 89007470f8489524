//! The stored login secret, encrypted at rest.
//!
//! The client logs in with `sha256(stored digest + token)`, so the stored digest alone logs in:
//! a leaked database or backup would be every account. The SQL store therefore keeps it sealed
//! with XChaCha20-Poly1305 (an AEAD: encrypted and authenticated) under a 32-byte key that is not
//! in the database:
//!
//! ```text
//! v1:<key id>:<base64(24-byte random nonce || ciphertext || 16-byte tag)>
//! ```
//!
//! The key id is the first 8 hex digits of `sha256(key)`, so a row names the key that sealed it
//! without revealing it. The associated data is the lowercased account, so a sealed value copied
//! onto another account's row does not open. A random 192-bit nonce per record makes nonce reuse
//! a non-issue.
//!
//! Rotation: the current key seals; previous keys ([`Keyring::with_previous`]) only open.
//! [`Keyring::needs_reseal`] tells which rows the store re-seals at start-up under the current
//! key. A value of 64 hex digits is a digest from before encryption (legacy plain row): it is
//! accepted and re-sealed the same way.
//!
//! What this protects: a copy of the database (dump, backup, replica, SQL injection that reads)
//! without the key gives no value that logs in. What it does not: an attacker who has the key
//! too (the key file beside an SQLite database is copied along by a backup of the directory), or
//! one who can write rows (they could store a digest of their own choosing).

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use sha2::{Digest, Sha256};

/// Version tag of the sealed format.
const VERSION: &str = "v1";
const NONCE_LEN: usize = 24;

/// A 32-byte key with its id.
struct Key {
    id: String,
    cipher: XChaCha20Poly1305,
}

impl Key {
    fn new(bytes: &[u8; 32]) -> Self {
        let id = hex::encode(&Sha256::digest(bytes)[..4]);
        Self {
            id,
            cipher: XChaCha20Poly1305::new(&(*bytes).into()),
        }
    }
}

/// Why a stored value could not be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretError {
    /// Sealed with a key id that is not in the keyring.
    UnknownKey(String),
    /// Not a sealed value nor a legacy digest, or it fails authentication (tampered, moved to
    /// another account, or sealed by another key with a colliding id).
    Invalid,
    /// The OS random source failed.
    Random,
}

impl fmt::Display for SecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownKey(id) => write!(f, "sealed with key {id}, which is not configured"),
            Self::Invalid => f.write_str("the stored secret is malformed or fails authentication"),
            Self::Random => f.write_str("the OS random source failed"),
        }
    }
}

impl std::error::Error for SecretError {}

/// The current key (seals and opens) and previous keys (open only).
pub struct Keyring {
    current: Key,
    previous: Vec<Key>,
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyring")
            .field("current", &self.current.id)
            .field(
                "previous",
                &self.previous.iter().map(|k| &k.id).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// A key as configured: 32 bytes, shown by `Debug` as its id only.
#[derive(Clone, PartialEq, Eq)]
pub struct StoreKey(pub [u8; 32]);

impl fmt::Debug for StoreKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreKey({})", Key::new(&self.0).id)
    }
}

impl std::str::FromStr for StoreKey {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        parse_key(text).map(Self)
    }
}

/// Parses a key written as 64 hex digits or as base64 (standard alphabet, padding optional) of
/// 32 bytes; surrounding whitespace is ignored.
pub fn parse_key(text: &str) -> Result<[u8; 32], String> {
    let text = text.trim();
    let bytes = if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        hex::decode(text).map_err(|e| e.to_string())?
    } else {
        let unpadded = text.trim_end_matches('=');
        base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(unpadded)
            .map_err(|_| "a key is 64 hex digits or the base64 of 32 bytes".to_owned())?
    };
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
        format!(
            "a key is 32 bytes (64 hex digits or 44 base64 characters), this one is {} bytes",
            bytes.len()
        )
    })
}

/// A new random key, as 64 hex digits.
pub fn generate_key() -> Result<String, SecretError> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|_| SecretError::Random)?;
    Ok(hex::encode(key))
}

/// True for a digest stored before encryption: 64 hex digits.
fn is_plain_digest(value: &str) -> bool {
    value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit())
}

impl Keyring {
    /// A keyring sealing with `current`.
    pub fn new(current: &[u8; 32]) -> Self {
        Self {
            current: Key::new(current),
            previous: Vec::new(),
        }
    }

    /// Adds keys that only open (values sealed before a rotation).
    #[must_use]
    pub fn with_previous<'a>(mut self, keys: impl IntoIterator<Item = &'a [u8; 32]>) -> Self {
        self.previous.extend(keys.into_iter().map(Key::new));
        self
    }

    /// The current key's id (the prefix of values it sealed is `v1:<id>:`).
    pub fn current_id(&self) -> &str {
        &self.current.id
    }

    /// Seals `digest` for `account` under the current key.
    pub fn seal(&self, account: &str, digest: &str) -> Result<String, SecretError> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|_| SecretError::Random)?;
        let aad = account.to_lowercase();
        let sealed = self
            .current
            .cipher
            .encrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: digest.as_bytes(),
                    aad: aad.as_bytes(),
                },
            )
            .map_err(|_| SecretError::Invalid)?;
        let mut blob = Vec::with_capacity(NONCE_LEN + sealed.len());
        blob.extend_from_slice(&nonce);
        blob.extend_from_slice(&sealed);
        Ok(format!(
            "{VERSION}:{}:{}",
            self.current.id,
            STANDARD.encode(blob)
        ))
    }

    /// The digest in `stored` (a sealed value, or a legacy plain digest as it is).
    pub fn open(&self, account: &str, stored: &str) -> Result<String, SecretError> {
        if is_plain_digest(stored) {
            return Ok(stored.to_ascii_lowercase());
        }
        let mut parts = stored.splitn(3, ':');
        let (Some(VERSION), Some(id), Some(blob)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(SecretError::Invalid);
        };
        let key = std::iter::once(&self.current)
            .chain(&self.previous)
            .find(|k| k.id == id)
            .ok_or_else(|| SecretError::UnknownKey(id.to_owned()))?;
        let blob = STANDARD.decode(blob).map_err(|_| SecretError::Invalid)?;
        if blob.len() < NONCE_LEN {
            return Err(SecretError::Invalid);
        }
        let (nonce, sealed) = blob.split_at(NONCE_LEN);
        let nonce = XNonce::try_from(nonce).map_err(|_| SecretError::Invalid)?;
        let aad = account.to_lowercase();
        let digest = key
            .cipher
            .decrypt(
                &nonce,
                Payload {
                    msg: sealed,
                    aad: aad.as_bytes(),
                },
            )
            .map_err(|_| SecretError::Invalid)?;
        String::from_utf8(digest).map_err(|_| SecretError::Invalid)
    }

    /// True when `stored` is not sealed by the current key (plain, or an older key): the store
    /// re-seals such rows.
    pub fn needs_reseal(&self, stored: &str) -> bool {
        !stored
            .strip_prefix(VERSION)
            .and_then(|rest| rest.strip_prefix(':'))
            .and_then(|rest| rest.strip_prefix(self.current.id.as_str()))
            .is_some_and(|rest| rest.starts_with(':'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae";

    fn key(n: u8) -> [u8; 32] {
        [n; 32]
    }

    #[test]
    fn seals_and_opens_with_a_fresh_nonce_each_time() {
        let ring = Keyring::new(&key(1));
        let a = ring.seal("Alice", DIGEST).unwrap();
        let b = ring.seal("Alice", DIGEST).unwrap();
        assert_ne!(a, b, "a random nonce per record");
        assert!(a.starts_with(&format!("v1:{}:", ring.current_id())));
        assert!(!a.contains(DIGEST));
        assert_eq!(ring.open("Alice", &a).unwrap(), DIGEST);
        assert_eq!(
            ring.open("alice", &b).unwrap(),
            DIGEST,
            "the account's case does not matter"
        );
        assert!(!ring.needs_reseal(&a));
    }

    #[test]
    fn another_account_a_tampered_value_or_another_key_does_not_open() {
        let ring = Keyring::new(&key(1));
        let sealed = ring.seal("alice", DIGEST).unwrap();
        assert_eq!(ring.open("bob", &sealed), Err(SecretError::Invalid));
        let mut tampered = sealed.clone().into_bytes();
        let last = tampered.len() - 3;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        assert_eq!(ring.open("alice", &tampered), Err(SecretError::Invalid));
        let other = Keyring::new(&key(2));
        assert!(matches!(
            other.open("alice", &sealed),
            Err(SecretError::UnknownKey(_))
        ));
        for junk in [
            "",
            "v1:",
            "v1:x:y",
            "v2:abc:def",
            "not hex at all",
            "v1:00000000:AAAA",
        ] {
            assert!(ring.open("alice", junk).is_err(), "{junk}");
        }
    }

    #[test]
    fn previous_keys_open_and_such_values_need_resealing() {
        let old = Keyring::new(&key(1));
        let sealed = old.seal("alice", DIGEST).unwrap();
        let ring = Keyring::new(&key(2)).with_previous([&key(1)]);
        assert_eq!(ring.open("alice", &sealed).unwrap(), DIGEST);
        assert!(ring.needs_reseal(&sealed));
        assert!(
            ring.needs_reseal(DIGEST),
            "a legacy plain digest is re-sealed"
        );
        assert_eq!(ring.open("alice", &DIGEST.to_uppercase()).unwrap(), DIGEST);
    }

    #[test]
    fn keys_parse_from_hex_or_base64_of_32_bytes() {
        let hex_key = "00".repeat(31) + "ff";
        assert_eq!(parse_key(&hex_key).unwrap()[31], 0xff);
        let b64 = STANDARD.encode([7u8; 32]);
        assert_eq!(parse_key(&format!(" {b64}\n")).unwrap(), [7u8; 32]);
        assert_eq!(parse_key(b64.trim_end_matches('=')).unwrap(), [7u8; 32]);
        assert!(parse_key("abc").is_err());
        assert!(
            parse_key(&STANDARD.encode([7u8; 16]))
                .unwrap_err()
                .contains("16 bytes")
        );
        let generated = generate_key().unwrap();
        assert_eq!(parse_key(&generated).unwrap().len(), 32);
        assert_ne!(generated, generate_key().unwrap());
    }

    #[test]
    fn debug_shows_key_ids_only() {
        let ring = Keyring::new(&key(9)).with_previous([&key(8)]);
        let shown = format!("{ring:?}");
        assert!(shown.contains(ring.current_id()));
        assert!(!shown.contains(&hex::encode(key(9))));
        let configured: StoreKey = hex::encode(key(9)).parse().unwrap();
        assert_eq!(
            format!("{configured:?}"),
            format!("StoreKey({})", ring.current_id())
        );
    }
}

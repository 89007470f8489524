//! The keys of signed and private cookies, newest first.

use std::fmt;
use std::sync::Arc;

use ::cookie::Key;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

/// The shortest master key [`CookieKeys::from_base64`] takes (256 bits), from which a full key
/// is derived (HKDF-SHA256). A key of [`FULL_KEY`] bytes or more is used as it is.
const MIN_MASTER_KEY: usize = 32;
/// The length of a full key: 32 bytes to sign, 32 to encrypt.
const FULL_KEY: usize = 64;

/// Keys for signed and private cookies: the first signs and encrypts, every one is tried when
/// a cookie is read, so keys can be rotated without logging anyone out.
///
/// Register it in the app's state for [`Cookies::signed`](super::Cookies::signed) and
/// [`Cookies::private`](super::Cookies::private):
///
/// ```
/// use framework::cookies::CookieKeys;
///
/// // From configuration: base64 keys, newest first, separated by commas.
/// let keys = CookieKeys::from_base64(&format!("{},{}", "A".repeat(88), "B".repeat(44))).unwrap();
/// assert_eq!(keys.all().len(), 2);
/// let app = framework::App::new().with_state(keys);
/// # let _ = app;
/// ```
#[derive(Clone)]
pub struct CookieKeys {
    keys: Arc<[Key]>,
}

/// Never shows key material.
impl fmt::Debug for CookieKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CookieKeys")
            .field("keys", &self.keys.len())
            .finish()
    }
}

/// Keys that [`CookieKeys::from_base64`] refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CookieKeyError {
    /// No key at all.
    Empty,
    /// The key at this position (0 is the first) is not base64.
    NotBase64 {
        /// Its position in the list.
        index: usize,
    },
    /// The key at this position is shorter than 32 bytes.
    TooShort {
        /// Its position in the list.
        index: usize,
        /// Its length in bytes.
        len: usize,
    },
}

impl fmt::Display for CookieKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("no cookie key given"),
            Self::NotBase64 { index } => write!(f, "cookie key {index} is not base64"),
            Self::TooShort { index, len } => write!(
                f,
                "cookie key {index} has {len} bytes; a key needs at least {MIN_MASTER_KEY} \
                 random bytes ({FULL_KEY} are used as they are)"
            ),
        }
    }
}

impl std::error::Error for CookieKeyError {}

impl CookieKeys {
    /// One key.
    pub fn new(current: Key) -> Self {
        Self::rotated(current, [])
    }

    /// `current` signs and encrypts; `previous` (newest first) still read.
    pub fn rotated(current: Key, previous: impl IntoIterator<Item = Key>) -> Self {
        let keys: Vec<Key> = std::iter::once(current).chain(previous).collect();
        Self { keys: keys.into() }
    }

    /// A random key, for tests and for apps whose cookies need not outlive the process.
    pub fn generate() -> Self {
        Self::new(Key::generate())
    }

    /// Keys from configuration: base64 (standard or URL-safe), newest first, separated by
    /// commas. A key of 64 bytes or more is used as it is; one of 32 to 63 bytes is a master
    /// key from which one is derived.
    pub fn from_base64(list: &str) -> Result<Self, CookieKeyError> {
        let mut keys = Vec::new();
        for (index, text) in list.split(',').map(str::trim).enumerate() {
            if text.is_empty() {
                continue;
            }
            let bytes = STANDARD
                .decode(text)
                .or_else(|_| URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')))
                .map_err(|_| CookieKeyError::NotBase64 { index })?;
            keys.push(key_from_bytes(&bytes).ok_or(CookieKeyError::TooShort {
                index,
                len: bytes.len(),
            })?);
        }
        if keys.is_empty() {
            return Err(CookieKeyError::Empty);
        }
        Ok(Self { keys: keys.into() })
    }

    /// The key that signs and encrypts.
    pub fn current(&self) -> &Key {
        &self.keys[0]
    }

    /// Every key, the current one first.
    pub fn all(&self) -> &[Key] {
        &self.keys
    }
}

/// A key from random bytes: used as they are from 64 bytes on, derived from 32 on.
fn key_from_bytes(bytes: &[u8]) -> Option<Key> {
    if bytes.len() >= FULL_KEY {
        Key::try_from(bytes).ok()
    } else if bytes.len() >= MIN_MASTER_KEY {
        Some(Key::derive_from(bytes))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_from_configuration() {
        let full = STANDARD.encode([7u8; 64]);
        let master = URL_SAFE_NO_PAD.encode([9u8; 32]);
        let keys = CookieKeys::from_base64(&format!(" {full} , {master} ")).unwrap();
        assert_eq!(keys.all().len(), 2);
        assert_eq!(keys.current().master(), &[7u8; 64][..]);
        assert_eq!(
            CookieKeys::from_base64(" , ").err(),
            Some(CookieKeyError::Empty)
        );
        assert_eq!(
            CookieKeys::from_base64(&format!("{full},!!")).err(),
            Some(CookieKeyError::NotBase64 { index: 1 })
        );
        assert_eq!(
            CookieKeys::from_base64(&STANDARD.encode([1u8; 31])).err(),
            Some(CookieKeyError::TooShort { index: 0, len: 31 })
        );
        assert!(!format!("{keys:?}").contains('7'), "no key material");
    }
}

//! Signed and private cookies: the jar seen through a set of keys.

use ::cookie::{Cookie, CookieJar, Key};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::{CookieError, CookieKeys, add_checked, remove_checked};

/// How a cookie's value is sealed.
#[derive(Clone, Copy)]
enum Seal {
    Signed,
    Private,
}

impl Seal {
    /// `cookie` sealed under `key`.
    fn close(self, key: &Key, mut cookie: Cookie<'static>) -> Cookie<'static> {
        match self {
            Seal::Signed => {
                let tag = signature(key, cookie.name(), cookie.value()).finalize();
                let mut value = STANDARD.encode(tag.into_bytes());
                value.push_str(cookie.value());
                cookie.set_value(value);
                cookie
            }
            Seal::Private => {
                // The crate encrypts only into a jar: a scratch one, so the cookie is checked
                // before it reaches the request's jar.
                let mut scratch = CookieJar::new();
                scratch.private_mut(key).add(cookie);
                scratch
                    .delta()
                    .next()
                    .cloned()
                    .unwrap_or_else(|| unreachable!("the jar holds the cookie just added"))
            }
        }
    }

    /// `cookie` opened with the first of `keys` that authenticates it.
    fn open(self, keys: &CookieKeys, cookie: &Cookie<'static>) -> Option<Cookie<'static>> {
        match self {
            Seal::Signed => {
                let sealed = cookie.value();
                let tag = STANDARD.decode(sealed.get(..SIGNATURE_LEN)?).ok()?;
                let value = &sealed[SIGNATURE_LEN..];
                keys.all()
                    .iter()
                    .any(|key| {
                        signature(key, cookie.name(), value)
                            .verify_slice(&tag)
                            .is_ok()
                    })
                    .then(|| {
                        let mut opened = cookie.clone();
                        opened.set_value(value.to_owned());
                        opened
                    })
            }
            Seal::Private => {
                let jar = CookieJar::new();
                keys.all()
                    .iter()
                    .find_map(|key| jar.private(key).decrypt(cookie.clone()))
            }
        }
    }
}

/// The length of a signed cookie's signature: base64 of an HMAC-SHA256 tag (32 bytes).
const SIGNATURE_LEN: usize = 44;

/// HMAC-SHA256 under `key`'s signing half over the cookie's name and value: the name's length
/// (8 bytes, big-endian), the name, the value, so no other name and value give the same input.
///
/// The `cookie` crate's signed jar MACs the value alone, so a signed value moved to another
/// name verified there; this one reads as absent under any name but its own. The layout of the
/// sealed value is the crate's (the tag's base64, then the value as it is).
fn signature(key: &Key, name: &str, value: &str) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key.signing())
        .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    mac.update(&(name.len() as u64).to_be_bytes());
    mac.update(name.as_bytes());
    mac.update(value.as_bytes());
    mac
}

macro_rules! sealed_jar {
    ($(#[$doc:meta])* $name:ident, $seal:expr) => {
        $(#[$doc])*
        pub struct $name<'a> {
            jar: &'a mut CookieJar,
            keys: &'a CookieKeys,
        }

        impl<'a> $name<'a> {
            pub(super) fn new(jar: &'a mut CookieJar, keys: &'a CookieKeys) -> Self {
                Self { jar, keys }
            }

            /// The cookie `name` with its value opened: `None` when it is missing, was
            /// tampered with, was made under none of the keys or for another name.
            pub fn get(&self, name: &str) -> Option<Cookie<'static>> {
                $seal.open(self.keys, self.jar.get(name)?)
            }

            /// The opened value of cookie `name`; see [`Self::get`].
            pub fn value(&self, name: &str) -> Option<String> {
                self.get(name).map(|c| c.value().to_owned())
            }

            /// Adds `cookie`, its value sealed under the current key; checked as
            /// [`Cookies::add`](super::Cookies::add) checks, the size sealed.
            pub fn add(&mut self, cookie: impl Into<Cookie<'static>>) -> Result<(), CookieError> {
                let sealed = $seal.close(self.keys.current(), cookie.into());
                add_checked(self.jar, sealed)
            }

            /// Removes `cookie`, as [`Cookies::remove`](super::Cookies::remove) does.
            pub fn remove(
                &mut self,
                cookie: impl Into<Cookie<'static>>,
            ) -> Result<(), CookieError> {
                remove_checked(self.jar, cookie.into())
            }
        }
    };
}

sealed_jar!(
    /// Signed cookies: readable by the client, but a changed one reads as absent. From
    /// [`Cookies::signed`](super::Cookies::signed).
    SignedCookies,
    Seal::Signed
);

sealed_jar!(
    /// Private cookies: encrypted and authenticated, so the client can neither read nor
    /// change them. From [`Cookies::private`](super::Cookies::private).
    PrivateCookies,
    Seal::Private
);

#[cfg(test)]
mod tests {
    use http::HeaderMap;
    use http::header::{COOKIE, HeaderValue, SET_COOKIE};

    use super::super::Cookies;
    use super::*;

    /// The `name=value` a response sends, as the next request's `Cookie` header.
    fn echo(cookies: &Cookies) -> HeaderMap {
        let mut sent = HeaderMap::new();
        cookies.write_set_cookie(&mut sent);
        let pairs: Vec<&str> = sent
            .get_all(SET_COOKIE)
            .iter()
            .map(|v| v.to_str().unwrap().split(';').next().unwrap())
            .collect();
        let mut headers = HeaderMap::new();
        headers.insert(COOKIE, HeaderValue::from_str(&pairs.join("; ")).unwrap());
        headers
    }

    #[test]
    fn sealed_round_trips_tampering_and_rotation() {
        let old = CookieKeys::generate();
        let mut first = Cookies::from_headers(&HeaderMap::new(), Some(old.clone()));
        first
            .signed()
            .unwrap()
            .add(Cookie::new("s", "v 1"))
            .unwrap();
        first
            .private()
            .unwrap()
            .add(Cookie::new("p", "v 2"))
            .unwrap();
        let headers = echo(&first);
        let sent = headers[COOKIE].to_str().unwrap();
        assert!(
            sent.contains("v%201"),
            "a signed value stays readable: {sent}"
        );
        assert!(!sent.contains("v%202"), "a private one does not: {sent}");

        let mut again = Cookies::from_headers(&headers, Some(old.clone()));
        assert_eq!(again.signed().unwrap().value("s").as_deref(), Some("v 1"));
        assert_eq!(again.private().unwrap().value("p").as_deref(), Some("v 2"));
        // Read under the other seal, or another key: absent.
        assert_eq!(again.private().unwrap().value("s"), None);
        assert_eq!(again.signed().unwrap().value("p"), None);
        let stranger = CookieKeys::generate();
        assert_eq!(again.private_with(&stranger).value("p"), None);

        // A new key first, the old one after it: old cookies read, new ones use the new key.
        let rotated = CookieKeys::rotated(Key::generate(), [old.current().clone()]);
        let mut later = Cookies::from_headers(&headers, Some(rotated.clone()));
        assert_eq!(later.private().unwrap().value("p").as_deref(), Some("v 2"));
        later
            .private()
            .unwrap()
            .add(Cookie::new("p", "v 3"))
            .unwrap();
        let newer = echo(&later);
        let mut by_new =
            Cookies::from_headers(&newer, Some(CookieKeys::new(rotated.current().clone())));
        assert_eq!(by_new.private().unwrap().value("p").as_deref(), Some("v 3"));
        let mut by_old = Cookies::from_headers(&newer, Some(old));
        assert_eq!(by_old.private().unwrap().value("p"), None);

        // One byte changed: absent.
        let raw = headers[COOKIE].to_str().unwrap().replacen("s=", "s=A", 1);
        let mut tampered = HeaderMap::new();
        tampered.insert(COOKIE, HeaderValue::from_str(&raw).unwrap());
        let mut tampered = Cookies::from_headers(&tampered, Some(rotated));
        assert_eq!(tampered.signed().unwrap().value("s"), None);
    }

    #[test]
    fn a_signed_cookie_reads_under_its_own_name_only() {
        let keys = CookieKeys::generate();
        let mut first = Cookies::from_headers(&HeaderMap::new(), Some(keys.clone()));
        first
            .signed()
            .unwrap()
            .add(Cookie::new("t", "user=admin"))
            .unwrap();
        let sent = echo(&first);
        let value = sent[COOKIE].to_str().unwrap().strip_prefix("t=").unwrap();
        for (name, header) in [
            ("t", format!("t={value}")),
            ("s", format!("s={value}")),
            ("T", format!("T={value}")),
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(COOKIE, HeaderValue::from_str(&header).unwrap());
            let mut jar = Cookies::from_headers(&headers, Some(keys.clone()));
            let read = jar.signed().unwrap().value(name);
            let expected = (name == "t").then(|| "user=admin".to_owned());
            assert_eq!(read, expected, "{header}");
        }
        // A name and value that join to the same text as another pair do not share a tag.
        let tag = |name: &str, value: &str| {
            signature(keys.current(), name, value)
                .finalize()
                .into_bytes()
        };
        assert_ne!(tag("a=b", "c"), tag("a", "b=c"));
        assert_ne!(tag("ab", "c"), tag("a", "bc"));
    }

    #[test]
    fn sealed_cookies_without_keys_are_an_error() {
        let mut cookies = Cookies::from_headers(&HeaderMap::new(), None);
        assert_eq!(cookies.signed().err(), Some(CookieError::NoKeys));
        assert_eq!(cookies.private().err(), Some(CookieError::NoKeys));
    }
}

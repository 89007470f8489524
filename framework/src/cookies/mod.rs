//! Cookies: the request's cookies as a jar, changes to it sent back as `Set-Cookie`, and signed
//! and private (encrypted) cookies under keys that can be rotated.
//!
//! [`CookiesExt::cookies`] gives the request's jar ([`Cookies`], parsed
//! from its `Cookie` headers by the `cookie` crate the first time it is asked for),
//! and a controller method may take it as an argument (`cookies: &mut Cookies`). What a handler
//! or middleware adds or removes becomes one `Set-Cookie` header per cookie when the response is
//! made, whatever the answer (an error answer too); a removal is the cookie expired, with the
//! path and domain given to [`Cookies::remove`], which must be those it was set with.
//!
//! A cookie is checked when it is added, and refused with a [`CookieError`] (a 500 in category
//! `framework-cookie` when it reaches the client: it is the app's mistake):
//! - `__Host-` names need `Secure`, `Path=/` and no `Domain`; `__Secure-` names need `Secure`
//!   (RFC 6265bis section 4.1.3; checked case-insensitively, as browsers do);
//! - a `Path` or `Domain` with a `;` or a control character, which would inject attributes;
//! - a cookie whose `Set-Cookie` value is longer than [`MAX_COOKIE_SIZE`] (4096) bytes, which
//!   browsers drop without a word (RFC 6265 section 6.1).
//!
//! Names and values are sent as they are when they consist of RFC 6265 `cookie-octet`s, and
//! percent-encoded otherwise; cookies are read percent-decoded, so any text round-trips.
//!
//! **Signed** cookies ([`Cookies::signed`]) carry an HMAC-SHA256 of their name and value: the
//! client can read them but not change them. **Private** cookies ([`Cookies::private`]) are
//! encrypted and authenticated (AES-256-GCM, the name as associated data): the client can
//! neither read nor change them. Both take their keys from the app's state ([`CookieKeys`],
//! registered with [`App::with_state`](crate::App::with_state)); the first key signs and
//! encrypts, every key is tried when reading, so a new key can be put first while cookies made
//! under the old one still read. A cookie that was tampered with, made under an unknown key or
//! moved to another name reads as absent.
//!
//! ```
//! use framework::cookies::{Cookie, CookieKeys, CookiesExt, SameSite};
//! use framework::testing::TestClient;
//! use framework::{App, Context, Result};
//!
//! async fn remember(ctx: &mut Context) -> Result<String> {
//!     let cookies = ctx.cookies();
//!     let before = cookies.value("theme").unwrap_or("none").to_owned();
//!     cookies.add(
//!         Cookie::build(("theme", "dark"))
//!             .path("/")
//!             .http_only(true)
//!             .same_site(SameSite::Lax),
//!     )?;
//!     // Encrypted: the client holds it but cannot read or change it.
//!     cookies.private()?.add(Cookie::build(("cart", "3 apples")).path("/"))?;
//!     Ok(before)
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let app = App::new()
//!     .with_state(CookieKeys::generate())
//!     .get("/", remember)
//!     .build()
//!     .unwrap();
//! let client = TestClient::new(app);
//! let res = client.get("/").send().await;
//! assert_eq!(res.text(), "none");
//! assert!(res.header("set-cookie").is_some());
//! assert_eq!(client.get("/").send().await.text(), "dark");
//! # }
//! ```

mod keys;
mod sealed;

use std::fmt;

use ::cookie::CookieJar;
use http::header::{COOKIE, HeaderMap, HeaderValue, SET_COOKIE};

pub use self::keys::{CookieKeyError, CookieKeys};
pub use self::sealed::{PrivateCookies, SignedCookies};
pub use ::cookie::{Cookie, CookieBuilder, Expiration, Key, SameSite, time};

/// The cookie jar of a request: what [`Context`](crate::Context) gains from this module.
pub trait CookiesExt {
    /// The request's cookies, parsed from its `Cookie` headers the first time they are asked
    /// for; what is added or removed is sent as `Set-Cookie` when the response is made.
    /// Signed and private cookies use the [`CookieKeys`] of the app's state.
    fn cookies(&mut self) -> &mut Cookies;
    /// True when the response will carry `Set-Cookie`: set as a header, or a change in the
    /// cookie jar still to be written.
    fn sets_cookies(&self) -> bool;
}

/// Category of cookie errors.
pub const CATEGORY: &str = "framework-cookie";

/// The longest `Set-Cookie` value (name, value and attributes) a cookie may have: what every
/// browser keeps at least (RFC 6265 section 6.1). A longer one is refused when it is added.
pub const MAX_COOKIE_SIZE: usize = 4096;

/// A cookie the jar refuses to add: a 500 in category `framework-cookie` (`exception: true`)
/// when a handler passes it on with `?`, since a refused cookie is the app's mistake.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CookieError {
    /// A `__Host-` cookie without `Secure`, without `Path=/`, or with a `Domain`.
    HostPrefix {
        /// The cookie's name.
        name: String,
    },
    /// A `__Secure-` cookie without `Secure`.
    SecurePrefix {
        /// The cookie's name.
        name: String,
    },
    /// An empty name.
    EmptyName,
    /// A `Path` or `Domain` with a `;` or a control character.
    InvalidAttribute {
        /// The cookie's name.
        name: String,
        /// `Path` or `Domain`.
        attribute: &'static str,
    },
    /// A `Set-Cookie` value longer than [`MAX_COOKIE_SIZE`].
    TooLarge {
        /// The cookie's name.
        name: String,
        /// Its `Set-Cookie` value's length in bytes.
        size: usize,
    },
    /// A signed or private cookie, and no [`CookieKeys`] in the app's state.
    NoKeys,
}

impl fmt::Display for CookieError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::HostPrefix { name } => write!(
                f,
                "cookie {name}: a __Host- cookie needs Secure, Path=/ and no Domain"
            ),
            Self::SecurePrefix { name } => {
                write!(f, "cookie {name}: a __Secure- cookie needs Secure")
            }
            Self::EmptyName => f.write_str("a cookie needs a name"),
            Self::InvalidAttribute { name, attribute } => write!(
                f,
                "cookie {name}: its {attribute} contains a ';' or a control character"
            ),
            Self::TooLarge { name, size } => write!(
                f,
                "cookie {name} is {size} bytes, over the {MAX_COOKIE_SIZE} a browser keeps"
            ),
            Self::NoKeys => f.write_str(
                "signed and private cookies need keys: App::with_state(CookieKeys::...)",
            ),
        }
    }
}

impl std::error::Error for CookieError {}

/// The cookies of one request, and the changes to send back.
///
/// Reached through [`CookiesExt::cookies`] or as a controller argument
/// `cookies: &mut Cookies`; see the [module documentation](self).
pub struct Cookies {
    jar: CookieJar,
    keys: Option<CookieKeys>,
}

impl fmt::Debug for Cookies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cookies")
            .field("cookies", &self.jar.iter().count())
            .field("keys", &self.keys.is_some())
            .finish()
    }
}

impl Cookies {
    /// The cookies of `headers`' `Cookie` headers (percent-decoded; a malformed pair is
    /// skipped), with `keys` for signed and private cookies.
    pub fn from_headers(headers: &HeaderMap, keys: Option<CookieKeys>) -> Self {
        let mut jar = CookieJar::new();
        for value in headers.get_all(COOKIE) {
            let Ok(value) = value.to_str() else {
                continue;
            };
            for cookie in Cookie::split_parse_encoded(value).flatten() {
                jar.add_original(cookie.into_owned());
            }
        }
        Self { jar, keys }
    }

    /// The cookie `name`: sent by the client, or added since (not one removed since).
    pub fn get(&self, name: &str) -> Option<&Cookie<'static>> {
        self.jar.get(name)
    }

    /// The value of cookie `name`, without the double quotes around it if it has them.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.jar.get(name).map(Cookie::value_trimmed)
    }

    /// Every cookie, as [`Cookies::get`] sees them.
    pub fn iter(&self) -> impl Iterator<Item = &Cookie<'static>> {
        self.jar.iter()
    }

    /// Adds `cookie` (replacing one of the same name), to be sent as `Set-Cookie`; refused when
    /// its prefix's rules, its attributes or its size say no (see [`CookieError`]).
    pub fn add(&mut self, cookie: impl Into<Cookie<'static>>) -> Result<(), CookieError> {
        add_checked(&mut self.jar, cookie.into())
    }

    /// Removes `cookie`: the client is sent it expired (empty, `Max-Age=0`, `Expires` in the
    /// past). Give it the `Path` and `Domain` it was set with, or the browser keeps it; a
    /// prefixed name needs the attributes its prefix asks for, as when it was added.
    pub fn remove(&mut self, cookie: impl Into<Cookie<'static>>) -> Result<(), CookieError> {
        remove_checked(&mut self.jar, cookie.into())
    }

    /// Signed cookies under the app's [`CookieKeys`]; [`CookieError::NoKeys`] without them.
    pub fn signed(&mut self) -> Result<SignedCookies<'_>, CookieError> {
        let keys = self.keys.as_ref().ok_or(CookieError::NoKeys)?;
        Ok(SignedCookies::new(&mut self.jar, keys))
    }

    /// Private (encrypted) cookies under the app's [`CookieKeys`]; [`CookieError::NoKeys`]
    /// without them.
    pub fn private(&mut self) -> Result<PrivateCookies<'_>, CookieError> {
        let keys = self.keys.as_ref().ok_or(CookieError::NoKeys)?;
        Ok(PrivateCookies::new(&mut self.jar, keys))
    }

    /// Signed cookies under `keys` (a component with keys of its own).
    pub fn signed_with<'a>(&'a mut self, keys: &'a CookieKeys) -> SignedCookies<'a> {
        SignedCookies::new(&mut self.jar, keys)
    }

    /// Private cookies under `keys` (a component with keys of its own, such as the cookie
    /// session store).
    pub fn private_with<'a>(&'a mut self, keys: &'a CookieKeys) -> PrivateCookies<'a> {
        PrivateCookies::new(&mut self.jar, keys)
    }

    /// True when cookies were added or removed: the response will carry `Set-Cookie`.
    pub fn has_changes(&self) -> bool {
        self.jar.delta().next().is_some()
    }

    /// Appends a `Set-Cookie` header for each cookie added or removed.
    pub fn write_set_cookie(&self, headers: &mut HeaderMap) {
        for cookie in self.jar.delta() {
            match HeaderValue::try_from(render(cookie)) {
                Ok(value) => {
                    headers.append(SET_COOKIE, value);
                }
                // Unreachable for a cookie that passed `check`; logged rather than sent broken.
                Err(err) => {
                    tracing::error!(cookie = cookie.name(), error = %err, "cookie not sent");
                }
            }
        }
    }
}

/// `cookie` in the jar, once [`check`]ed.
fn add_checked(jar: &mut CookieJar, cookie: Cookie<'static>) -> Result<(), CookieError> {
    check(&cookie)?;
    jar.add(cookie);
    Ok(())
}

/// `cookie`'s removal in the jar, once [`check`]ed: always sent, even when the request did not
/// carry the cookie (it may have been set under another path).
fn remove_checked(jar: &mut CookieJar, cookie: Cookie<'static>) -> Result<(), CookieError> {
    check(&cookie)?;
    // The jar sends a removal only for a cookie it started with.
    jar.add_original(Cookie::new(cookie.name().to_owned(), ""));
    jar.remove(cookie);
    Ok(())
}

/// The rules of the module documentation: prefix, attributes, size.
fn check(cookie: &Cookie<'_>) -> Result<(), CookieError> {
    let name = cookie.name();
    if name.is_empty() {
        return Err(CookieError::EmptyName);
    }
    let secure = cookie.secure() == Some(true);
    if starts_with_ignore_case(name, "__Host-")
        && !(secure && cookie.path() == Some("/") && cookie.domain().is_none())
    {
        return Err(CookieError::HostPrefix {
            name: name.to_owned(),
        });
    }
    if starts_with_ignore_case(name, "__Secure-") && !secure {
        return Err(CookieError::SecurePrefix {
            name: name.to_owned(),
        });
    }
    for (attribute, text) in [("Path", cookie.path()), ("Domain", cookie.domain())] {
        if text.is_some_and(|t| t.bytes().any(|b| b == b';' || b.is_ascii_control())) {
            return Err(CookieError::InvalidAttribute {
                name: name.to_owned(),
                attribute,
            });
        }
    }
    let size = render(cookie).len();
    if size > MAX_COOKIE_SIZE {
        return Err(CookieError::TooLarge {
            name: name.to_owned(),
            size,
        });
    }
    Ok(())
}

fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.get(..prefix.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(prefix))
}

/// The `Set-Cookie` value of `cookie`: name and value as they are when they need no encoding
/// (so a sealed value's base64 keeps its length), percent-encoded otherwise.
pub fn render(cookie: &Cookie<'_>) -> String {
    let plain = cookie.name().bytes().all(is_token_byte)
        && cookie
            .value()
            .bytes()
            .all(|b| is_cookie_octet(b) && b != b'%');
    if plain {
        cookie.to_string()
    } else {
        cookie.encoded().to_string()
    }
}

/// RFC 6265 section 4.1.1: `cookie-octet`, what a value may hold unencoded.
fn is_cookie_octet(b: u8) -> bool {
    matches!(b, 0x21 | 0x23..=0x2B | 0x2D..=0x3A | 0x3C..=0x5B | 0x5D..=0x7E)
}

/// RFC 9110 section 5.6.2: `tchar`, what a name may hold unencoded (no `%`: it would be
/// decoded when read).
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jar(cookie_header: &str) -> Cookies {
        let mut headers = HeaderMap::new();
        headers.insert(COOKIE, HeaderValue::from_str(cookie_header).unwrap());
        Cookies::from_headers(&headers, Some(CookieKeys::generate()))
    }

    fn sent(cookies: &Cookies) -> Vec<String> {
        let mut headers = HeaderMap::new();
        cookies.write_set_cookie(&mut headers);
        let mut all: Vec<String> = headers
            .get_all(SET_COOKIE)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect();
        all.sort();
        all
    }

    #[test]
    fn reads_decoded_and_writes_only_changes() {
        let mut cookies = jar("a=1; b=x%20y; c=\"q\"");
        assert_eq!(cookies.value("a"), Some("1"));
        assert_eq!(cookies.value("b"), Some("x y"));
        assert_eq!(cookies.value("c"), Some("q"));
        assert!(!cookies.has_changes());
        assert!(sent(&cookies).is_empty());
        cookies.add(Cookie::new("d", "a b;c")).unwrap();
        assert_eq!(sent(&cookies), ["d=a%20b%3Bc"]);
        assert_eq!(cookies.value("d"), Some("a b;c"));
    }

    #[test]
    fn removal_is_sent_even_for_a_cookie_the_request_lacked() {
        let mut cookies = jar("a=1");
        cookies.remove(Cookie::build("a").path("/x")).unwrap();
        cookies.remove(Cookie::build("z").path("/")).unwrap();
        assert_eq!(cookies.get("a"), None);
        let sent = sent(&cookies);
        assert_eq!(sent.len(), 2);
        assert!(
            sent[0].starts_with("a=; Path=/x; Max-Age=0; Expires="),
            "{sent:?}"
        );
        assert!(
            sent[1].starts_with("z=; Path=/; Max-Age=0; Expires="),
            "{sent:?}"
        );
    }

    #[test]
    fn prefixes_attributes_and_size_are_checked() {
        let mut cookies = jar("");
        let host = |b: CookieBuilder<'static>| b.build();
        assert!(matches!(
            cookies.add(host(Cookie::build(("__Host-a", "1")).path("/"))),
            Err(CookieError::HostPrefix { .. })
        ));
        assert!(matches!(
            cookies.add(Cookie::build(("__host-a", "1")).secure(true)),
            Err(CookieError::HostPrefix { .. })
        ));
        assert!(matches!(
            cookies.add(
                Cookie::build(("__Host-a", "1"))
                    .secure(true)
                    .path("/")
                    .domain("example.com")
            ),
            Err(CookieError::HostPrefix { .. })
        ));
        cookies
            .add(Cookie::build(("__Host-a", "1")).secure(true).path("/"))
            .unwrap();
        assert!(matches!(
            cookies.add(Cookie::new("__Secure-b", "1")),
            Err(CookieError::SecurePrefix { .. })
        ));
        cookies
            .add(Cookie::build(("__Secure-b", "1")).secure(true))
            .unwrap();
        assert!(matches!(
            cookies.add(Cookie::build(("c", "1")).path("/; Domain=evil")),
            Err(CookieError::InvalidAttribute {
                attribute: "Path",
                ..
            })
        ));
        assert_eq!(
            cookies.add(Cookie::new("", "1")),
            Err(CookieError::EmptyName)
        );
        // `n=` and 4094 bytes: 4096 in all.
        cookies.add(Cookie::new("n", "v".repeat(4094))).unwrap();
        assert_eq!(
            cookies.add(Cookie::new("n", "v".repeat(4095))),
            Err(CookieError::TooLarge {
                name: "n".to_owned(),
                size: 4097
            })
        );
    }
}

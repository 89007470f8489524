//! The client's cookie store: what the service set, sent back on the next requests, bounded as
//! browsers bound theirs.

use std::collections::VecDeque;
use std::sync::Mutex;

use http::{HeaderMap, HeaderValue, header};

/// The longest cookie the store keeps, name and value together: RFC 6265 section 6.1's 4096
/// bytes, what every browser keeps at least. A longer one is ignored, as browsers ignore it.
pub const MAX_COOKIE_BYTES: usize = 4096;
/// The most cookies the store keeps: RFC 6265 section 6.1's 50 per domain (the store holds
/// one service's). A new cookie past it evicts the oldest.
pub const MAX_COOKIES: usize = 50;
/// The longest `Cookie` header value the store sends (names, values, `=` and `; `), within the
/// request header line servers take by default (nginx's `large_client_header_buffers` 8 KiB,
/// Apache's `LimitRequestFieldSize` 8190 bytes). A new cookie past it evicts the oldest until
/// it fits.
pub const MAX_COOKIE_HEADER_BYTES: usize = 8000;

/// Cookies of the one service a client talks to: name and value, oldest first, replaced by a
/// later `Set-Cookie` of the same name (which then counts as the newest) and removed by one
/// that expires it (`Max-Age=0` or a past `Expires`). Domain and path are not looked at: every
/// request goes to the same origin. Bounded by [`MAX_COOKIE_BYTES`], [`MAX_COOKIES`] and
/// [`MAX_COOKIE_HEADER_BYTES`].
#[derive(Debug, Default)]
pub(super) struct CookieStore {
    jar: Mutex<Jar>,
}

#[derive(Debug, Default)]
struct Jar {
    cookies: VecDeque<(String, String)>,
    /// The length of the `Cookie` header `cookies` make.
    header_len: usize,
}

/// What `name=value` adds to a `Cookie` header after `count` cookies.
fn header_share(count: usize, name: &str, value: &str) -> usize {
    let separator = if count == 0 { 0 } else { 2 };
    separator + name.len() + 1 + value.len()
}

impl Jar {
    fn remove(&mut self, name: &str) {
        if let Some(at) = self.cookies.iter().position(|(n, _)| n == name) {
            self.cookies.remove(at);
            self.recount();
        }
    }

    fn push(&mut self, name: String, value: String) {
        while self.cookies.len() >= MAX_COOKIES
            || self.header_len + header_share(self.cookies.len(), &name, &value)
                > MAX_COOKIE_HEADER_BYTES
        {
            if self.cookies.pop_front().is_none() {
                break;
            }
            self.recount();
        }
        self.header_len += header_share(self.cookies.len(), &name, &value);
        self.cookies.push_back((name, value));
    }

    /// `header_len` again, after a cookie left (at most 50 of them).
    fn recount(&mut self) {
        self.header_len = self
            .cookies
            .iter()
            .enumerate()
            .map(|(count, (name, value))| header_share(count, name, value))
            .sum();
    }
}

impl CookieStore {
    /// The `Cookie` header of the next request; `None` when the store is empty.
    pub(super) fn header(&self) -> Option<HeaderValue> {
        let jar = self.jar.lock().ok()?;
        if jar.cookies.is_empty() {
            return None;
        }
        let mut line = String::with_capacity(jar.header_len);
        for (name, value) in &jar.cookies {
            if !line.is_empty() {
                line.push_str("; ");
            }
            line.push_str(name);
            line.push('=');
            line.push_str(value);
        }
        HeaderValue::try_from(line).ok()
    }

    /// Takes in the `Set-Cookie` headers of an answer.
    pub(super) fn store(&self, headers: &HeaderMap) {
        let Ok(mut jar) = self.jar.lock() else {
            return;
        };
        for value in headers.get_all(header::SET_COOKIE) {
            let Some(cookie) = value
                .to_str()
                .ok()
                .and_then(|text| cookie::Cookie::parse(text).ok())
            else {
                continue;
            };
            let (name, value) = (cookie.name(), cookie.value());
            // Browsers count the name and the value (RFC 6265 section 6.1).
            if name.len() + value.len() > MAX_COOKIE_BYTES {
                continue;
            }
            jar.remove(name);
            let expired = cookie.max_age().is_some_and(|age| !age.is_positive())
                || cookie
                    .expires_datetime()
                    .is_some_and(|at| at <= cookie::time::OffsetDateTime::now_utc());
            if !expired {
                jar.push(name.to_owned(), value.to_owned());
            }
        }
    }

    /// The stored cookies, oldest first.
    #[cfg(test)]
    fn names(&self) -> Vec<String> {
        let jar = self.jar.lock().unwrap();
        jar.cookies.iter().map(|(name, _)| name.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(cookies: &[String]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for cookie in cookies {
            headers.append(header::SET_COOKIE, HeaderValue::from_str(cookie).unwrap());
        }
        headers
    }

    #[test]
    fn a_cookie_over_the_size_is_ignored_and_one_at_it_kept() {
        let store = CookieStore::default();
        // Name and value at the size, then one byte over it.
        let at = format!("a={}", "v".repeat(MAX_COOKIE_BYTES - 1));
        let over = format!("b={}", "v".repeat(MAX_COOKIE_BYTES));
        store.store(&answer(&[at, over]));
        assert_eq!(store.names(), ["a"]);
    }

    #[test]
    fn the_oldest_cookies_go_past_the_count_and_the_total() {
        let store = CookieStore::default();
        let many: Vec<String> = (0..MAX_COOKIES + 5).map(|i| format!("c{i}=1")).collect();
        store.store(&answer(&many));
        let names = store.names();
        assert_eq!(names.len(), MAX_COOKIES);
        assert_eq!(names[0], "c5");
        assert_eq!(names[MAX_COOKIES - 1], format!("c{}", MAX_COOKIES + 4));

        // 90 cookies of 3.9 KB: the header stays within the total.
        let store = CookieStore::default();
        let big: Vec<String> = (0..90)
            .map(|i| format!("big{i:02}={}", "x".repeat(3900)))
            .collect();
        store.store(&answer(&big));
        let line = store.header().unwrap();
        assert!(line.len() <= MAX_COOKIE_HEADER_BYTES, "{}", line.len());
        assert_eq!(store.names(), ["big88", "big89"]);

        // Set again, a cookie is the newest: the next eviction takes the other.
        store.store(&answer(&[format!("big88={}", "y".repeat(3900))]));
        store.store(&answer(&[format!("new={}", "z".repeat(3900))]));
        assert_eq!(store.names(), ["big88", "new"]);
    }
}

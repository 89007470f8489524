//! The client's cookie store: what the service set, sent back on the next requests.

use std::sync::Mutex;

use http::{HeaderMap, HeaderValue, header};

/// Cookies of the one service a client talks to: name and value, replaced by a later
/// `Set-Cookie` of the same name and removed by one that expires it (`Max-Age=0` or a past
/// `Expires`). Domain and path are not looked at: every request goes to the same origin.
#[derive(Debug, Default)]
pub(super) struct CookieStore {
    jar: Mutex<Vec<(String, String)>>,
}

impl CookieStore {
    /// The `Cookie` header of the next request; `None` when the store is empty.
    pub(super) fn header(&self) -> Option<HeaderValue> {
        let jar = self.jar.lock().ok()?;
        if jar.is_empty() {
            return None;
        }
        let line = jar
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect::<Vec<_>>()
            .join("; ");
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
                .and_then(|text| cookie::Cookie::parse(text.to_owned()).ok())
            else {
                continue;
            };
            jar.retain(|(name, _)| name != cookie.name());
            let expired = cookie.max_age().is_some_and(|age| !age.is_positive())
                || cookie
                    .expires_datetime()
                    .is_some_and(|at| at <= cookie::time::OffsetDateTime::now_utc());
            if !expired {
                jar.push((cookie.name().to_owned(), cookie.value().to_owned()));
            }
        }
    }
}

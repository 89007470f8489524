//! The request's cookie jar, and its changes written when the response is made.

use super::Context;
use crate::cookies::{CookieKeys, Cookies};

impl Context {
    /// The request's cookies, parsed from its `Cookie` headers the first time they are asked
    /// for; what is added or removed is sent as `Set-Cookie` when the response is made. Signed
    /// and private cookies use the [`CookieKeys`] of the app's state. See [`crate::cookies`].
    pub fn cookies(&mut self) -> &mut Cookies {
        if self.data.get::<Cookies>().is_none() {
            let keys = self.shared.state.get::<CookieKeys>().cloned();
            let cookies = Cookies::from_headers(&self.headers, keys);
            self.data.insert(cookies);
        }
        self.data
            .get_mut::<Cookies>()
            .unwrap_or_else(|| unreachable!("the cookies were just stored"))
    }

    /// True when the response will carry `Set-Cookie`: set as a header, or a change in the
    /// cookie jar still to be written.
    pub fn sets_cookies(&self) -> bool {
        self.response_headers.contains_key(http::header::SET_COOKIE)
            || self.data.get::<Cookies>().is_some_and(Cookies::has_changes)
    }

    /// Writes the jar's changes as `Set-Cookie` headers (the response is being made).
    pub(super) fn write_cookies(&mut self) {
        if let Some(cookies) = self.data.remove::<Cookies>() {
            cookies.write_set_cookie(&mut self.response_headers);
        }
    }
}

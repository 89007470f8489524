//! The core's own features on the context: the cookie jar ([`CookiesExt`]) and the client
//! behind the trusted proxies ([`ClientIpExt`]). The traits live in their feature's module;
//! they are implemented here, beside the fields they read, so those modules need not know
//! the context.

use std::net::IpAddr;

use super::Context;
use crate::client_ip::{ClientIpExt, client_ip};
use crate::cookies::{CookieKeys, Cookies, CookiesExt};

impl CookiesExt for Context {
    fn cookies(&mut self) -> &mut Cookies {
        if self.data::<Cookies>().is_none() {
            let keys = self.state().get::<CookieKeys>().cloned();
            let cookies = Cookies::from_headers(self.request_headers(), keys);
            self.insert_data(cookies);
        }
        self.data_mut::<Cookies>()
            .unwrap_or_else(|| unreachable!("the cookies were just stored"))
    }

    fn sets_cookies(&self) -> bool {
        self.response_headers()
            .contains_key(http::header::SET_COOKIE)
            || self.data::<Cookies>().is_some_and(Cookies::has_changes)
    }
}

impl Context {
    /// Writes the jar's changes as `Set-Cookie` headers (the response is being made).
    pub(super) fn write_cookies(&mut self) {
        if let Some(cookies) = self.data.remove::<Cookies>() {
            cookies.write_set_cookie(&mut self.response_headers);
        }
    }
}

impl ClientIpExt for Context {
    fn real_ip(&self) -> IpAddr {
        client_ip(
            self.connection().peer(),
            self.request_headers(),
            self.trusted_proxies(),
        )
    }
    fn trusts_proxy(&self) -> bool {
        self.trusted_proxies().trusts(self.connection().peer())
    }
    fn is_https(&self) -> bool {
        self.connection().is_tls()
            || self.trusts_proxy()
                && self
                    .request_header("x-forwarded-proto")
                    .is_some_and(|p| p.eq_ignore_ascii_case("https"))
    }
}

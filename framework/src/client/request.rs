//! [`ApiRequest`]: one call being made, from the generated client's arguments to the
//! route's success value.

use std::fmt::Display;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, COOKIE};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use route_pattern::Pattern;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::cookies::CookieStore;
use super::{ApiClient, ClientError, Exchange};

/// One call being made: the generated client fills it from its arguments, then sends it with
/// the method that reads the route's success value.
#[must_use = "a request does nothing until it is sent"]
pub struct ApiRequest<'c> {
    client: &'c ApiClient,
    method: Method,
    template: &'static str,
    /// The template read by the route grammar (`None` when it is not a pattern: the call
    /// then fails with why).
    pattern: Option<Pattern<'static>>,
    params: Vec<(&'static str, String)>,
    query: String,
    headers: HeaderMap,
    cookies: Vec<(&'static str, String)>,
    body: Option<(HeaderValue, Bytes)>,
    declared: &'static [u16],
    /// The first argument that could not be written: the call fails with it when sent.
    failure: Option<ClientError>,
}

impl<'c> ApiRequest<'c> {
    pub(super) fn new(client: &'c ApiClient, method: Method, template: &'static str) -> Self {
        let (pattern, failure) = match Pattern::parse(template) {
            Ok(pattern) => (Some(pattern), None),
            Err(err) => (None, Some(ClientError::Request(err.to_string()))),
        };
        ApiRequest {
            client,
            method,
            template,
            pattern,
            params: Vec::new(),
            query: String::new(),
            headers: HeaderMap::new(),
            cookies: Vec::new(),
            body: None,
            declared: &[],
            failure,
        }
    }

    fn fail(&mut self, message: String) {
        if self.failure.is_none() {
            self.failure = Some(ClientError::Request(message));
        }
    }

    /// The error statuses the route declares (`errors(..)`).
    pub fn declared(mut self, statuses: &'static [u16]) -> Self {
        self.declared = statuses;
        self
    }

    /// The path parameter `name`'s value (escaped as a path segment).
    pub fn path_param(mut self, name: &'static str, value: &dyn Display) -> Self {
        self.params.push((name, value.to_string()));
        self
    }

    /// Every path parameter from the fields of `value` (`Path<T>`).
    pub fn path_params<T: Serialize>(mut self, value: &T) -> Self {
        match serde_json::to_value(value) {
            Ok(serde_json::Value::Object(fields)) => {
                for (name, value) in fields {
                    let Some(slot) = self.param_slot(&name) else {
                        continue;
                    };
                    let text = match value {
                        serde_json::Value::String(text) => text,
                        other => other.to_string(),
                    };
                    self.params.push((slot, text));
                }
            }
            Ok(_) => self.fail("path parameters must be a struct".to_owned()),
            Err(e) => self.fail(format!("path parameters: {e}")),
        }
        self
    }

    /// The template's parameter of this name, as a `'static` name.
    fn param_slot(&self, name: &str) -> Option<&'static str> {
        self.pattern
            .as_ref()?
            .param_names()
            .find(|param| *param == name)
    }

    /// The query string from `value`'s fields (`Query<T>`).
    pub fn query<T: Serialize>(mut self, value: &T) -> Self {
        match serde_urlencoded::to_string(value) {
            Ok(query) => self.query = query,
            Err(e) => self.fail(format!("query: {e}")),
        }
        self
    }

    /// A header.
    pub fn header(mut self, name: &'static str, value: &dyn Display) -> Self {
        match (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::try_from(value.to_string()),
        ) {
            (Ok(name), Ok(value)) => {
                self.headers.append(name, value);
            }
            _ => self.fail(format!("header {name}: not a valid header value")),
        }
        self
    }

    /// A cookie, sent beside the cookie store's.
    pub fn cookie(mut self, name: &'static str, value: &dyn Display) -> Self {
        self.cookies.push((name, value.to_string()));
        self
    }

    /// A JSON body (`Json<T>`).
    pub fn json<T: Serialize>(mut self, value: &T) -> Self {
        match serde_json::to_vec(value) {
            Ok(body) => {
                self.body = Some((
                    HeaderValue::from_static("application/json"),
                    Bytes::from(body),
                ));
            }
            Err(e) => self.fail(format!("JSON body: {e}")),
        }
        self
    }

    /// An `application/x-www-form-urlencoded` body (`Form<T>`).
    pub fn form<T: Serialize>(mut self, value: &T) -> Self {
        match serde_urlencoded::to_string(value) {
            Ok(body) => {
                self.body = Some((
                    HeaderValue::from_static("application/x-www-form-urlencoded"),
                    Bytes::from(body),
                ));
            }
            Err(e) => self.fail(format!("form body: {e}")),
        }
        self
    }

    /// Sends the call; a JSON answer of type `T`.
    pub async fn send<T: ClientAnswer>(self) -> Result<T, ClientError> {
        let (status, body) = self.exchange().await?;
        decode(status, &body)
    }

    /// Sends the call; a JSON answer of type `T`, `None` for a 404.
    pub async fn send_found<T: ClientAnswer>(self) -> Result<Option<T>, ClientError> {
        match self.exchange().await {
            Ok((status, body)) => decode(status, &body).map(Some),
            Err(ClientError::Status { status, .. }) if status == StatusCode::NOT_FOUND => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Sends the call; the answer's body is not read into a value.
    pub async fn send_empty(self) -> Result<(), ClientError> {
        self.exchange().await.map(drop)
    }

    /// Sends the call; a text answer.
    pub async fn send_text(self) -> Result<String, ClientError> {
        let (status, body) = self.exchange().await?;
        String::from_utf8(body.to_vec()).map_err(|e| ClientError::Decode {
            status,
            message: e.to_string(),
        })
    }

    /// Sends the call; the answer's bytes.
    pub async fn send_bytes(self) -> Result<Bytes, ClientError> {
        self.exchange().await.map(|(_, body)| body)
    }

    /// The path and query the call goes to: the template filled by the route grammar, each
    /// value escaped as a segment (a wildcard's keeping its `/`).
    fn target(&self) -> Result<String, ClientError> {
        let mut path = String::with_capacity(self.template.len() + 16);
        if let Some(pattern) = &self.pattern {
            pattern
                .fill(&mut path, |name| {
                    let (_, value) = self.params.iter().find(|(n, _)| *n == name)?;
                    Some(value.as_str())
                })
                .map_err(|missing| ClientError::Request(missing.to_string()))?;
        }
        if !self.query.is_empty() {
            path.push('?');
            path.push_str(&self.query);
        }
        Ok(path)
    }

    /// The headers sent (the handle's, the call's, `Accept`, the cookie line) and the body.
    fn headers_and_body(&mut self) -> Result<(HeaderMap, Bytes), ClientError> {
        let mut headers = self.client.headers.clone();
        headers.extend(std::mem::take(&mut self.headers));
        headers
            .entry(ACCEPT)
            .or_insert(HeaderValue::from_static("application/json"));
        let mut cookie_line: Vec<String> = self
            .cookies
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        if let Some(stored) = self
            .client
            .shared
            .cookies
            .as_ref()
            .and_then(CookieStore::header)
        {
            cookie_line.extend(stored.to_str().ok().map(str::to_owned));
        }
        if !cookie_line.is_empty() {
            let line = HeaderValue::try_from(cookie_line.join("; "))
                .map_err(|_| ClientError::Request("a cookie value is not valid".to_owned()))?;
            headers.insert(COOKIE, line);
        }
        let body = match self.body.take() {
            Some((media_type, body)) => {
                headers.insert(CONTENT_TYPE, media_type);
                body
            }
            None => Bytes::new(),
        };
        Ok((headers, body))
    }

    /// Sends the call and reads the whole answer; an error status is a
    /// [`ClientError::Status`].
    async fn exchange(mut self) -> Result<(StatusCode, Bytes), ClientError> {
        if let Some(failure) = self.failure.take() {
            return Err(failure);
        }
        let target = self.target()?;
        let shared = &self.client.shared;
        let (headers, body) = self.headers_and_body()?;
        // What the inspector is shown of the request (kept only when there is one).
        let sent = shared
            .inspect
            .as_ref()
            .map(|_| (headers.clone(), body.clone()));
        let (status, version, response_headers, body) =
            shared.call(&self.method, &target, headers, body).await?;
        if let (Some(inspect), Some((request_headers, request_body))) = (&shared.inspect, &sent) {
            inspect(&Exchange {
                method: &self.method,
                route: self.template,
                target: &target,
                request_headers,
                request_body,
                status,
                version,
                response_headers: &response_headers,
                response_body: &body,
            });
        }
        // A redirect is not the route's answer either: the client does not follow it, and
        // its body (whatever its shape) is not the resource asked for.
        if status.is_redirection() || status.is_client_error() || status.is_server_error() {
            return Err(ClientError::Status {
                status,
                error: serde_json::from_slice(&body).ok(),
                declared: self.declared.contains(&status.as_u16()),
            });
        }
        Ok((status, body))
    }
}

/// A success's JSON body as `T`.
fn decode<T: DeserializeOwned>(status: StatusCode, body: &[u8]) -> Result<T, ClientError> {
    // An empty body reads as `null`, so `()` and `Option<T>` fit a 204.
    let body = if body.is_empty() { b"null" } else { body };
    serde_json::from_slice(body).map_err(|e| ClientError::Decode {
        status,
        message: e.to_string(),
    })
}

/// A route's success value as a generated client reads it: any `Deserialize` type. Named by
/// the generated code at the route's return type, so a type that cannot be read is reported
/// there, asked of the type rather than its name: a stream, a file, a redirect or an upgrade
/// (`Sse`, `JsonLines`, `BodyStream`, `NamedFile`, `Redirect`, `Upgraded`) has no value to
/// read and no `Deserialize`.
#[diagnostic::on_unimplemented(
    message = "the generated client cannot read `{Self}` into a value: it does not implement \
               `serde::Deserialize`",
    label = "the route's answer type",
    note = "derive `serde::Deserialize` on the answer type (beside `Serialize`); for a stream, a \
            file, a redirect or an upgrade, declare this route in a `#[controller]` impl block \
            of the implementing type instead of the `#[api]` trait"
)]
pub trait ClientAnswer: DeserializeOwned {}

impl<T: DeserializeOwned> ClientAnswer for T {}

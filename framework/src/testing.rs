//! An in-process test client: a request in, a response out, no socket.
//!
//! It keeps cookies between requests like a browser (name and value only), so a session
//! survives from one request to the next.
//!
//! ```
//! use framework::{App, Context, Result, testing::TestClient};
//!
//! async fn hello(ctx: &mut Context) -> Result {
//!     ctx.body_mut().set_bytes("hi");
//!     Ok(())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let client = TestClient::new(App::new().get("/", hello).build().unwrap());
//! let res = client.get("/").send().await;
//! assert_eq!(res.status, 200);
//! assert_eq!(res.text(), "hi");
//! # }
//! ```

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use serde::Serialize;

use crate::body::RequestBody;
use crate::service::Service;

/// The address requests appear to come from.
pub const TEST_PEER: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 40_000);

/// A client that calls a [`Service`] directly.
#[derive(Clone)]
pub struct TestClient {
    service: Arc<Service>,
    cookies: Arc<Mutex<Vec<(String, String)>>>,
}

impl TestClient {
    /// A client for `service`.
    pub fn new(service: Service) -> Self {
        Self {
            service: Arc::new(service),
            cookies: Arc::default(),
        }
    }

    /// Starts a request.
    pub fn request(&self, method: Method, uri: &str) -> TestRequest {
        TestRequest {
            client: self.clone(),
            method,
            uri: uri.to_owned(),
            headers: HeaderMap::new(),
            body: Bytes::new(),
        }
    }
    /// Starts a GET.
    pub fn get(&self, uri: &str) -> TestRequest {
        self.request(Method::GET, uri)
    }
    /// Starts a HEAD.
    pub fn head(&self, uri: &str) -> TestRequest {
        self.request(Method::HEAD, uri)
    }
    /// Starts a POST.
    pub fn post(&self, uri: &str) -> TestRequest {
        self.request(Method::POST, uri)
    }
    /// Starts a PUT.
    pub fn put(&self, uri: &str) -> TestRequest {
        self.request(Method::PUT, uri)
    }
    /// Starts a DELETE.
    pub fn delete(&self, uri: &str) -> TestRequest {
        self.request(Method::DELETE, uri)
    }

    fn cookie_header(&self) -> Option<HeaderValue> {
        let jar = self.cookies.lock().ok()?;
        if jar.is_empty() {
            return None;
        }
        let line = jar
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ");
        HeaderValue::try_from(line).ok()
    }

    /// Sends a request made elsewhere (the typed API client's in-process transport): its
    /// cookies beside the jar's; `Err` for a target that is no URI.
    #[cfg(feature = "client")]
    pub(crate) async fn send_parts(
        &self,
        method: Method,
        target: &str,
        mut headers: HeaderMap,
        body: Bytes,
    ) -> Result<TestResponse, String> {
        let mut request = Request::builder()
            .method(method)
            .uri(target)
            .body(RequestBody::Full(body))
            .map_err(|e| format!("{target}: {e}"))?;
        if let Some(jar) = self.cookie_header() {
            let line = match headers.remove(header::COOKIE) {
                Some(own) => {
                    HeaderValue::from_bytes(&[own.as_bytes(), b"; ", jar.as_bytes()].concat())
                        .unwrap_or(jar)
                }
                None => jar,
            };
            headers.insert(header::COOKIE, line);
        }
        *request.headers_mut() = headers;
        Ok(self.dispatch(request).await)
    }

    fn store_cookies(&self, headers: &HeaderMap) {
        let Ok(mut jar) = self.cookies.lock() else {
            return;
        };
        for value in headers.get_all(header::SET_COOKIE) {
            let Some((name, value)) = value
                .to_str()
                .ok()
                .and_then(|v| v.split(';').next())
                .and_then(|pair| pair.split_once('='))
            else {
                continue;
            };
            jar.retain(|(k, _)| k != name);
            jar.push((name.to_owned(), value.to_owned()));
        }
    }
}

/// A request being built.
pub struct TestRequest {
    client: TestClient,
    method: Method,
    uri: String,
    headers: HeaderMap,
    body: Bytes,
}

impl TestRequest {
    /// Adds a header.
    ///
    /// # Panics
    /// On a name or value that is not valid in a header (a bug in the test).
    #[must_use]
    pub fn header(mut self, name: &str, value: &str) -> Self {
        let name = HeaderName::try_from(name).expect("valid header name");
        let value = HeaderValue::try_from(value).expect("valid header value");
        self.headers.append(name, value);
        self
    }
    /// Sets the body as JSON, with `Content-Type: application/json`.
    ///
    /// # Panics
    /// When `value` cannot be serialised (a bug in the test).
    #[must_use]
    pub fn json<T: Serialize>(mut self, value: &T) -> Self {
        self.body = serde_json::to_vec(value).expect("serialisable").into();
        self.headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        self
    }
    /// Sets a raw body.
    #[must_use]
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }
    /// Sends the request through the service.
    ///
    /// # Panics
    /// On a URI that does not parse (a bug in the test).
    pub async fn send(self) -> TestResponse {
        let mut request = Request::builder()
            .method(self.method)
            .uri(&self.uri)
            .body(RequestBody::Full(self.body))
            .expect("valid request");
        *request.headers_mut() = self.headers;
        if let Some(cookie) = self.client.cookie_header() {
            request.headers_mut().insert(header::COOKIE, cookie);
        }
        self.client.dispatch(request).await
    }
}

impl TestClient {
    /// Sends a built request through the service, keeping the cookies it sets.
    async fn dispatch(&self, request: Request<RequestBody>) -> TestResponse {
        let response = self.service.handle(request, TEST_PEER).await;
        let (parts, body) = response.into_parts();
        self.store_cookies(&parts.headers);
        let body = body
            .collect()
            .await
            .map(http_body_util::Collected::to_bytes)
            .unwrap_or_default();
        TestResponse {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    }
}

/// A response as the client saw it.
#[derive(Debug)]
pub struct TestResponse {
    /// Status.
    pub status: StatusCode,
    /// Headers.
    pub headers: HeaderMap,
    /// Body bytes.
    pub body: Bytes,
}

impl TestResponse {
    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    /// The body as JSON.
    ///
    /// # Panics
    /// When the body is not JSON (the test then fails with the body shown).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }
    /// A header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

//! The typed API client: what `#[api]` generates a `<Trait>Client` on (feature `client`).
//!
//! An `#[api]` trait declares each route once: its method, full path, where each argument
//! comes from (path, query, JSON or form body, header, cookie), its success type and its
//! declared error statuses. The server implements the trait (`#[controller] impl Trait for
//! Type`); the same tokens give a client with one async method per route, taking the
//! request-side arguments in their types and returning `Result<T, ClientError>`:
//!
//! ```no_run
//! use framework::extract::Json;
//! use framework::{Result, Validate, api};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Debug, Deserialize, Serialize, Validate, schemars::JsonSchema)]
//! pub struct Note {
//!     pub text: String,
//! }
//!
//! #[api(prefix = "/notes")]
//! pub trait NotesApi {
//!     #[post("/")]
//!     async fn add(&self, note: Json<Note>) -> Result<Note>;
//!     #[get("/{id}")]
//!     async fn note(&self, id: u32) -> Result<Option<Note>>;
//! }
//!
//! # #[tokio::main]
//! # async fn main() -> std::result::Result<(), framework::client::ClientError> {
//! // Not run here: no service listens. The guide's API chapter runs one in process.
//! let client = NotesApiClient::new("http://127.0.0.1:8080")?;
//! client.add(Json(Note { text: "milk".into() })).await?;
//! let first: Option<Note> = client.note(1).await?;
//! # let _ = first;
//! # Ok(())
//! # }
//! ```
//!
//! Server-side arguments (`&mut Context`, `#[state]`, borrowed values and extractors such as
//! verified claims or a client certificate, which the server makes from what it knows) are
//! not part of a client method. The success value is the route's: `T` of `Result<T>`,
//! `Json<T>` or `Created<T>`; `Option<T>` is `None` for a 404; `()` for `NoContent` or a route
//! that answers through its context; `String` for text and `Bytes` for a binary body.
//!
//! [`ApiClient`] is the runtime under every generated client: hyper-util's pooled client
//! (HTTP/1.1, or HTTP/2 with prior knowledge), a timeout for each call, a cookie store so a
//! session flows from one call to the next (on by default), and headers sent with every call
//! ([`ApiClient::propagate`] carries a server request's `X-Request-Id` on the calls made on
//! its behalf, and the trace middleware's `TracedClient::traced` its trace as well). [`ApiClient::in_process`] sends the same
//! calls through a [`TestClient`] instead: no socket, the app's whole chain.

mod builder;
mod cookies;
mod error;
mod request;

use std::sync::Arc;
use std::time::Duration;

pub use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode};
use http_body::Body as _;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;

pub use self::builder::ClientBuilder;
pub use self::cookies::{MAX_COOKIE_BYTES, MAX_COOKIE_HEADER_BYTES, MAX_COOKIES};
pub use self::error::{ClientError, ErrorObject};
pub use self::request::{ApiRequest, ClientAnswer};
use crate::context::Context;
use crate::header::X_REQUEST_ID;
use crate::testing::TestClient;
use cookies::CookieStore;

/// The client of one service, shared by the generated clients (cheap to clone: the
/// connection pool and the cookie store are shared).
#[derive(Clone)]
pub struct ApiClient {
    shared: Arc<Shared>,
    /// Sent with every call of this handle ([`ApiClient::propagate`] makes a handle with more).
    headers: HeaderMap,
}

struct Shared {
    /// `scheme://authority` and the base path (no trailing `/`), for the HTTP transport.
    origin: String,
    base_path: String,
    transport: Transport,
    cookies: Option<CookieStore>,
    timeout: Option<Duration>,
    max_answer_bytes: usize,
    inspect: Option<Inspector>,
}

/// The default of [`ClientBuilder::max_answer_bytes`]: 16 MiB.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// What [`ClientBuilder::inspect`] calls.
type Inspector = Arc<dyn Fn(&Exchange<'_>) + Send + Sync>;

/// One call as it went: shown to the inspector of [`ClientBuilder::inspect`] once its answer
/// has been read, error statuses included.
#[derive(Debug)]
#[non_exhaustive]
pub struct Exchange<'a> {
    /// The route's method.
    pub method: &'a Method,
    /// The route's path as declared (`/users/v1/avatar/{account}`).
    pub route: &'static str,
    /// The path and query sent, after the base path.
    pub target: &'a str,
    /// The request's headers (cookies and the body's `Content-Type` included).
    pub request_headers: &'a HeaderMap,
    /// The request's body.
    pub request_body: &'a [u8],
    /// The answer's status.
    pub status: StatusCode,
    /// The HTTP version the answer came in (HTTP/1.1 in process).
    pub version: http::Version,
    /// The answer's headers.
    pub response_headers: &'a HeaderMap,
    /// The answer's body.
    pub response_body: &'a [u8],
}

/// Plain TCP, and TLS where the `tls` feature is on (`https://`).
#[cfg(feature = "tls")]
type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
#[cfg(not(feature = "tls"))]
type Connector = HttpConnector;

enum Transport {
    /// Boxed: the pool is large, the in-process transport two pointers.
    Http(Box<Client<Connector, Full<Bytes>>>),
    InProcess(TestClient),
}

impl std::fmt::Debug for ApiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let transport = match self.shared.transport {
            Transport::Http(_) => "http",
            Transport::InProcess(_) => "in-process",
        };
        f.debug_struct("ApiClient")
            .field(
                "base",
                &format_args!("{}{}", self.shared.origin, self.shared.base_path),
            )
            .field("transport", &transport)
            .finish_non_exhaustive()
    }
}

impl ApiClient {
    /// A client of the service at `base_url` with the defaults of [`ClientBuilder`].
    pub fn new(base_url: &str) -> Result<Self, ClientError> {
        ClientBuilder::default().build(base_url)
    }

    /// The settings of a client to make.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// A client that calls the app of `client` in process ([`ClientBuilder::in_process`]).
    pub fn in_process(client: &TestClient) -> Self {
        ClientBuilder::default().in_process(client)
    }

    /// A handle on the same connections and cookies whose calls are made on behalf of the
    /// request `ctx` serves: each carries its `X-Request-Id`. With the trace middleware,
    /// `TracedClient::traced` (`framework::middleware::trace`) also carries a `traceparent`
    /// naming a new span of its trace.
    pub fn propagate(&self, ctx: &Context) -> Self {
        match HeaderValue::from_str(ctx.request_id()) {
            Ok(id) => self.with_header(X_REQUEST_ID, id),
            Err(_) => self.clone(),
        }
    }

    /// A handle that sends `name: value` with each of its calls.
    pub fn with_header(&self, name: HeaderName, value: HeaderValue) -> Self {
        let mut headers = self.headers.clone();
        headers.insert(name, value);
        Self {
            shared: Arc::clone(&self.shared),
            headers,
        }
    }

    /// A call to the route `method path` (the route's full path as declared, parameters
    /// written `{name}`, `:name` or `*name`), made by the generated client.
    pub fn request(&self, method: Method, path: &'static str) -> ApiRequest<'_> {
        ApiRequest::new(self, method, path)
    }
}

/// What a call's answer is made of: its status, version, headers and whole body.
type Answer = (StatusCode, http::Version, HeaderMap, Bytes);

impl Shared {
    /// Sends one request over the transport, within the call's timeout, and reads the whole
    /// answer (refused past `max_answer_bytes`); the cookie store keeps what it sets.
    async fn call(
        &self,
        method: &Method,
        target: &str,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<Answer, ClientError> {
        let call = async {
            match &self.transport {
                Transport::Http(client) => {
                    let uri = format!("{}{}{target}", self.origin, self.base_path);
                    let mut request = Request::builder()
                        .method(method.clone())
                        .uri(uri)
                        .body(Full::new(body))
                        .map_err(|e| ClientError::Request(e.to_string()))?;
                    *request.headers_mut() = headers;
                    let response = client
                        .request(request)
                        .await
                        .map_err(|e| ClientError::Transport(Box::new(e)))?;
                    let (parts, body) = response.into_parts();
                    if let Some(cookies) = &self.cookies {
                        cookies.store(&parts.headers);
                    }
                    let body = read_answer(body, parts.status, self.max_answer_bytes).await?;
                    Ok((parts.status, parts.version, parts.headers, body))
                }
                Transport::InProcess(client) => {
                    let response = client
                        .send_parts(method.clone(), target, headers, body)
                        .await
                        .map_err(ClientError::Request)?;
                    if response.body.len() > self.max_answer_bytes {
                        return Err(ClientError::TooLarge {
                            status: response.status,
                            limit: self.max_answer_bytes,
                        });
                    }
                    Ok((
                        response.status,
                        http::Version::HTTP_11,
                        response.headers,
                        response.body,
                    ))
                }
            }
        };
        match self.timeout {
            Some(limit) => tokio::time::timeout(limit, call)
                .await
                .map_err(|_| ClientError::Timeout)?,
            None => call.await,
        }
    }
}

/// The whole body of an answer, refused with [`ClientError::TooLarge`] when its
/// `Content-Length` says more than `limit` (before reading any of it) or once the bytes read
/// pass `limit`.
async fn read_answer(
    body: hyper::body::Incoming,
    status: StatusCode,
    limit: usize,
) -> Result<Bytes, ClientError> {
    let too_large = ClientError::TooLarge { status, limit };
    if body.size_hint().lower() > limit as u64 {
        return Err(too_large);
    }
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(err) if err.is::<LengthLimitError>() => Err(too_large),
        Err(err) => Err(ClientError::Transport(err)),
    }
}

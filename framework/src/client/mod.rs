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

mod cookies;
mod error;

use std::fmt::Display;
use std::sync::Arc;
use std::time::Duration;

pub use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, COOKIE};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use http_body::Body as _;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use self::cookies::{MAX_COOKIE_BYTES, MAX_COOKIE_HEADER_BYTES, MAX_COOKIES};
pub use self::error::{ClientError, ErrorObject};
use crate::context::Context;
use crate::header::X_REQUEST_ID;
use crate::testing::TestClient;
use cookies::CookieStore;

/// What a path parameter's value escapes: everything but unreserved characters and the
/// sub-delimiters a segment may hold (RFC 3986 section 3.3).
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// A wildcard's value (`*rest`) keeps its slashes.
const WILDCARD: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

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

/// How an [`ApiClient`] is made: [`ApiClient::builder`].
#[derive(Clone)]
pub struct ClientBuilder {
    http2_prior_knowledge: bool,
    http1_only: bool,
    timeout: Option<Duration>,
    connect_timeout: Duration,
    pool_idle_timeout: Duration,
    cookie_store: bool,
    max_answer_bytes: usize,
    headers: HeaderMap,
    inspect: Option<Inspector>,
    /// The certificate authorities an `https://` service's certificate must chain to.
    #[cfg(feature = "tls")]
    roots: Option<rustls::RootCertStore>,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("http2_prior_knowledge", &self.http2_prior_knowledge)
            .field("timeout", &self.timeout)
            .field("cookie_store", &self.cookie_store)
            .field("max_answer_bytes", &self.max_answer_bytes)
            .field("inspect", &self.inspect.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for ClientBuilder {
    fn default() -> Self {
        Self {
            http2_prior_knowledge: false,
            http1_only: false,
            timeout: Some(Duration::from_secs(30)),
            connect_timeout: Duration::from_secs(10),
            pool_idle_timeout: Duration::from_secs(90),
            cookie_store: true,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            headers: HeaderMap::new(),
            inspect: None,
            #[cfg(feature = "tls")]
            roots: None,
        }
    }
}

impl ClientBuilder {
    /// HTTP/2 only: without negotiation over plain TCP (prior knowledge, which the framework's
    /// server accepts on the same port as HTTP/1.1), and offered alone over TLS. Default:
    /// HTTP/1.1 over plain TCP; over TLS, HTTP/2 when the server picks it (ALPN), else
    /// HTTP/1.1.
    pub fn http2_prior_knowledge(mut self) -> Self {
        self.http2_prior_knowledge = true;
        self
    }

    /// HTTP/1.1 only, also over TLS (where the server otherwise picks HTTP/2 when it can,
    /// through ALPN).
    pub fn http1_only(mut self) -> Self {
        self.http1_only = true;
        self
    }

    /// The longest a call may take, from sending to the last byte of the answer
    /// ([`ClientError::Timeout`] past it); `None` for no limit. Default 30 s.
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// The longest a connection may take to open. Default 10 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long an idle connection is kept for the next call. Default 90 s.
    pub fn pool_idle_timeout(mut self, timeout: Duration) -> Self {
        self.pool_idle_timeout = timeout;
        self
    }

    /// Whether cookies the service sets are sent back on later calls, so a session flows
    /// (register, token, login, me). Default on. The store is bounded as browsers bound
    /// theirs: a cookie over [`MAX_COOKIE_BYTES`] is ignored, and past [`MAX_COOKIES`]
    /// cookies or a `Cookie` header of [`MAX_COOKIE_HEADER_BYTES`] the oldest is evicted.
    pub fn cookie_store(mut self, on: bool) -> Self {
        self.cookie_store = on;
        self
    }

    /// The longest answer body a call reads, in bytes; default
    /// [`DEFAULT_MAX_ANSWER_BYTES`] (16 MiB). A longer answer is a [`ClientError::TooLarge`]
    /// at once: by its `Content-Length` before any of its body is read, or as soon as the
    /// bytes read pass the limit (a chunked body); the rest is not read. Error answers count
    /// the same.
    pub fn max_answer_bytes(mut self, limit: usize) -> Self {
        self.max_answer_bytes = limit;
        self
    }

    /// A header sent with every call (an API key, a user agent).
    pub fn default_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.insert(name, value);
        self
    }

    /// Trusts the certificate authorities of `pem` (one or more PEM certificates) for an
    /// `https://` service (feature `tls`). Without any, `build` refuses an `https://` URL:
    /// there are no built-in roots.
    #[cfg(feature = "tls")]
    pub fn tls_root_pem(mut self, pem: &[u8]) -> Result<Self, ClientError> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let mut roots = self
            .roots
            .take()
            .unwrap_or_else(rustls::RootCertStore::empty);
        let before = roots.len();
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| ClientError::Request(format!("root certificate: {e}")))?;
            roots
                .add(cert)
                .map_err(|e| ClientError::Request(format!("root certificate: {e}")))?;
        }
        if roots.len() == before {
            return Err(ClientError::Request(
                "root certificates: no certificate in the PEM".to_owned(),
            ));
        }
        self.roots = Some(roots);
        Ok(self)
    }

    /// Calls `inspect` with each call's request and answer once the answer is read (for a
    /// log of the calls, or a test that checks them against the API document).
    pub fn inspect(mut self, inspect: impl Fn(&Exchange<'_>) + Send + Sync + 'static) -> Self {
        self.inspect = Some(Arc::new(inspect));
        self
    }

    /// A client of the service at `base_url` (`http://host[:port][/base]`): calls go to the
    /// base path followed by each route's full path.
    pub fn build(self, base_url: &str) -> Result<ApiClient, ClientError> {
        let uri: Uri = base_url
            .parse()
            .map_err(|e| ClientError::Request(format!("base URL {base_url:?}: {e}")))?;
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            return Err(ClientError::Request(format!(
                "base URL {base_url:?}: expected http://host[:port][/base]"
            )));
        };
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(self.connect_timeout));
        let connector = self.connector(base_url, scheme, connector)?;
        let mut builder = Client::builder(TokioExecutor::new());
        builder.pool_idle_timeout(self.pool_idle_timeout);
        if self.http2_prior_knowledge {
            builder.http2_only(true);
        }
        let client = builder.build(connector);
        Ok(ApiClient {
            shared: Arc::new(Shared {
                origin: format!("{scheme}://{authority}"),
                base_path: uri.path().trim_end_matches('/').to_owned(),
                transport: Transport::Http(Box::new(client)),
                cookies: self.cookie_store.then(CookieStore::default),
                timeout: self.timeout,
                max_answer_bytes: self.max_answer_bytes,
                inspect: self.inspect,
            }),
            headers: self.headers,
        })
    }

    /// The connector for `scheme`: plain TCP for `http`, TLS for `https` (feature `tls`).
    #[cfg(feature = "tls")]
    fn connector(
        &self,
        base_url: &str,
        scheme: &str,
        mut tcp: HttpConnector,
    ) -> Result<Connector, ClientError> {
        let roots = match (scheme, &self.roots) {
            ("http", roots) => roots.clone().unwrap_or_else(rustls::RootCertStore::empty),
            ("https", Some(roots)) => roots.clone(),
            ("https", None) => {
                return Err(ClientError::Request(format!(
                    "base URL {base_url:?}: https needs the certificate authorities to trust \
                     (ClientBuilder::tls_root_pem)"
                )));
            }
            _ => {
                return Err(ClientError::Request(format!(
                    "base URL {base_url:?}: expected http:// or https://"
                )));
            }
        };
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| ClientError::Request(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        // The URL's scheme decides: TLS for https, plain TCP for http.
        tcp.enforce_http(false);
        let builder = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_or_http();
        // ALPN offers what the client will speak.
        Ok(if self.http1_only {
            builder.enable_http1().wrap_connector(tcp)
        } else if self.http2_prior_knowledge {
            builder.enable_http2().wrap_connector(tcp)
        } else {
            builder.enable_all_versions().wrap_connector(tcp)
        })
    }

    /// The connector for `scheme`: plain TCP for `http` (`https` needs the `tls` feature).
    #[cfg(not(feature = "tls"))]
    fn connector(
        &self,
        base_url: &str,
        scheme: &str,
        tcp: HttpConnector,
    ) -> Result<Connector, ClientError> {
        if scheme == "http" {
            Ok(tcp)
        } else {
            Err(ClientError::Request(format!(
                "base URL {base_url:?}: expected http:// (https:// needs the `tls` feature)"
            )))
        }
    }

    /// A client that sends its calls through `client` ([`TestClient`]): in process, through
    /// the app's whole chain, no socket. The test client's own cookie jar keeps the session
    /// (so raw test requests and typed calls share it); `cookie_store` is not used.
    pub fn in_process(self, client: &TestClient) -> ApiClient {
        ApiClient {
            shared: Arc::new(Shared {
                origin: String::new(),
                base_path: String::new(),
                transport: Transport::InProcess(client.clone()),
                cookies: None,
                timeout: self.timeout,
                max_answer_bytes: self.max_answer_bytes,
                inspect: self.inspect,
            }),
            headers: self.headers,
        }
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
        ApiRequest {
            client: self,
            method,
            template: path,
            params: Vec::new(),
            query: String::new(),
            headers: HeaderMap::new(),
            cookies: Vec::new(),
            body: None,
            declared: &[],
            failure: None,
        }
    }
}

/// One call being made: the generated client fills it from its arguments, then sends it with
/// the method that reads the route's success value.
#[must_use = "a request does nothing until it is sent"]
pub struct ApiRequest<'c> {
    client: &'c ApiClient,
    method: Method,
    template: &'static str,
    params: Vec<(&'static str, String)>,
    query: String,
    headers: HeaderMap,
    cookies: Vec<(&'static str, String)>,
    body: Option<(HeaderValue, Bytes)>,
    declared: &'static [u16],
    /// The first argument that could not be written: the call fails with it when sent.
    failure: Option<ClientError>,
}

impl ApiRequest<'_> {
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
        self.template.split('/').find_map(|part| {
            let param = part
                .strip_prefix(':')
                .or_else(|| part.strip_prefix('{').and_then(|p| p.strip_suffix('}')))
                .or_else(|| part.strip_prefix('*'))?;
            (param == name).then_some(param)
        })
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

    /// The path and query the call goes to.
    fn target(&self) -> Result<String, ClientError> {
        let mut path = String::with_capacity(self.template.len());
        for (index, part) in self.template.split('/').enumerate() {
            if index > 0 {
                path.push('/');
            }
            let wildcard = part.starts_with('*');
            let name = part
                .strip_prefix(':')
                .or_else(|| part.strip_prefix('{').and_then(|p| p.strip_suffix('}')))
                .or_else(|| part.strip_prefix('*'))
                .filter(|name| !name.is_empty());
            let Some(name) = name else {
                path.push_str(part);
                continue;
            };
            let Some((_, value)) = self.params.iter().find(|(n, _)| *n == name) else {
                return Err(ClientError::Request(format!(
                    "no value for the path parameter {name}"
                )));
            };
            let set = if wildcard { WILDCARD } else { SEGMENT };
            path.extend(utf8_percent_encode(value, set));
        }
        if !self.query.is_empty() {
            path.push('?');
            path.push_str(&self.query);
        }
        Ok(path)
    }

    /// Sends the call and reads the whole answer; an error status is a
    /// [`ClientError::Status`].
    async fn exchange(mut self) -> Result<(StatusCode, Bytes), ClientError> {
        if let Some(failure) = self.failure.take() {
            return Err(failure);
        }
        let target = self.target()?;
        let shared = &self.client.shared;
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
        if let Some(stored) = shared.cookies.as_ref().and_then(CookieStore::header) {
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
        // What the inspector is shown of the request (kept only when there is one).
        let sent = shared
            .inspect
            .as_ref()
            .map(|_| (headers.clone(), body.clone()));
        let call = async {
            match &shared.transport {
                Transport::Http(client) => {
                    let uri = format!("{}{}{target}", shared.origin, shared.base_path);
                    let mut request = Request::builder()
                        .method(self.method.clone())
                        .uri(uri)
                        .body(Full::new(body))
                        .map_err(|e| ClientError::Request(e.to_string()))?;
                    *request.headers_mut() = headers;
                    let response = client
                        .request(request)
                        .await
                        .map_err(|e| ClientError::Transport(Box::new(e)))?;
                    let (parts, body) = response.into_parts();
                    if let Some(cookies) = &shared.cookies {
                        cookies.store(&parts.headers);
                    }
                    let body = read_answer(body, parts.status, shared.max_answer_bytes).await?;
                    Ok((parts.status, parts.version, parts.headers, body))
                }
                Transport::InProcess(client) => {
                    let response = client
                        .send_parts(self.method.clone(), &target, headers, body)
                        .await
                        .map_err(ClientError::Request)?;
                    if response.body.len() > shared.max_answer_bytes {
                        return Err(ClientError::TooLarge {
                            status: response.status,
                            limit: shared.max_answer_bytes,
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
        let (status, version, response_headers, body) = match shared.timeout {
            Some(limit) => tokio::time::timeout(limit, call)
                .await
                .map_err(|_| ClientError::Timeout)??,
            None => call.await?,
        };
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
/// there.
#[diagnostic::on_unimplemented(
    message = "the generated client cannot read `{Self}`: it does not implement `serde::Deserialize`",
    label = "the route's answer type",
    note = "derive `serde::Deserialize` on the answer type (beside `Serialize`), or declare this \
            route in a `#[controller]` impl block of the implementing type instead of the \
            `#[api]` trait"
)]
pub trait ClientAnswer: DeserializeOwned {}

impl<T: DeserializeOwned> ClientAnswer for T {}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{ClientBuilder, DEFAULT_MAX_ANSWER_BYTES};

    /// The defaults the builder's documentation gives.
    #[test]
    fn the_defaults_are_the_documented_ones() {
        let builder = ClientBuilder::default();
        assert_eq!(builder.timeout, Some(Duration::from_secs(30)));
        assert_eq!(builder.connect_timeout, Duration::from_secs(10));
        assert_eq!(builder.pool_idle_timeout, Duration::from_secs(90));
        assert!(builder.cookie_store);
        assert_eq!(builder.max_answer_bytes, DEFAULT_MAX_ANSWER_BYTES);
        assert_eq!(DEFAULT_MAX_ANSWER_BYTES, 16 * 1024 * 1024);
    }
}

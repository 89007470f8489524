//! [`ClientBuilder`]: the settings an [`ApiClient`] is made from.

use std::sync::Arc;
use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::cookies::CookieStore;
use super::{
    ApiClient, ClientError, Connector, DEFAULT_MAX_ANSWER_BYTES, Exchange, Inspector, Shared,
    Transport,
};
use crate::testing::TestClient;

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
    /// theirs: a cookie over [`MAX_COOKIE_BYTES`](super::MAX_COOKIE_BYTES) is ignored, and past [`MAX_COOKIES`](super::MAX_COOKIES)
    /// cookies or a `Cookie` header of [`MAX_COOKIE_HEADER_BYTES`](super::MAX_COOKIE_HEADER_BYTES) the oldest is evicted.
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

#[cfg(test)]
mod tests;

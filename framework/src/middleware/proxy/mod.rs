//! A reverse proxy: forwards the request to an upstream HTTP server and streams its answer
//! back, both bodies as streams (a 100 MiB upload or download holds a few chunks in memory at a
//! time).
//!
//! Put it on a catch-all route with [`App::any`](crate::App::any):
//!
//! ```
//! use framework::middleware::proxy::{Proxy, ProxyConfig};
//!
//! let proxy = Proxy::new(ProxyConfig::default()
//!     .target("http://127.0.0.1:8080".parse().unwrap())
//!     .rewrites(vec!["/api/*:/$1".into()]))
//! .expect("valid proxy config");
//! let app = framework::App::new().any("/api/*", proxy);
//! # let _ = app;
//! ```
//!
//! - **Client**: hyper-util's pooled client (keep-alive to the upstream, idle connections kept
//!   for `pool_idle_timeout`), `TCP_NODELAY`, `connect_timeout` (default 10 s) and `timeout`
//!   for the upstream's response head (default 60 s; the body then streams as long as it
//!   flows, with at most `body_idle_timeout` between two chunks, default 30 s: an upstream that
//!   stalls mid-body cuts the client's connection). The target is `http://` (TLS to the upstream is not built in).
//! - **Rewrites**: `<pattern>:<replacement>` rules compiled at construction, `*` captures,
//!   `$1`… in the replacement, applied in order each to the result of the ones before; a
//!   pattern matches the whole path (the Go reference matched anywhere in it). A malformed rule
//!   is an error from [`Proxy::new`]. The query string is kept.
//! - **Headers**: multi-value headers are forwarded as they are. Hop-by-hop headers are removed
//!   both ways (every `Connection` header and the headers it names, `Keep-Alive`, `Proxy-*`,
//!   `TE`, `Trailer`, `Transfer-Encoding`, `Upgrade`). `X-Forwarded-For` gets the client IP
//!   appended; `X-Forwarded-Proto` and `X-Forwarded-Host` are set. Trust is decided on the peer
//!   ([`Context::trusts_proxy`]): from a trusted proxy, `X-Forwarded-Proto`/`-Host` are kept as
//!   received and `Forwarded` and `X-Real-Ip` pass through; from any other peer the two are
//!   overwritten and `Forwarded` and `X-Real-Ip` are dropped, so a client cannot tell the
//!   upstream it came over https or from another host or address. `Host` is [`ProxyConfig::host`] when set, else the target's with
//!   [`ProxyConfig::target_host`], else the incoming one (as elton and Go's reverse proxy do).
//!   A request traced by the [trace](super::trace) middleware is sent with its trace:
//!   `traceparent` names the trace and a new span id for this call, `tracestate` is passed on
//!   as the client sent it; without the trace middleware both pass through untouched.
//! - **WebSocket**: an HTTP/1.1 upgrade (`Connection: upgrade`, any case) is forwarded; after the
//!   upstream's 101 both connections are joined and bytes flow both ways until either closes.
//! - **Failures**: upstream refused, reset or unreachable before its response head: 502
//!   `bad gateway`; connect or response timeout: 504 `gateway timeout`; category
//!   `framework-proxy`, through the error handler like any error. An upstream body that fails
//!   midway fails the client's body too (the connection is cut), never a truncated success.
//! - **Done**: `done(view)` runs after every proxied request, success or failure, once the
//!   upstream's head arrived or the attempt failed (before the body streams). It does not run
//!   when the client goes away before that.
//!
//! A proxied answer marks the response committed, so the middleware around it (compress,
//! responder, etag…) passes it through as the upstream sent it. Do not put the body parser in
//! front of a proxy route: a parsed body is forwarded as the parsed bytes, no longer streamed.

mod headers;
mod idle;
mod rewrite;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use http::header::{CONTENT_LENGTH, FORWARDED, HOST, HeaderValue};
use http::{HeaderName, Request, StatusCode, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};

use crate::body::{BodyStream, RequestBody};
use crate::client_ip::ClientIpExt;
use crate::context::Context;
use crate::error::{HttpError, Result};
use crate::handler::{Endpoint, EndpointFuture, endpoint_future};
use crate::header::{X_FORWARDED_FOR, X_REAL_IP};
use crate::middleware::ConfigError;
use crate::middleware::trace::{TRACEPARENT, TRACESTATE, TraceExt};
use crate::view::RequestView;

use rewrite::{Rewrite, rewrite_path};

/// Category of proxy errors.
pub const CATEGORY: &str = "framework-proxy";

const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
const X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");

/// Called after every proxied request, with a view of it.
pub type ProxyDone = Arc<dyn Fn(&RequestView) + Send + Sync>;

/// Proxy settings.
#[derive(Clone)]
#[non_exhaustive]
pub struct ProxyConfig {
    /// The upstream, `http://host[:port][/base]`; a base path is put before every request path.
    pub target: Uri,
    /// The `Host` header sent upstream. `None`: see `target_host`.
    pub host: Option<String>,
    /// Without `host`: send the target's authority as `Host` instead of the incoming `Host`.
    pub target_host: bool,
    /// Path rewrites, `<pattern>:<replacement>`.
    pub rewrites: Vec<String>,
    /// Called after every proxied request, success or failure.
    pub done: Option<ProxyDone>,
    /// Time to connect to the upstream. Default 10 s.
    pub connect_timeout: Duration,
    /// Time from sending the request to the upstream's response head. Default 60 s.
    pub timeout: Duration,
    /// How long an idle upstream connection is kept for reuse. Default 90 s.
    pub pool_idle_timeout: Duration,
    /// The longest the upstream may send nothing while its response body is streaming; past
    /// it the client's connection is cut (the body is never made to look complete). Default
    /// 30 s, as the server's own limit between request body chunks.
    pub body_idle_timeout: Duration,
}

crate::config::setters!(ProxyConfig {
    target: Uri,
    host: Option<String>,
    target_host: bool,
    rewrites: Vec<String>,
    done: Option<ProxyDone>,
    connect_timeout: Duration,
    timeout: Duration,
    pool_idle_timeout: Duration,
    body_idle_timeout: Duration,
});

impl Default for ProxyConfig {
    fn default() -> Self {
        Self {
            target: Uri::from_static("http://127.0.0.1"),
            host: None,
            target_host: false,
            rewrites: Vec::new(),
            done: None,
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(60),
            pool_idle_timeout: Duration::from_secs(90),
            body_idle_timeout: Duration::from_secs(30),
        }
    }
}

/// The proxy endpoint.
pub struct Proxy {
    client: Client<HttpConnector, RequestBody>,
    scheme: http::uri::Scheme,
    authority: http::uri::Authority,
    base_path: String,
    host: Option<HeaderValue>,
    rewrites: Vec<Rewrite>,
    done: Option<ProxyDone>,
    timeout: Duration,
    body_idle_timeout: Duration,
}

impl Proxy {
    /// Checks the configuration (target, rewrites, host) and builds the client.
    pub fn new(config: ProxyConfig) -> std::result::Result<Self, ConfigError> {
        let target = config.target;
        if target.scheme() != Some(&http::uri::Scheme::HTTP) {
            return Err(ConfigError::new(
                "proxy",
                format!("target `{target}`: only http:// targets are supported"),
            )
            .with_kind(crate::middleware::ConfigErrorKind::Unsupported));
        }
        let authority = target
            .authority()
            .cloned()
            .ok_or_else(|| ConfigError::new("proxy", format!("target `{target}` has no host")))?;
        let rewrites = config
            .rewrites
            .iter()
            .map(|r| rewrite::compile(r))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|m| ConfigError::new("proxy", m))?;
        let host = match (config.host, config.target_host) {
            (Some(host), _) => Some(
                HeaderValue::try_from(host)
                    .map_err(|_| ConfigError::new("proxy", "host is not a valid header value"))?,
            ),
            (None, true) => Some(HeaderValue::try_from(authority.as_str()).map_err(|_| {
                ConfigError::new("proxy", "target host is not a valid header value")
            })?),
            (None, false) => None,
        };
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(config.connect_timeout));
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(config.pool_idle_timeout)
            .build(connector);
        Ok(Self {
            client,
            scheme: http::uri::Scheme::HTTP,
            authority,
            base_path: target.path().trim_end_matches('/').to_owned(),
            host,
            rewrites,
            done: config.done,
            timeout: config.timeout,
            body_idle_timeout: config.body_idle_timeout,
        })
    }

    fn upstream_uri(&self, ctx: &Context) -> Result<Uri> {
        let path = rewrite_path(&self.rewrites, ctx.path());
        let mut path_and_query = String::with_capacity(self.base_path.len() + path.len() + 32);
        path_and_query.push_str(&self.base_path);
        if !path.starts_with('/') {
            path_and_query.push('/');
        }
        path_and_query.push_str(&path);
        if let Some(query) = ctx.uri().query() {
            path_and_query.push(if path.contains('?') { '&' } else { '?' });
            path_and_query.push_str(query);
        }
        Uri::builder()
            .scheme(self.scheme.clone())
            .authority(self.authority.clone())
            .path_and_query(path_and_query)
            .build()
            .map_err(|_| {
                HttpError::with(StatusCode::BAD_REQUEST, CATEGORY, "invalid rewritten path").into()
            })
    }

    fn upstream_request(&self, ctx: &mut Context, upgrade: bool) -> Result<Request<RequestBody>> {
        let uri = self.upstream_uri(ctx)?;
        let mut headers = ctx.request_headers().clone();
        headers::remove_hop_by_hop(&mut headers, upgrade);
        let trusted = ctx.trusts_proxy();
        if !trusted {
            // Only a trusted proxy speaks for the client: whatever an untrusted peer wrote
            // about itself is dropped, and the headers below are ours.
            headers.remove(FORWARDED);
            headers.remove(X_REAL_IP);
        }
        append_forwarded_for(&mut headers, ctx.connection().remote_addr().ip());
        if !(trusted && headers.contains_key(X_FORWARDED_PROTO)) {
            headers.insert(X_FORWARDED_PROTO, HeaderValue::from_static("http"));
        }
        if !(trusted && headers.contains_key(X_FORWARDED_HOST))
            && let Some(host) = ctx.request_headers().get(HOST)
        {
            headers.insert(X_FORWARDED_HOST, host.clone());
        }
        if let Some(host) = &self.host {
            headers.insert(HOST, host.clone());
        }
        // A traced request passes its trace on, with a span id of this call's own.
        if let Some(trace) = ctx.trace() {
            let call = trace.child();
            headers.insert(TRACEPARENT, call.traceparent());
            match call.tracestate() {
                Some(state) => headers.insert(TRACESTATE, state.clone()),
                None => headers.remove(TRACESTATE),
            };
            tracing::debug!(
                trace_id = %call.trace_id(),
                span_id = %call.span_id(),
                "proxying in the request's trace"
            );
        }
        let body = match ctx.take_raw_body() {
            RequestBody::Empty if !ctx.request_body().is_empty() => {
                // A body parser read it: forward what it kept.
                headers.insert(CONTENT_LENGTH, HeaderValue::from(ctx.request_body().len()));
                RequestBody::Full(ctx.request_body().clone())
            }
            body => body,
        };
        let mut request = Request::new(body);
        *request.method_mut() = ctx.method().clone();
        *request.uri_mut() = uri;
        *request.headers_mut() = headers;
        Ok(request)
    }

    async fn forward(&self, ctx: &mut Context) -> Result {
        let upgrade = headers::wants_upgrade(ctx.request_headers());
        let client_upgrade = if upgrade {
            ctx.extensions_mut().remove::<hyper::upgrade::OnUpgrade>()
        } else {
            None
        };
        let request = self.upstream_request(ctx, upgrade)?;
        let mut response = match tokio::time::timeout(self.timeout, self.client.request(request))
            .await
        {
            Err(_) => return Err(gateway_timeout()),
            Ok(Err(err)) => {
                tracing::warn!(request_id = ctx.request_id(), upstream = %self.authority, error = %error_chain(&err), "proxy request failed");
                return Err(if is_timeout(&err) {
                    gateway_timeout()
                } else {
                    HttpError::with(StatusCode::BAD_GATEWAY, CATEGORY, "bad gateway").into()
                });
            }
            Ok(Ok(response)) => response,
        };
        let switching = response.status() == StatusCode::SWITCHING_PROTOCOLS;
        if switching {
            let Some(client_upgrade) = client_upgrade else {
                return Err(HttpError::with(
                    StatusCode::BAD_GATEWAY,
                    CATEGORY,
                    "unexpected upgrade from upstream",
                )
                .into());
            };
            let upstream_upgrade = hyper::upgrade::on(&mut response);
            tokio::spawn(join_upgraded(client_upgrade, upstream_upgrade));
        }
        let (parts, body) = response.into_parts();
        let mut headers = parts.headers;
        headers::remove_hop_by_hop(&mut headers, switching);
        ctx.set_status(parts.status);
        *ctx.response_headers_mut() = headers;
        if !switching {
            ctx.body_mut()
                .set_stream(BodyStream::new(idle::IdleTimeout::new(
                    body,
                    self.body_idle_timeout,
                )));
        }
        ctx.commit();
        Ok(())
    }
}

/// Joins the client's and the upstream's upgraded connections until either side closes.
async fn join_upgraded(client: hyper::upgrade::OnUpgrade, upstream: hyper::upgrade::OnUpgrade) {
    let (client, upstream) = match tokio::try_join!(client, upstream) {
        Ok(pair) => pair,
        Err(err) => {
            tracing::debug!(%err, "proxy upgrade failed");
            return;
        }
    };
    let mut client = TokioIo::new(client);
    let mut upstream = TokioIo::new(upstream);
    if let Err(err) = tokio::io::copy_bidirectional(&mut client, &mut upstream).await {
        tracing::debug!(%err, "proxied upgraded connection ended with an error");
    }
}

fn gateway_timeout() -> crate::Error {
    HttpError::with(StatusCode::GATEWAY_TIMEOUT, CATEGORY, "gateway timeout").into()
}

fn is_timeout(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(err);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::TimedOut
        {
            return true;
        }
        source = e.source();
    }
    false
}

fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

/// Appends `ip` to the `X-Forwarded-For` chain, folding several headers into one.
fn append_forwarded_for(headers: &mut http::HeaderMap, ip: IpAddr) {
    let mut chain = headers
        .get_all(X_FORWARDED_FOR)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(", ");
    if !chain.is_empty() {
        chain.push_str(", ");
    }
    chain.push_str(&ip.to_string());
    if let Ok(value) = HeaderValue::try_from(chain) {
        headers.insert(X_FORWARDED_FOR, value);
    }
}

impl Endpoint for Proxy {
    fn call<'a>(&'a self, ctx: &'a mut Context) -> EndpointFuture<'a> {
        endpoint_future(async move {
            let result = self.forward(ctx).await;
            if let Some(done) = &self.done {
                done(&ctx.view());
            }
            result
        })
    }
}

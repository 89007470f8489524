//! The load generator: N keep-alive HTTP/1.1 connections on a hyper client, each sending its
//! next request as soon as the previous answer is read, for a fixed time. HTTP/2 routes use
//! N / [`H2_STREAMS`] connections (prior knowledge) with [`H2_STREAMS`] streams in flight on
//! each, so as many requests are in flight as over HTTP/1.1.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use http::header::{ACCEPT_ENCODING, CONTENT_TYPE, COOKIE, HOST, SET_COOKIE};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use sha2::{Digest, Sha256};

/// A route of the side-by-side comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    Plaintext,
    Json,
    Echo,
    Big,
    StaticSmall,
    StaticLarge,
    ProxyJson,
    /// `POST /ech2`: `/echo` written with a typed `Json<T>` argument instead of `ctx.bind()`
    /// (framework only; a path as long as `/echo`); measured under callgrind only, beside
    /// `Echo`.
    EchoTyped,
    /// The user service's `GET /users/v1/login` with its full middleware stack (a new session
    /// and a login token each time); measured under callgrind only.
    UserLogin,
    /// `GET /json` over HTTP/2 with prior knowledge, [`H2_STREAMS`] streams in flight per
    /// connection.
    JsonH2,
    /// `GET /json` over HTTP/2 over TLS (ALPN `h2`), [`H2_STREAMS`] streams in flight per
    /// connection, on each server's TLS port.
    JsonH2Tls,
}

/// Streams in flight on each HTTP/2 connection.
pub(crate) const H2_STREAMS: usize = 8;

pub(crate) const ECHO_BODY: &str = r#"{"account":"bench_user","password":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}"#;

impl Route {
    pub(crate) const ALL: [Route; 9] = [
        Self::Plaintext,
        Self::Json,
        Self::JsonH2,
        Self::JsonH2Tls,
        Self::Echo,
        Self::Big,
        Self::StaticSmall,
        Self::StaticLarge,
        Self::ProxyJson,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Plaintext => "plaintext",
            Self::Json => "json",
            Self::Echo => "echo",
            Self::Big => "big+gzip",
            Self::StaticSmall => "static-4k",
            Self::StaticLarge => "static-1m",
            Self::ProxyJson => "proxy-json",
            Self::UserLogin => "user-login",
            Self::EchoTyped => "echo-typed",
            Self::JsonH2 => "json-h2",
            Self::JsonH2Tls => "json-h2-tls",
        }
    }

    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::Plaintext => "`GET /plaintext`",
            Self::Json => "`GET /json`",
            Self::Echo => "`POST /echo`",
            Self::Big => "`GET /big` (gzip)",
            Self::StaticSmall => "`GET /static/4k.bin`",
            Self::StaticLarge => "`GET /static/1m.bin`",
            Self::ProxyJson => "`GET /proxy/json`",
            Self::UserLogin => "`GET /users/v1/login` (user service, memory stores)",
            Self::EchoTyped => "`POST /ech2`: `/echo` with a `Json<T>` argument",
            Self::JsonH2 => "`GET /json` over HTTP/2 (prior knowledge, 8 streams per connection)",
            Self::JsonH2Tls => {
                "`GET /json` over HTTP/2 with TLS (ALPN h2, 8 streams per connection)"
            }
        }
    }

    /// Rounds measured on this route when a run asks for `rounds`: twice as many on
    /// `POST /echo`, whose goal against actix-web sits inside the machine's noise (a gap of a
    /// few per cent against ±7% from round to round), so its median of per-round ratios gets
    /// more pairs; the other routes are either far from their goal or have none.
    pub(crate) fn rounds(self, rounds: usize) -> usize {
        if self == Self::Echo {
            rounds * 2
        } else {
            rounds
        }
    }

    /// The body size, for routes whose throughput in bytes matters.
    pub(crate) fn body_bytes(self) -> Option<usize> {
        match self {
            Self::StaticSmall => Some(benches::STATIC_SMALL),
            Self::StaticLarge => Some(benches::STATIC_LARGE),
            _ => None,
        }
    }

    /// Routes compared with the peer framework's own component rather than raw hyper.
    pub(crate) fn is_component(self) -> bool {
        matches!(
            self,
            Self::StaticSmall | Self::StaticLarge | Self::ProxyJson
        )
    }

    /// Whether the route is sent over HTTP/2.
    pub(crate) fn is_h2(self) -> bool {
        matches!(self, Self::JsonH2 | Self::JsonH2Tls)
    }

    /// Whether the route is sent over TLS (to the server's TLS port).
    pub(crate) fn is_tls(self) -> bool {
        self == Self::JsonH2Tls
    }

    /// The route's path.
    pub(crate) fn path(self) -> &'static str {
        match self {
            Self::Plaintext => "/plaintext",
            Self::Json | Self::JsonH2 | Self::JsonH2Tls => "/json",
            Self::Echo => "/echo",
            Self::Big => "/big",
            Self::StaticSmall => "/static/4k.bin",
            Self::StaticLarge => "/static/1m.bin",
            Self::ProxyJson => "/proxy/json",
            Self::UserLogin => "/users/v1/login",
            Self::EchoTyped => "/ech2",
        }
    }

    pub(crate) fn request(self) -> Request<Full<Bytes>> {
        if self.is_h2() {
            // HTTP/2 carries the authority in the URI (`:authority`), not in a Host header.
            let scheme = if self.is_tls() { "https" } else { "http" };
            return Request::get(format!("{scheme}://localhost{}", self.path()))
                .body(Full::new(Bytes::new()))
                .expect("valid request");
        }
        let method = match self {
            Self::Echo | Self::EchoTyped => Method::POST,
            _ => Method::GET,
        };
        let mut builder = Request::builder()
            .method(method)
            .uri(self.path())
            .header(HOST, "localhost");
        let body = match self {
            Self::Echo | Self::EchoTyped => {
                builder = builder.header(CONTENT_TYPE, "application/json");
                Bytes::from_static(ECHO_BODY.as_bytes())
            }
            Self::Big => {
                builder = builder.header(ACCEPT_ENCODING, "gzip");
                Bytes::new()
            }
            _ => Bytes::new(),
        };
        builder.body(Full::new(body)).expect("valid request")
    }
}

impl Route {
    /// Whether an answer is this route's: a success, and for the routes whose body is known,
    /// that body (`/plaintext`'s text, `/json`'s message, a login token, the echoed
    /// credentials, `/big` gzip-encoded); at least a body for the others.
    pub(crate) fn check_answer(
        self,
        status: StatusCode,
        encoding: Option<&[u8]>,
        body: &[u8],
    ) -> Result<(), String> {
        if !status.is_success() {
            return Err(format!("answered {status}"));
        }
        let json = || {
            serde_json::from_slice::<serde_json::Value>(body)
                .map_err(|e| format!("not JSON ({e}): {}", String::from_utf8_lossy(body)))
        };
        match self {
            Self::Plaintext if body != benches::PLAINTEXT.as_bytes() => {
                Err(format!("answered {:?}", String::from_utf8_lossy(body)))
            }
            Self::Json | Self::JsonH2 | Self::JsonH2Tls
                if json()?["message"] != benches::PLAINTEXT =>
            {
                Err(format!("answered {}", String::from_utf8_lossy(body)))
            }
            Self::Echo | Self::EchoTyped
                if json()?
                    != serde_json::from_str::<serde_json::Value>(ECHO_BODY)
                        .map_err(|e| e.to_string())? =>
            {
                Err(format!("echoed {}", String::from_utf8_lossy(body)))
            }
            Self::UserLogin if json()?["token"].as_str().map(str::len) != Some(32) => {
                Err(format!("no token: {}", String::from_utf8_lossy(body)))
            }
            Self::Big if encoding != Some(b"gzip".as_slice()) => Err("not gzip-encoded".to_owned()),
            Self::Big => big_answer_is_the_document(body),
            _ if body.is_empty() => Err("an empty body".to_owned()),
            _ => Ok(()),
        }
    }
}

/// The JSON of `/big`'s document, as every server serialises it (serde_json, compact).
fn big_json() -> &'static [u8] {
    static JSON: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    JSON.get_or_init(|| serde_json::to_vec(&benches::big_document()).expect("serialisable"))
}

/// Whether a gzip body decodes to `/big`'s document: the same bytes (each server serialises
/// it with serde_json), or else the same JSON value. A server that sent less, or something
/// cheaper, is caught here rather than counted fast.
fn big_answer_is_the_document(body: &[u8]) -> Result<(), String> {
    use std::io::Read;
    let mut decoded = Vec::with_capacity(big_json().len());
    flate2::read::GzDecoder::new(body)
        .read_to_end(&mut decoded)
        .map_err(|e| format!("not gzip ({e})"))?;
    if decoded == big_json() {
        return Ok(());
    }
    let same = serde_json::from_slice::<serde_json::Value>(&decoded).ok()
        == serde_json::from_slice::<serde_json::Value>(big_json()).ok();
    if same {
        Ok(())
    } else {
        Err(format!(
            "decoded to another document ({} bytes)",
            decoded.len()
        ))
    }
}

/// What one timed run measured.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) ok: u64,
    pub(crate) errors: u64,
    pub(crate) latency: Histogram<u64>,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("histogram bounds")
}

/// A client connection: HTTP/1.1, or HTTP/2 (cloned for each of its streams).
#[derive(Debug)]
pub(crate) enum SendRequest {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

impl SendRequest {
    /// Another stream on the same HTTP/2 connection; `None` for HTTP/1.1.
    pub(crate) fn stream(&self) -> Option<Self> {
        match self {
            Self::H1(_) => None,
            Self::H2(sender) => Some(Self::H2(sender.clone())),
        }
    }

    pub(crate) async fn send(
        &mut self,
        request: Request<Full<Bytes>>,
    ) -> hyper::Result<http::Response<hyper::body::Incoming>> {
        match self {
            Self::H1(sender) => {
                sender.ready().await?;
                sender.send_request(request).await
            }
            Self::H2(sender) => {
                sender.ready().await?;
                sender.send_request(request).await
            }
        }
    }
}

/// A connection to `addr` over HTTP/1.1, or HTTP/2 with prior knowledge.
pub(crate) async fn connect(addr: SocketAddr, h2: bool) -> Option<SendRequest> {
    connect_driven(addr, h2).await.map(|(sender, _)| sender)
}

#[cfg(feature = "tls")]
/// The client's TLS settings: the run's certificate trusted, ALPN `h2` only (set once by
/// [`trust_certificate`]).
static TLS_CLIENT: std::sync::OnceLock<tokio_rustls::TlsConnector> = std::sync::OnceLock::new();

#[cfg(feature = "tls")]
/// Trusts `der` (the run's self-signed certificate) for [`connect_tls`].
pub(crate) fn trust_certificate(der: Vec<u8>) -> std::io::Result<()> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from(der))
        .map_err(std::io::Error::other)?;
    let mut config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(std::io::Error::other)?
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let _ = TLS_CLIENT.set(tokio_rustls::TlsConnector::from(std::sync::Arc::new(
        config,
    )));
    Ok(())
}

#[cfg(feature = "tls")]
/// A connection to `addr` over TLS, HTTP/2 by ALPN.
pub(crate) async fn connect_tls(addr: SocketAddr) -> Option<SendRequest> {
    let connector = TLS_CLIENT.get()?;
    let stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    stream.set_nodelay(true).ok()?;
    let name = rustls::pki_types::ServerName::try_from("localhost").ok()?;
    let tls = connector.connect(name, stream).await.ok()?;
    if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
        return None;
    }
    let (sender, connection) = http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
        .await
        .ok()?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Some(SendRequest::H2(sender))
}

/// A connection for `route`: over TLS, HTTP/2 or HTTP/1.1 as the route is sent.
async fn connect_for(addr: SocketAddr, route: Option<Route>) -> Option<SendRequest> {
    match route {
        #[cfg(feature = "tls")]
        Some(route) if route.is_tls() => connect_tls(addr).await,
        #[cfg(not(feature = "tls"))]
        Some(route) if route.is_tls() => None,
        Some(route) => connect(addr, route.is_h2()).await,
        None => connect(addr, false).await,
    }
}

/// [`connect`], with the task that drives the connection: it ends once every sender is
/// dropped and the connection is closed.
pub(crate) async fn connect_driven(
    addr: SocketAddr,
    h2: bool,
) -> Option<(SendRequest, tokio::task::JoinHandle<()>)> {
    let stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    stream.set_nodelay(true).ok()?;
    let io = TokioIo::new(stream);
    if h2 {
        let (sender, connection) = http2::handshake(TokioExecutor::new(), io).await.ok()?;
        let driver = tokio::spawn(async move {
            let _ = connection.await;
        });
        Some((SendRequest::H2(sender), driver))
    } else {
        let (sender, connection) = http1::handshake(io).await.ok()?;
        let driver = tokio::spawn(async move {
            let _ = connection.await;
        });
        Some((SendRequest::H1(sender), driver))
    }
}

/// One request to `route` on `sender`, its whole answer read and checked
/// ([`Route::check_answer`]): an answer that is not the route's is an error, so nothing
/// measures a 404 or a 500 as if it were the route.
pub(crate) async fn fetch(sender: &mut SendRequest, route: Route) -> std::io::Result<()> {
    let response = sender
        .send(route.request())
        .await
        .map_err(std::io::Error::other)?;
    let status = response.status();
    let encoding = response
        .headers()
        .get(http::header::CONTENT_ENCODING)
        .map(|v| v.as_bytes().to_vec());
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(std::io::Error::other)?
        .to_bytes();
    route
        .check_answer(status, encoding.as_deref(), &body)
        .map_err(|why| std::io::Error::other(format!("{}: {why}", route.name())))
}

/// Sends one request and reads the whole answer; the status, set-cookie and body. A
/// compressed body reports its status as 415 unless the request asked for compression, so a
/// server that skips or misapplies compression shows up as errors, not as a fast result.
async fn exchange(
    sender: &mut SendRequest,
    request: Request<Full<Bytes>>,
) -> Option<(StatusCode, Option<String>, Bytes)> {
    let wants_gzip = request.headers().contains_key(ACCEPT_ENCODING);
    let response = sender.send(request).await.ok()?;
    let gzipped = response
        .headers()
        .get(http::header::CONTENT_ENCODING)
        .is_some_and(|v| v == "gzip");
    let status = if gzipped == wants_gzip {
        response.status()
    } else {
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    };
    let cookie = response
        .headers()
        .get(SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::to_owned);
    let body = response.into_body().collect().await.ok()?.to_bytes();
    let status = if body.is_empty() {
        StatusCode::NO_CONTENT
    } else {
        status
    };
    Some((status, cookie, body))
}

/// What each connection does in a loop.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Work {
    /// One request to a route.
    Route(Route),
    /// One user service flow; the round keeps account names unique across runs.
    Flow(Flow, usize),
}

impl Work {
    /// The route, for route work; a flow is HTTP/1.1 to the user service.
    fn route(self) -> Option<Route> {
        match self {
            Self::Route(route) => Some(route),
            Self::Flow(..) => None,
        }
    }
}

/// One iteration of `work` on `sender`: `Some(true)` when it succeeded, `Some(false)` when the
/// server answered wrongly, `None` when the connection failed.
async fn once(work: Work, sender: &mut SendRequest, conn: usize, i: u64) -> Option<bool> {
    match work {
        // Every answer is checked before it counts: its status, its encoding (`exchange`
        // refuses a gzip mismatch), and its body where the route's is known (`/big` decoded).
        Work::Route(route) => exchange(sender, route.request())
            .await
            .map(|(status, _, body)| {
                let encoding = matches!(route, Route::Big).then_some(b"gzip".as_slice());
                route.check_answer(status, encoding, &body).is_ok()
            }),
        Work::Flow(Flow::LoginToken, _) => exchange(sender, get_request("/users/v1/login"))
            .await
            .map(|(status, _, _)| status == StatusCode::OK),
        Work::Flow(Flow::RegisterLogin, round) => {
            register_and_login(sender, &format!("r{round}c{conn}n{i}")).await
        }
        Work::Flow(Flow::DocsBundle(encoding), _) => encoded(sender, DOCS_BUNDLE, encoding).await,
        Work::Flow(Flow::Livez, _) => exchange(sender, get_request("/livez"))
            .await
            .map(|(status, _, _)| status == StatusCode::OK),
    }
}

/// The user service's largest public file: Swagger UI's script, 1.4 MB.
const DOCS_BUNDLE: &str = "/docs/swagger-ui-bundle.js";

/// `GET path` asking for `encoding` only; true when the answer is 200 in that encoding with
/// a body, all of it read.
async fn encoded(sender: &mut SendRequest, path: &str, encoding: &'static str) -> Option<bool> {
    let request = Request::get(path)
        .header(HOST, "localhost")
        .header(ACCEPT_ENCODING, encoding)
        .body(Full::new(Bytes::new()))
        .expect("valid request");
    let response = sender.send(request).await.ok()?;
    let right = response.status() == StatusCode::OK
        && response
            .headers()
            .get(http::header::CONTENT_ENCODING)
            .is_some_and(|v| v == encoding);
    let body = response.into_body().collect().await.ok()?.to_bytes();
    Some(right && !body.is_empty())
}

/// `/livez` on one connection while `downloaders` connections fetch the docs bundle with
/// brotli, for `duration`: the probe's latencies, and the downloads'.
pub(crate) async fn livez_while_downloading(
    addr: SocketAddr,
    downloaders: usize,
    duration: Duration,
) -> (Run, Run) {
    let deadline = Instant::now() + duration;
    let mut downloads = Vec::new();
    for conn in 0..downloaders {
        downloads.push(tokio::spawn(async move {
            match connect(addr, false).await {
                Some(sender) => {
                    let work = Work::Flow(Flow::DocsBundle("br"), 0);
                    drive(addr, work, sender, conn, deadline).await
                }
                None => failed_run(),
            }
        }));
    }
    let probe = tokio::spawn(async move {
        match connect(addr, false).await {
            Some(sender) => drive(addr, Work::Flow(Flow::Livez, 0), sender, 0, deadline).await,
            None => failed_run(),
        }
    });
    let probes = merge(vec![probe]).await;
    (probes, merge(downloads).await)
}

/// Runs `work` on `addr` from `connections` requests in flight for `duration`: as many
/// HTTP/1.1 connections, or for an HTTP/2 route `connections / H2_STREAMS` connections with
/// [`H2_STREAMS`] streams each.
pub(crate) async fn run(
    addr: SocketAddr,
    work: Work,
    connections: usize,
    duration: Duration,
) -> Run {
    let deadline = Instant::now() + duration;
    let h2 = work.route().is_some_and(Route::is_h2);
    let mut tasks = Vec::new();
    if h2 {
        for conn in 0..connections.div_ceil(H2_STREAMS) {
            let Some(sender) = connect_for(addr, work.route()).await else {
                tasks.push(tokio::spawn(async { failed_run() }));
                continue;
            };
            for stream in 0..H2_STREAMS {
                let sender = sender.stream().expect("an HTTP/2 connection");
                let conn = conn * H2_STREAMS + stream;
                tasks.push(tokio::spawn(drive(addr, work, sender, conn, deadline)));
            }
        }
    } else {
        for conn in 0..connections {
            tasks.push(tokio::spawn(async move {
                match connect(addr, false).await {
                    Some(sender) => drive(addr, work, sender, conn, deadline).await,
                    None => failed_run(),
                }
            }));
        }
    }
    merge(tasks).await
}

fn failed_run() -> Run {
    Run {
        ok: 0,
        errors: 1,
        latency: histogram(),
    }
}

/// One connection's (or one HTTP/2 stream's) loop until `deadline`; a failed connection is
/// made again.
async fn drive(
    addr: SocketAddr,
    work: Work,
    mut sender: SendRequest,
    conn: usize,
    deadline: Instant,
) -> Run {
    let mut run = Run {
        ok: 0,
        errors: 0,
        latency: histogram(),
    };
    let mut i = 0u64;
    while Instant::now() < deadline {
        i += 1;
        let started = Instant::now();
        match once(work, &mut sender, conn, i).await {
            Some(true) => {
                run.ok += 1;
                let _ = run.latency.record(started.elapsed().as_micros() as u64);
            }
            Some(false) => run.errors += 1,
            None => {
                run.errors += 1;
                match connect_for(addr, work.route()).await {
                    Some(s) => sender = s,
                    None => break,
                }
            }
        }
    }
    run
}

async fn merge(tasks: Vec<tokio::task::JoinHandle<Run>>) -> Run {
    let mut total = Run {
        ok: 0,
        errors: 0,
        latency: histogram(),
    };
    for task in tasks {
        if let Ok(run) = task.await {
            total.ok += run.ok;
            total.errors += run.errors;
            let _ = total.latency.add(&run.latency);
        } else {
            total.errors += 1;
        }
    }
    total
}

/// A flow of the user service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// `GET /users/v1/login` without a cookie: a new session and token each time.
    LoginToken,
    /// Register, token, login: three requests per iteration, counted as one.
    RegisterLogin,
    /// The docs page's 1.4 MB script in one encoding (`br`, `gzip`): a static body,
    /// compressed once.
    DocsBundle(&'static str),
    /// `GET /livez` (not a row of its own: the probe measured beside the downloads).
    Livez,
}

impl Flow {
    pub(crate) const ALL: [Flow; 4] = [
        Self::LoginToken,
        Self::RegisterLogin,
        Self::DocsBundle("br"),
        Self::DocsBundle("gzip"),
    ];

    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::LoginToken => "`GET /users/v1/login` (new session + token)",
            Self::RegisterLogin => "register → token → login (3 requests, counted once)",
            Self::DocsBundle("br") => "`GET /docs/swagger-ui-bundle.js` (1.4 MB), `br`",
            Self::DocsBundle(_) => "`GET /docs/swagger-ui-bundle.js` (1.4 MB), `gzip`",
            Self::Livez => "`GET /livez`",
        }
    }
}

fn hex_sha256(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

fn json_request(path: &str, cookie: Option<&str>, body: String) -> Request<Full<Bytes>> {
    let mut builder = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header(HOST, "localhost")
        .header(CONTENT_TYPE, "application/json");
    if let Some(cookie) = cookie {
        builder = builder.header(COOKIE, cookie);
    }
    builder
        .body(Full::new(Bytes::from(body)))
        .expect("valid request")
}

fn get_request(path: &str) -> Request<Full<Bytes>> {
    Request::builder()
        .uri(path)
        .header(HOST, "localhost")
        .body(Full::new(Bytes::new()))
        .expect("valid request")
}

/// One register → token → login sequence; true when all three answered as expected.
async fn register_and_login(sender: &mut SendRequest, account: &str) -> Option<bool> {
    let digest = hex_sha256(b"benchmark password");
    let body = format!(r#"{{"account":"{account}","password":"{digest}"}}"#);
    let (status, _, _) = exchange(sender, json_request("/users/v1/me", None, body)).await?;
    if status != StatusCode::CREATED {
        return Some(false);
    }
    let (status, cookie, body) = exchange(sender, get_request("/users/v1/login")).await?;
    let token: serde_json::Value = serde_json::from_slice(&body).ok()?;
    let token = token["token"].as_str()?;
    if status != StatusCode::OK {
        return Some(false);
    }
    let proof = hex_sha256(format!("{digest}{token}").as_bytes());
    let body = format!(r#"{{"account":"{account}","password":"{proof}"}}"#);
    let (status, _, _) = exchange(
        sender,
        json_request("/users/v1/login", cookie.as_deref(), body),
    )
    .await?;
    Some(status == StatusCode::OK)
}

/// One round's figures for one server.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    pub(crate) requests_per_second: f64,
    pub(crate) p50_us: u64,
    pub(crate) p99_us: u64,
    pub(crate) cpu_us_per_request: f64,
    pub(crate) errors: u64,
}

impl Sample {
    /// A run of another load tool: counts only (no latencies).
    pub(crate) fn from_counts(ok: u64, errors: u64, ticks: u64, duration: Duration) -> Self {
        let cpu_us = ticks as f64 * 1e6 / crate::machine::ticks_per_second();
        Self {
            requests_per_second: ok as f64 / duration.as_secs_f64(),
            p50_us: 0,
            p99_us: 0,
            cpu_us_per_request: if ok == 0 { 0.0 } else { cpu_us / ok as f64 },
            errors,
        }
    }

    pub(crate) fn new(run: &Run, ticks: u64, duration: Duration) -> Self {
        let cpu_us = ticks as f64 * 1e6 / crate::machine::ticks_per_second();
        Self {
            requests_per_second: run.ok as f64 / duration.as_secs_f64(),
            p50_us: run.latency.value_at_quantile(0.5),
            p99_us: run.latency.value_at_quantile(0.99),
            cpu_us_per_request: if run.ok == 0 {
                0.0
            } else {
                cpu_us / run.ok as f64
            },
            errors: run.errors,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_that_is_not_the_route_s_is_refused() {
        let ok = StatusCode::OK;
        assert!(
            Route::Json
                .check_answer(ok, None, br#"{"message":"Hello, World!"}"#)
                .is_ok()
        );
        assert!(
            Route::Json
                .check_answer(StatusCode::NOT_FOUND, None, b"not found")
                .is_err()
        );
        assert!(
            Route::Json
                .check_answer(ok, None, br#"{"message":"hi"}"#)
                .is_err()
        );
        assert!(Route::Json.check_answer(ok, None, b"").is_err());
        assert!(
            Route::Plaintext
                .check_answer(ok, None, b"Hello, World!")
                .is_ok()
        );
        assert!(Route::Plaintext.check_answer(ok, None, b"Hello").is_err());
        assert!(
            Route::Echo
                .check_answer(ok, None, ECHO_BODY.as_bytes())
                .is_ok()
        );
        assert!(Route::Echo.check_answer(ok, None, b"{}").is_err());
        let gzip = |bytes: &[u8]| {
            use std::io::Write;
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            encoder.write_all(bytes).unwrap();
            encoder.finish().unwrap()
        };
        assert!(
            Route::Big
                .check_answer(ok, Some(b"gzip"), &gzip(big_json()))
                .is_ok()
        );
        // Pretty-printed, it is the same document.
        let pretty = serde_json::to_vec_pretty(
            &serde_json::from_slice::<serde_json::Value>(big_json()).unwrap(),
        )
        .unwrap();
        assert!(
            Route::Big
                .check_answer(ok, Some(b"gzip"), &gzip(&pretty))
                .is_ok()
        );
        // Gzip of something else, or not gzip at all: refused.
        assert!(
            Route::Big
                .check_answer(ok, Some(b"gzip"), &gzip(b"[]"))
                .is_err()
        );
        assert!(
            Route::Big
                .check_answer(ok, Some(b"gzip"), b"\x1f\x8b...")
                .is_err()
        );
        assert!(Route::Big.check_answer(ok, None, b"[...]").is_err());
        assert!(
            Route::UserLogin
                .check_answer(ok, None, br#"{"token":"0123456789abcdef0123456789abcdef"}"#)
                .is_ok()
        );
        assert!(
            Route::UserLogin
                .check_answer(ok, None, br#"{"name":""}"#)
                .is_err()
        );
        assert!(
            Route::StaticSmall
                .check_answer(StatusCode::INTERNAL_SERVER_ERROR, None, b"x")
                .is_err()
        );
    }
}

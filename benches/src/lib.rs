//! Shared pieces of the benchmark servers and the load harness: the payloads, the echo
//! parameters and their rules, command-line arguments, and the runtime every server uses.
//!
//! Every server answers the same four routes:
//! - `GET /plaintext`: `Hello, World!` (13 bytes, `text/plain`);
//! - `GET /json`: `{"message":"Hello, World!"}` through serde;
//! - `POST /echo`: a JSON `{account, password}` body, validated (account 2-20 letters, digits
//!   or `_`; password 64 hex digits), echoed back as JSON; 400 when invalid;
//! - `GET /big`: a 16 KiB JSON document through serde, gzip-compressed at [`GZIP_LEVEL`] for a
//!   client that accepts gzip.
//!
//! The framework, axum and actix-web also serve static files and a reverse proxy:
//! - `GET /static/4k.bin` and `GET /static/1m.bin`: files from [`static_dir`], through each
//!   framework's own static file service (`StaticServe`, tower-http's `ServeDir`,
//!   `actix-files`);
//! - `GET /proxy/json` (framework and axum): forwarded to raw hyper's `/json` on
//!   [`UPSTREAM_PORT`] with hyper-util's pooled client.

use serde::{Deserialize, Serialize};

/// The plaintext body.
pub const PLAINTEXT: &str = "Hello, World!";

/// gzip level of every server on `/big`: actix-web's `Compress` is fixed at flate2's `fast()`
/// (level 1), so the others are set to match.
pub const GZIP_LEVEL: u32 = 1;

/// Request body limit of the echo route, the framework's default.
pub const BODY_LIMIT: usize = 50 * 1024;

/// `GET /json` body.
#[derive(Debug, Serialize)]
pub struct Message {
    /// Always "Hello, World!".
    pub message: &'static str,
}

/// `POST /echo` body, validated the same way by every server.
#[derive(Debug, Clone, Serialize, Deserialize, framework::Validate)]
pub struct Credentials {
    /// 2-20 ASCII letters, digits or `_`.
    #[validate(
        length(min = 2, max = 20),
        charset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
    )]
    pub account: String,
    /// 64 hex digits.
    #[validate(length(min = 64, max = 64), hex)]
    pub password: String,
}

impl Credentials {
    /// The rules, hand-written for the servers without a validation derive.
    pub fn check(&self) -> Result<(), &'static str> {
        let account_ok = (2..=20).contains(&self.account.len())
            && self
                .account
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !account_ok {
            return Err("account: must be 2-20 letters, digits or _");
        }
        if self.password.len() != 64 || !self.password.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("password: must be 64 hexadecimal characters");
        }
        Ok(())
    }
}

/// Size of `/static/4k.bin`.
pub const STATIC_SMALL: usize = 4 * 1024;
/// Size of `/static/1m.bin`.
pub const STATIC_LARGE: usize = 1024 * 1024;
/// The raw hyper server's port when `BENCH_UPSTREAM_PORT` is not set: the upstream of
/// `/proxy/json`. The bench sets the variable to the port it gave raw hyper in this run.
pub const UPSTREAM_PORT: u16 = 18101;

/// The directory of the static files (`$BENCH_STATIC_DIR`, else a folder in the temp dir),
/// with `4k.bin` and `1m.bin` written if they are missing. The bench calls it before it starts
/// any server: a server that wrote the files itself would count the writing (about 12 million
/// instructions) in its callgrind totals, which once gave the check a figure of half the real
/// one.
///
/// # Panics
/// When the files cannot be written: these are benchmark tools.
pub fn static_dir() -> std::path::PathBuf {
    let dir = std::env::var_os("BENCH_STATIC_DIR").map_or_else(
        || std::env::temp_dir().join("framework-bench-static"),
        std::path::PathBuf::from,
    );
    std::fs::create_dir_all(&dir).expect("static dir");
    for (name, size) in [("4k.bin", STATIC_SMALL), ("1m.bin", STATIC_LARGE)] {
        let path = dir.join(name);
        if std::fs::metadata(&path).map(|m| m.len()).ok() != Some(size as u64) {
            // Written beside and renamed into place: a server of another run reading the
            // directory at the same time never sees half a file.
            let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            let partial = dir.join(format!("{name}.{}.partial", std::process::id()));
            std::fs::write(&partial, data).expect("static file");
            std::fs::rename(&partial, &path).expect("static file");
        }
    }
    dir
}

/// `http://127.0.0.1:<port>`: `BENCH_UPSTREAM_PORT`, else [`UPSTREAM_PORT`].
pub fn upstream_url() -> String {
    let port = std::env::var("BENCH_UPSTREAM_PORT")
        .ok()
        .and_then(|p| p.parse::<u16>().ok())
        .unwrap_or(UPSTREAM_PORT);
    format!("http://127.0.0.1:{port}")
}

/// One entry of the big document.
#[derive(Debug, Serialize)]
pub struct Item {
    /// Position.
    pub id: u32,
    /// A name.
    pub name: String,
    /// Whether it is active.
    pub active: bool,
    /// A score.
    pub score: f64,
    /// Some tags.
    pub tags: [&'static str; 3],
}

/// The `/big` document: 16 KiB of JSON once serialised (checked by a test).
pub fn big_document() -> Vec<Item> {
    (0..184)
        .map(|id| Item {
            id,
            name: format!("item-{id:04}"),
            active: id % 3 != 0,
            score: f64::from(id) * 1.5,
            tags: ["alpha", "beta", "gamma"],
        })
        .collect()
}

/// Server settings from the command line: `--port N --threads N`.
#[derive(Debug, Clone, Copy)]
pub struct ServerArgs {
    /// Port on 127.0.0.1.
    pub port: u16,
    /// Worker threads.
    pub threads: usize,
}

impl ServerArgs {
    /// Reads `--port` (default 8080) and `--threads` (default 1).
    ///
    /// # Panics
    /// On a malformed number: these are benchmark tools, started by the harness.
    pub fn from_env() -> Self {
        let args: Vec<String> = std::env::args().collect();
        let value = |name: &str| {
            args.iter()
                .position(|a| a == name)
                .and_then(|i| args.get(i + 1))
                .map(|v| {
                    v.parse()
                        .unwrap_or_else(|_| panic!("{name} takes a number"))
                })
        };
        Self {
            port: value("--port").map_or(8080, |p: usize| u16::try_from(p).expect("port")),
            threads: value("--threads").unwrap_or(1),
        }
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// `127.0.0.1:<port + TLS_PORT_OFFSET>`: where a server answers over TLS when the
    /// harness gave it a certificate ([`tls_files`]).
    pub fn tls_addr(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.port + TLS_PORT_OFFSET))
    }
}

/// A server's TLS port is its plain port plus this.
pub const TLS_PORT_OFFSET: u16 = 1000;

/// The certificate and key (PEM files) the harness made for this run, from `BENCH_TLS_CERT`
/// and `BENCH_TLS_KEY`: a server given them also listens over TLS on
/// [`ServerArgs::tls_addr`].
pub fn tls_files() -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    Some((
        std::env::var_os("BENCH_TLS_CERT")?.into(),
        std::env::var_os("BENCH_TLS_KEY")?.into(),
    ))
}

/// A rustls server configuration from [`tls_files`] (rustls' `ring` provider, ALPN `h2` then
/// `http/1.1`), for the servers that take one (raw hyper, axum, actix-web); the framework's
/// server takes the files through its own `Tls`.
///
/// # Errors
/// When the files do not load.
#[cfg(feature = "tls")]
pub fn rustls_config() -> std::io::Result<Option<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let Some((cert, key)) = tls_files() else {
        return Ok(None);
    };
    let certs = CertificateDer::pem_file_iter(&cert)
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(std::io::Error::other)?;
    let key = PrivateKeyDer::from_pem_file(&key).map_err(std::io::Error::other)?;
    let mut config = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(std::io::Error::other)?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .map_err(std::io::Error::other)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Some(config))
}

/// A tokio runtime with `threads` workers, as every tokio-based server here uses.
///
/// With `BENCH_CURRENT_THREAD` set, a current-thread runtime instead (one thread, whatever
/// `threads` says), as each actix-web worker is: how the HTTP/2 `writev` count of hyper's
/// stream-per-task model was traced to the multi-thread scheduler's LIFO slot (see
/// `framework/src/server/connection/streams.rs`). Not used by the harness.
///
/// # Panics
/// When the runtime cannot start.
pub fn runtime(threads: usize) -> tokio::runtime::Runtime {
    if std::env::var_os("BENCH_CURRENT_THREAD").is_some() {
        return tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime");
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// True when an `Accept-Encoding` value accepts gzip (a q of 0 refuses it).
pub fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    let mut headers = http::HeaderMap::new();
    if let Some(v) = accept_encoding.and_then(|v| http::HeaderValue::from_str(v).ok()) {
        headers.insert(http::header::ACCEPT_ENCODING, v);
    }
    framework::negotiation::encoding_quality(&headers, "gzip") > 0.0
}

/// gzip at [`GZIP_LEVEL`].
///
/// # Panics
/// Never in practice: writing to a `Vec` cannot fail.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(data.len() / 3),
        flate2::Compression::new(GZIP_LEVEL),
    );
    encoder.write_all(data).expect("write to Vec");
    encoder.finish().expect("finish to Vec")
}

#[cfg(test)]
mod tests {
    use super::*;
    use framework::Validate;

    #[test]
    fn big_document_is_16_kib() {
        let len = serde_json::to_vec(&big_document()).unwrap().len();
        assert!((16 * 1024 - 512..=16 * 1024 + 512).contains(&len), "{len}");
    }

    #[test]
    fn both_validations_agree() {
        let hex = "a".repeat(64);
        for (account, password) in [
            ("ok_1", hex.as_str()),
            ("a", &hex),
            ("bad name", &hex),
            ("ok", "zz"),
        ] {
            let c = Credentials {
                account: account.into(),
                password: password.into(),
            };
            assert_eq!(c.check().is_ok(), c.validate().is_ok(), "{account}");
        }
    }
}

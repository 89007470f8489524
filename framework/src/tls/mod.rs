//! HTTPS through [rustls](https://docs.rs/rustls) (no OpenSSL): [`Tls`] holds the certificate
//! chain and key read from PEM files, and [`App::tls`](crate::App::tls) makes the service speak
//! TLS on its listener.
//!
//! - **Protocols**: TLS 1.2 and 1.3 with rustls' safe defaults (its `ring` provider); ALPN
//!   offers `h2` and `http/1.1`, and the connection is served as what the client chose (no
//!   ALPN: HTTP/1.1).
//! - **Reload without dropping connections**: on `SIGHUP`, and when either file changes (their
//!   size or modification time, looked at every [`Tls::reload_every`], 5 s by default), the
//!   files are read again; new handshakes use the new certificate, open connections go on with
//!   the one they shook hands with. A new file that does not load (unreadable, no certificate,
//!   a key that does not match) is logged and the old certificate stays. [`Tls::reload`] does
//!   the same on demand. A reload starts rustls afresh, so TLS sessions from before it are not
//!   resumed after it (a client makes one full handshake).
//! - **Slow clients**: the handshake counts against the same limit as a request head
//!   ([`ServerLimits::header_read_timeout`](crate::limits::ServerLimits)): a client that
//!   stalls its handshake, or never starts one, is closed in time, and the open-connection
//!   limit counts TLS connections as any other.
//! - The context knows the request came over TLS ([`ClientIpExt::is_https`](crate::client_ip::ClientIpExt::is_https)),
//!   so security headers send HSTS.
//! - **Client certificates (mTLS)**: [`Tls::client_auth`] with a [`ClientAuth`] asks clients for
//!   a certificate from a CA bundle (required or optional, with revocation lists if wanted); the
//!   verified client's identity, a [`ClientCert`], is read once per connection and handlers and
//!   middleware get it from [`ConnectionInfo::client_cert`](crate::connection::ConnectionInfo::client_cert). The CA bundle
//!   and revocation lists are reloaded with the certificate, the same way: a file that does not
//!   load is logged and the old ones stay.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use framework::tls::Tls;
//!
//! let tls = Tls::from_pem_files("cert.pem", "key.pem")?;
//! let service = framework::App::new().tls(tls).build()?;
//! service.listen("127.0.0.1:3443").await?;
//! # Ok(())
//! # }
//! ```
//!
//! With client certificates, a handler that names the client:
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use framework::tls::{ClientAuth, Tls};
//! use framework::{Context, HttpError};
//!
//! let tls = Tls::from_pem_files("cert.pem", "key.pem")?
//!     .client_auth(ClientAuth::required("clients-ca.pem"))?;
//! let service = framework::App::new()
//!     .tls(tls)
//!     .get("/whoami", |ctx: &mut Context| {
//!         let who = ctx.connection().client_cert().map(|cert| cert.subject().to_owned());
//!         async move {
//!             who.ok_or_else(|| {
//!                 HttpError::new("no client certificate")
//!                     .with_status(http::StatusCode::UNAUTHORIZED)
//!                     .into()
//!             })
//!         }
//!     })
//!     .build()?;
//! service.listen("127.0.0.1:3443").await?;
//! # Ok(())
//! # }
//! ```

// Without the server only the client uses TLS: the acceptor side is not called.
#![cfg_attr(not(feature = "server"), allow(dead_code, unused_imports))]

mod client_auth;
mod client_cert;

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::sign::{CertifiedKey, SingleCertAndKey};

use crate::limits::HttpVersions;

pub use client_auth::ClientAuth;
pub use client_cert::ClientCert;
pub(crate) use client_cert::peer_identity;

/// Why TLS material could not be used: which file, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsError(String);

impl std::fmt::Display for TlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TlsError {}

/// How often the files are looked at for changes, by default.
const DEFAULT_RELOAD_EVERY: Duration = Duration::from_secs(5);

/// A certificate chain and key from PEM files, and optionally the CA bundle client
/// certificates are checked against; reloadable: see the [module](self).
#[derive(Clone)]
pub struct Tls {
    cert: PathBuf,
    key: PathBuf,
    client_auth: Option<ClientAuth>,
    /// What new handshakes use: a whole new config on each reload. Its resumption store goes
    /// with it, so a session from before a reload (from a client the new CA bundle or CRL
    /// refuses, say) cannot be resumed after it.
    current: Arc<RwLock<Arc<ServerConfig>>>,
    reload_every: Duration,
    /// The HTTP versions ALPN offers, shared by the clones ([`Tls::speak`]).
    versions: Arc<RwLock<HttpVersions>>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("cert", &self.cert)
            .field("key", &self.key)
            .field("client_auth", &self.client_auth)
            .field("reload_every", &self.reload_every)
            .finish_non_exhaustive()
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Reads the chain and key, and checks that they belong together.
fn load(cert: &Path, key: &Path) -> Result<CertifiedKey, TlsError> {
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TlsError(format!("certificate {}: {e}", cert.display())))?;
    if certs.is_empty() {
        return Err(TlsError(format!(
            "certificate {}: no certificate in the file",
            cert.display()
        )));
    }
    let key_der = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| TlsError(format!("key {}: {e}", key.display())))?;
    let signing = provider()
        .key_provider
        .load_private_key(key_der)
        .map_err(|e| TlsError(format!("key {}: {e}", key.display())))?;
    let certified = CertifiedKey::new(certs, signing);
    certified.keys_match().map_err(|e| {
        TlsError(format!(
            "key {} does not belong to certificate {}: {e}",
            key.display(),
            cert.display()
        ))
    })?;
    Ok(certified)
}

/// Reads every file and builds the server's TLS settings from them.
fn configure(
    cert: &Path,
    key: &Path,
    client_auth: Option<&ClientAuth>,
    versions: HttpVersions,
) -> Result<ServerConfig, TlsError> {
    let certified = load(cert, key)?;
    let verifier = match client_auth {
        Some(client_auth) => client_auth.verifier()?,
        None => WebPkiClientVerifier::no_client_auth(),
    };
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError(format!("TLS settings: {e}")))?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(Arc::new(SingleCertAndKey::from(certified)));
    config.alpn_protocols = match versions {
        HttpVersions::Http1Only => vec![b"http/1.1".to_vec()],
        HttpVersions::Http2Only => vec![b"h2".to_vec()],
        _ => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
    };
    Ok(config)
}

/// What identifies a version of the files: their sizes and modification times.
fn stamp<'a>(files: impl Iterator<Item = &'a Path>) -> Option<Vec<(u64, SystemTime)>> {
    files
        .map(|path| {
            let meta = std::fs::metadata(path).ok()?;
            Some((meta.len(), meta.modified().ok()?))
        })
        .collect()
}

impl Tls {
    /// The certificate chain (leaf first) and private key (PKCS#8, PKCS#1 or SEC1) in these
    /// PEM files, checked to belong together. No client certificates are asked for.
    pub fn from_pem_files(cert: impl AsRef<Path>, key: impl AsRef<Path>) -> Result<Self, TlsError> {
        let (cert, key) = (cert.as_ref().to_owned(), key.as_ref().to_owned());
        let config = configure(&cert, &key, None, HttpVersions::Both)?;
        Ok(Self {
            cert,
            key,
            client_auth: None,
            current: Arc::new(RwLock::new(Arc::new(config))),
            reload_every: DEFAULT_RELOAD_EVERY,
            versions: Arc::new(RwLock::new(HttpVersions::Both)),
        })
    }

    /// Asks clients for a certificate and checks it as `client_auth` says (see
    /// [`ClientAuth`]). Its files are read now: one that does not load is an error naming it.
    /// From then on they are reloaded with the certificate.
    pub fn client_auth(mut self, client_auth: ClientAuth) -> Result<Self, TlsError> {
        let config = configure(&self.cert, &self.key, Some(&client_auth), self.versions())?;
        self.client_auth = Some(client_auth);
        // A new lock: a clone of this `Tls` made before keeps its own settings.
        self.current = Arc::new(RwLock::new(Arc::new(config)));
        Ok(self)
    }

    /// How often the files are looked at for a change (default 5 s).
    #[must_use]
    pub fn reload_every(mut self, every: Duration) -> Self {
        self.reload_every = every.max(Duration::from_millis(10));
        self
    }

    /// Reads the files again (the certificate, the key and, with
    /// [`client_auth`](Self::client_auth), the CA bundle and CRL): new handshakes use what
    /// they hold now. On an error everything stays as it was.
    pub fn reload(&self) -> Result<(), TlsError> {
        let config = configure(
            &self.cert,
            &self.key,
            self.client_auth.as_ref(),
            self.versions(),
        )?;
        *self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(config);
        Ok(())
    }

    fn versions(&self) -> HttpVersions {
        *self
            .versions
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Makes ALPN offer `versions` (the server's [`ServerLimits::http_versions`](crate::ServerLimits::http_versions)), from the
    /// next handshake on, for this `Tls` and its clones.
    pub(crate) fn speak(&self, versions: HttpVersions) -> Result<(), TlsError> {
        if self.versions() == versions {
            return Ok(());
        }
        *self
            .versions
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = versions;
        self.reload()
    }

    /// Every file the settings are read from.
    fn files(&self) -> impl Iterator<Item = &Path> {
        [self.cert.as_path(), self.key.as_path()]
            .into_iter()
            .chain(self.client_auth.iter().flat_map(ClientAuth::files))
    }

    /// Whether the server asks clients for certificates.
    pub(crate) fn asks_for_client_certs(&self) -> bool {
        self.client_auth.is_some()
    }

    /// The acceptor of a new connection, with the settings of the last reload.
    pub(crate) fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        // Held for a clone of an `Arc`; a poisoned lock still holds a whole config.
        let current = self
            .current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        tokio_rustls::TlsAcceptor::from(Arc::clone(&current))
    }

    /// Reloads on `SIGHUP` and when the files change, until the guard is dropped (when the
    /// server stops). The `SIGHUP` handler is in place when this returns, before the server
    /// accepts its first connection: a signal sent once the server answers cannot find the
    /// process without one (its default action would end the process).
    pub(crate) fn watch(&self) -> WatchGuard {
        let tls = self.clone();
        #[cfg(unix)]
        let mut hangup =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
        WatchGuard(tokio::spawn(async move {
            let mut seen = stamp(tls.files());
            let mut tick = tokio::time::interval(tls.reload_every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                #[cfg(unix)]
                let signalled = async {
                    match hangup.as_mut() {
                        Some(hangup) => hangup.recv().await,
                        None => std::future::pending().await,
                    }
                };
                #[cfg(not(unix))]
                let signalled = std::future::pending::<Option<()>>();
                let why = tokio::select! {
                    _ = signalled => "SIGHUP",
                    _ = tick.tick() => {
                        let now = stamp(tls.files());
                        if now.is_none() || now == seen {
                            continue;
                        }
                        seen = now;
                        "the files changed"
                    }
                };
                match tls.reload() {
                    Ok(()) => {
                        tracing::info!(why, cert = %tls.cert.display(), "TLS certificate reloaded");
                    }
                    Err(err) => {
                        tracing::error!(
                            why,
                            %err,
                            "TLS certificate not reloaded; the current one stays"
                        );
                    }
                }
            }
        }))
    }
}

/// Stops the reload watch when dropped.
pub(crate) struct WatchGuard(tokio::task::JoinHandle<()>);

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}

//! Which client certificates the server asks for and accepts: a CA bundle, and optionally
//! revocation lists, both from PEM files.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, CertificateRevocationListDer};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;

use super::{TlsError, provider};

/// Client certificates (mutual TLS): the server asks every client for a certificate and
/// accepts one only if it chains to a CA of the bundle, is within its validity dates, is meant
/// for client authentication (when it says what it is meant for) and, with a
/// [`crl`](Self::crl) file, is not revoked. The checks are rustls' `WebPkiClientVerifier`;
/// the files are read again with the server certificate (see [`Tls`](super::Tls)).
///
/// - [`required`](Self::required): a client without a good certificate fails the handshake
///   (no HTTP request is read), as nginx's `ssl_verify_client on`.
/// - [`optional`](Self::optional): a client may show no certificate and is served with no
///   identity ([`ConnectionInfo::client_cert`](crate::connection::ConnectionInfo::client_cert) is `None`); one that
///   shows a bad certificate (another CA, expired, revoked) still fails the handshake, as with
///   salvo's and poem's `TlsClientAuth::Optional`. A handler decides what an anonymous client
///   may do.
///
/// ```no_run
/// # fn demo() -> Result<(), framework::tls::TlsError> {
/// use framework::tls::{ClientAuth, Tls};
///
/// let tls = Tls::from_pem_files("cert.pem", "key.pem")?
///     .client_auth(ClientAuth::required("clients-ca.pem").crl("clients-crl.pem"))?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientAuth {
    ca: PathBuf,
    crl: Option<PathBuf>,
    required: bool,
    /// A CRL past its `nextUpdate` still counts (see [`ClientAuth::allow_expired_crl`]).
    expired_crl: bool,
}

impl ClientAuth {
    /// Every client must show a certificate issued by a CA in `ca` (a PEM file of one or more
    /// CA certificates).
    pub fn required(ca: impl AsRef<Path>) -> Self {
        Self {
            ca: ca.as_ref().to_owned(),
            crl: None,
            required: true,
            expired_crl: false,
        }
    }

    /// A client may show no certificate; one it shows must be issued by a CA in `ca`.
    pub fn optional(ca: impl AsRef<Path>) -> Self {
        Self {
            required: false,
            ..Self::required(ca)
        }
    }

    /// Certificate revocation lists (a PEM file of one or more `X509 CRL`s): a certificate
    /// they list is refused. Every certificate of a client's chain below the trust anchor must
    /// be covered by a CRL of its issuer in the file; one that is not is refused (as by
    /// OpenSSL's CRL check; rustls sends the `unknown_ca` alert), so the file holds a CRL of
    /// each CA that issues client certificates. A CRL past its `nextUpdate` no longer
    /// covers anything, so every certificate it would cover is refused (as OpenSSL's CRL
    /// check refuses it), until a current one is written; [`allow_expired_crl`] keeps using
    /// it. Revoke a certificate by writing a new file: it is read again with the certificate,
    /// and connections opened from then on are checked against it.
    ///
    /// [`allow_expired_crl`]: Self::allow_expired_crl
    #[must_use]
    pub fn crl(mut self, crl: impl AsRef<Path>) -> Self {
        self.crl = Some(crl.as_ref().to_owned());
        self
    }

    /// Keeps using a CRL past its `nextUpdate` (the behaviour before issue 66): a CA that
    /// stopped publishing leaves its last list in force instead of refusing every client. An
    /// explicit choice, since an attacker who can hold back a new CRL keeps a revoked
    /// certificate usable.
    #[must_use]
    pub fn allow_expired_crl(mut self) -> Self {
        self.expired_crl = true;
        self
    }

    /// Whether a client must show a certificate.
    pub fn is_required(&self) -> bool {
        self.required
    }

    /// The files this reads, for the reload watch.
    pub(super) fn files(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.ca.as_path()).chain(self.crl.as_deref())
    }

    /// Reads the files and builds the verifier of client certificates.
    pub(super) fn verifier(&self) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
        let ca = &self.ca;
        let certs = CertificateDer::pem_file_iter(ca)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| TlsError(format!("client CA bundle {}: {e}", ca.display())))?;
        if certs.is_empty() {
            return Err(TlsError(format!(
                "client CA bundle {}: no certificate in the file",
                ca.display()
            )));
        }
        let mut roots = RootCertStore::empty();
        for cert in certs {
            roots
                .add(cert)
                .map_err(|e| TlsError(format!("client CA bundle {}: {e}", ca.display())))?;
        }
        let mut builder = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider());
        if let Some(crl) = &self.crl {
            let crls = CertificateRevocationListDer::pem_file_iter(crl)
                .and_then(|crls| crls.collect::<Result<Vec<_>, _>>())
                .map_err(|e| TlsError(format!("client CRL {}: {e}", crl.display())))?;
            if crls.is_empty() {
                return Err(TlsError(format!(
                    "client CRL {}: no CRL in the file",
                    crl.display()
                )));
            }
            builder = builder.with_crls(crls);
            if !self.expired_crl {
                builder = builder.enforce_revocation_expiration();
            }
        }
        if !self.required {
            builder = builder.allow_unauthenticated();
        }
        builder.build().map_err(|e| {
            let file = match (&e, &self.crl) {
                (rustls::server::VerifierBuilderError::InvalidCrl(_), Some(crl)) => crl,
                _ => ca,
            };
            TlsError(format!("client verification {}: {e}", file.display()))
        })
    }
}

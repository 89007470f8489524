//! The verified client certificate of a connection: who the client is, read once per
//! connection.

use std::net::IpAddr;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use x509_cert::Certificate;
use x509_cert::der::asn1::{Ia5StringRef, PrintableStringRef, TeletexStringRef, Utf8StringRef};
use x509_cert::der::{Any, Decode, Tag, Tagged};
use x509_cert::ext::pkix::SubjectAltName;
use x509_cert::ext::pkix::name::GeneralName;

use super::TlsError;

/// The certificate a client showed in its TLS handshake, after rustls verified it against the
/// CA bundle of [`ClientAuth`](super::ClientAuth): its subject, its subject alternative names,
/// its SHA-256 fingerprint and its DER bytes.
///
/// Read once per connection, when the handshake completes, and shared by the connection's
/// requests: [`ConnectionInfo::client_cert`](crate::connection::ConnectionInfo::client_cert) hands out the same `Arc`.
/// Only the leaf certificate is kept (the chain's intermediates, if the client sent any, are
/// not). What it holds (the DER and the text read from it) is bounded by rustls' limit on a
/// handshake message, 64 KiB, and only a certificate rustls verified is read.
///
/// ```
/// # fn demo(ctx: &framework::Context) {
/// if let Some(cert) = ctx.connection().client_cert() {
///     let who = cert.common_name().unwrap_or(cert.subject());
///     tracing::info!(who, fingerprint = cert.fingerprint_sha256(), "client certificate");
/// }
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCert {
    subject: String,
    common_name: Option<String>,
    dns_names: Vec<String>,
    emails: Vec<String>,
    ips: Vec<IpAddr>,
    uris: Vec<String>,
    fingerprint: String,
    der: Vec<u8>,
}

impl ClientCert {
    /// Reads a DER-encoded X.509 certificate. This only parses: it checks no signature, date or
    /// issuer (the server's handshake did that for the certificates it hands out).
    pub fn from_der(der: &[u8]) -> Result<Self, TlsError> {
        let cert =
            Certificate::from_der(der).map_err(|e| TlsError(format!("client certificate: {e}")))?;
        let tbs = &cert.tbs_certificate;
        let common_name = tbs
            .subject
            .0
            .iter()
            .flat_map(|rdn| rdn.0.iter())
            .find(|atv| atv.oid == x509_cert::der::oid::db::rfc4519::CN)
            .and_then(|atv| directory_string(&atv.value));
        let mut identity = Self {
            subject: tbs.subject.to_string(),
            common_name,
            dns_names: Vec::new(),
            emails: Vec::new(),
            ips: Vec::new(),
            uris: Vec::new(),
            fingerprint: hex::encode(Sha256::digest(der)),
            der: der.to_vec(),
        };
        let names = tbs
            .get::<SubjectAltName>()
            .map_err(|e| TlsError(format!("client certificate's alternative names: {e}")))?;
        for name in names.map(|(_critical, names)| names.0).unwrap_or_default() {
            match name {
                GeneralName::DnsName(dns) => identity.dns_names.push(dns.to_string()),
                GeneralName::Rfc822Name(email) => identity.emails.push(email.to_string()),
                GeneralName::UniformResourceIdentifier(uri) => identity.uris.push(uri.to_string()),
                GeneralName::IpAddress(ip) => match *ip.as_bytes() {
                    [a, b, c, d] => identity.ips.push(IpAddr::from([a, b, c, d])),
                    ref bytes => {
                        if let Ok(v6) = <[u8; 16]>::try_from(bytes) {
                            identity.ips.push(IpAddr::from(v6));
                        }
                    }
                },
                // Other names, directory names, EDI parties and registered ids are rare in
                // client certificates; they stay in the DER bytes.
                _ => {}
            }
        }
        Ok(identity)
    }

    /// The subject's distinguished name as RFC 4514 writes it: the certificate's last
    /// attribute first, so `CN=alice,O=Example,C=NL` for the usual order (country first).
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The subject's common name (`CN`), the first if there are several; `None` without one,
    /// or when it is in an encoding other than UTF-8, printable, IA5 or teletex text.
    pub fn common_name(&self) -> Option<&str> {
        self.common_name.as_deref()
    }

    /// The DNS names among the subject alternative names, in the certificate's order.
    pub fn dns_names(&self) -> &[String] {
        &self.dns_names
    }

    /// The e-mail addresses (`rfc822Name`) among the subject alternative names.
    pub fn emails(&self) -> &[String] {
        &self.emails
    }

    /// The IP addresses among the subject alternative names.
    pub fn ips(&self) -> &[IpAddr] {
        &self.ips
    }

    /// The URIs among the subject alternative names (a SPIFFE id, for one).
    pub fn uris(&self) -> &[String] {
        &self.uris
    }

    /// The SHA-256 digest of the certificate's DER bytes, in 64 lowercase hex digits, as
    /// `openssl x509 -fingerprint -sha256` prints it without the colons.
    pub fn fingerprint_sha256(&self) -> &str {
        &self.fingerprint
    }

    /// The certificate's DER bytes, for what the accessors above do not cover.
    pub fn der(&self) -> &[u8] {
        &self.der
    }
}

/// A controller method may take `cert: Arc<ClientCert>` (see [`crate::extract`]): the
/// connection's verified client certificate. Without one (plain HTTP, no client
/// authentication, or an optional certificate not shown) the answer is a **401**, category
/// `framework-tls`; take `Option<Arc<ClientCert>>` where the certificate is optional.
impl crate::extract::FromRequest for Arc<ClientCert> {
    type Rejection = crate::HttpError;

    fn from_request(ctx: &mut crate::Context) -> Result<Self, crate::HttpError> {
        ctx.connection().client_cert().cloned().ok_or_else(|| {
            crate::HttpError::with(
                http::StatusCode::UNAUTHORIZED,
                "framework-tls",
                "a client certificate is required",
            )
        })
    }
}

impl crate::extract::FromRequest for Option<Arc<ClientCert>> {
    type Rejection = std::convert::Infallible;

    fn from_request(ctx: &mut crate::Context) -> Result<Self, std::convert::Infallible> {
        Ok(ctx.connection().client_cert().cloned())
    }
}

/// A `DirectoryString` (RFC 5280 section 4.1.2.4) as text.
fn directory_string(value: &Any) -> Option<String> {
    let text = match value.tag() {
        Tag::Utf8String => value.decode_as::<Utf8StringRef<'_>>().ok()?.to_string(),
        Tag::PrintableString => value
            .decode_as::<PrintableStringRef<'_>>()
            .ok()?
            .to_string(),
        Tag::Ia5String => value.decode_as::<Ia5StringRef<'_>>().ok()?.to_string(),
        Tag::TeletexString => value.decode_as::<TeletexStringRef<'_>>().ok()?.to_string(),
        _ => return None,
    };
    Some(text)
}

/// The identity of a connection's verified client, when it showed a certificate.
pub(crate) fn peer_identity(
    conn: &rustls::ServerConnection,
) -> Result<Option<Arc<ClientCert>>, TlsError> {
    match conn.peer_certificates().and_then(<[_]>::first) {
        Some(leaf) => ClientCert::from_der(leaf).map(|cert| Some(Arc::new(cert))),
        None => Ok(None),
    }
}

//! Certificates made in the test (`rcgen`): a CA, the server certificate it signs, client
//! certificates and revocation lists, as PEM files in a temporary directory, and TLS clients
//! that trust the CA.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A certificate authority and a server certificate it signed, for `localhost` and
/// 127.0.0.1, as PEM files in `dir`.
pub struct Pki {
    pub dir: PathBuf,
    pub ca_pem: String,
    pub ca: rcgen::Certificate,
    pub ca_key: rcgen::KeyPair,
}

/// A day: (year, month, day).
pub type Ymd = (i32, u8, u8);

/// Valid from 2020 to 2100.
pub const VALID: (Ymd, Ymd) = ((2020, 1, 1), (2100, 1, 1));

/// A client certificate and its key.
pub struct ClientId {
    /// The certificate then the key, as reqwest's `Identity::from_pem` takes them.
    pub pem: String,
    pub der: Vec<u8>,
    pub key_der: Vec<u8>,
}

impl ClientId {
    /// A reqwest client (rustls) that shows this certificate and trusts `pki`'s CA.
    pub fn reqwest(&self, pki: &Pki, http1_only: bool) -> reqwest::Client {
        let builder = pki
            .client_builder()
            .identity(reqwest::Identity::from_pem(self.pem.as_bytes()).unwrap());
        let builder = if http1_only {
            builder.http1_only()
        } else {
            builder
        };
        builder.build().unwrap()
    }
}

impl Pki {
    pub fn new(name: &str) -> Self {
        let dir = super::temp_dir(name);
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, format!("test CA {name}"));
        let ca = params.self_signed(&ca_key).unwrap();
        Self {
            dir,
            ca_pem: ca.pem(),
            ca,
            ca_key,
        }
    }

    /// Writes `text` to `name` in the directory, beside then renamed: a reload never reads
    /// half a file.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.join(name);
        let temporary = self.dir.join(format!("{name}.new"));
        std::fs::write(&temporary, text).unwrap();
        std::fs::rename(&temporary, &path).unwrap();
        path
    }

    /// A server certificate named `serial` (its common name), written to cert.pem / key.pem;
    /// returns its DER, to recognise it in a handshake.
    pub fn issue(&self, serial: &str) -> Vec<u8> {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params =
            rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
                .unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, serial);
        let cert = params.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        self.write("cert.pem", &cert.pem());
        self.write("key.pem", &key.serialize_pem());
        cert.der().to_vec()
    }

    /// A client certificate for `name` (its common name, and `<name>@example.test` as e-mail),
    /// with this serial number, valid in `[not_before, not_after]`, meant for client
    /// authentication, with `<name>.clients.test`, 10.0.0.7 and a SPIFFE URI as other names.
    pub fn client_cert(&self, name: &str, serial: u64, valid: (Ymd, Ymd)) -> ClientId {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::default();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "Example Clients");
        params.subject_alt_names = vec![
            rcgen::SanType::DnsName(format!("{name}.clients.test").try_into().unwrap()),
            rcgen::SanType::Rfc822Name(format!("{name}@example.test").try_into().unwrap()),
            rcgen::SanType::IpAddress([10, 0, 0, 7].into()),
            rcgen::SanType::URI(format!("spiffe://example.test/{name}").try_into().unwrap()),
        ];
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        params.serial_number = Some(rcgen::SerialNumber::from(serial));
        params.not_before = rcgen::date_time_ymd(valid.0.0, valid.0.1, valid.0.2);
        params.not_after = rcgen::date_time_ymd(valid.1.0, valid.1.1, valid.1.2);
        let cert = params.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        ClientId {
            pem: format!("{}{}", cert.pem(), key.serialize_pem()),
            der: cert.der().to_vec(),
            key_der: key.serialize_der(),
        }
    }

    /// A revocation list of this CA listing these serial numbers, as PEM.
    pub fn crl(&self, number: u64, revoked: &[u64]) -> String {
        self.crl_until(number, revoked, 2100)
    }

    /// A CRL as [`Pki::crl`], whose `nextUpdate` is January 1st of `year`.
    pub fn crl_until(&self, number: u64, revoked: &[u64], year: i32) -> String {
        let params = rcgen::CertificateRevocationListParams {
            this_update: rcgen::date_time_ymd(2020, 1, 1),
            next_update: rcgen::date_time_ymd(year, 1, 1),
            crl_number: rcgen::SerialNumber::from(number),
            issuing_distribution_point: None,
            revoked_certs: revoked
                .iter()
                .map(|&serial| rcgen::RevokedCertParams {
                    serial_number: rcgen::SerialNumber::from(serial),
                    revocation_time: rcgen::date_time_ymd(2021, 1, 1),
                    reason_code: Some(rcgen::RevocationReason::KeyCompromise),
                    invalidity_date: None,
                })
                .collect(),
            key_identifier_method: rcgen::KeyIdMethod::Sha256,
        };
        params
            .signed_by(&self.ca, &self.ca_key)
            .unwrap()
            .pem()
            .unwrap()
    }

    pub fn cert(&self) -> PathBuf {
        self.dir.join("cert.pem")
    }

    pub fn key(&self) -> PathBuf {
        self.dir.join("key.pem")
    }

    /// A reqwest client builder (rustls) that trusts this CA only.
    pub fn client_builder(&self) -> reqwest::ClientBuilder {
        reqwest::Client::builder()
            .use_rustls_tls()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(self.ca_pem.as_bytes()).unwrap())
    }

    pub fn client(&self, http1_only: bool) -> reqwest::Client {
        let builder = self.client_builder();
        let builder = if http1_only {
            builder.http1_only()
        } else {
            builder
        };
        builder.build().unwrap()
    }

    /// The certificate the server shows a new handshake.
    pub async fn presented(&self, addr: std::net::SocketAddr) -> Vec<u8> {
        let tls = self.connect(addr).await;
        tls.get_ref().1.peer_certificates().unwrap()[0].to_vec()
    }

    /// A TLS connection to the server (no ALPN: HTTP/1.1).
    pub async fn connect(
        &self,
        addr: std::net::SocketAddr,
    ) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
        self.connect_as(addr, None).await.unwrap()
    }

    /// TLS (no ALPN: HTTP/1.1) over a connected `stream` of any kind (a Unix socket's).
    pub async fn connect_over<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
        &self,
        stream: S,
    ) -> tokio_rustls::client::TlsStream<S> {
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        self.connector(None).connect(name, stream).await.unwrap()
    }

    /// A TLS connection to the server (no ALPN: HTTP/1.1), showing `id` if given. Under TLS
    /// 1.3 the client's side of the handshake completes before the server has looked at its
    /// certificate: a refusal shows at the first read.
    pub async fn connect_as(
        &self,
        addr: std::net::SocketAddr,
        id: Option<&ClientId>,
    ) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
        connect_with(&self.connector(id), addr).await
    }

    /// A TLS client showing `id` if given; its connections share one session cache, so the
    /// second resumes the first's session when the server lets it.
    pub fn connector(&self, id: Option<&ClientId>) -> tokio_rustls::TlsConnector {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca.der().clone()).unwrap();
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
        let config = match id {
            Some(id) => builder
                .with_client_auth_cert(
                    vec![id.der.clone().into()],
                    rustls::pki_types::PrivatePkcs8KeyDer::from(id.key_der.clone()).into(),
                )
                .unwrap(),
            None => builder.with_no_client_auth(),
        };
        tokio_rustls::TlsConnector::from(Arc::new(config))
    }

    /// `GET path` on a new connection showing `id`: the answer's body for a 200, else the
    /// error that ended the connection (a TLS alert from the server names why).
    pub async fn get_as(
        &self,
        addr: std::net::SocketAddr,
        id: Option<&ClientId>,
        path: &str,
    ) -> Result<String, String> {
        let mut tls = self.connect_as(addr, id).await.map_err(|e| e.to_string())?;
        get_on(&mut tls, path).await
    }
}

/// A new TLS connection to `addr` (no ALPN: HTTP/1.1) made by `connector`.
pub async fn connect_with(
    connector: &tokio_rustls::TlsConnector,
    addr: std::net::SocketAddr,
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    connector.connect(name, tcp).await
}

/// `GET path` on an open HTTP/1.1 connection (kept alive): the answer's body for a 200, else
/// what ended it.
pub async fn get_on(
    tls: &mut tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
    path: &str,
) -> Result<String, String> {
    tls.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&seen);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if body.len() >= length {
                return if head.starts_with("HTTP/1.1 200") {
                    Ok(body.to_owned())
                } else {
                    Err(head.lines().next().unwrap_or("").to_owned())
                };
            }
        }
        match tokio::time::timeout(Duration::from_secs(5), tls.read(&mut chunk)).await {
            Ok(Ok(0)) => return Err(format!("closed after {text:?}")),
            Ok(Ok(n)) => seen.extend_from_slice(&chunk[..n]),
            Ok(Err(err)) => return Err(err.to_string()),
            Err(_) => return Err("no answer in 5 s".to_owned()),
        }
    }
}

//! `arena`: the framework's HttpArena entry on ports 8080, 8081, 8082 and 8443 (see the
//! library's documentation); the TLS ports only when the certificate is mounted.

use arena::{PORTS, Settings, has_certificate, service};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let settings = Settings::from_env();
    let tls = has_certificate(&settings);
    let mut servers = tokio::task::JoinSet::new();
    for (port, versions, over_tls) in PORTS {
        if over_tls && !tls {
            continue;
        }
        let service = service(&settings, versions, over_tls)?;
        servers.spawn(async move { service.listen(&format!("0.0.0.0:{port}")).await });
    }
    // The first server to stop (a signal stops them all) ends the entry.
    match servers.join_next().await {
        Some(Ok(result)) => result,
        Some(Err(err)) => Err(std::io::Error::other(err)),
        None => Ok(()),
    }
}

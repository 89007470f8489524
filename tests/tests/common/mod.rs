//! Starting servers on real sockets for the end-to-end tests.

#![allow(dead_code, unreachable_pub)]

pub mod proxy;

use std::net::SocketAddr;

use framework::Service;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A server running on an ephemeral loopback port.
pub struct Running {
    pub addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl Running {
    /// `http://127.0.0.1:<port>` plus `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Signals graceful shutdown and waits for the server to return.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.expect("server task").expect("server result");
        }
    }

    /// Signals shutdown without waiting.
    pub fn signal_shutdown(&mut self) -> JoinHandle<std::io::Result<()>> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.task.take().expect("running")
    }
}

/// Serves `service` on 127.0.0.1 with an OS-chosen port.
pub async fn start(service: Service) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local addr");
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(service.serve_with_shutdown(listener, async {
        let _ = rx.await;
    }));
    Running {
        addr,
        shutdown: Some(tx),
        task: Some(task),
    }
}

/// A client like a browser: keeps cookies, asks for JSON errors.
pub fn browser() -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::ACCEPT,
        reqwest::header::HeaderValue::from_static("application/json"),
    );
    reqwest::Client::builder()
        .cookie_store(true)
        .default_headers(headers)
        .build()
        .expect("client")
}

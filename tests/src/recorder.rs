//! An HTTP proxy that records every request passing through it (method,
//! path and query, user agent), for tests that check what a client asked an
//! API server for — the plugin RBAC test runs one host per plugin, each
//! behind its own recorder, so every request is attributed to its plugin
//! without the server or the host knowing about it.
//!
//! Plain HTTP only (the embedded API server on loopback); responses are
//! streamed through untouched, so watches work.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use http::Request;
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

/// One recorded request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub method: String,
    /// Path and query, as sent.
    pub path: String,
    pub user_agent: String,
}

/// A running recorder; stops accepting when dropped.
pub struct Recorder {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Recorded>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Recorder {
    /// Listens on a free loopback port and forwards to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the recorder");
        let addr = listener.local_addr().expect("recorder address");
        let seen: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let client: Client<HttpConnector, Incoming> =
            Client::builder(TokioExecutor::new()).build_http();
        let log = seen.clone();
        let accept = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (client, log) = (client.clone(), log.clone());
                let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
                    let (client, log) = (client.clone(), log.clone());
                    async move {
                        let path = req
                            .uri()
                            .path_and_query()
                            .map(|p| p.as_str().to_owned())
                            .unwrap_or_default();
                        log.lock().unwrap().push(Recorded {
                            method: req.method().to_string(),
                            path: path.clone(),
                            user_agent: req
                                .headers()
                                .get(http::header::USER_AGENT)
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or_default()
                                .to_owned(),
                        });
                        *req.uri_mut() = format!("http://{upstream}{path}")
                            .parse()
                            .expect("a proxied URI");
                        client.request(req).await
                    }
                });
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self { addr, seen, accept }
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Rewrites a kubeconfig for `upstream` so that it goes through here.
    pub fn kubeconfig(&self, kubeconfig: &str, upstream: SocketAddr) -> String {
        kubeconfig.replace(&upstream.to_string(), &self.addr.to_string())
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

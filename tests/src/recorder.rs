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

use crate::forward::Forward;

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
    forward: Forward,
    seen: Arc<Mutex<Vec<Recorded>>>,
}

impl Recorder {
    /// Listens on a free loopback port and forwards to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Self {
        let seen: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let log = seen.clone();
        let forward = Forward::start(upstream, move |req, path| {
            log.lock().unwrap().push(Recorded {
                method: req.method().to_string(),
                path: path.to_owned(),
                user_agent: req
                    .headers()
                    .get(http::header::USER_AGENT)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned(),
            });
        })
        .await;
        Self { forward, seen }
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.forward.addr()
    }

    /// Rewrites a kubeconfig for `upstream` so that it goes through here.
    pub fn kubeconfig(&self, kubeconfig: &str, upstream: SocketAddr) -> String {
        self.forward.kubeconfig(kubeconfig, upstream)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.seen.lock().unwrap().clone()
    }
}

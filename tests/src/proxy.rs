//! A TCP proxy for failure tests: it sits between a client and an API server
//! and can cut every open connection, refuse new ones for a while, or point
//! at a new upstream (a restarted server on another port).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// A running proxy. Dropping it stops accepting; open connections end when
/// they are next cut or closed by either side.
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: tokio::task::JoinHandle<()>,
}

struct Shared {
    upstream: Mutex<SocketAddr>,
    refuse: AtomicBool,
    cut: Mutex<CancellationToken>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let addr = listener.local_addr().expect("proxy address");
        let shared = Arc::new(Shared {
            upstream: Mutex::new(upstream),
            refuse: AtomicBool::new(false),
            cut: Mutex::new(CancellationToken::new()),
        });
        let s = shared.clone();
        let accept = tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    continue;
                };
                if s.refuse.load(Ordering::SeqCst) {
                    continue; // dropped at once: the client sees a reset
                }
                let token = s.cut.lock().unwrap().clone();
                let upstream = *s.upstream.lock().unwrap();
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = token.cancelled() => {}
                    }
                });
            }
        });
        Self {
            addr,
            shared,
            accept,
        }
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Rewrites a kubeconfig for `upstream` so that it goes through the proxy.
    pub fn kubeconfig(&self, kubeconfig: &str, upstream: SocketAddr) -> String {
        kubeconfig.replace(&upstream.to_string(), &self.addr.to_string())
    }

    /// Closes every connection open now.
    pub fn cut_all(&self) {
        let mut token = self.shared.cut.lock().unwrap();
        token.cancel();
        *token = CancellationToken::new();
    }

    /// While set, new connections are accepted and dropped at once.
    pub fn set_refusing(&self, refuse: bool) {
        self.shared.refuse.store(refuse, Ordering::SeqCst);
    }

    /// Sends new connections to another upstream (open ones are not moved).
    pub fn set_upstream(&self, upstream: SocketAddr) {
        *self.shared.upstream.lock().unwrap() = upstream;
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut_all();
    }
}

//! An HTTP proxy in front of an API server that shows every request to an
//! observer before forwarding it: what the observer returns is kept until
//! the response body is dropped (for a watch, as long as it is open).
//! [`crate::Recorder`] logs requests with it; the host bench's census
//! counts the watches open through it.
//!
//! Plain HTTP only (the embedded API server on loopback); responses are
//! streamed through untouched, so watches work.

use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::Request;
use hyper::body::{Body, Frame, Incoming};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

/// A running proxy; stops accepting when dropped.
pub struct Forward {
    addr: SocketAddr,
    accept: tokio::task::JoinHandle<()>,
}

impl Forward {
    /// Listens on a free loopback port and forwards to `upstream`, calling
    /// `observe` with each request and its path and query first.
    pub async fn start<K, F>(upstream: SocketAddr, observe: F) -> Self
    where
        F: Fn(&Request<Incoming>, &str) -> K + Clone + Send + Sync + 'static,
        K: Send + Unpin + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let addr = listener.local_addr().expect("proxy address");
        let client: Client<HttpConnector, Incoming> =
            Client::builder(TokioExecutor::new()).build_http();
        let accept = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (client, observe) = (client.clone(), observe.clone());
                let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
                    let (client, observe) = (client.clone(), observe.clone());
                    async move {
                        let path = req
                            .uri()
                            .path_and_query()
                            .map(|p| p.as_str().to_owned())
                            .unwrap_or_default();
                        let kept = observe(&req, &path);
                        *req.uri_mut() = format!("http://{upstream}{path}")
                            .parse()
                            .expect("a proxied URI");
                        let resp = client.request(req).await?;
                        Ok::<_, hyper_util::client::legacy::Error>(
                            resp.map(|inner| Kept { inner, _kept: kept }),
                        )
                    }
                });
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self { addr, accept }
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Rewrites a kubeconfig for `upstream` so that it goes through here.
    pub fn kubeconfig(&self, kubeconfig: &str, upstream: SocketAddr) -> String {
        kubeconfig.replace(&upstream.to_string(), &self.addr.to_string())
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// A response body, with what the observer returned kept alongside.
struct Kept<K> {
    inner: Incoming,
    _kept: K,
}

impl<K: Unpin> Body for Kept<K> {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

//! A counting HTTP proxy in front of the API server: it knows which watches
//! are open through it right now, by (resource path, label selector, field
//! selector), so the density part can say how many watches each side holds
//! on the server and whether any (kind, selector) is watched twice.
//!
//! It sits in the path only for the census, never while anything is timed:
//! forwarding every watch event again would cost the side with more
//! watches more.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::Request;
use hyper::body::{Body, Frame, Incoming};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

/// What one watch is of: the resource path and its selectors.
pub(crate) type WatchKey = String;

type Open = Arc<Mutex<BTreeMap<WatchKey, u64>>>;

/// The running proxy; stops accepting when dropped.
pub(crate) struct Census {
    addr: SocketAddr,
    open: Open,
    accept: tokio::task::JoinHandle<()>,
}

/// The watch a request opens, if it is one: its path with the selectors
/// it asks for (`None` for any other request).
pub(crate) fn watch_key(path_and_query: &str) -> Option<WatchKey> {
    let (path, query) = path_and_query.split_once('?')?;
    let mut watch = false;
    let (mut labels, mut fields) = (String::new(), String::new());
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "watch" => watch = v == "true" || v == "1",
            "labelSelector" => labels = decode(v),
            "fieldSelector" => fields = decode(v),
            _ => {}
        }
    }
    watch.then(|| format!("{path} labels={labels:?} fields={fields:?}"))
}

/// Percent-decoding of a query value (selectors are ASCII).
fn decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match u8::from_str_radix(&v[i + 1..i + 3], 16) {
                Ok(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                Err(_) => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A response body that counts its watch open until it is dropped.
struct Tracked {
    inner: Incoming,
    _open: Option<OpenWatch>,
}

struct OpenWatch {
    key: WatchKey,
    open: Open,
}

impl Drop for OpenWatch {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.key);
            }
        }
    }
}

impl Body for Tracked {
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

impl Census {
    /// Listens on a free loopback port and forwards to `upstream`.
    pub(crate) async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the census proxy");
        let addr = listener.local_addr().expect("proxy address");
        let open: Open = Arc::default();
        let client: Client<HttpConnector, Incoming> =
            Client::builder(TokioExecutor::new()).build_http();
        let counts = open.clone();
        let accept = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (client, counts) = (client.clone(), counts.clone());
                let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
                    let (client, counts) = (client.clone(), counts.clone());
                    async move {
                        let path = req
                            .uri()
                            .path_and_query()
                            .map(|p| p.as_str().to_owned())
                            .unwrap_or_default();
                        let watch = watch_key(&path).map(|key| {
                            *counts
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .entry(key.clone())
                                .or_default() += 1;
                            OpenWatch {
                                key,
                                open: counts.clone(),
                            }
                        });
                        *req.uri_mut() = format!("http://{upstream}{path}")
                            .parse()
                            .expect("a proxied URI");
                        let resp = client.request(req).await?;
                        Ok::<_, hyper_util::client::legacy::Error>(resp.map(|inner| Tracked {
                            inner,
                            _open: watch,
                        }))
                    }
                });
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self { addr, open, accept }
    }

    /// Rewrites a kubeconfig for `upstream` so that it goes through here.
    pub(crate) fn kubeconfig(&self, kubeconfig: &str, upstream: SocketAddr) -> String {
        kubeconfig.replace(&upstream.to_string(), &self.addr.to_string())
    }

    /// The watches open now, by what they watch.
    pub(crate) fn open(&self) -> BTreeMap<WatchKey, u64> {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for Census {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

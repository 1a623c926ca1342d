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
use std::sync::{Arc, Mutex};

use windlass_tests::forward::Forward;

/// What one watch is of: the resource path and its selectors.
pub(crate) type WatchKey = String;

type Open = Arc<Mutex<BTreeMap<WatchKey, u64>>>;

/// The running proxy; stops accepting when dropped.
pub(crate) struct Census {
    forward: Forward,
    open: Open,
}

/// The watch a request opens, if it is one: its path with the selectors
/// it asks for (`None` for any other request).
pub(crate) fn watch_key(path_and_query: &str) -> Option<WatchKey> {
    let (path, query) = path_and_query.split_once('?')?;
    let mut watch = false;
    let (mut labels, mut fields) = (String::new(), String::new());
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        match &*k {
            "watch" => watch = v == "true" || v == "1",
            "labelSelector" => labels = v.into_owned(),
            "fieldSelector" => fields = v.into_owned(),
            _ => {}
        }
    }
    watch.then(|| format!("{path} labels={labels:?} fields={fields:?}"))
}

/// A watch counted open until the response body holding it is dropped.
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

impl Census {
    /// Listens on a free loopback port and forwards to `upstream`.
    pub(crate) async fn start(upstream: SocketAddr) -> Self {
        let open: Open = Arc::default();
        let counts = open.clone();
        let forward = Forward::start(upstream, move |_, path| {
            watch_key(path).map(|key| {
                *counts
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entry(key.clone())
                    .or_default() += 1;
                OpenWatch {
                    key,
                    open: counts.clone(),
                }
            })
        })
        .await;
        Self { forward, open }
    }

    /// Rewrites a kubeconfig for `upstream` so that it goes through here.
    pub(crate) fn kubeconfig(&self, kubeconfig: &str, upstream: SocketAddr) -> String {
        self.forward.kubeconfig(kubeconfig, upstream)
    }

    /// The watches open now, by what they watch.
    pub(crate) fn open(&self) -> BTreeMap<WatchKey, u64> {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

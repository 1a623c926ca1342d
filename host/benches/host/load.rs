//! Load over plain HTTP: the bench's own client, creates at a steady rate
//! from many writers, and the objects it creates.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::json;

use super::table::thousands;
use super::{HttpClient, REPLICAS, WRITERS};

pub(crate) fn http() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// The longest any one request may take before the benchmark gives up.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

pub(crate) async fn send(
    c: &HttpClient,
    req: hyper::Request<Full<Bytes>>,
) -> (http::StatusCode, Bytes) {
    let what = format!("{} {}", req.method(), req.uri());
    let exchange = async {
        let resp = c.request(req).await.expect("API server answers");
        let status = resp.status();
        let body = resp.into_body().collect().await.expect("body").to_bytes();
        (status, body)
    };
    tokio::time::timeout(REQUEST_TIMEOUT, exchange)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {REQUEST_TIMEOUT:?}"))
}

pub(crate) async fn post(c: &HttpClient, addr: SocketAddr, path: &str, body: String) {
    let req = hyper::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("valid request");
    let (status, body) = send(c, req).await;
    assert!(
        status.is_success(),
        "POST {path}: {status} {}",
        String::from_utf8_lossy(&body)
    );
}

pub(crate) async fn get(c: &HttpClient, addr: SocketAddr, path: &str) -> Bytes {
    let req = hyper::Request::get(format!("http://{addr}{path}"))
        .body(Full::new(Bytes::new()))
        .expect("valid request");
    let (status, body) = send(c, req).await;
    assert!(status.is_success(), "GET {path}: {status}");
    body
}

/// Creates `n` objects, `body(i)` for `i` from `first`, with [`WRITERS`]
/// clients; at most `rate` per second when given. Returns the seconds taken.
pub(crate) async fn create_many(
    addr: SocketAddr,
    path: &'static str,
    first: u64,
    n: u64,
    rate: Option<u64>,
    what: &'static str,
    body: impl Fn(u64) -> String + Send + Sync + 'static,
) -> f64 {
    let body = Arc::new(body);
    let next = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let progress = tokio::spawn({
        let done = done.clone();
        async move {
            loop {
                tokio::time::sleep(Duration::from_secs(3)).await;
                eprintln!(
                    "  {what}: {}/{}",
                    thousands(done.load(Ordering::Relaxed)),
                    thousands(n)
                );
            }
        }
    });
    let tasks: Vec<_> = (0..WRITERS)
        .map(|_| {
            let (next, done, body) = (next.clone(), done.clone(), body.clone());
            tokio::spawn(async move {
                let c = http();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    if let Some(rate) = rate {
                        let due = started + Duration::from_secs_f64(i as f64 / rate as f64);
                        tokio::time::sleep_until(due.into()).await;
                    }
                    post(&c, addr, path, body(first + i)).await;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("writer task");
    }
    progress.abort();
    started.elapsed().as_secs_f64()
}

/// A small, realistic pod: labels, an annotation, one container with a
/// port, resources and a probe, scheduled to a node.
pub(crate) fn pod_body(i: u64) -> String {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("pod-{i:06}"),
            "labels": {"app": format!("app-{}", i % 500), "tier": "backend", "pod-template-hash": "7d9f8c6b5"},
            "annotations": {"example.com/team": "payments"}
        },
        "spec": {
            "nodeName": format!("node-{}", i % 100),
            "restartPolicy": "Always",
            "containers": [{
                "name": "app", "image": "registry.example.com/payments/app:1.4.2",
                "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 5}
            }]
        }
    })
    .to_string()
}

pub(crate) fn configmap_body(i: u64) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{i:06}"}},"data":{{"k":"v"}}}}"#
    )
}

pub(crate) fn replicaset_body(i: u64) -> String {
    labelled_replicaset(i, None)
}

/// A ReplicaSet of [`REPLICAS`] pods, with the label
/// `windlass-bench/instance=<instance>` when given (what a density
/// instance selects).
pub(crate) fn labelled_replicaset(i: u64, instance: Option<&str>) -> String {
    let name = format!("rs-{i:05}");
    let mut labels = json!({"app": name});
    if let Some(instance) = instance {
        labels[INSTANCE_LABEL] = instance.into();
    }
    json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, "tier": "backend"}},
                "spec": {"containers": [{
                    "name": "app", "image": "registry.example.com/payments/app:1.4.2",
                    "ports": [{"containerPort": 8080, "name": "http"}],
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}
                }]}
            }
        }
    })
    .to_string()
}

/// The label a density instance selects its ReplicaSets by.
pub(crate) const INSTANCE_LABEL: &str = "windlass-bench/instance";

pub(crate) const PODS: &str = "/api/v1/namespaces/default/pods";
pub(crate) const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
pub(crate) const REPLICASETS: &str = "/apis/apps/v1/namespaces/default/replicasets";

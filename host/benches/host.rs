//! Host benchmark: windlass and a native kube-rs controller (`windlass-peer`)
//! side by side on fresh embedded API servers in the same run: initial sync
//! of many pods, event → reconcile-start latency under a steady event rate,
//! and convergence of many ReplicaSets.
//!
//! Run with `cargo xtask bench` (`-- --quick` for a small run). Sizes come
//! from `WINDLASS_BENCH_PODS` (100,000), `WINDLASS_BENCH_RS` (2,000, each with
//! 5 replicas), `WINDLASS_BENCH_RATE` (10,000 events/s) and
//! `WINDLASS_BENCH_EVENTS` (30,000). Prints a table; asserts only that each
//! side did the work.
//!
//! The API server and the load generators run on their own tokio runtime,
//! the controllers on another, as two processes would. The initial sync is
//! measured in a fresh child process per side (this binary, re-executed), so
//! its resident-memory growth is the cache's and nobody else's.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::runtime::Runtime;
use windlass::cache::Change;
use windlass::client::ApiClient;
use windlass::contract::{KindRef, Watch};
use windlass::discovery::Discovery;
use windlass::histogram::{Histogram, HistogramSnapshot};
use windlass::host::{Host, HostConfig};
use windlass::informer::InformerConfig;
use windlass::informers::Informers;
use windlass::runtime::RuntimeConfig;
use windlass_apiserver::{Config, RunningServer};

/// Set in a child process: which side's initial sync to measure.
const CHILD_ROLE: &str = "WINDLASS_BENCH_CHILD";
/// The kubeconfig text a child connects with.
const CHILD_KUBECONFIG: &str = "WINDLASS_BENCH_KUBECONFIG";
/// How a child's one-line answer starts.
const CHILD_ANSWER: &str = "windlass-bench-child ";

const REPLICAS: u64 = 5;
/// Concurrent HTTP clients creating objects.
const WRITERS: u64 = 32;

type HttpClient = Client<HttpConnector, Full<Bytes>>;

#[derive(Debug, Clone, Copy)]
struct Sizes {
    pods: u64,
    replicasets: u64,
    rate: u64,
    events: u64,
}

impl Sizes {
    fn from_env() -> Self {
        let quick = std::env::args().any(|a| a == "--quick");
        let get = |name: &str, full: u64, small: u64| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.replace('_', "").parse().ok())
                .unwrap_or(if quick { small } else { full })
        };
        Self {
            pods: get("WINDLASS_BENCH_PODS", 100_000, 10_000),
            replicasets: get("WINDLASS_BENCH_RS", 2_000, 200),
            rate: get("WINDLASS_BENCH_RATE", 10_000, 10_000).max(1),
            events: get("WINDLASS_BENCH_EVENTS", 30_000, 10_000),
        }
    }
}

fn main() {
    // `RUST_LOG=…` shows the host's and kube's logs (to stderr).
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    if let Ok(role) = std::env::var(CHILD_ROLE) {
        child(&role);
        return;
    }
    let sizes = Sizes::from_env();
    // `WINDLASS_BENCH_ONLY=sync,latency,converge` picks parts (all by default).
    let only = std::env::var("WINDLASS_BENCH_ONLY").unwrap_or_default();
    let runs = |part: &str| only.is_empty() || only.split(',').any(|p| p.trim() == part);
    let servers = runtime("apiserver", 2);
    let controllers = runtime("controllers", 2);
    let mut table = Table::default();

    if runs("sync") {
        let sync = initial_sync(&servers, sizes.pods);
        table.sync(&sync);
    }

    if runs("latency") {
        let windlass = servers.block_on(fresh_server());
        let w = latency_windlass(&servers, &controllers, &windlass, sizes);
        servers.block_on(windlass.shutdown());
        let peer = servers.block_on(fresh_server());
        let p = latency_peer(&servers, &controllers, &peer, sizes);
        servers.block_on(peer.shutdown());
        table.latency(&w, &p);
    }

    if runs("converge") {
        let windlass = servers.block_on(fresh_server());
        let w = converge(
            &servers,
            &controllers,
            &windlass,
            sizes.replicasets,
            Side::Windlass,
        );
        servers.block_on(windlass.shutdown());
        let peer = servers.block_on(fresh_server());
        let p = converge(&servers, &controllers, &peer, sizes.replicasets, Side::Peer);
        servers.block_on(peer.shutdown());
        table.converge(sizes.replicasets, &w, &p);
    }

    println!();
    println!(
        "## host: windlass vs a kube-rs peer (pods: {}, ReplicaSets: {} × {REPLICAS}, events: {} at {}/s)",
        thousands(sizes.pods),
        thousands(sizes.replicasets),
        thousands(sizes.events),
        thousands(sizes.rate),
    );
    println!();
    table.print();
}

fn runtime(name: &str, threads: usize) -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name(name)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

async fn fresh_server() -> RunningServer {
    windlass_apiserver::start(
        Config::new()
            .in_memory()
            .watch_history(200_000)
            .watch_buffer(200_000),
    )
    .await
    .expect("API server starts")
}

fn plugin_path(name: &str) -> PathBuf {
    let dir = std::env::var_os("WINDLASS_PLUGINS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/plugins"));
    let path = dir.join(format!("{name}.wasm"));
    assert!(
        path.is_file(),
        "{} is missing: run `cargo xtask build-plugins` first, or use `cargo xtask bench`",
        path.display()
    );
    path
}

fn host_config() -> HostConfig {
    HostConfig {
        runtime: RuntimeConfig {
            artifact_dir: None,
            ..RuntimeConfig::default()
        },
        ..HostConfig::default()
    }
}

// ---------------------------------------------------------------------------
// Load over plain HTTP.

fn http() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// The longest any one request may take before the benchmark gives up.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

async fn send(c: &HttpClient, req: hyper::Request<Full<Bytes>>) -> (http::StatusCode, Bytes) {
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

async fn post(c: &HttpClient, addr: SocketAddr, path: &str, body: String) {
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

async fn get(c: &HttpClient, addr: SocketAddr, path: &str) -> Bytes {
    let req = hyper::Request::get(format!("http://{addr}{path}"))
        .body(Full::new(Bytes::new()))
        .expect("valid request");
    let (status, body) = send(c, req).await;
    assert!(status.is_success(), "GET {path}: {status}");
    body
}

/// Creates `n` objects, `body(i)` for `i` from `first`, with [`WRITERS`]
/// clients; at most `rate` per second when given. Returns the seconds taken.
async fn create_many(
    addr: SocketAddr,
    path: &'static str,
    first: u64,
    n: u64,
    rate: Option<u64>,
    what: &'static str,
    body: fn(u64) -> String,
) -> f64 {
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
            let (next, done) = (next.clone(), done.clone());
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
fn pod_body(i: u64) -> String {
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

fn configmap_body(i: u64) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{i:06}"}},"data":{{"k":"v"}}}}"#
    )
}

fn replicaset_body(i: u64) -> String {
    let name = format!("rs-{i:05}");
    json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "labels": {"app": name}},
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

const PODS: &str = "/api/v1/namespaces/default/pods";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const REPLICASETS: &str = "/apis/apps/v1/namespaces/default/replicasets";

// ---------------------------------------------------------------------------
// Initial sync, measured in child processes.

/// What a child measured.
#[derive(Debug, Default, Clone, serde::Serialize, Deserialize)]
struct SyncResult {
    seconds: f64,
    objects: u64,
    /// The cache's own accounting (windlass only).
    cache_bytes: Option<u64>,
    /// Resident memory growth from just before the start to synced.
    rss_growth: Option<u64>,
}

struct Sync {
    pods: u64,
    preload_per_sec: f64,
    /// The server's time to answer a paged list of every pod.
    list_secs: f64,
    /// Bytes per pod in a list, as served and without managedFields.
    raw_per_pod: f64,
    stripped_per_pod: f64,
    windlass: SyncResult,
    peer: SyncResult,
}

fn initial_sync(servers: &Runtime, pods: u64) -> Sync {
    let server = servers.block_on(fresh_server());
    let addr = server.addr();
    eprintln!("initial sync: preloading {} pods", thousands(pods));
    let secs = servers.block_on(create_many(addr, PODS, 0, pods, None, "pods", pod_body));
    let (raw, stripped, listed, list_secs) = servers.block_on(raw_sizes(addr));
    assert_eq!(listed, pods, "the server lists every preloaded pod");
    let kubeconfig = server.kubeconfig();
    eprintln!("initial sync: windlass informer (child process)");
    let windlass = run_child("windlass", &kubeconfig);
    eprintln!("initial sync: kube-rs reflector (child process)");
    let peer = run_child("peer", &kubeconfig);
    for (side, r) in [("windlass", &windlass), ("peer", &peer)] {
        assert_eq!(r.objects, pods, "{side} cached every pod");
    }
    servers.block_on(server.shutdown());
    Sync {
        pods,
        preload_per_sec: pods as f64 / secs,
        list_secs,
        raw_per_pod: raw as f64 / pods as f64,
        stripped_per_pod: stripped as f64 / pods as f64,
        windlass,
        peer,
    }
}

/// Total bytes of the pods' JSON in list pages, as served and without
/// `metadata.managedFields` (which the caches drop); how many there are; and
/// the seconds the server took to answer the pages (what any informer's
/// first list waits for at least).
async fn raw_sizes(addr: SocketAddr) -> (u64, u64, u64, f64) {
    #[derive(Deserialize)]
    struct Page<'a> {
        #[serde(borrow)]
        items: Vec<&'a RawValue>,
        metadata: PageMeta,
    }
    #[derive(Deserialize)]
    struct PageMeta {
        #[serde(default, rename = "continue")]
        next: Option<String>,
    }
    let c = http();
    let (mut raw, mut stripped, mut n) = (0u64, 0u64, 0u64);
    let mut token: Option<String> = None;
    let mut serving = Duration::ZERO;
    loop {
        let path = match &token {
            Some(t) => format!("{PODS}?limit=500&continue={t}"),
            None => format!("{PODS}?limit=500"),
        };
        let asked = Instant::now();
        let body = get(&c, addr, &path).await;
        serving += asked.elapsed();
        let page: Page<'_> = serde_json::from_slice(&body).expect("a pod list");
        for item in &page.items {
            raw += item.get().len() as u64;
            let mut v: Value = serde_json::from_str(item.get()).expect("a pod");
            if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("managedFields");
            }
            stripped += v.to_string().len() as u64;
            n += 1;
        }
        match page.metadata.next.filter(|t| !t.is_empty()) {
            Some(t) => token = Some(t),
            None => return (raw, stripped, n, serving.as_secs_f64()),
        }
    }
}

fn run_child(role: &str, kubeconfig: &str) -> SyncResult {
    use std::io::Read;
    let mut child = std::process::Command::new(std::env::current_exe().expect("own path"))
        .env(CHILD_ROLE, role)
        .env(CHILD_KUBECONFIG, kubeconfig)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("child starts");
    let deadline = Instant::now() + Duration::from_secs(300);
    let status = loop {
        if let Some(status) = child.try_wait().expect("child status") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the {role} sync child did not finish within 5 minutes");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("piped")
        .read_to_string(&mut stdout)
        .expect("child output");
    let answer = stdout
        .lines()
        .find_map(|l| l.strip_prefix(CHILD_ANSWER))
        .unwrap_or_else(|| panic!("{role} child failed ({status}): {stdout}"));
    serde_json::from_str(answer).expect("child answer")
}

/// Resident memory of this process, bytes (Linux; `None` elsewhere).
fn rss() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

fn child(role: &str) {
    let kubeconfig = std::env::var(CHILD_KUBECONFIG).expect("kubeconfig from the parent");
    let rt = runtime("child", 2);
    let result = rt.block_on(async {
        match role {
            "windlass" => sync_windlass(&kubeconfig).await,
            "peer" => sync_peer(&kubeconfig).await,
            other => panic!("unknown child role {other:?}"),
        }
    });
    println!(
        "{CHILD_ANSWER}{}",
        serde_json::to_string(&result).expect("serializable")
    );
}

async fn sync_windlass(kubeconfig: &str) -> SyncResult {
    let client = ApiClient::from_kubeconfig_yaml(kubeconfig)
        .await
        .expect("client");
    let discovery = Arc::new(Discovery::new(client.clone()));
    let pods = KindRef::new("v1", "Pod");
    // Discovery (and the connection) are warm before the clock starts.
    discovery.resolve(&pods).await.expect("pods are served");
    let informers = Informers::new(client, discovery, InformerConfig::default(), 4);
    let before = rss();
    let started = Instant::now();
    let informer = informers
        .get(&Watch {
            kind: pods,
            namespace: None,
            label_selector: None,
            field_selector: None,
            indexed: false,
        })
        .await
        .expect("informer");
    informer.wait_synced().await;
    let seconds = started.elapsed().as_secs_f64();
    let after = rss();
    let (objects, bytes) = informer.cache().read(|s| (s.len(), s.bytes()));
    SyncResult {
        seconds,
        objects: objects as u64,
        cache_bytes: Some(bytes as u64),
        rss_growth: before.zip(after).map(|(b, a)| a.saturating_sub(b)),
    }
}

async fn sync_peer(kubeconfig: &str) -> SyncResult {
    let client = windlass_peer::client_from_kubeconfig_yaml(kubeconfig)
        .await
        .expect("client");
    // The connection is warm before the clock starts, as on the windlass side.
    let warm: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::all(client.clone());
    warm.list_metadata(&kube::api::ListParams::default().limit(1))
        .await
        .expect("pods are served");
    let before = rss();
    let started = Instant::now();
    let store = windlass_peer::reflect::PodStore::start(client, None);
    store.synced().await;
    let seconds = started.elapsed().as_secs_f64();
    let after = rss();
    SyncResult {
        seconds,
        objects: store.store().len() as u64,
        cache_bytes: None,
        rss_growth: before.zip(after).map(|(b, a)| a.saturating_sub(b)),
    }
}

// ---------------------------------------------------------------------------
// Event → reconcile-start latency.

struct Latency {
    /// Events per second asked for and reached, and how many.
    target: u64,
    rate: f64,
    events: u64,
    /// From the first create until every event's reconcile had started.
    drained: f64,
    wait: HistogramSnapshot,
    /// Reconcile durations (windlass only).
    reconcile: Option<HistogramSnapshot>,
}

/// The loads each side gets, in order: a light one (a tenth of the rate and
/// of the events) that shows the floor, then the target rate.
fn loads(sizes: Sizes) -> [(u64, u64, u64); 2] {
    let light = (sizes.events / 10).max(1);
    // (first ConfigMap index, how many, per second)
    [
        (0, light, (sizes.rate / 10).max(1)),
        (light, sizes.events, sizes.rate),
    ]
}

/// Runs the loads against `server`; `read` gives the side's (queue wait,
/// reconcile duration) histograms as of now.
fn measure(
    servers: &Runtime,
    server: &RunningServer,
    sizes: Sizes,
    read: impl Fn() -> (HistogramSnapshot, Option<HistogramSnapshot>),
) -> Vec<Latency> {
    let mut out = Vec::new();
    for (first, events, rate) in loads(sizes) {
        let (wait0, reconcile0) = read();
        let started = Instant::now();
        let secs = servers.block_on(create_many(
            server.addr(),
            CONFIGMAPS,
            first,
            events,
            Some(rate),
            "configmaps",
            configmap_body,
        ));
        let deadline = Instant::now() + Duration::from_secs(60);
        while read().0.since(&wait0).count() < events {
            assert!(
                Instant::now() < deadline,
                "{} of {events} reconciles started a minute after the load",
                read().0.since(&wait0).count()
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let drained = started.elapsed().as_secs_f64();
        let (wait, reconcile) = read();
        out.push(Latency {
            target: rate,
            rate: events as f64 / secs,
            events,
            drained,
            wait: wait.since(&wait0),
            reconcile: reconcile
                .zip(reconcile0)
                .map(|(now, then)| now.since(&then)),
        });
    }
    out
}

fn latency_windlass(
    servers: &Runtime,
    controllers: &Runtime,
    server: &RunningServer,
    sizes: Sizes,
) -> Vec<Latency> {
    eprintln!("latency: windlass with test-noop");
    let kubeconfig = server.kubeconfig();
    let host = controllers.block_on(async {
        let client = ApiClient::from_kubeconfig_yaml(&kubeconfig)
            .await
            .expect("client");
        let host = Host::new(client, host_config()).expect("host");
        host.load_file(&plugin_path("test-noop"))
            .await
            .expect("test-noop loads");
        while !host.is_ready().await {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        host
    });
    let result = measure(servers, server, sizes, || {
        let stats = controllers
            .block_on(host.controller_stats())
            .into_iter()
            .find(|(name, ..)| name == "test-noop")
            .map(|(_, _, s, _)| s)
            .expect("test-noop runs");
        (stats.queue_wait, Some(stats.reconcile_time))
    });
    controllers.block_on(host.shutdown());
    result
}

fn latency_peer(
    servers: &Runtime,
    controllers: &Runtime,
    server: &RunningServer,
    sizes: Sizes,
) -> Vec<Latency> {
    eprintln!("latency: kube-rs no-op controller");
    let kubeconfig = server.kubeconfig();
    let waits = Arc::new(Histogram::new());
    let probe = controllers.block_on(async {
        let client = windlass_peer::client_from_kubeconfig_yaml(&kubeconfig)
            .await
            .expect("client");
        let waits = waits.clone();
        // Concurrency 1, as test-noop's manifest asks of the host.
        windlass_peer::probe::Probe::start(client, None, 1, Arc::new(move |d| waits.observe(d)))
            .await
    });
    let result = measure(servers, server, sizes, || (waits.snapshot(), None));
    controllers.block_on(probe.shutdown());
    result
}

// ---------------------------------------------------------------------------
// ReplicaSet convergence.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Windlass,
    Peer,
}

struct Converged {
    seconds: f64,
    pods: u64,
}

/// Watches ReplicaSets (through a windlass informer of the bench's own) and
/// counts those whose status says [`REPLICAS`].
struct Observer {
    _informers: Informers,
    _informer: Arc<windlass::informer::Informer>,
    done: Arc<Mutex<HashSet<Arc<str>>>>,
}

impl Observer {
    async fn start(client: ApiClient) -> Self {
        let discovery = Arc::new(Discovery::new(client.clone()));
        let informers = Informers::new(client, discovery, InformerConfig::default(), 4);
        let informer = informers
            .get(&Watch {
                kind: KindRef::new("apps/v1", "ReplicaSet"),
                namespace: Some("default".into()),
                label_selector: None,
                field_selector: None,
                indexed: false,
            })
            .await
            .expect("ReplicaSet informer");
        let done: Arc<Mutex<HashSet<Arc<str>>>> = Arc::default();
        let seen = done.clone();
        informer.subscribe(Arc::new(move |change: &Change| {
            #[derive(Deserialize, Default)]
            struct Rs {
                #[serde(default)]
                status: Status,
            }
            #[derive(Deserialize, Default)]
            struct Status {
                #[serde(default)]
                replicas: u64,
            }
            let object = change.object();
            let replicas = serde_json::from_str::<Rs>(object.text())
                .unwrap_or_default()
                .status
                .replicas;
            let mut done = seen.lock().unwrap_or_else(|e| e.into_inner());
            if replicas == REPLICAS && !matches!(change, Change::Deleted(_)) {
                done.insert(object.key().name.into());
            } else {
                done.remove(object.key().name);
            }
        }));
        informer.wait_synced().await;
        Self {
            _informers: informers,
            _informer: informer,
            done,
        }
    }

    fn converged(&self) -> u64 {
        self.done.lock().unwrap_or_else(|e| e.into_inner()).len() as u64
    }
}

/// Live pods in `default`, counted from one list.
async fn live_pods(addr: SocketAddr) -> u64 {
    #[derive(Deserialize)]
    struct List {
        items: Vec<Item>,
    }
    #[derive(Deserialize)]
    struct Item {
        metadata: Meta,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Meta {
        #[serde(default)]
        deletion_timestamp: Option<String>,
    }
    let body = get(&http(), addr, PODS).await;
    let list: List = serde_json::from_slice(&body).expect("a pod list");
    list.items
        .iter()
        .filter(|i| i.metadata.deletion_timestamp.is_none())
        .count() as u64
}

fn converge(
    servers: &Runtime,
    controllers: &Runtime,
    server: &RunningServer,
    replicasets: u64,
    side: Side,
) -> Converged {
    let name = match side {
        Side::Windlass => "windlass with the replicaset plugin",
        Side::Peer => "kube-rs peer",
    };
    eprintln!(
        "convergence: {name}, {} ReplicaSets × {REPLICAS}",
        thousands(replicasets)
    );
    let kubeconfig = server.kubeconfig();
    let addr = server.addr();
    let (observer, windlass, peer) = controllers.block_on(async {
        let client = ApiClient::from_kubeconfig_yaml(&kubeconfig)
            .await
            .expect("client");
        let observer = Observer::start(client.clone()).await;
        let (mut windlass, mut peer) = (None, None);
        match side {
            Side::Windlass => {
                let host = Host::new(client, host_config()).expect("host");
                host.load_file(&plugin_path("replicaset"))
                    .await
                    .expect("replicaset loads");
                while !host.is_ready().await {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                windlass = Some(host);
            }
            Side::Peer => {
                let client = windlass_peer::client_from_kubeconfig_yaml(&kubeconfig)
                    .await
                    .expect("client");
                peer = Some(
                    windlass_peer::replicaset::start(
                        client,
                        windlass_peer::replicaset::Config::default(),
                    )
                    .await,
                );
            }
        }
        (observer, windlass, peer)
    });

    let started = Instant::now();
    let create = servers.spawn(create_many(
        addr,
        REPLICASETS,
        0,
        replicasets,
        None,
        "replicasets",
        replicaset_body,
    ));
    let deadline = started + Duration::from_secs(300);
    let mut last_report = Instant::now();
    while observer.converged() < replicasets {
        assert!(
            Instant::now() < deadline,
            "{name}: {} of {replicasets} ReplicaSets converged after 5 minutes",
            observer.converged()
        );
        if last_report.elapsed() > Duration::from_secs(3) {
            eprintln!(
                "  converged: {}/{}",
                thousands(observer.converged()),
                thousands(replicasets)
            );
            last_report = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let seconds = started.elapsed().as_secs_f64();
    servers.block_on(create).expect("creates finish");
    // Let any stray extra pod land before counting.
    std::thread::sleep(Duration::from_millis(500));
    let pods = servers.block_on(live_pods(addr));
    controllers.block_on(async {
        if let Some(host) = windlass {
            host.shutdown().await;
        }
        if let Some(peer) = peer {
            peer.shutdown().await;
        }
        drop(observer);
    });
    Converged { seconds, pods }
}

// ---------------------------------------------------------------------------
// The table.

#[derive(Default)]
struct Table {
    rows: Vec<[String; 4]>,
}

impl Table {
    fn row(&mut self, what: String, windlass: String, peer: String, target: &str) {
        self.rows.push([what, windlass, peer, target.to_owned()]);
    }

    fn sync(&mut self, s: &Sync) {
        let per_pod = |r: &SyncResult| {
            r.rss_growth
                .map_or("-".to_owned(), |b| bytes(b as f64 / s.pods as f64))
        };
        self.row(
            format!(
                "initial sync of {} pods: informer start → synced",
                thousands(s.pods)
            ),
            format!("{:.2} s", s.windlass.seconds),
            format!("{:.2} s", s.peer.seconds),
            "",
        );
        let cache = s.windlass.cache_bytes.unwrap_or(0) as f64 / s.pods as f64;
        self.row(
            format!(
                "cache bytes per pod (JSON per pod: {} as served, {} without managedFields)",
                bytes(s.raw_per_pod),
                bytes(s.stripped_per_pod)
            ),
            format!(
                "{} ({:.2}× served, {:.2}× without managedFields)",
                bytes(cache),
                cache / s.raw_per_pod,
                cache / s.stripped_per_pod
            ),
            "-".into(),
            "≤ 1.25× raw",
        );
        self.row(
            "resident memory growth per pod during the sync".into(),
            per_pod(&s.windlass),
            per_pod(&s.peer),
            "",
        );
        self.row(
            "(the server alone: answering a paged list of every pod, 500 a page)".into(),
            format!("{:.2} s", s.list_secs),
            format!("{:.2} s", s.list_secs),
            "",
        );
        self.row(
            "(preloading the server over HTTP, 32 clients)".into(),
            format!("{:.0} pods/s", s.preload_per_sec),
            "-".into(),
            "",
        );
    }

    fn latency(&mut self, windlass: &[Latency], peer: &[Latency]) {
        let q = |h: &HistogramSnapshot| {
            format!("{} / {}", micros(h.quantile(0.5)), micros(h.quantile(0.99)))
        };
        for (i, (w, p)) in windlass.iter().zip(peer).enumerate() {
            let target = if i + 1 == windlass.len() {
                "p99 ≤ 1 ms"
            } else {
                ""
            };
            self.row(
                format!(
                    "event → reconcile start, p50 / p99: {} ConfigMap creates at {} /s (reached {:.0} / {:.0} /s)",
                    thousands(w.events),
                    thousands(w.target),
                    w.rate,
                    p.rate
                ),
                q(&w.wait),
                q(&p.wait),
                target,
            );
        }
        if let (Some(w), Some(p)) = (windlass.last(), peer.last()) {
            self.row(
                format!(
                    "no-op reconciles/s sustained at that rate ({} events ÷ first create → last reconcile start)",
                    thousands(w.events)
                ),
                format!("{:.0} /s", w.events as f64 / w.drained),
                format!("{:.0} /s", p.events as f64 / p.drained),
                "",
            );
            if let Some(r) = &w.reconcile {
                self.row(
                    "no-op reconcile duration, p50 / p99 (request, fresh instance, outcome)".into(),
                    q(r),
                    "-".into(),
                    "",
                );
            }
        }
    }

    fn converge(&mut self, n: u64, w: &Converged, p: &Converged) {
        let show = |c: &Converged| {
            let extra = if c.pods == n * REPLICAS {
                String::new()
            } else {
                format!(", {} pods!", thousands(c.pods))
            };
            format!(
                "{:.2} s ({:.0} pods/s{extra})",
                c.seconds,
                (n * REPLICAS) as f64 / c.seconds
            )
        };
        self.row(
            format!(
                "{} ReplicaSets × {REPLICAS}: create → all pods exist and every status says {REPLICAS}",
                thousands(n)
            ),
            show(w),
            show(p),
            "",
        );
    }

    fn print(&self) {
        println!("| benchmark | windlass | kube-rs peer | target |");
        println!("|---|---|---|---|");
        for [a, b, c, d] in &self.rows {
            println!("| {a} | {b} | {c} | {d} |");
        }
    }
}

fn micros(d: Option<Duration>) -> String {
    match d {
        None => "-".into(),
        Some(d) if d >= Duration::from_millis(10) => format!("{:.0} ms", d.as_secs_f64() * 1e3),
        Some(d) if d >= Duration::from_millis(1) => format!("{:.2} ms", d.as_secs_f64() * 1e3),
        Some(d) => format!("{:.0} µs", d.as_secs_f64() * 1e6),
    }
}

fn bytes(b: f64) -> String {
    if b >= 10_240.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{b:.0} B")
    }
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

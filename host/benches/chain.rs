//! The control-loop chain's benchmark: a Deployment on simulated nodes, from
//! its create to every pod Running, through the real `windlass` binary with
//! the deployment, replicaset, scheduler and kubelet plugins; and what one
//! scheduling decision costs as nodes and bound pods grow.
//!
//! Run with `cargo xtask bench` (`-- --quick` for a tenth of the size).
//! Sizes: `WINDLASS_BENCH_NODES` (1,000), `WINDLASS_BENCH_REPLICAS`
//! (10,000), `WINDLASS_BENCH_ANTI` (1,000 pods with required pod
//! anti-affinity, one per node); `WINDLASS_BENCH_ONLY=chain,anti,decision`
//! picks parts; `WINDLASS_BENCH_BIN` runs another `windlass` binary (to
//! compare two builds), `WINDLASS_BENCH_KUBELET_SETTINGS` (JSON) gives the
//! kubelet plugin other settings. Prints a table; asserts only that the work was done.
//!
//! The API server runs in this process (in memory, as `windlass run
//! --embedded` without `--data`), the host as a child process, so the
//! host's CPU seconds are its own (from `/proc/<pid>/stat`). There is no
//! native peer for this row: nothing here runs kube-scheduler, the
//! controller manager and kubelets; kube-scheduler's own CI floor (810
//! pods/s at 5,000 nodes, scheduling alone) is the yardstick the issue gives.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use windlass::contract::Request;
use windlass::offline::{StaticCache, request_for};
use windlass::runtime::{Runtime, RuntimeConfig};
use windlass_tests::{free_port, http_get, thousands};

type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// The API server runs in this process, with the allocator it has in the
/// `windlass` binary (`windlass run --embedded`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const PLUGINS: [&str; 4] = ["deployment", "replicaset", "scheduler", "kubelet"];
/// Concurrent clients creating nodes.
const WRITERS: usize = 16;

/// The plugin-call stage of the host's reconciles, in seconds.
const CALL_SECONDS: &str = "windlass_reconcile_stage_seconds_sum{stage=\"call\"}";

struct Sizes {
    nodes: usize,
    replicas: usize,
    anti: usize,
}

impl Sizes {
    fn from_env() -> Self {
        let quick = std::env::args().any(|a| a == "--quick");
        let get = |name: &str, full: usize| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.replace('_', "").parse().ok())
                .unwrap_or(if quick { full / 10 } else { full })
        };
        Sizes {
            nodes: get("WINDLASS_BENCH_NODES", 1_000),
            replicas: get("WINDLASS_BENCH_REPLICAS", 10_000),
            anti: get("WINDLASS_BENCH_ANTI", 1_000),
        }
    }
}

fn main() {
    let sizes = Sizes::from_env();
    let only = std::env::var("WINDLASS_BENCH_ONLY").unwrap_or_default();
    let runs = |part: &str| only.is_empty() || only.split(',').any(|p| p.trim() == part);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("apiserver")
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut rows: Vec<[String; 4]> = Vec::new();

    if runs("chain") {
        let r = rt.block_on(rollout(sizes.nodes, sizes.replicas, false));
        rows.push(r.row(&format!(
            "Deployment of {} on {} nodes: create → all Running",
            thousands(sizes.replicas),
            thousands(sizes.nodes)
        )));
    }
    if runs("anti") {
        let n = sizes.anti.min(sizes.nodes);
        let r = rt.block_on(rollout(sizes.nodes, n, true));
        rows.push(r.row(&format!(
            "{} pods with required anti-affinity (one per node) on {} nodes",
            thousands(n),
            thousands(sizes.nodes)
        )));
    }
    let decisions = if runs("decision") {
        decision_costs(sizes.nodes)
    } else {
        Vec::new()
    };

    println!();
    println!(
        "## chain: Deployment → ReplicaSet → scheduler → kubelet (the real binary, 4 plugins)"
    );
    println!();
    println!("| benchmark | time | pods/s | host: decisions/s, CPU s | target |");
    println!("|---|---|---|---|---|");
    for [what, time, rate, host] in &rows {
        let target = if what.contains("anti-affinity") {
            "≥ 200 pods/s"
        } else {
            "≥ 1,000 pods/s"
        };
        println!("| {what} | {time} | {rate} | {host} | {target} |");
    }
    if !decisions.is_empty() {
        println!();
        println!(
            "## one scheduling decision (the scheduler plugin in wasm, a fresh instance per call)"
        );
        println!();
        println!("| nodes | pods already bound | µs per decision (median) | target |");
        println!("|---|---|---|---|");
        for (nodes, bound, micros) in &decisions {
            println!(
                "| {} | {} | {micros:.0} | flat in bound pods |",
                thousands(*nodes),
                thousands(*bound)
            );
        }
    }
}

struct Rollout {
    seconds: f64,
    pods: usize,
    decisions: u64,
    cpu: f64,
}

impl Rollout {
    fn row(&self, what: &str) -> [String; 4] {
        [
            what.to_owned(),
            format!("{:.2} s", self.seconds),
            format!("{:.0}", self.pods as f64 / self.seconds),
            format!(
                "{:.0} decisions/s, {:.1} CPU s",
                self.decisions as f64 / self.seconds,
                self.cpu
            ),
        ]
    }
}

/// Starts a server and the host, creates `nodes` simulated nodes, waits
/// until they are Ready, then times a Deployment of `replicas` from its
/// create to every pod Running.
async fn rollout(nodes: usize, replicas: usize, anti_affinity: bool) -> Rollout {
    let server = windlass_apiserver::start(
        windlass_apiserver::Config::new()
            .in_memory()
            .watch_history(500_000)
            .watch_buffer(500_000),
    )
    .await
    .expect("API server starts");
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, server.kubeconfig()).unwrap();
    let admin = free_port();
    let mut host = Host::start(dir.path(), &kubeconfig, admin);
    let base = format!("http://{}", server.addr());
    let http: HttpClient = Client::builder(TokioExecutor::new()).build_http();

    // Nodes: room for the pods, plus one extra zone label to spread on.
    let per_node = replicas.div_ceil(nodes.max(1)) + 10;
    let created = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (http, base, created) = (http.clone(), base.clone(), created.clone());
        writers.push(tokio::spawn(async move {
            let mut i = w;
            while i < nodes {
                let node = json!({"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": format!("node-{i}"), "labels": {
                        "windlass.dev/simulated": "true",
                        "kubernetes.io/hostname": format!("node-{i}"),
                        "topology.kubernetes.io/zone": format!("zone-{}", i % 3)},
                        "annotations": {"windlass.dev/capacity":
                            format!("cpu={},memory={}Gi,pods={}", per_node, per_node, per_node)}}});
                post(&http, &format!("{base}/api/v1/nodes"), &node).await;
                created.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                i += WRITERS;
            }
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    wait_until(
        &http,
        &base,
        Duration::from_secs(600),
        |base| format!("{base}/api/v1/nodes"),
        |list| {
            let ready = items(list)
                .iter()
                .filter(|n| {
                    n["status"]["conditions"].as_array().is_some_and(|c| {
                        c.iter()
                            .any(|c| c["type"] == "Ready" && c["status"] == "True")
                    })
                })
                .count();
            ready == nodes
        },
    )
    .await;
    host.wait_ready(admin);

    let mut spec = json!({"containers": [{"name": "web", "image": "nginx",
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
        "terminationGracePeriodSeconds": 1});
    if anti_affinity {
        spec["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "bench"}}, "topologyKey": "kubernetes.io/hostname"}]}});
    }
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "bench", "namespace": "default"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "bench"}},
            "template": {"metadata": {"labels": {"app": "bench"}}, "spec": spec}}});
    let decisions_before = host.reconciles(admin, "scheduler");
    let requests_before = host.sums(admin, "rest_client_requests_total", "method");
    let reconciles_before = host.sums(admin, "windlass_reconciles_total", "plugin");
    let writes_before = host.sums(admin, "windlass_writes_total", "plugin");
    let events_before = host.sums(admin, "windlass_informer_events_total", "informer");
    let busy_before = host.sums(admin, "windlass_reconcile_microseconds_total", "plugin");
    let calls_before = host.sums(admin, CALL_SECONDS, "plugin");
    let cpu_before = host.cpu_seconds();
    let started = Instant::now();
    post(
        &http,
        &format!("{base}/apis/apps/v1/namespaces/default/deployments"),
        &deployment,
    )
    .await;
    wait_until(
        &http,
        &base,
        Duration::from_secs(1800),
        |base| format!("{base}/apis/apps/v1/namespaces/default/deployments/bench"),
        |d| d["status"]["availableReplicas"].as_u64() == Some(replicas as u64),
    )
    .await;
    let seconds = started.elapsed().as_secs_f64();
    let cpu = host.cpu_seconds() - cpu_before;
    let decisions = host.reconciles(admin, "scheduler") - decisions_before;
    // Where the work went, per pod: what the host asked of the server, and
    // how often each plugin ran.
    for (what, before, after) in [
        (
            "requests",
            requests_before,
            host.sums(admin, "rest_client_requests_total", "method"),
        ),
        (
            "reconciles",
            reconciles_before,
            host.sums(admin, "windlass_reconciles_total", "plugin"),
        ),
        (
            "writes",
            writes_before,
            host.sums(admin, "windlass_writes_total", "plugin"),
        ),
        (
            "watch events",
            events_before,
            host.sums(admin, "windlass_informer_events_total", "informer"),
        ),
        (
            "reconcile µs",
            busy_before,
            host.sums(admin, "windlass_reconcile_microseconds_total", "plugin"),
        ),
        (
            "plugin call µs",
            calls_before,
            host.sums(admin, CALL_SECONDS, "plugin")
                .into_iter()
                .map(|(k, v)| (k, v * 1e6))
                .collect(),
        ),
    ] {
        let per_pod: Vec<String> = after
            .iter()
            .map(|(k, v)| {
                let d = v - before.get(k).copied().unwrap_or(0.0);
                format!("{k} {:.2}", d / replicas as f64)
            })
            .collect();
        eprintln!("{what} per pod: {}", per_pod.join(", "));
    }
    // Every pod is there, once, Running.
    let pods = get(&http, &format!("{base}/api/v1/namespaces/default/pods")).await;
    let running = items(&pods)
        .iter()
        .filter(|p| p["status"]["phase"] == "Running")
        .count();
    assert_eq!(running, replicas, "pods Running");
    host.stop();
    server.shutdown().await;
    Rollout {
        seconds,
        pods: replicas,
        decisions,
        cpu,
    }
}

/// `windlass run` as a child process.
struct Host(Child);

impl Host {
    fn start(dir: &Path, kubeconfig: &Path, admin: u16) -> Host {
        let plugins = dir.join("plugins");
        std::fs::create_dir_all(&plugins).unwrap();
        for name in PLUGINS {
            std::fs::copy(
                windlass_tests::plugin(name),
                plugins.join(format!("{name}.wasm")),
            )
            .unwrap();
        }
        // A diagnostic, never the row as printed: the kubelet run with other
        // settings (`{"containerStartEvents": false}`: no Pulled, Created
        // and Started events, as kwok records none).
        if let Ok(settings) = std::env::var("WINDLASS_BENCH_KUBELET_SETTINGS") {
            std::fs::write(
                plugins.join("kubelet.instances.yaml"),
                format!("instances:\n- name: kubelet\n  settings: {settings}\n"),
            )
            .unwrap();
        }
        let log = std::fs::File::create(dir.join("host.log")).unwrap();
        // `WINDLASS_BENCH_BIN` runs another build of the host (A/B runs of
        // two builds in one session).
        let bin = std::env::var_os("WINDLASS_BENCH_BIN")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_windlass").into());
        let child = Command::new(bin)
            .arg("run")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--plugins")
            .arg(&plugins)
            .args(["--admin", &format!("127.0.0.1:{admin}")])
            .env("XDG_CACHE_HOME", dir.join("cache"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start windlass");
        Host(child)
    }

    fn wait_ready(&mut self, admin: u16) {
        let deadline = Instant::now() + Duration::from_secs(300);
        while http_get(admin, "/readyz").is_none_or(|(code, _)| code != 200) {
            assert!(Instant::now() < deadline, "the host did not get ready");
            assert!(self.0.try_wait().unwrap().is_none(), "the host exited");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The host's `series` from `/metrics`, summed by the value of `label`;
    /// a series given with a label (`name{stage="call"}`) counts only the
    /// lines that carry it.
    fn sums(&self, admin: u16, series: &str, label: &str) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        let Some((_, metrics)) = http_get(admin, "/metrics") else {
            return out;
        };
        let (series, only) = series
            .split_once('{')
            .map_or((series, ""), |(s, label)| (s, label.trim_end_matches('}')));
        let prefix = format!("{series}{{");
        let key = format!("{label}=\"");
        for line in metrics
            .lines()
            .filter(|l| l.starts_with(&prefix) && l.contains(only))
        {
            let Some(value) = line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()) else {
                continue;
            };
            let Some(at) = line.find(&key) else { continue };
            let rest = &line[at + key.len()..];
            let name = rest.split('"').next().unwrap_or_default();
            *out.entry(name.to_owned()).or_default() += value;
        }
        out
    }

    /// Reconciles of `plugin` so far, from `/metrics`.
    fn reconciles(&self, admin: u16, plugin: &str) -> u64 {
        let Some((_, metrics)) = http_get(admin, "/metrics") else {
            return 0;
        };
        metrics
            .lines()
            .filter(|l| {
                l.starts_with("windlass_reconciles_total{")
                    && l.contains(&format!("plugin=\"{plugin}\""))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>() as u64
    }

    /// User plus system CPU seconds of the host process.
    fn cpu_seconds(&self) -> f64 {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.0.id())).unwrap_or_default();
        // Fields after the command name (which may hold spaces): utime is
        // the 14th field, stime the 15th, in clock ticks.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        (ticks(11) + ticks(12)) / 100.0
    }

    fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.0.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Loads the scheduler plugin and times decisions for one pending pod on
/// `n` nodes, with no pods bound and with ten per node bound (the cost
/// must not grow with the bound pods), for n = 100, 1,000, 5,000 (capped
/// at ten times the benchmark's node count).
fn decision_costs(nodes: usize) -> Vec<(usize, usize, f64)> {
    let rt = Runtime::new(RuntimeConfig {
        artifact_dir: None,
        ..RuntimeConfig::default()
    })
    .expect("runtime");
    let plugin = rt
        .load_file(&windlass_tests::plugin("scheduler"))
        .expect("the scheduler loads");
    let mut out = Vec::new();
    for n in [100, 1_000, 5_000] {
        if n > nodes.max(100) * 5 {
            continue;
        }
        for bound in [0, n * 10] {
            let mut cache = StaticCache::new();
            for i in 0..n {
                cache.insert(json!({"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": format!("node-{i}"), "resourceVersion": "1", "labels": {
                        "kubernetes.io/hostname": format!("node-{i}")}},
                    "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "200"},
                        "conditions": [{"type": "Ready", "status": "True"}]}}));
            }
            for p in 0..bound {
                cache.insert(pod(&format!("bound-{p}"), Some(&format!("node-{}", p % n))));
            }
            let pending = pod("pending", None);
            cache.insert(pending.clone());
            cache.index_for(&plugin).expect("the scheduler indexes");
            let cache = Arc::new(cache);
            let request: Request = request_for(&pending, &[]).unwrap();
            let mut times = Vec::new();
            for _ in 0..51 {
                let started = Instant::now();
                let outcome = plugin
                    .reconcile(&request, cache.clone())
                    .expect("a decision");
                times.push(started.elapsed().as_secs_f64() * 1e6);
                assert!(!outcome.writes.is_empty(), "the pod is bound");
            }
            times.sort_by(f64::total_cmp);
            out.push((n, bound, times[times.len() / 2]));
        }
    }
    out
}

/// A pod of one ReplicaSet, as a Deployment's pods are (so a decision
/// scores kube-scheduler's default spread over that owner's pods).
fn pod(name: &str, node: Option<&str>) -> Value {
    let mut p = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
            "resourceVersion": "2", "labels": {"app": "bench"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "bench",
                "uid": "uid-replicaset-bench", "controller": true}]},
        "spec": {"schedulerName": "default-scheduler",
            "containers": [{"name": "web", "image": "nginx",
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]},
        "status": {"phase": "Pending"}});
    if let Some(node) = node {
        p["spec"]["nodeName"] = json!(node);
        p["status"]["phase"] = json!("Running");
    }
    p
}

async fn post(http: &HttpClient, url: &str, body: &Value) {
    let req = hyper::Request::post(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let resp = http.request(req).await.expect(url);
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    assert!(
        status.is_success(),
        "POST {url}: {status}: {}",
        String::from_utf8_lossy(&bytes)
    );
}

async fn get(http: &HttpClient, url: &str) -> Value {
    let req = hyper::Request::get(url)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let resp = http.request(req).await.expect(url);
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

async fn wait_until(
    http: &HttpClient,
    base: &str,
    timeout: Duration,
    url: impl Fn(&str) -> String,
    done: impl Fn(&Value) -> bool,
) {
    let deadline = Instant::now() + timeout;
    loop {
        let v = get(http, &url(base)).await;
        if done(&v) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "not done within {timeout:?}: {}",
            url(base)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn items(list: &Value) -> Vec<Value> {
    list["items"].as_array().cloned().unwrap_or_default()
}

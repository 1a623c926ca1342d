//! Host benchmark: windlass and a native kube-rs controller (`windlass-peer`)
//! side by side on fresh embedded API servers in the same run: initial sync
//! of many pods, the same at ten times the size for windlass alone (scale),
//! event → reconcile-start latency under a steady event rate, convergence of
//! many ReplicaSets (durable server, alternated, medians), density (N
//! instances in one host vs N native processes) and fairness (a quiet
//! plugin beside a noisy one).
//!
//! Run with `cargo xtask bench` (`-- --quick` for a tenth of most sizes).
//! Sizes come from `WINDLASS_BENCH_PODS` (100,000), `WINDLASS_BENCH_SCALE_PODS`
//! (1,000,000), `WINDLASS_BENCH_RS` (2,000, each with 5 replicas),
//! `WINDLASS_BENCH_ROUNDS` (2 runs of each side), `WINDLASS_BENCH_RATE`
//! (10,000 events/s), `WINDLASS_BENCH_EVENTS` (30,000),
//! `WINDLASS_BENCH_DENSITY` (the Ns, `1,5,20`), `WINDLASS_BENCH_DENSITY_PODS`
//! (10,000 preloaded), `WINDLASS_BENCH_DENSITY_RS` (2,000, split among the
//! instances),
//! `WINDLASS_BENCH_FAIR_EVENTS` (10,000) and `WINDLASS_BENCH_FAIR_RATE`
//! (1,000/s). Prints a table; asserts only that each side did the work.
//!
//! The API server and the load generators run on their own tokio runtime,
//! the controllers on another, as two processes would. The initial sync and
//! the density sides run in fresh child processes (this binary,
//! re-executed), so their resident memory is theirs and nobody else's.

#[path = "host/census.rs"]
mod census;
#[path = "host/converge.rs"]
mod converge;
#[path = "host/density.rs"]
mod density;
#[path = "host/fairness.rs"]
mod fairness;
#[path = "host/latency.rs"]
mod latency;
#[path = "host/load.rs"]
mod load;
#[path = "host/sync.rs"]
mod sync;
#[path = "host/table.rs"]
mod table;

use std::path::{Path, PathBuf};

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use tokio::runtime::Runtime;
use windlass::client::ApiClient;
use windlass::host::{Host, HostConfig};
use windlass::runtime::RuntimeConfig;
use windlass_apiserver::{Config, RunningServer};

use latency::{latency_peer, latency_windlass};
use sync::{child, initial_sync, scale};
use table::{Table, thousands};

const CHILD_ROLE: &str = "WINDLASS_BENCH_CHILD";
/// The kubeconfig text a child connects with.
const CHILD_KUBECONFIG: &str = "WINDLASS_BENCH_KUBECONFIG";
/// How a child's one-line answer starts.
const CHILD_ANSWER: &str = "windlass-bench-child ";

const REPLICAS: u64 = 5;
/// Concurrent HTTP clients creating objects.
const WRITERS: u64 = 32;

type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// The allocator of the `windlass` binary, so that the host measured here
/// (and its resident memory) is the one users run; the peer, in the same
/// process, gets it too.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Clone)]
struct Sizes {
    pods: u64,
    scale_pods: u64,
    replicasets: u64,
    rounds: u64,
    rate: u64,
    events: u64,
    density: Vec<u64>,
    density_pods: u64,
    density_rs: u64,
    fair_events: u64,
    fair_rate: u64,
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
        let density = std::env::var("WINDLASS_BENCH_DENSITY")
            .unwrap_or_else(|_| "1,5,20".into())
            .split(',')
            .filter_map(|n| n.trim().parse().ok())
            .filter(|&n| n > 0)
            .collect();
        Self {
            pods: get("WINDLASS_BENCH_PODS", 100_000, 10_000),
            scale_pods: get("WINDLASS_BENCH_SCALE_PODS", 1_000_000, 100_000),
            replicasets: get("WINDLASS_BENCH_RS", 2_000, 200),
            rounds: get("WINDLASS_BENCH_ROUNDS", 2, 2).max(1),
            rate: get("WINDLASS_BENCH_RATE", 10_000, 10_000).max(1),
            events: get("WINDLASS_BENCH_EVENTS", 30_000, 10_000),
            density,
            density_pods: get("WINDLASS_BENCH_DENSITY_PODS", 10_000, 1_000),
            density_rs: get("WINDLASS_BENCH_DENSITY_RS", 2_000, 200).max(1),
            fair_events: get("WINDLASS_BENCH_FAIR_EVENTS", 10_000, 2_000).max(1),
            fair_rate: get("WINDLASS_BENCH_FAIR_RATE", 1_000, 1_000).max(1),
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
    // `WINDLASS_BENCH_ONLY=sync,scale,latency,converge,density,fairness`
    // picks parts (all by default).
    let only = std::env::var("WINDLASS_BENCH_ONLY").unwrap_or_default();
    let runs = |part: &str| only.is_empty() || only.split(',').any(|p| p.trim() == part);
    let servers = runtime("apiserver", 2);
    let controllers = runtime("controllers", 2);
    let mut table = Table::default();

    let mut reflector = None;
    if runs("sync") {
        let sync = initial_sync(&servers, sizes.pods);
        table.sync(&sync);
        reflector = Some((sync.pods, sync.peer));
    }

    if runs("scale") {
        let sc = scale(&servers, sizes.scale_pods);
        table.scale(&sc, reflector.as_ref().map(|(n, r)| (*n, r)));
    }

    if runs("latency") {
        let windlass = servers.block_on(fresh_server());
        let w = latency_windlass(&servers, &controllers, &windlass, sizes.clone());
        servers.block_on(windlass.shutdown());
        let peer = servers.block_on(fresh_server());
        let p = latency_peer(&servers, &controllers, &peer, sizes.clone());
        servers.block_on(peer.shutdown());
        table.latency(&w, &p);
    }

    if runs("converge") {
        let rounds = converge::alternated(&servers, &controllers, sizes.replicasets, sizes.rounds);
        table.converge(&rounds);
    }

    if runs("density") {
        let all: Vec<_> = sizes
            .density
            .iter()
            .map(|&n| {
                density::density(
                    &servers,
                    &controllers,
                    n,
                    sizes.density_pods,
                    sizes.density_rs,
                )
            })
            .collect();
        table.density(&all);
    }

    if runs("fairness") {
        // The embedded server shares the two cores with the host here, as
        // a cluster's API server would not: the part runs once more with
        // the server's threads below the host's, for the host's own share.
        let yielding = runtime_at_nice("apiserver-low", 2, fairness::SERVER_NICE);
        let f = fairness::fairness(
            &servers,
            &yielding,
            &controllers,
            sizes.fair_events,
            sizes.fair_rate,
            sizes.rounds,
        );
        table.fairness(&f);
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

/// A runtime whose worker threads run at `nice` (Linux: the nice value
/// is a thread's, and threads they start inherit it).
#[allow(unsafe_code)] // `setpriority`, a system call that touches no memory of ours.
fn runtime_at_nice(name: &str, threads: usize, nice: i32) -> Runtime {
    builder(name, threads)
        .on_thread_start(move || {
            // SAFETY: setpriority reads nothing of ours; `who` 0 is the
            // calling thread. A failure leaves the priority as it was,
            // which the table's label would then overstate: report it.
            let done = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
            if done != 0 {
                eprintln!(
                    "setpriority({nice}) failed: {}",
                    std::io::Error::last_os_error()
                );
            }
        })
        .build()
        .expect("tokio runtime")
}

fn runtime(name: &str, threads: usize) -> Runtime {
    builder(name, threads).build().expect("tokio runtime")
}

/// A multi-thread runtime of `threads` workers named `name`, IO and timers on.
fn builder(name: &str, threads: usize) -> tokio::runtime::Builder {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder
        .worker_threads(threads)
        .thread_name(name)
        .enable_all();
    builder
}

/// A server on SQLite in `dir`, with the server's default durability (an
/// acknowledged write survives a crash of the server process).
async fn durable_server(dir: &std::path::Path) -> RunningServer {
    windlass_apiserver::start(
        Config::new()
            .data_dir(dir.to_path_buf())
            .watch_history(200_000)
            .watch_buffer(200_000),
    )
    .await
    .expect("API server starts")
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

/// `plugin`'s `.wasm` copied into a fresh directory beside an instances
/// file listing `instances` (YAML list items), to load as those instances;
/// the directory lives as long as the returned guard.
fn as_instances(plugin: &str, instances: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a plugin directory");
    let file = dir.path().join(format!("{plugin}.wasm"));
    std::fs::copy(plugin_path(plugin), &file).expect("copy the plugin");
    std::fs::write(
        dir.path().join(format!("{plugin}.instances.yaml")),
        format!("instances:\n{instances}"),
    )
    .expect("write the instances file");
    (dir, file)
}

/// A host on `client` with `plugins` loaded, once every one is ready.
async fn ready_host(client: ApiClient, plugins: &[&Path]) -> Host {
    let host = Host::new(client, host_config()).expect("host");
    for plugin in plugins {
        if let Err(e) = host.load_file(plugin).await {
            panic!("{} loads: {e}", plugin.display());
        }
    }
    while !host.is_ready().await {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    host
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

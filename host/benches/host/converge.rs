//! The convergence part: many ReplicaSets created at once, timed until a
//! watch of the bench's own sees every status at its replicas. Each run has
//! a fresh durable server (SQLite in a temporary directory, the server's
//! default durability); the sides alternate, windlass first, and the row
//! shows each side's median.

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;
use tokio::runtime::Runtime;
use windlass::cache::Change;
use windlass::client::ApiClient;
use windlass::contract::{KindRef, Watch};
use windlass::discovery::Discovery;
use windlass::informer::InformerConfig;
use windlass::informers::Informers;
use windlass_apiserver::RunningServer;
use windlass_tests::forward::Forward;

use super::load::{PODS, REPLICASETS, create_many, get, http, replicaset_body};
use super::table::thousands;
use super::{REPLICAS, as_instances, durable_server, plugin_path, ready_host};

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Windlass,
    Peer,
}

pub(crate) struct Converged {
    pub(crate) seconds: f64,
    pub(crate) pods: u64,
    /// CPU seconds this process spent from the first create to converged:
    /// the server's, the load's and the side's (which runs in-process).
    pub(crate) cpu: Option<f64>,
}

/// CPU seconds (user + system) used by a process or thread, from its
/// `stat` file (Linux).
fn cpu_of(stat: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(stat).ok()?;
    // Fields after the command name, which ends at the last ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<f64>().ok();
    // utime and stime are fields 14 and 15, the 12th and 13th after the name;
    // the kernel counts in USER_HZ, 100 on Linux.
    Some((ticks(11)? + ticks(12)?) / 100.0)
}

/// CPU seconds this process has used.
fn cpu_seconds() -> Option<f64> {
    cpu_of("/proc/self/stat")
}

/// CPU seconds of this process's `apiserver` threads (the server and the
/// load), for `WINDLASS_BENCH_CPU_SPLIT`.
fn server_cpu_seconds() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    tasks
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.trim_end().starts_with("apiserver"))
        })
        .filter_map(|t| cpu_of(&t.path().join("stat").to_string_lossy()))
        .sum()
}

/// Every run of each side, in the order they ran (alternated).
pub(crate) struct Rounds {
    pub(crate) replicasets: u64,
    pub(crate) windlass: Vec<Converged>,
    pub(crate) peer: Vec<Converged>,
}

/// The median of `xs` (the mean of the middle two for an even count).
pub(crate) fn median(xs: &[f64]) -> f64 {
    let mut xs = xs.to_vec();
    xs.sort_by(f64::total_cmp);
    match xs.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => xs[n / 2],
        n => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

/// `rounds` × (windlass, then the peer), each on a fresh durable server,
/// after one unmeasured round of each.
///
/// The warm-up round is there because both sides and the server share
/// this process's heap. Without it the first run grows the heap (the
/// allocator's fresh pages, each faulted in and zeroed by the kernel:
/// `clear_page_erms` was 15% of the first run's samples and nil in the
/// second) and every later run reuses it, so whichever side ran first
/// paid for the other: windlass 1.85 s in round 1, 1.48 s in round 2,
/// against the peer's 1.48 and 1.47 s.
pub(crate) fn alternated(
    servers: &Runtime,
    controllers: &Runtime,
    replicasets: u64,
    rounds: u64,
) -> Rounds {
    let mut out = Rounds {
        replicasets,
        windlass: Vec::new(),
        peer: Vec::new(),
    };
    let once = |side, label: &str| {
        eprintln!("convergence {label}:");
        let dir = tempfile::tempdir().expect("a temporary data directory");
        let server = servers.block_on(durable_server(dir.path()));
        let c = converge(servers, controllers, &server, replicasets, side);
        servers.block_on(server.shutdown());
        c
    };
    for side in [Side::Windlass, Side::Peer] {
        once(side, "warm-up (not counted)");
    }
    for round in 1..=rounds {
        for side in [Side::Windlass, Side::Peer] {
            let c = once(side, &format!("round {round}/{rounds}"));
            match side {
                Side::Windlass => out.windlass.push(c),
                Side::Peer => out.peer.push(c),
            }
        }
    }
    out
}

/// Watches ReplicaSets (through a windlass informer of the bench's own) and
/// counts those whose status says [`REPLICAS`].
pub(crate) struct Observer {
    pub(crate) _informers: Informers,
    pub(crate) _informer: Arc<windlass::informer::Informer>,
    pub(crate) done: Arc<Mutex<HashSet<Arc<str>>>>,
}

impl Observer {
    pub(crate) async fn start(client: ApiClient) -> Self {
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

    pub(crate) fn converged(&self) -> u64 {
        self.done.lock().unwrap_or_else(|e| e.into_inner()).len() as u64
    }
}

/// The peer's settings: its defaults, or `WINDLASS_BENCH_PEER_CONCURRENCY`
/// reconciles at once (0: unbounded).
pub(crate) fn peer_config() -> windlass_peer::replicaset::Config {
    let mut config = windlass_peer::replicaset::Config::default();
    if let Some(n) = std::env::var("WINDLASS_BENCH_PEER_CONCURRENCY")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        config.concurrency = n;
    }
    config
}

/// Live pods in `default`, counted from one list.
pub(crate) async fn live_pods(addr: SocketAddr) -> u64 {
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

pub(crate) fn converge(
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
    // `WINDLASS_BENCH_RS_CONCURRENCY=N` runs the plugin as an instance
    // with `maxConcurrency: N` instead of its manifest's 16: a diagnostic
    // of how much the row owes to concurrency, never the default.
    let instance = std::env::var("WINDLASS_BENCH_RS_CONCURRENCY")
        .ok()
        .map(|n| {
            as_instances(
                "replicaset",
                &format!("- name: replicaset\n  maxConcurrency: {n}\n"),
            )
        });
    let plugin_file = match &instance {
        Some((_, file)) => file.clone(),
        None => plugin_path("replicaset"),
    };
    let (observer, windlass, peer, counter) = controllers.block_on(async {
        let client = ApiClient::from_kubeconfig_yaml(&kubeconfig)
            .await
            .expect("client");
        let observer = Observer::start(client.clone()).await;
        // `WINDLASS_BENCH_COUNT_REQUESTS`: the side's requests go through a
        // proxy that counts them by verb and resource (a diagnostic: the
        // proxy's hop slows the side).
        let counter = match std::env::var_os("WINDLASS_BENCH_COUNT_REQUESTS") {
            Some(_) => Some(RequestCounter::start(addr).await),
            None => None,
        };
        let side_config = match &counter {
            Some(c) => c.forward.kubeconfig(&kubeconfig, addr),
            None => kubeconfig.clone(),
        };
        let (mut windlass, mut peer) = (None, None);
        match side {
            Side::Windlass => {
                let client = ApiClient::from_kubeconfig_yaml(&side_config)
                    .await
                    .expect("client");
                windlass = Some(ready_host(client, &[&plugin_file]).await);
            }
            Side::Peer => {
                let client = windlass_peer::client_from_kubeconfig_yaml(&side_config)
                    .await
                    .expect("client");
                peer = Some(windlass_peer::replicaset::start(client, peer_config()).await);
            }
        }
        (observer, windlass, peer, counter)
    });

    let started = Instant::now();
    let cpu_before = cpu_seconds();
    let server_before = server_cpu_seconds();
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
    let cpu = cpu_before.zip(cpu_seconds()).map(|(b, a)| a - b);
    if std::env::var_os("WINDLASS_BENCH_CPU_SPLIT").is_some() {
        eprintln!(
            "  {name}: {seconds:.2} s; CPU s: {:.1} in all, {:.1} on the server's and load's threads",
            cpu.unwrap_or(f64::NAN),
            server_cpu_seconds() - server_before
        );
    }
    if let Some(counter) = &counter {
        eprintln!("  {name}: requests by verb and resource, start to converged:");
        for ((verb, resource), n) in counter.counts() {
            eprintln!("    {verb:6} {resource:40} {n}");
        }
    }
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
    Converged { seconds, pods, cpu }
}

/// Counts the requests through it by verb and resource (the path with
/// namespaces and names dropped, and whether it is a watch).
struct RequestCounter {
    forward: Forward,
    counts: Arc<Mutex<BTreeMap<(String, String), u64>>>,
}

impl RequestCounter {
    async fn start(upstream: SocketAddr) -> Self {
        let counts = Arc::<Mutex<BTreeMap<_, u64>>>::default();
        let seen = counts.clone();
        let forward = Forward::start(upstream, move |req, path| {
            let (path, query) = path.split_once('?').unwrap_or((path, ""));
            let mut parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
            if let Some(i) = parts.iter().position(|p| *p == "namespaces")
                && parts.len() > i + 2
            {
                parts.drain(i..i + 2);
            }
            // Drop a name, keep a subresource.
            let base = if parts.first() == Some(&"api") { 2 } else { 3 };
            if parts.len() > base + 1 {
                parts.remove(base + 1);
            }
            let mut resource = parts.join("/");
            if query.contains("watch=true") || query.contains("watch=1") {
                resource.push_str(" (watch)");
            }
            *seen
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry((req.method().to_string(), resource))
                .or_default() += 1;
        })
        .await;
        Self { forward, counts }
    }

    fn counts(&self) -> Vec<((String, String), u64)> {
        let counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        counts.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }
}

//! The density part: the same ReplicaSet logic as N instances in one host
//! (`replicaset.instances.yaml`, each instance selecting its own label) vs
//! N native kube-rs processes (the peer, each selecting the same label),
//! on a fresh durable server per side preloaded with pods of other
//! workloads. Each side runs in child processes (this bench re-executed),
//! so resident memory is theirs alone: the host's one process, or the sum
//! of the N peers'.
//!
//! Timed: spawn → every instance synced (all its watches listed), then the
//! ReplicaSets (the same number at every N, each labelled for one instance
//! in turn) created at once → every status at its replicas (the
//! convergence part's observer). Then the children's resident memory is
//! read. The watches each side holds are counted afterwards, in a second,
//! untimed start behind the counting proxy ([`super::census`]).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use windlass::client::ApiClient;
use windlass::host::Host;
use windlass::runtime::RuntimeConfig;

use super::census::Census;
use super::converge::{Observer, live_pods};
use super::load::{PODS, REPLICASETS, create_many, labelled_replicaset, pod_body};
use super::{
    CHILD_ANSWER, CHILD_KUBECONFIG, CHILD_ROLE, REPLICAS, durable_server, host_config, plugin_path,
    runtime,
};

/// The child's plugin file (a `replicaset.wasm` with its instances file).
const CHILD_PLUGIN: &str = "WINDLASS_BENCH_PLUGIN";
/// The child's precompiled-artifact directory.
const CHILD_ARTIFACTS: &str = "WINDLASS_BENCH_ARTIFACTS";
/// The label selector a peer child reconciles.
const CHILD_SELECTOR: &str = "WINDLASS_BENCH_SELECTOR";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Windlass,
    Peer,
}

/// One side at one N.
pub(crate) struct DensitySide {
    /// Spawn → every instance synced.
    pub(crate) sync_secs: f64,
    /// First create → every status at its replicas.
    pub(crate) converge_secs: f64,
    /// Live pods after convergence (N × ReplicaSets × replicas expected).
    pub(crate) pods: u64,
    /// Resident memory of the side's processes after convergence.
    pub(crate) rss: u64,
    /// Watches open on the server, by what they watch.
    pub(crate) watches: BTreeMap<String, u64>,
    /// Reconciles the side ran, from its start to its stop (all instances
    /// or processes together).
    pub(crate) reconciles: u64,
}

impl DensitySide {
    pub(crate) fn open_watches(&self) -> u64 {
        self.watches.values().sum()
    }
}

pub(crate) struct Density {
    pub(crate) n: u64,
    /// Pods preloaded (other workloads'), and ReplicaSets in all (split
    /// evenly among the instances).
    pub(crate) preloaded: u64,
    pub(crate) replicasets: u64,
    pub(crate) windlass: DensitySide,
    pub(crate) peer: DensitySide,
}

fn instance(i: u64) -> String {
    format!("i{i}")
}

fn selector(i: u64) -> String {
    format!("{}={}", super::load::INSTANCE_LABEL, instance(i))
}

/// A plugin directory with `replicaset.wasm` run as `n` instances.
fn plugin_dir(n: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a plugin directory");
    std::fs::copy(
        plugin_path("replicaset"),
        dir.path().join("replicaset.wasm"),
    )
    .expect("copy replicaset.wasm");
    let mut yaml = String::from("instances:\n");
    for i in 0..n {
        yaml += &format!(
            "- name: rs-{}\n  labelSelector: {}\n",
            instance(i),
            selector(i)
        );
    }
    std::fs::write(dir.path().join("replicaset.instances.yaml"), yaml)
        .expect("write the instances file");
    dir
}

pub(crate) fn density(
    servers: &Runtime,
    controllers: &Runtime,
    n: u64,
    preloaded: u64,
    replicasets: u64,
) -> Density {
    let plugins = plugin_dir(n);
    let artifacts = tempfile::tempdir().expect("an artifact directory");
    // Compiled once here, so each start reads the artifact as a deployed
    // host with its artifact directory does.
    windlass::runtime::Runtime::new(RuntimeConfig {
        artifact_dir: Some(artifacts.path().to_path_buf()),
        ..RuntimeConfig::default()
    })
    .expect("runtime")
    .load_file(&plugin_path("replicaset"))
    .expect("replicaset compiles");
    let plugin = plugins.path().join("replicaset.wasm");
    let run = |side| {
        run_side(
            servers,
            controllers,
            n,
            preloaded,
            replicasets,
            side,
            &plugin,
            artifacts.path(),
        )
    };
    Density {
        n,
        preloaded,
        replicasets,
        windlass: run(Side::Windlass),
        peer: run(Side::Peer),
    }
}

#[allow(clippy::too_many_arguments)]
fn run_side(
    servers: &Runtime,
    controllers: &Runtime,
    n: u64,
    preloaded: u64,
    total: u64,
    side: Side,
    plugin: &Path,
    artifacts: &Path,
) -> DensitySide {
    let name = match side {
        Side::Windlass => format!("windlass, {n} instance(s) in one host"),
        Side::Peer => format!("{n} kube-rs peer process(es)"),
    };
    eprintln!("density: {name}");
    let dir = tempfile::tempdir().expect("a temporary data directory");
    let server = servers.block_on(durable_server(dir.path()));
    let addr = server.addr();
    servers.block_on(create_many(
        addr, PODS, 0, preloaded, None, "pods", pod_body,
    ));
    let kubeconfig = server.kubeconfig();

    let started = Instant::now();
    let children = Children::spawn(side, n, &kubeconfig, plugin, artifacts);
    children.wait_synced(&name);
    let sync_secs = started.elapsed().as_secs_f64();

    let observer = controllers.block_on(async {
        let client = ApiClient::from_kubeconfig_yaml(&kubeconfig)
            .await
            .expect("client");
        Observer::start(client).await
    });
    let started = Instant::now();
    let create = servers.spawn(create_many(
        addr,
        REPLICASETS,
        0,
        total,
        None,
        "replicasets",
        move |i| labelled_replicaset(i, Some(&instance(i % n))),
    ));
    let deadline = started + Duration::from_secs(300);
    while observer.converged() < total {
        assert!(
            Instant::now() < deadline,
            "{name}: {} of {total} ReplicaSets converged after 5 minutes",
            observer.converged()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let converge_secs = started.elapsed().as_secs_f64();
    servers.block_on(create).expect("creates finish");
    std::thread::sleep(Duration::from_millis(500));
    let pods = servers.block_on(live_pods(addr)) - preloaded;
    let rss = children.rss();
    let reconciles = children.stop();
    drop(observer);

    // The census: the same start again, behind the counting proxy.
    let census = servers.block_on(Census::start(addr));
    let counted = Children::spawn(
        side,
        n,
        &census.kubeconfig(&kubeconfig, addr),
        plugin,
        artifacts,
    );
    counted.wait_synced(&name);
    // A paged list is followed by its watch; let every watch open.
    let watches = settle(|| census.open());
    counted.stop();
    servers.block_on(server.shutdown());
    DensitySide {
        sync_secs,
        converge_secs,
        pods,
        rss,
        watches,
        reconciles,
    }
}

/// `read()` once it has not changed for half a second (at most 10 s).
fn settle<T: PartialEq>(read: impl Fn() -> T) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = read();
    let mut since = Instant::now();
    while Instant::now() < deadline && since.elapsed() < Duration::from_millis(500) {
        std::thread::sleep(Duration::from_millis(50));
        let now = read();
        if now != last {
            last = now;
            since = Instant::now();
        }
    }
    last
}

/// One side's child processes; each says when it is synced, then runs
/// until its stdin closes.
struct Children {
    procs: Vec<(Child, Option<ChildStdin>)>,
    answers: mpsc::Receiver<String>,
}

impl Children {
    fn spawn(side: Side, n: u64, kubeconfig: &str, plugin: &Path, artifacts: &Path) -> Self {
        let (tx, answers) = mpsc::channel();
        let roles: Vec<(&str, Option<String>)> = match side {
            Side::Windlass => vec![("density-windlass", None)],
            Side::Peer => (0..n)
                .map(|i| ("density-peer", Some(selector(i))))
                .collect(),
        };
        let procs = roles
            .into_iter()
            .map(|(role, selector)| {
                let mut cmd = Command::new(std::env::current_exe().expect("own path"));
                cmd.env(CHILD_ROLE, role)
                    .env(CHILD_KUBECONFIG, kubeconfig)
                    .env(CHILD_PLUGIN, plugin)
                    .env(CHILD_ARTIFACTS, artifacts)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit());
                if let Some(s) = selector {
                    cmd.env(CHILD_SELECTOR, s);
                }
                let mut child = cmd.spawn().expect("child starts");
                let stdout = child.stdout.take().expect("piped");
                let tx = tx.clone();
                std::thread::spawn(move || {
                    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                        if let Some(answer) = line.strip_prefix(CHILD_ANSWER) {
                            let _ = tx.send(answer.to_owned());
                        }
                    }
                });
                let stdin = child.stdin.take();
                (child, stdin)
            })
            .collect();
        Self { procs, answers }
    }

    fn wait_synced(&self, name: &str) {
        for _ in 0..self.procs.len() {
            self.answers
                .recv_timeout(Duration::from_secs(300))
                .unwrap_or_else(|_| panic!("{name}: a child did not sync within 5 minutes"));
        }
    }

    /// The children's resident memory, summed.
    fn rss(&self) -> u64 {
        self.procs
            .iter()
            .map(|(c, _)| super::sync::rss_of(c.id()).expect("a child's resident memory"))
            .sum()
    }

    /// Closes every child's stdin and waits for it to exit; returns the
    /// reconciles they ran, summed.
    fn stop(mut self) -> u64 {
        for (_, stdin) in &mut self.procs {
            drop(stdin.take());
        }
        for (child, _) in &mut self.procs {
            let status = child.wait().expect("child exits");
            assert!(status.success(), "a density child failed: {status}");
        }
        // Every reader thread ends with its child's stdout, and the
        // channel with the last of them.
        self.answers
            .iter()
            .filter_map(|a| a.strip_prefix("reconciles ")?.parse::<u64>().ok())
            .sum()
    }
}

/// Blocks until the parent closes stdin.
async fn until_stdin_closes() {
    tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
    })
    .await
    .expect("stdin reader");
}

fn answer(what: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{CHILD_ANSWER}{what}").expect("stdout");
    out.flush().expect("stdout");
}

/// A child: one host running the plugin file (with its instances file).
pub(crate) fn child_windlass() {
    let kubeconfig = std::env::var(CHILD_KUBECONFIG).expect("kubeconfig from the parent");
    let plugin = PathBuf::from(std::env::var_os(CHILD_PLUGIN).expect("plugin from the parent"));
    let artifacts = std::env::var_os(CHILD_ARTIFACTS).map(PathBuf::from);
    runtime("child", 2).block_on(async {
        let client = ApiClient::from_kubeconfig_yaml(&kubeconfig)
            .await
            .expect("client");
        let mut config = host_config();
        config.runtime.artifact_dir = artifacts;
        let host = Host::new(client, config).expect("host");
        host.load_file(&plugin).await.expect("replicaset loads");
        while !host.is_ready().await {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        answer("synced");
        until_stdin_closes().await;
        let reconciles: u64 = host
            .controller_stats()
            .await
            .iter()
            .map(|c| c.stats.reconciles)
            .sum();
        host.shutdown().await;
        answer(&format!("reconciles {reconciles}"));
    });
}

/// A child: one native peer reconciling the ReplicaSets of its selector.
pub(crate) fn child_peer() {
    let kubeconfig = std::env::var(CHILD_KUBECONFIG).expect("kubeconfig from the parent");
    let selector = std::env::var(CHILD_SELECTOR).expect("selector from the parent");
    runtime("child", 2).block_on(async {
        let client = windlass_peer::client_from_kubeconfig_yaml(&kubeconfig)
            .await
            .expect("client");
        let peer = windlass_peer::replicaset::start(
            client,
            windlass_peer::replicaset::Config {
                namespace: Some("default".into()),
                label_selector: Some(selector),
                ..windlass_peer::replicaset::Config::default()
            },
        )
        .await;
        answer("synced");
        until_stdin_closes().await;
        let reconciles = peer.reconciles();
        peer.shutdown().await;
        answer(&format!("reconciles {reconciles}"));
    });
}

/// The pods every side should leave.
pub(crate) fn expected_pods(d: &Density) -> u64 {
    d.replicasets * REPLICAS
}

//! The fairness part: a quiet plugin's event → reconcile-start latency with
//! and without a noisy neighbour in the same host. The quiet one is
//! `test-noop` run as an instance named `quiet` that selects
//! `bench=quiet` ConfigMaps; the noisy one is `test-noisy`, which requeues
//! each of its ConfigMaps at once, forever, stamping it and recording eight
//! events on every pass: once with the host's defaults (no write limit),
//! once as an instance held to 10 writes a second (burst 5), as
//! `host/tests/fairness.rs` runs it. Runs alternate alone / beside each
//! noise on fresh servers; the quiet instance's p99 comes from its
//! queue-wait histogram.
//!
//! The embedded server runs in this process, on the same cores as the
//! host, and the unlimited noise keeps it busy: the operating system then
//! shares the cores between the server's threads and the host's, which a
//! cluster's API server, elsewhere, would not take. So each round also runs
//! alone and beside the unlimited noise with the server's threads at
//! [`SERVER_NICE`]: the host's own share between its plugins.

use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use windlass::client::ApiClient;
use windlass::histogram::HistogramSnapshot;
use windlass::host::{ControllerStats, Host};

use super::load::{CONFIGMAPS, create_many};
use super::table::thousands;
use super::{as_instances, fresh_server, plugin_path, ready_host};

/// ConfigMaps the noisy plugin loops on (its max concurrency).
const NOISY_KEYS: u64 = 8;

/// One run: the quiet instance's waits, and how busy the neighbour was.
pub(crate) struct FairRun {
    pub(crate) wait: HistogramSnapshot,
    /// The noisy plugin's reconciles and writes a second during the load.
    pub(crate) noisy_reconciles: f64,
    pub(crate) noisy_writes: f64,
}

pub(crate) struct Fairness {
    pub(crate) events: u64,
    pub(crate) rate: u64,
    pub(crate) alone: Vec<FairRun>,
    /// Beside the noise with the host's default limits.
    pub(crate) noisy: Vec<FairRun>,
    /// Beside the noise held to [`LIMIT_QPS`] and [`LIMIT_BURST`].
    pub(crate) limited: Vec<FairRun>,
    /// Alone and beside the unlimited noise, the server's threads at
    /// [`SERVER_NICE`].
    pub(crate) host_alone: Vec<FairRun>,
    pub(crate) host_noisy: Vec<FairRun>,
}

/// The nice value of the server's threads in the host-share runs.
pub(crate) const SERVER_NICE: i32 = 15;

/// The write limit of the limited noisy instance.
pub(crate) const LIMIT_QPS: u32 = 10;
pub(crate) const LIMIT_BURST: u32 = 5;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Noise {
    None,
    Unlimited,
    Limited,
    /// As `None` and `Unlimited`, the server's threads at [`SERVER_NICE`].
    NoneServerLow,
    UnlimitedServerLow,
}

fn quiet_configmap(i: u64) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"quiet-{i:06}","labels":{{"bench":"quiet"}}}},"data":{{"k":"v"}}}}"#
    )
}

fn noisy_configmap(i: u64) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"noisy-{i}","labels":{{"noise":"on"}}}},"data":{{"k":"v"}}}}"#
    )
}

fn stats_of(host: &Host, controllers: &Runtime, name: &str) -> ControllerStats {
    controllers
        .block_on(host.controller_stats())
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("{name} runs"))
}

/// `yielding`: a runtime like `servers` whose threads run at [`SERVER_NICE`].
pub(crate) fn fairness(
    servers: &Runtime,
    yielding: &Runtime,
    controllers: &Runtime,
    events: u64,
    rate: u64,
    rounds: u64,
) -> Fairness {
    // test-noop as the instance `quiet`, on its own label.
    let (_quiet_dir, quiet) =
        as_instances("test-noop", "- name: quiet\n  labelSelector: bench=quiet\n");
    // test-noisy under its own name, held to the limit.
    let (_limited_dir, limited) = as_instances(
        "test-noisy",
        &format!("- name: test-noisy\n  writeQPS: {LIMIT_QPS}\n  writeBurst: {LIMIT_BURST}\n"),
    );
    let unlimited = plugin_path("test-noisy");
    let mut out = Fairness {
        events,
        rate,
        alone: Vec::new(),
        noisy: Vec::new(),
        limited: Vec::new(),
        host_alone: Vec::new(),
        host_noisy: Vec::new(),
    };
    for round in 1..=rounds {
        for noise in [
            Noise::None,
            Noise::Unlimited,
            Noise::Limited,
            Noise::NoneServerLow,
            Noise::UnlimitedServerLow,
        ] {
            let loud = Some(unlimited.as_path());
            let (what, noisy, server) = match noise {
                Noise::None => ("alone", None, servers),
                Noise::Unlimited => ("beside test-noisy", loud, servers),
                Noise::Limited => (
                    "beside test-noisy, limited",
                    Some(limited.as_path()),
                    servers,
                ),
                Noise::NoneServerLow => ("alone, the server niced", None, yielding),
                Noise::UnlimitedServerLow => {
                    ("beside test-noisy, the server niced", loud, yielding)
                }
            };
            eprintln!("fairness round {round}/{rounds}: quiet plugin {what}");
            let run = run(server, controllers, &quiet, noisy, events, rate);
            match noise {
                Noise::None => out.alone.push(run),
                Noise::Unlimited => out.noisy.push(run),
                Noise::Limited => out.limited.push(run),
                Noise::NoneServerLow => out.host_alone.push(run),
                Noise::UnlimitedServerLow => out.host_noisy.push(run),
            }
        }
    }
    out
}

fn run(
    servers: &Runtime,
    controllers: &Runtime,
    quiet: &std::path::Path,
    noisy: Option<&std::path::Path>,
    events: u64,
    rate: u64,
) -> FairRun {
    let server = servers.block_on(fresh_server());
    let kubeconfig = server.kubeconfig();
    let host = controllers.block_on(async {
        let client = ApiClient::from_kubeconfig_yaml(&kubeconfig)
            .await
            .expect("client");
        let plugins: Vec<&std::path::Path> = std::iter::once(quiet).chain(noisy).collect();
        ready_host(client, &plugins).await
    });
    if noisy.is_some() {
        servers.block_on(create_many(
            server.addr(),
            CONFIGMAPS,
            0,
            NOISY_KEYS,
            None,
            "noisy configmaps",
            noisy_configmap,
        ));
        // The loop is going before the quiet load starts.
        let deadline = Instant::now() + Duration::from_secs(30);
        while stats_of(&host, controllers, "test-noisy").stats.reconciles < 2 * NOISY_KEYS {
            assert!(
                Instant::now() < deadline,
                "test-noisy did not get going in 30 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let noisy_before = noisy.map(|_| stats_of(&host, controllers, "test-noisy").stats);
    let before = stats_of(&host, controllers, "quiet").stats.queue_wait;
    let started = Instant::now();
    servers.block_on(create_many(
        server.addr(),
        CONFIGMAPS,
        0,
        events,
        Some(rate),
        "quiet configmaps",
        quiet_configmap,
    ));
    let deadline = Instant::now() + Duration::from_secs(60);
    let wait = loop {
        let wait = stats_of(&host, controllers, "quiet")
            .stats
            .queue_wait
            .since(&before);
        if wait.count() >= events {
            break wait;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {} quiet reconciles started a minute after the load",
            thousands(wait.count()),
            thousands(events)
        );
        std::thread::sleep(Duration::from_millis(1));
    };
    let secs = started.elapsed().as_secs_f64();
    let (noisy_reconciles, noisy_writes) = match noisy_before {
        Some(then) => {
            let now = stats_of(&host, controllers, "test-noisy").stats;
            (
                (now.reconciles - then.reconciles) as f64 / secs,
                (now.writes - then.writes) as f64 / secs,
            )
        }
        None => (0.0, 0.0),
    };
    controllers.block_on(host.shutdown());
    servers.block_on(server.shutdown());
    FairRun {
        wait,
        noisy_reconciles,
        noisy_writes,
    }
}

//! The latency part: ConfigMap creates at a steady rate against a no-op
//! controller on each side; event → reconcile start.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use windlass::client::ApiClient;
use windlass::histogram::{Histogram, HistogramSnapshot};
use windlass_apiserver::RunningServer;

use super::load::{CONFIGMAPS, configmap_body, create_many};
use super::{Sizes, as_instances, ready_host};

pub(crate) struct Latency {
    /// Events per second asked for and reached, and how many.
    pub(crate) target: u64,
    pub(crate) rate: f64,
    pub(crate) events: u64,
    /// From the first create until every event's reconcile had started.
    pub(crate) drained: f64,
    pub(crate) wait: HistogramSnapshot,
    /// Reconcile durations (windlass only).
    pub(crate) reconcile: Option<HistogramSnapshot>,
}

/// The loads each side gets, in order: a light one (a tenth of the rate and
/// of the events) that shows the floor, then the target rate.
pub(crate) fn loads(sizes: Sizes) -> [(u64, u64, u64); 2] {
    let light = (sizes.events / 10).max(1);
    // (first ConfigMap index, how many, per second)
    [
        (0, light, (sizes.rate / 10).max(1)),
        (light, sizes.events, sizes.rate),
    ]
}

/// Runs the loads against `server`; `read` gives the side's (queue wait,
/// reconcile duration) histograms as of now.
pub(crate) fn measure(
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

/// Reconciles at once on each side: 4, or `WINDLASS_BENCH_NOOP_CONCURRENCY`.
/// At 10,000 events a second a single worker is the tail: the watch
/// delivers events in bursts and each waits for every reconcile ahead of it
/// (p99 5–40 ms at 1 on the loaded machine, 21–37 µs at 4, both sides
/// given the same), so the row measures the host, not one queue's backlog.
pub(crate) fn concurrency() -> u16 {
    std::env::var("WINDLASS_BENCH_NOOP_CONCURRENCY")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4)
}

pub(crate) fn latency_windlass(
    servers: &Runtime,
    controllers: &Runtime,
    server: &RunningServer,
    sizes: Sizes,
) -> Vec<Latency> {
    eprintln!("latency: windlass with test-noop");
    let kubeconfig = server.kubeconfig();
    // test-noop's manifest asks for one worker; it runs as an instance
    // with `concurrency()`, as the peer does.
    let (_dir, plugin_file) = as_instances(
        "test-noop",
        &format!("- name: test-noop\n  maxConcurrency: {}\n", concurrency()),
    );
    let host = controllers.block_on(async {
        let client = ApiClient::from_kubeconfig_yaml(&kubeconfig)
            .await
            .expect("client");
        ready_host(client, &[&plugin_file]).await
    });
    let result = measure(servers, server, sizes, || {
        let stats = controllers
            .block_on(host.controller_stats())
            .into_iter()
            .find(|c| c.name == "test-noop")
            .map(|c| c.stats)
            .expect("test-noop runs");
        (stats.queue_wait, Some(stats.reconcile_time))
    });
    controllers.block_on(host.shutdown());
    result
}

pub(crate) fn latency_peer(
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
        windlass_peer::probe::Probe::start(
            client,
            None,
            concurrency(),
            Arc::new(move |d| waits.observe(d)),
        )
        .await
    });
    let result = measure(servers, server, sizes, || (waits.snapshot(), None));
    controllers.block_on(probe.shutdown());
    result
}

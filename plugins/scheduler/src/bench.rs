//! The cost of one decision, measured natively (`cargo test -p scheduler
//! --release -- --ignored --nocapture decision_cost`): clusters of 1,000
//! and 5,000 nodes held the way the host holds its index (summaries per
//! key, amounts summed per key), pods decided one after another and bound
//! (filed under their node) as the host does after a binding. Besides
//! wall-clock time it prints counts that do not depend on the machine:
//! summaries decoded and node totals read per decision.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use windlass_sdk::{Error, IndexEntry, Object};

use crate::api;
use crate::index;
use crate::keys;
use crate::plugins::Usage;
use crate::pod::PodInfo;
use crate::schedule::{self, Decision};
use crate::snapshot::{Cluster, Stats};
use crate::testutil::{node_json, pod_json};

/// The host's index, in memory: per key, the summaries and amount sums.
#[derive(Default)]
struct Index {
    summaries: HashMap<String, Vec<Vec<u8>>>,
    sums: HashMap<String, [i64; 6]>,
    /// Time spent answering reads: the host's share of a decision.
    host: Duration,
}

impl Index {
    fn file(&mut self, e: &IndexEntry) {
        for k in &e.keys {
            self.summaries
                .entry(k.clone())
                .or_default()
                .push(e.summary.clone());
            let sums = self.sums.entry(k.clone()).or_default();
            for (s, a) in sums.iter_mut().zip(&e.amounts) {
                *s += a;
            }
        }
    }

    fn add(&mut self, json: &str) {
        let obj = Object::from_json(json).unwrap();
        if let Some(e) = index::index(&obj) {
            self.file(&e);
        }
    }
}

impl Cluster for Index {
    fn nodes(&mut self, key: &str) -> Result<Vec<Vec<u8>>, Error> {
        let t = Instant::now();
        let r = self.nodes_inner(key);
        self.host += t.elapsed();
        r
    }

    fn node_count(&mut self) -> Result<usize, Error> {
        Ok(self.sums.get(keys::NODES).map_or(0, |s| s[0] as usize))
    }

    fn pods(&mut self, key: &str) -> Result<Vec<Vec<u8>>, Error> {
        let t = Instant::now();
        let r = self.pods_inner(key);
        self.host += t.elapsed();
        r
    }

    /// Budgets are read through the SDK harness's cache in the tests that
    /// need them; none here.
    fn budgets(&mut self) -> Result<Vec<Object>, Error> {
        Ok(Vec::new())
    }

    fn owned(&mut self, owner: &str, nodes: &[&[u8]]) -> Result<Vec<i64>, Error> {
        let t = Instant::now();
        let r = nodes
            .iter()
            .map(|n| {
                let key = keys::owned_on(owner, std::str::from_utf8(n).unwrap());
                self.sums.get(&key).map_or(0, |s| s[3])
            })
            .collect();
        self.host += t.elapsed();
        Ok(r)
    }

    fn usage(&mut self, nodes: &[&[u8]]) -> Result<Vec<Usage>, Error> {
        let t = Instant::now();
        let r = self.usage_inner(nodes);
        self.host += t.elapsed();
        r
    }
}

impl Index {
    // Returned by copy, as the host copies them into the plugin's memory.
    fn nodes_inner(&mut self, key: &str) -> Result<Vec<Vec<u8>>, Error> {
        Ok(self.summaries.get(key).cloned().unwrap_or_default())
    }

    fn pods_inner(&mut self, key: &str) -> Result<Vec<Vec<u8>>, Error> {
        Ok(self.summaries.get(key).cloned().unwrap_or_default())
    }

    fn usage_inner(&mut self, nodes: &[&[u8]]) -> Result<Vec<Usage>, Error> {
        // The host's side of `totals`: not the plugin's cost, so kept cheap
        // (the key built in place, one hash lookup per node).
        let mut key = String::with_capacity(64);
        Ok(nodes
            .iter()
            .map(|n| {
                key.clear();
                key.push_str("n/");
                key.push_str(std::str::from_utf8(n).unwrap());
                Usage::from_totals(&self.sums.get(&key).copied().unwrap_or_default())
            })
            .collect())
    }
}

fn cluster(nodes: usize) -> Index {
    let mut c = Index::default();
    for i in 0..nodes {
        let name = format!("node-{i:05}");
        let zone = format!("zone-{}", i % 3);
        c.add(&node_json(
            &name,
            "32",
            "128Gi",
            "110",
            &[
                ("kubernetes.io/hostname", &name),
                ("kubernetes.io/os", "linux"),
                ("kubernetes.io/arch", "amd64"),
                ("topology.kubernetes.io/zone", &zone),
                ("windlass.dev/simulated", "true"),
            ],
            &[],
        ));
    }
    c
}

const PLAIN: &str = r#"{"containers":[{"name":"web","image":"nginx","resources":{"requests":{"cpu":"100m","memory":"128Mi"}}}]}"#;
const ANTI: &str = r#"{"containers":[{"name":"web","image":"nginx","resources":{"requests":{"cpu":"100m","memory":"128Mi"}}}],
    "affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
      {"labelSelector":{"matchLabels":{"app":"anti"}},"topologyKey":"kubernetes.io/hostname"}]}}}"#;

/// Decides and binds `count` pods (scaled by `SCHEDULER_BENCH_SCALE`, in
/// percent, for runs under valgrind), and prints per decision: the time in
/// the plugin's code (the time answering reads, the host's share, apart),
/// for the first and the last tenth of the pods, and what it read.
fn run(c: &mut Index, app: &str, spec: &str, count: usize) {
    let scale: usize =
        std::env::var("SCHEDULER_BENCH_SCALE").map_or(100, |s| s.parse().expect("a percentage"));
    let count = (count * scale / 100).max(1);
    let mut plugin = Vec::with_capacity(count);
    let mut host = Duration::ZERO;
    let mut totals = Stats::default();
    for i in 0..count {
        let name = format!("{app}-{i:05}");
        let labels = [("app", app), ("pod-template-hash", "5d8f7c")];
        // Owned by a ReplicaSet, as a Deployment's pods are (so that the
        // default spread constraints are scored).
        let mut json: serde_json::Value =
            serde_json::from_str(&pod_json(&name, &labels, spec)).unwrap();
        json["metadata"]["ownerReferences"] = serde_json::json!([{"apiVersion": "apps/v1",
            "kind": "ReplicaSet", "name": app, "uid": format!("uid-{app}"), "controller": true}]);
        let json = json.to_string();
        let host_before = c.host;
        let t = Instant::now();
        let view: api::PodView<'_> = serde_json::from_str(&json).unwrap();
        let pod = PodInfo::new(&view);
        let mut stats = Stats::default();
        let d = schedule::decide(&pod, c, &mut stats).unwrap();
        let spent = t.elapsed();
        let reads = c.host - host_before;
        host += reads;
        plugin.push(spent - reads);
        let Decision::Bind(node) = d else {
            panic!("{name}: {d:?}");
        };
        let mut bound: serde_json::Value = serde_json::from_str(&json).unwrap();
        bound["spec"]["nodeName"] = node.into();
        c.add(&bound.to_string());
        totals.nodes += stats.nodes;
        totals.pods += stats.pods;
        totals.usage_reads += stats.usage_reads;
        totals.lookups += stats.lookups;
        totals.filtered += stats.filtered;
        totals.feasible += stats.feasible;
    }
    let tenth = (count / 10).max(1);
    let avg = |s: &[Duration]| s.iter().sum::<Duration>() / s.len() as u32;
    let n = count as f64;
    let all: Duration = plugin.iter().sum();
    println!(
        "{app:>5} × {count} on {} nodes: plugin {:?}/decision ({:.0}/s; first tenth {:?}, last tenth {:?}), \
         reads {:?}/decision; per decision {:.0} node summaries, {:.1} pod summaries, {:.0} node totals, \
         {:.1} pod lookups, {:.0} nodes filtered, {:.0} feasible",
        c.sums.get(keys::NODES).map_or(0, |s| s[0]),
        all / count as u32,
        n / all.as_secs_f64(),
        avg(&plugin[..tenth]),
        avg(&plugin[count - tenth..]),
        host / count as u32,
        totals.nodes as f64 / n,
        totals.pods as f64 / n,
        totals.usage_reads as f64 / n,
        totals.lookups as f64 / n,
        totals.filtered as f64 / n,
        totals.feasible as f64 / n,
    );
}

#[test]
#[ignore = "a benchmark: run with --release -- --ignored --nocapture"]
fn decision_cost() {
    // SCHEDULER_BENCH_NODES=1000 runs one size only.
    let sizes: Vec<usize> = match std::env::var("SCHEDULER_BENCH_NODES") {
        Ok(n) => vec![n.parse().expect("a number of nodes")],
        Err(_) => vec![100, 1000, 5000],
    };
    for nodes in sizes {
        let mut c = cluster(nodes);
        if std::env::var("SCHEDULER_BENCH_ANTI_ONLY").is_err() {
            run(&mut c, "plain", PLAIN, 10 * nodes.min(1000));
        }
        if std::env::var("SCHEDULER_BENCH_PLAIN_ONLY").is_err() {
            run(&mut c, "anti", ANTI, nodes.min(1000));
        }
    }
}

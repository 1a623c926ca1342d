//! Test helpers: nodes and pods from a few words, and an in-memory
//! [`Cluster`] filed by the plugin's own `index`.

use serde_json::{Map, Value, json};
use windlass_sdk::{Error, IndexEntry, Object};

use crate::api;
use crate::keys;
use crate::node::NodeInfo;
use crate::plugins::Usage;
use crate::pod::PodInfo;
use crate::schedule::{self, Decision};
use crate::snapshot::{Cluster, Lookups, Snapshot, Stats};

/// A node summary.
pub(crate) struct TestNode(pub(crate) Vec<u8>);

impl TestNode {
    pub(crate) fn info(&self) -> NodeInfo<'_> {
        NodeInfo::decode(&self.0).expect("a node summary")
    }
}

fn object_of(pairs: &[(&str, &str)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
            .collect::<Map<_, _>>(),
    )
}

/// A Node's JSON: allocatable `cpu`, `memory`, `pods`; `taints` as (key, value, effect).
pub(crate) fn node_json(
    name: &str,
    cpu: &str,
    memory: &str,
    pods: &str,
    labels: &[(&str, &str)],
    taints: &[(&str, &str, &str)],
) -> String {
    let taints: Vec<Value> = taints
        .iter()
        .map(|(k, v, e)| json!({"key": k, "value": v, "effect": e}))
        .collect();
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": object_of(labels)},
        "spec": {"taints": taints},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods,
                                   "ephemeral-storage": "100Gi"}},
    })
    .to_string()
}

fn summary_of(json: &str) -> TestNode {
    let view: api::NodeView<'_> = serde_json::from_str(json).expect("node JSON");
    TestNode(NodeInfo::encode(&view))
}

/// A node with 4 cpu, 8Gi and 110 pods.
pub(crate) fn node(name: &str, labels: &[(&str, &str)], taints: &[(&str, &str, &str)]) -> TestNode {
    summary_of(&node_json(name, "4", "8Gi", "110", labels, taints))
}

/// A cordoned node.
pub(crate) fn unschedulable_node(name: &str) -> TestNode {
    let mut v: Value = serde_json::from_str(&node_json(name, "4", "8Gi", "110", &[], &[])).unwrap();
    v["spec"]["unschedulable"] = json!(true);
    summary_of(&v.to_string())
}

/// A Pod's JSON in namespace `default`; `spec` is the JSON of its spec
/// (`nodeName` in it makes a bound pod).
pub(crate) fn pod_json(name: &str, labels: &[(&str, &str)], spec: &str) -> String {
    pod_json_in("default", name, labels, spec)
}

pub(crate) fn pod_json_in(ns: &str, name: &str, labels: &[(&str, &str)], spec: &str) -> String {
    let spec: Value = serde_json::from_str(spec).expect("spec JSON");
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}"),
                     "labels": object_of(labels)},
        "spec": spec,
    })
    .to_string()
}

/// Runs `f` on the scheduling view of a pod.
pub(crate) fn with_pod<R>(
    name: &str,
    labels: &[(&str, &str)],
    spec: &str,
    f: impl FnOnce(&PodInfo<'_>) -> R,
) -> R {
    let json = pod_json(name, labels, spec);
    let view: api::PodView<'_> = serde_json::from_str(&json).expect("pod JSON");
    f(&PodInfo::new(&view))
}

/// A cluster held in memory, filed by the plugin's `index`.
#[derive(Default, Clone)]
pub(crate) struct TestCluster {
    entries: Vec<IndexEntry>,
    /// How many times `usage` was asked, and for how many nodes.
    pub(crate) usage_calls: usize,
}

impl TestCluster {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds an object (a Node or Pod JSON) as the host would file it.
    pub(crate) fn add(&mut self, json: &str) -> &mut Self {
        let obj = Object::from_json(json).expect("object JSON");
        if let Some(e) = crate::index::index(&obj) {
            self.entries.push(e);
        }
        self
    }

    fn under<'s>(&'s self, key: &'s str) -> impl Iterator<Item = &'s IndexEntry> + 's {
        self.entries
            .iter()
            .filter(move |e| e.keys.iter().any(|k| k == key))
    }

    /// Decides for the pod in `json`.
    pub(crate) fn decide(&mut self, json: &str) -> (Decision, Stats) {
        let view: api::PodView<'_> = serde_json::from_str(json).expect("pod JSON");
        let pod = PodInfo::new(&view);
        let mut stats = Stats::default();
        let d = schedule::decide(&pod, self, &mut stats).expect("a decision");
        (d, stats)
    }

    /// Runs `f` on the snapshot a decision for `pod` would see.
    pub(crate) fn with_snapshot<R>(
        &self,
        pod: &PodInfo<'_>,
        f: impl FnOnce(&Snapshot<'_>) -> R,
    ) -> R {
        let mut me = self.clone();
        let nodes = me.nodes(keys::NODES).unwrap();
        let lookups = Lookups::fetch_for(pod, &mut me, &mut Stats::default()).unwrap();
        let snap = Snapshot::new(&nodes, &lookups);
        f(&snap)
    }
}

fn is_node(e: &IndexEntry) -> bool {
    e.keys.iter().any(|k| k == keys::NODES)
}

impl Cluster for TestCluster {
    fn nodes(&mut self, key: &str) -> Result<Vec<Vec<u8>>, Error> {
        Ok(self
            .under(key)
            .filter(|e| is_node(e))
            .map(|e| e.summary.clone())
            .collect())
    }

    fn node_count(&mut self) -> Result<usize, Error> {
        Ok(self.under(keys::NODES).count())
    }

    fn pods(&mut self, key: &str) -> Result<Vec<Vec<u8>>, Error> {
        Ok(self
            .under(key)
            .filter(|e| !is_node(e))
            .map(|e| e.summary.clone())
            .collect())
    }

    fn owned(&mut self, owner: &str, nodes: &[&[u8]]) -> Result<Vec<i64>, Error> {
        Ok(nodes
            .iter()
            .map(|n| {
                let key = keys::owned_on(owner, std::str::from_utf8(n).unwrap());
                self.under(&key)
                    .map(|e| Usage::from_totals(&e.amounts).pods)
                    .sum()
            })
            .collect())
    }

    /// Budgets are read through the SDK harness's cache in the tests that
    /// need them; none here.
    fn budgets(&mut self) -> Result<Vec<Object>, Error> {
        Ok(Vec::new())
    }

    fn usage(&mut self, nodes: &[&[u8]]) -> Result<Vec<Usage>, Error> {
        self.usage_calls += 1;
        Ok(nodes
            .iter()
            .map(|n| {
                let key = keys::node(std::str::from_utf8(n).unwrap());
                let mut sums = [0i64; 6];
                for e in self.under(&key) {
                    for (s, a) in sums.iter_mut().zip(&e.amounts) {
                        *s += a;
                    }
                }
                Usage::from_totals(&sums)
            })
            .collect())
    }
}

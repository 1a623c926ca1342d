//! Nodes that die, as a user meets them: the `nodelifecycle` plugin in the
//! real `windlass run` beside the chain, driven with the real `kubectl`.
//! A deleted node's pods are collected and replaced elsewhere; a node no
//! kubelet runs becomes `Unknown` and is tainted; a node whose kubelet
//! stops is marked unreachable, its pods not ready, and a pod that
//! tolerates that for a second is evicted — and stays `Terminating`, as on
//! a cluster, until the node is declared out of service. The grace periods
//! are a few seconds here (the plugin's settings) instead of 50 s and 1 min.

use std::time::Duration;

use serde_json::Value;
use windlass_tests::{Cluster, Server, condition, condition_status, example, running_and_ready};

const PLUGINS: [&str; 5] = [
    "deployment",
    "replicaset",
    "scheduler",
    "kubelet",
    "nodelifecycle",
];
const INSTANCES: &str = "instances:
- name: nodelifecycle
  settings:
    nodeMonitorGracePeriod: 3s
    nodeStartupGracePeriod: 3s
    orphanedPodQuarantine: 2s
";
const WAIT: Duration = Duration::from_secs(90);

fn taints(node: &Value) -> Vec<String> {
    let mut all: Vec<String> = node["spec"]["taints"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| format!("{}:{}", t["key"].as_str().unwrap_or(""), t["effect"]))
                .collect()
        })
        .unwrap_or_default();
    all.sort();
    all
}

fn running_on(c: &Cluster, selector: &str) -> Vec<(String, String)> {
    c.items(&["pods", "-l", selector])
        .iter()
        .filter(|p| running_and_ready(p))
        .map(|p| {
            (
                p["metadata"]["name"].as_str().unwrap_or("").to_owned(),
                p["spec"]["nodeName"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn cluster() -> Cluster {
    let c = Cluster::start_with(
        env!("CARGO_BIN_EXE_windlass"),
        &PLUGINS,
        &[("nodelifecycle.instances.yaml", INSTANCES)],
        Server::Embedded,
    );
    c.ok(&["apply", "-f", &example("nodes.yaml")], None);
    c.eventually("the simulated nodes are Ready", WAIT, || {
        let ready = c
            .items(&["nodes"])
            .iter()
            .filter(|n| condition_status(n, "Ready") == Some("True"))
            .count();
        (ready == 4).then_some(()).ok_or(format!("{ready}/4 Ready"))
    });
    c
}

/// `kubectl delete node` with pods on it: PodGC's part collects them (failed,
/// with the `DisruptionTarget` reason `DeletionByPodGC`) and the ReplicaSet
/// replaces them on the nodes left.
#[test]
fn a_deleted_nodes_pods_are_collected_and_replaced() {
    let c = cluster();
    c.ok(
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=4",
        ],
        None,
    );
    c.eventually("4 pods Running", WAIT, || {
        let live = running_on(&c, "app=web");
        (live.len() == 4).then_some(()).ok_or(format!("{live:?}"))
    });
    let before = running_on(&c, "app=web");
    let (_, gone) = before
        .iter()
        .find(|(_, node)| node != "node-gpu1")
        .cloned()
        .unwrap();
    let doomed: Vec<String> = before
        .iter()
        .filter(|(_, node)| *node == gone)
        .map(|(pod, _)| pod.clone())
        .collect();
    c.ok(&["delete", "node", &gone], None);
    c.eventually("the pods replaced on the nodes left", WAIT, || {
        let live = running_on(&c, "app=web");
        let on_gone = live.iter().filter(|(_, n)| *n == gone).count();
        let all = c.items(&["pods", "-l", "app=web"]).len();
        (live.len() == 4 && on_gone == 0 && all == 4)
            .then_some(())
            .ok_or(format!("{live:?}; {all} pods in all"))
    });
    for pod in doomed {
        let out = c.kubectl(&["get", "pod", &pod]);
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("NotFound"),
            "{pod} on the deleted node {gone} was not collected"
        );
    }
    c.stop();
}

/// A node no kubelet runs (no `windlass.dev/simulated` label) is `Unknown`
/// once its startup grace ends, and tainted unreachable, so nothing is
/// scheduled there.
#[test]
fn a_node_that_never_reports_becomes_unknown_and_is_tainted() {
    let c = cluster();
    c.ok(
        &["apply", "-f", "-"],
        Some(
            "apiVersion: v1
kind: Node
metadata:
  name: bare-1
  labels: {kubernetes.io/hostname: bare-1}
",
        ),
    );
    c.eventually("bare-1 Unknown and tainted", WAIT, || {
        let node = c.json(&["node", "bare-1"]);
        let want = [
            "node.kubernetes.io/unreachable:\"NoExecute\"",
            "node.kubernetes.io/unreachable:\"NoSchedule\"",
        ];
        (condition_status(&node, "Ready") == Some("Unknown") && taints(&node) == want)
            .then_some(())
            .ok_or(format!("{} {:?}", node["status"], taints(&node)))
    });
    let node = c.json(&["node", "bare-1"]);
    let ready = condition(&node, "Ready").unwrap();
    assert_eq!(ready["reason"], "NodeStatusNeverUpdated", "{ready}");
    assert_eq!(ready["message"], "Kubelet never posted node status.");
    for kind in ["MemoryPressure", "DiskPressure", "PIDPressure"] {
        assert_eq!(condition_status(&node, kind), Some("Unknown"), "{kind}");
    }
    let printed = c.ok(&["get", "node", "bare-1", "--no-headers"], None);
    assert!(printed.contains("NotReady"), "{printed}");
    // The simulated nodes are left alone.
    for n in c.items(&["nodes", "-l", "windlass.dev/simulated=true"]) {
        assert_eq!(
            condition_status(&n, "Ready"),
            Some("True"),
            "{}",
            n["metadata"]["name"]
        );
    }
    c.stop();
}

/// A node whose kubelet stops (the node leaves the simulated kubelet's
/// care) is marked unreachable after the monitor grace: its pods are no
/// longer ready, a pod that tolerates being unreachable for one second is
/// evicted by the taint manager and stays `Terminating` (no kubelet ends
/// it), and is removed once the node is declared out of service.
#[test]
fn a_node_whose_kubelet_stops_is_unreachable_and_its_pods_are_evicted() {
    let c = cluster();
    c.ok(
        &["apply", "-f", "-"],
        Some(
            "apiVersion: v1
kind: Pod
metadata:
  name: brief
  labels: {app: brief}
spec:
  nodeName: node-a1
  tolerations:
  - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 1}
  containers:
  - {name: main, image: nginx}
---
apiVersion: v1
kind: Pod
metadata:
  name: patient
  labels: {app: patient}
spec:
  nodeName: node-a1
  containers:
  - {name: main, image: nginx}
",
        ),
    );
    c.eventually("both pods Running on node-a1", WAIT, || {
        let n = running_on(&c, "app in (brief,patient)").len();
        (n == 2).then_some(()).ok_or(format!("{n} running"))
    });
    // The kubelet plugin runs only nodes labelled simulated: this one's
    // kubelet stops.
    c.ok(
        &["label", "node", "node-a1", "windlass.dev/simulated-"],
        None,
    );
    c.eventually("node-a1 unreachable", WAIT, || {
        let node = c.json(&["node", "node-a1"]);
        let tainted = taints(&node)
            .iter()
            .any(|t| t == "node.kubernetes.io/unreachable:\"NoExecute\"");
        (condition_status(&node, "Ready") == Some("Unknown") && tainted)
            .then_some(())
            .ok_or(format!("{} {:?}", node["status"], taints(&node)))
    });
    let node = c.json(&["node", "node-a1"]);
    let ready = condition(&node, "Ready").unwrap();
    assert_eq!(ready["reason"], "NodeStatusUnknown", "{ready}");
    assert_eq!(ready["message"], "Kubelet stopped posting node status.");

    c.eventually("patient not ready; brief evicted", WAIT, || {
        let patient = c.json(&["pod", "patient"]);
        let brief = c.json(&["pod", "brief"]);
        let target = condition(&brief, "DisruptionTarget");
        let evicted = !brief["metadata"]["deletionTimestamp"].is_null()
            && target.is_some_and(|t| t["reason"] == "DeletionByTaintManager");
        (condition_status(&patient, "Ready") == Some("False") && evicted)
            .then_some(())
            .ok_or(format!(
                "patient {}; brief {} {}",
                patient["status"]["conditions"],
                brief["metadata"]["deletionTimestamp"],
                brief["status"]["conditions"]
            ))
    });
    // Its default 300 s toleration keeps `patient` on the node meanwhile.
    let patient = c.json(&["pod", "patient"]);
    assert!(
        patient["metadata"]["deletionTimestamp"].is_null(),
        "{patient}"
    );
    let events = c.ok(
        &[
            "get",
            "events",
            "--field-selector=involvedObject.name=brief",
            "-o",
            "jsonpath={.items[*].reason}",
        ],
        None,
    );
    assert!(events.contains("TaintManagerEviction"), "{events}");
    // No kubelet ends it: `brief` stays Terminating for good ...
    std::thread::sleep(Duration::from_secs(3));
    let brief = c.json(&["pod", "brief"]);
    assert!(!brief["metadata"]["deletionTimestamp"].is_null(), "{brief}");
    // ... until the node is declared out of service.
    c.ok(
        &[
            "taint",
            "node",
            "node-a1",
            "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute",
        ],
        None,
    );
    c.eventually("brief force-deleted", WAIT, || {
        let out = c.kubectl(&["get", "pod", "brief"]);
        String::from_utf8_lossy(&out.stderr)
            .contains("NotFound")
            .then_some(())
            .ok_or(String::from_utf8_lossy(&out.stdout).into_owned())
    });
    c.stop();
}

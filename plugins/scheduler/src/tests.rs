//! The plugin through the SDK harness: reconciles applied one at a time the
//! way the host applies them, the failure event and condition, and `map`.

use std::collections::BTreeMap;

use windlass_sdk::testing::Harness;
use windlass_sdk::{EventType, Object, ObjectRef, Outcome, Time, Write, WriteFailure};

use crate::Scheduler;
use crate::quantity;

pub(crate) type H = Harness<Scheduler>;

pub(crate) fn node_yaml(
    name: &str,
    cpu: &str,
    memory: &str,
    pods: u32,
    extra_labels: &str,
) -> String {
    format!(
        r#"
---
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{kubernetes.io/hostname: {name}{extra_labels}}}
status:
  allocatable: {{cpu: "{cpu}", memory: "{memory}", pods: "{pods}", ephemeral-storage: 100Gi}}
  conditions: [{{type: Ready, status: "True", lastHeartbeatTime: "2026-01-01T00:00:00Z"}}]
"#
    )
}

pub(crate) fn pod_yaml(name: &str, labels: &str, spec: &str) -> String {
    let containers = if spec.contains("containers:") {
        ""
    } else {
        "containers: [{name: c, image: nginx}]"
    };
    format!(
        r#"
---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  uid: uid-{name}
  resourceVersion: "1"
  labels: {{{labels}}}
spec:
  {containers}
  {spec}
"#
    )
}

fn requests(cpu: &str, memory: &str) -> String {
    format!(
        r#"containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: "{cpu}", memory: "{memory}"}}}}}}]"#
    )
}

pub(crate) fn key(name: &str) -> ObjectRef {
    ObjectRef::new("v1", "Pod", "default", name)
}

pub(crate) fn pod(h: &H, name: &str) -> Object {
    h.get(&key(name)).expect("the pod")
}

pub(crate) fn node_of(h: &H, name: &str) -> Option<String> {
    pod(h, name)
        .get_str("spec.nodeName")
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
}

pub(crate) fn pod_scheduled(h: &H, name: &str) -> Option<serde_json::Value> {
    pod(h, name)
        .get("status.conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == "PodScheduled")
        .cloned()
}

pub(crate) fn failed_scheduling(out: &Outcome) -> Vec<&str> {
    out.events
        .iter()
        .filter(|e| e.type_ == EventType::Warning && e.reason == "FailedScheduling")
        .map(|e| e.message.as_str())
        .collect()
}

/// Reconciles each pending pod once, in name order, applying each outcome
/// before the next (as the host does); returns the outcomes by pod.
fn schedule_round(h: &mut H) -> BTreeMap<String, Outcome> {
    let pending: Vec<String> = h
        .list("v1", "Pod")
        .iter()
        .filter(|p| p.get_str("spec.nodeName").is_none_or(str::is_empty))
        .map(|p| p.name().to_owned())
        .collect();
    let mut outs = BTreeMap::new();
    for name in pending {
        let out = h.reconcile_key(&key(&name)).expect("reconcile");
        h.apply_outcome(&key(&name), &out).expect("apply");
        outs.insert(name, out);
    }
    outs
}

/// Asserts no node holds more than its allocatable cpu, memory and pods.
fn assert_within_capacity(h: &H) {
    for node in h.list("v1", "Node") {
        let alloc = |r: &str, parse: fn(&str) -> Option<i64>| {
            parse(node.get_str(&format!("status.allocatable.{r}")).unwrap()).unwrap()
        };
        let (mut cpu, mut memory, mut pods) = (0, 0, 0);
        for p in h.list("v1", "Pod") {
            if p.get_str("spec.nodeName") != Some(node.name()) {
                continue;
            }
            pods += 1;
            let req = |r: &str, parse: fn(&str) -> Option<i64>| {
                p.get_str(&format!("spec.containers.0.resources.requests.{r}"))
                    .and_then(parse)
                    .unwrap_or(0)
            };
            cpu += req("cpu", quantity::milli_value);
            memory += req("memory", quantity::value);
        }
        assert!(
            cpu <= alloc("cpu", quantity::milli_value),
            "{}: cpu {cpu}",
            node.name()
        );
        assert!(
            memory <= alloc("memory", quantity::value),
            "{}: memory {memory}",
            node.name()
        );
        assert!(
            pods <= alloc("pods", quantity::value),
            "{}: {pods} pods",
            node.name()
        );
    }
}

#[test]
fn manifest_declares_indexed_reads_and_the_binding_grant() {
    let h = H::new();
    let m = h.manifest();
    assert_eq!(m.name, "scheduler");
    assert!(m.reconciles.kind.is("v1", "Pod"));
    assert_eq!(
        m.reconciles.field_selector.as_deref(),
        Some("spec.nodeName=")
    );
    assert!(m.reads.iter().any(|w| w.kind.is("v1", "Node") && w.indexed));
    assert!(
        m.reads
            .iter()
            .any(|w| w.kind.is("v1", "Pod") && w.indexed && w.namespace.is_none())
    );
    assert!(m.may_write_in("v1", "Pod", Some("any"), Some("binding")));
    assert!(!m.may_write_in("v1", "Pod", Some("any"), Some("eviction")));
    // `VolumeBinding` annotates claims with the node it chose.
    assert!(m.may_write_in("v1", "PersistentVolumeClaim", Some("any"), None));
    assert_eq!(m.resync_seconds, Some(30));
    assert!(m.max_concurrency > 1);
}

#[test]
fn binds_a_pod_with_an_event() {
    let mut h = H::new()
        .with_objects(&(node_yaml("n1", "4", "8Gi", 110, "") + &pod_yaml("web-1", "app: web", "")))
        .unwrap();
    let out = h.reconcile_key(&key("web-1")).unwrap();
    let Some(Write::CreateSubresource {
        subresource, body, ..
    }) = out.writes.first()
    else {
        panic!("{out:?}");
    };
    assert_eq!(subresource, "binding");
    assert_eq!(body.get_str("target.name"), Some("n1"));
    assert_eq!(out.events.len(), 1);
    assert_eq!(out.events[0].reason, "Scheduled");
    assert_eq!(
        out.events[0].message,
        "Successfully assigned default/web-1 to n1"
    );
    h.apply_outcome(&key("web-1"), &out).unwrap();
    assert_eq!(node_of(&h, "web-1").as_deref(), Some("n1"));
    // Bound: nothing more to do.
    assert!(h.reconcile_key(&key("web-1")).unwrap().is_empty());
}

#[test]
fn a_batch_never_exceeds_capacity() {
    // 3 nodes of 2 cpu / 4Gi / 4 pods; 14 pods of 500m / 1Gi: at most 4 per node fit.
    let mut text = String::new();
    for n in ["n1", "n2", "n3"] {
        text += &node_yaml(n, "2", "4Gi", 4, "");
    }
    for i in 0..14 {
        text += &pod_yaml(&format!("web-{i:02}"), "app: web", &requests("500m", "1Gi"));
    }
    let mut h = H::new().with_objects(&text).unwrap();
    let outs = schedule_round(&mut h);
    assert_within_capacity(&h);
    let bound: Vec<_> = h
        .list("v1", "Pod")
        .iter()
        .filter_map(|p| p.get_str("spec.nodeName").map(str::to_owned))
        .collect();
    assert_eq!(bound.len(), 12);
    let pending: Vec<_> = outs
        .iter()
        .filter(|(_, o)| !failed_scheduling(o).is_empty())
        .collect();
    assert_eq!(pending.len(), 2);
    for (name, out) in pending {
        assert_eq!(
            failed_scheduling(out),
            [
                "0/3 nodes are available: 3 Insufficient cpu, 3 Insufficient memory, 3 Too many pods. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.."
            ],
            "{name}"
        );
    }
    // Again: nothing is bound past capacity, and the level-triggered
    // reconciles of the pending pods write nothing more.
    let again = schedule_round(&mut h);
    assert_within_capacity(&h);
    assert!(again.values().all(|o| o.writes.is_empty()), "{again:?}");
}

#[test]
fn required_anti_affinity_spreads_replicas_and_leaves_the_extra_one_pending() {
    let anti = r#"affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: web}}
        topologyKey: kubernetes.io/hostname"#;
    let mut text = String::new();
    for n in ["n1", "n2", "n3"] {
        text += &node_yaml(n, "8", "16Gi", 110, "");
    }
    for i in 0..4 {
        text += &pod_yaml(&format!("web-{i}"), "app: web", anti);
    }
    let mut h = H::new().with_objects(&text).unwrap();
    let outs = schedule_round(&mut h);
    let mut nodes: Vec<String> = (0..3)
        .filter_map(|i| node_of(&h, &format!("web-{i}")))
        .collect();
    nodes.sort();
    assert_eq!(nodes, ["n1", "n2", "n3"]);
    assert_eq!(node_of(&h, "web-3"), None);
    let msg = "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod..";
    assert_eq!(failed_scheduling(&outs["web-3"]), [msg]);
    let cond = pod_scheduled(&h, "web-3").expect("PodScheduled");
    assert_eq!(cond["status"], "False");
    assert_eq!(cond["reason"], "Unschedulable");
    assert_eq!(cond["message"], msg);
    // Reconciling again explains it again but writes nothing.
    let again = h.reconcile_key(&key("web-3")).unwrap();
    assert!(again.writes.is_empty(), "{again:?}");
    assert_eq!(failed_scheduling(&again), [msg]);
}

#[test]
fn existing_pods_anti_affinity_keeps_others_away() {
    let mut text = node_yaml("n1", "8", "16Gi", 110, "") + &node_yaml("n2", "8", "16Gi", 110, "");
    text += &pod_yaml(
        "db",
        "app: db",
        r#"nodeName: n1
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: web}}
        topologyKey: kubernetes.io/hostname"#,
    );
    for i in 0..3 {
        text += &pod_yaml(&format!("web-{i}"), "app: web", "");
    }
    let mut h = H::new().with_objects(&text).unwrap();
    schedule_round(&mut h);
    for i in 0..3 {
        assert_eq!(node_of(&h, &format!("web-{i}")).as_deref(), Some("n2"));
    }
}

#[test]
fn a_pod_that_fits_nowhere_is_scheduled_once_a_fitting_node_is_added() {
    let big = pod_yaml("big", "app: big", &requests("6", "1Gi"));
    let mut h = H::new()
        .with_now(Time::parse("2026-02-01T12:00:00Z").unwrap())
        .with_objects(&(node_yaml("n1", "4", "8Gi", 110, "") + &big))
        .unwrap();
    let out = h.reconcile_key(&key("big")).unwrap();
    assert_eq!(
        failed_scheduling(&out),
        [
            "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.."
        ]
    );
    h.apply_outcome(&key("big"), &out).unwrap();
    let cond = pod_scheduled(&h, "big").unwrap();
    assert_eq!(cond["lastTransitionTime"], "2026-02-01T12:00:00Z");
    // The pod is now filed as waiting; a new node requeues it.
    let n2 = windlass_sdk::testing::parse_objects(&node_yaml("n2", "8", "16Gi", 110, ""))
        .unwrap()
        .remove(0);
    h.insert(n2.clone());
    assert_eq!(h.map(&n2).unwrap(), [key("big")]);
    let out = h.reconcile_key(&key("big")).unwrap();
    h.apply_outcome(&key("big"), &out).unwrap();
    assert_eq!(node_of(&h, "big").as_deref(), Some("n2"));
    assert_eq!(out.events[0].reason, "Scheduled");
}

#[test]
fn map_requeues_waiting_pods_on_relevant_changes_only() {
    let affinity = r#"affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: db}}
        topologyKey: kubernetes.io/hostname"#;
    let mut text = node_yaml("n1", "1", "1Gi", 110, "");
    // Waits for cpu; waits for a db pod.
    text += &pod_yaml("big", "app: big", &requests("2", "1Gi"));
    text += &pod_yaml("follower", "app: web", affinity);
    text += &pod_yaml("fresh", "app: web", "");
    let mut h = H::new().with_objects(&text).unwrap();
    for name in ["big", "follower"] {
        let out = h.reconcile_key(&key(name)).unwrap();
        assert_eq!(failed_scheduling(&out).len(), 1, "{name}");
        h.apply_outcome(&key(name), &out).unwrap();
    }
    let sorted = |mut v: Vec<ObjectRef>| {
        v.sort();
        v
    };
    // A node change: every waiting pod (not the fresh one, which is queued anyway).
    let node = h.list("v1", "Node").remove(0);
    assert_eq!(sorted(h.map(&node).unwrap()), [key("big"), key("follower")]);
    // A heartbeat does not change the node's entry, so the host never calls map.
    let mut beat = node.clone();
    beat.set(
        "status.conditions.0.lastHeartbeatTime",
        "2026-01-01T00:05:00Z",
    );
    beat.set("metadata.resourceVersion", "99");
    assert_eq!(h.index(&beat), h.index(&node));
    // A pod bound somewhere: only pods waiting for pods.
    let db = windlass_sdk::testing::parse_objects(&pod_yaml("db", "app: db", "nodeName: n1"))
        .unwrap()
        .remove(0);
    h.insert(db.clone());
    assert_eq!(h.map(&db).unwrap(), [key("follower")]);
    let out = h.reconcile_key(&key("follower")).unwrap();
    h.apply_outcome(&key("follower"), &out).unwrap();
    assert_eq!(node_of(&h, "follower").as_deref(), Some("n1"));
    // A bound pod going away frees resources: every waiting pod.
    let mut leaving = db.clone();
    leaving.set("metadata.deletionTimestamp", "2026-01-01T00:06:00Z");
    assert_eq!(h.map(&leaving).unwrap(), [key("big")]);
    let mut finished = db.clone();
    finished.set("status.phase", "Succeeded");
    assert_eq!(h.map(&finished).unwrap(), [key("big")]);
    // Deleted at once (no graceful phase): the cache no longer holds it.
    h.remove(&db.object_ref());
    assert_eq!(h.map(&db).unwrap(), [key("big")]);
    h.insert(db.clone());
    // Pending pods changing requeue nothing.
    assert!(h.map(&pod(&h, "fresh")).unwrap().is_empty());
    assert!(h.map(&pod(&h, "big")).unwrap().is_empty());
    // Only what scheduling reads is in a bound pod's entry.
    let mut ready = pod(&h, "follower");
    let before = h.index(&ready);
    ready.set("status.phase", "Running");
    ready.set("status.podIP", "10.0.0.5");
    assert_eq!(h.index(&ready), before);
}

#[test]
fn no_nodes_at_all_is_a_scheduler_error() {
    let mut h = H::new().with_objects(&pod_yaml("p", "", "")).unwrap();
    let out = h.reconcile_key(&key("p")).unwrap();
    assert_eq!(
        failed_scheduling(&out),
        ["no nodes available to schedule pods"]
    );
    h.apply_outcome(&key("p"), &out).unwrap();
    let cond = pod_scheduled(&h, "p").unwrap();
    assert_eq!(cond["reason"], "SchedulerError");
    // A node appearing requeues it.
    let n = windlass_sdk::testing::parse_objects(&node_yaml("n1", "1", "1Gi", 110, ""))
        .unwrap()
        .remove(0);
    h.insert(n.clone());
    assert_eq!(h.map(&n).unwrap(), [key("p")]);
}

#[test]
fn pods_that_are_not_ours_are_left_alone() {
    let mut text = node_yaml("n1", "4", "8Gi", 110, "");
    text += &pod_yaml("other", "", "schedulerName: my-scheduler");
    text += &pod_yaml(
        "named",
        "",
        "schedulerName: default-scheduler\n  nodeName: n1",
    );
    let mut deleting = windlass_sdk::testing::parse_objects(&pod_yaml("deleting", "", ""))
        .unwrap()
        .remove(0);
    deleting.set("metadata.deletionTimestamp", "2026-01-01T00:00:00Z");
    let h = H::new().with_objects(&text).unwrap().with_object(deleting);
    for name in ["other", "named", "deleting", "missing"] {
        assert!(h.reconcile_key(&key(name)).unwrap().is_empty(), "{name}");
    }
}

#[test]
fn gated_pods_wait_with_a_condition() {
    let gated = pod_yaml("gated", "", "schedulingGates: [{name: example.com/quota}]");
    let mut h = H::new()
        .with_objects(&(node_yaml("n1", "4", "8Gi", 110, "") + &gated))
        .unwrap();
    let out = h.reconcile_key(&key("gated")).unwrap();
    assert!(out.events.is_empty());
    h.apply_outcome(&key("gated"), &out).unwrap();
    assert_eq!(node_of(&h, "gated"), None);
    let cond = pod_scheduled(&h, "gated").unwrap();
    assert_eq!(cond["reason"], "SchedulingGated");
    assert_eq!(
        cond["message"],
        "Scheduling is blocked due to non-empty scheduling gates"
    );
    assert!(h.reconcile_key(&key("gated")).unwrap().is_empty());
}

#[test]
fn a_binding_refused_as_already_assigned_is_done() {
    let mut h = H::new()
        .with_objects(&(node_yaml("n1", "4", "8Gi", 110, "") + &pod_yaml("p", "", "")))
        .unwrap();
    h.set_last_failure(Some(WriteFailure {
        write: 0,
        code: 409,
        reason: "Conflict".into(),
        message: r#"pod p is already assigned to node "n1""#.into(),
    }));
    assert!(h.reconcile_key(&key("p")).unwrap().is_empty());
    // Any other conflict (another decision took the node) decides again.
    h.set_last_failure(Some(WriteFailure {
        write: 0,
        code: 409,
        reason: "Conflict".into(),
        message: "the node's resources changed".into(),
    }));
    assert_eq!(h.reconcile_key(&key("p")).unwrap().writes.len(), 1);
}

#[test]
fn big_clusters_are_searched_through_node_shards() {
    // 150 nodes: a plain pod reads a window of shards through the host's
    // cache (`nodes/<n>` lookups and the node count in the totals).
    let mut text = String::new();
    for i in 0..150 {
        text += &node_yaml(&format!("n{i:03}"), "4", "8Gi", 110, "");
    }
    for i in 0..5 {
        text += &pod_yaml(&format!("web-{i}"), "app: web", &requests("100m", "64Mi"));
    }
    let mut h = H::new().with_objects(&text).unwrap();
    let node = h.list("v1", "Node").remove(0);
    let entry = h.index(&node).unwrap();
    assert_eq!(entry.keys.len(), 2);
    assert!(entry.keys[1].starts_with("nodes/"));
    assert_eq!(entry.amounts, [1]);
    schedule_round(&mut h);
    let placed: std::collections::BTreeSet<_> = (0..5)
        .filter_map(|i| node_of(&h, &format!("web-{i}")))
        .collect();
    assert_eq!(placed.len(), 5, "{placed:?}");
}

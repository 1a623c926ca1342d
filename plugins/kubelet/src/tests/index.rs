//! The index: bound pods filed under their node with a summary that
//! changes whenever the node's kubelet has something to do; `map` routes
//! pods and Leases to nodes.

use serde_json::json;
use windlass_sdk::IndexEntry;

use super::*;
use crate::summary::Summary;

fn entry(h: &H, o: &Object) -> Option<IndexEntry> {
    h.index(o)
}

fn summary(h: &H, o: &Object) -> Summary {
    Summary::decode(&entry(h, o).unwrap().summary).unwrap()
}

#[test]
fn the_manifest_watches_simulated_nodes_and_bound_pods() {
    let h = H::new();
    let m = h.manifest();
    assert_eq!(m.name, "kubelet");
    assert!(m.reconciles.kind.is("v1", "Node"));
    assert_eq!(
        m.reconciles.label_selector.as_deref(),
        Some("windlass.dev/simulated=true")
    );
    let pods = m.reads.iter().find(|w| w.kind.is("v1", "Pod")).unwrap();
    assert_eq!(pods.field_selector.as_deref(), Some("spec.nodeName!="));
    assert!(pods.indexed);
    assert!(m.may_write_in("v1", "Pod", Some("default"), Some("status")));
    assert!(m.may_write_in("v1", "Pod", Some("default"), None));
    assert!(m.may_write_in(
        "coordination.k8s.io/v1",
        "Lease",
        Some("kube-node-lease"),
        None
    ));
    assert!(!m.may_write_in("coordination.k8s.io/v1", "Lease", Some("default"), None));
}

#[test]
fn pods_are_filed_under_their_node_and_leases_under_their_name() {
    let h = H::new();
    let e = entry(&h, &pod("web-1", |_| {})).unwrap();
    assert_eq!(e.keys, ["node-1"]);
    assert!(e.amounts.is_empty());
    let unbound = pod("web-2", |p| p["spec"]["nodeName"] = json!(null));
    assert_eq!(entry(&h, &unbound), None);
    let lease = Object::from_value(json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "node-1", "namespace": "kube-node-lease"},
        "spec": {"renewTime": "2026-03-01T10:00:00.000000Z"},
    }))
    .unwrap();
    let e = entry(&h, &lease).unwrap();
    assert_eq!(e.keys, ["node-1"]);
    // Renewing changes nothing filed, so it wakes nothing.
    let mut renewed = lease.clone();
    renewed.set("spec.renewTime", "2026-03-01T10:00:10.000000Z");
    assert_eq!(entry(&h, &renewed), Some(e));
}

#[test]
fn map_routes_pods_and_leases_to_their_node() {
    let h = H::new();
    let node = vec![node_key()];
    assert_eq!(h.map(&pod("web-1", |_| {})).unwrap(), node);
    let lease = Object::from_value(json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "node-1", "namespace": "kube-node-lease"},
    }))
    .unwrap();
    assert_eq!(h.map(&lease).unwrap(), node);
    assert!(
        h.map(&pod("web-2", |p| p["spec"]["nodeName"] = json!("")))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn the_summary_changes_when_the_kubelet_has_work() {
    let mut h = harness(node(|_| {}), [pod("web-1", |_| {})]);
    let fresh = summary(&h, &h.get(&pod_key("web-1")).unwrap());
    assert!(fresh.attend);
    step(&mut h, 0);
    let running = h.get(&pod_key("web-1")).unwrap();
    let settled = summary(&h, &running);
    assert!(!settled.attend && !settled.deleting && !settled.ended);
    assert!(settled.ip.is_some());
    assert_eq!(settled.due, None);
    assert!(!settled.needs_reading(t(1_000_000), false));
    assert!(settled.needs_reading(t(0), true));

    // Deletion changes the entry (and so wakes the node).
    let mut deleted = running.clone();
    deleted.set("metadata.deletionTimestamp", ts(40));
    deleted.set("metadata.deletionGracePeriodSeconds", 30);
    let s = summary(&h, &deleted);
    assert_ne!(s, settled);
    assert!(s.attend && s.deleting);
    h.insert(deleted);
    step(&mut h, 10);
    // Terminating status written: nothing until the grace period ends.
    let s = summary(&h, &h.get(&pod_key("web-1")).unwrap());
    assert!(!s.attend);
    assert_eq!(s.due, Some(t(40)));

    // So does an exit scripted later, or someone else's status change.
    let mut scripted = running.clone();
    scripted.set(
        "metadata.annotations",
        json!({"windlass.dev/exit-after": "1m"}),
    );
    let s = summary(&h, &scripted);
    assert!(!s.attend);
    assert_eq!(s.due, Some(t(60)));
    let mut unready = running.clone();
    unready.set("status.containerStatuses.0.ready", false);
    assert!(summary(&h, &unready).attend);
    let mut ended = running;
    ended.set("status.phase", "Succeeded");
    let s = summary(&h, &ended);
    assert!(s.ended && !s.attend);
}

#[test]
fn a_heartbeat_reconcile_only_renews_the_lease() {
    let mut h = harness(node(|_| {}), [pod("web-1", |_| {})]);
    step(&mut h, 0);
    let out = step(&mut h, 10);
    assert_eq!(out.writes.len(), 1, "{:?}", out.writes);
    assert!(
        out.applies()
            .any(|o| o.is("coordination.k8s.io/v1", "Lease"))
    );
    assert!(out.events.is_empty());
}

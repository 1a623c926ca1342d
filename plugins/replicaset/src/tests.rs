//! Native tests of the ReplicaSet logic, through `windlass_sdk::testing`.

use windlass_sdk::testing::Harness;
use windlass_sdk::{Object, ObjectRef, Outcome, Write};

use super::ReplicaSetController;

type H = Harness<ReplicaSetController>;

fn rs_yaml(replicas: i64, status: &str) -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web
  namespace: default
  uid: rs-uid
  generation: 3
  resourceVersion: "100"
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata:
      labels: {{app: web, tier: front}}
      annotations: {{note: hi}}
    spec:
      containers: [{{name: nginx, image: "nginx:1.27"}}]
status: {status}
"#
    )
}

/// A pod owned by `web`; `ready` adds a Ready condition, `extra` more YAML
/// under `metadata`.
fn pod_yaml(name: &str, created: &str, phase: &str, ready: bool, extra: &str) -> String {
    let ready = if ready { "True" } else { "False" };
    format!(
        r#"
---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  uid: uid-{name}
  creationTimestamp: "{created}"
  labels: {{app: web, tier: front}}
  ownerReferences:
  - {{apiVersion: apps/v1, kind: ReplicaSet, name: web, uid: rs-uid, controller: true}}
  {extra}
spec: {{nodeName: node-1, containers: [{{name: nginx, image: "nginx:1.27"}}]}}
status:
  phase: {phase}
  conditions: [{{type: Ready, status: "{ready}", lastTransitionTime: "{created}"}}]
"#
    )
}

fn key() -> ObjectRef {
    ObjectRef::new("apps/v1", "ReplicaSet", "default", "web")
}

fn kept_names(out: &Outcome) -> Vec<&str> {
    let mut v: Vec<&str> = out
        .applies()
        .filter(|o| !o.name().is_empty())
        .map(Object::name)
        .collect();
    v.sort_unstable();
    v
}

fn new_pods(out: &Outcome) -> Vec<&Object> {
    out.applies().filter(|o| o.name().is_empty()).collect()
}

#[test]
fn manifest_declares_replicasets_and_pods() {
    let h = H::new();
    let m = h.manifest();
    assert_eq!(m.name, "replicaset");
    assert!(m.reconciles.kind.is("apps/v1", "ReplicaSet"));
    assert!(m.may_write("v1", "Pod"));
}

#[test]
fn creates_missing_pods_from_the_template() {
    let h = H::new().with_objects(&rs_yaml(3, "{}")).unwrap();
    let out = h.reconcile_key(&key()).unwrap();
    assert!(out.prune_owned);
    let pods = new_pods(&out);
    assert_eq!(pods.len(), 3);
    for p in pods {
        assert!(p.is("v1", "Pod"));
        assert_eq!(p.generate_name(), Some("web-"));
        assert_eq!(p.namespace(), Some("default"));
        assert_eq!(p.label("app"), Some("web"));
        assert_eq!(p.label("tier"), Some("front"));
        assert_eq!(p.annotation("note"), Some("hi"));
        assert_eq!(p.get_str("spec.containers.0.image"), Some("nginx:1.27"));
    }
    assert!(out.events.iter().any(|e| e.reason == "SuccessfulCreate"));
}

#[test]
fn keeps_existing_pods_and_adds_the_rest() {
    let text = rs_yaml(5, "{}")
        + &pod_yaml("web-a", "2026-01-01T00:00:00Z", "Running", true, "")
        + &pod_yaml("web-b", "2026-01-01T00:00:01Z", "Running", true, "");
    let h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key()).unwrap();
    assert_eq!(kept_names(&out), ["web-a", "web-b"]);
    assert_eq!(new_pods(&out).len(), 3);
    // Kept pods are listed by identity only, so `apply` changes nothing.
    let kept = out.applies().find(|o| o.name() == "web-a").unwrap();
    assert_eq!(kept.get("spec"), None);
    assert_eq!(kept.namespace(), Some("default"));
}

#[test]
fn scales_down_keeping_ready_pods() {
    let text = rs_yaml(2, "{}")
        + &pod_yaml("web-a", "2026-01-01T00:00:00Z", "Pending", false, "")
        + &pod_yaml("web-b", "2026-01-01T00:00:01Z", "Running", true, "")
        + &pod_yaml("web-c", "2026-01-01T00:00:02Z", "Running", false, "")
        + &pod_yaml("web-d", "2026-01-01T00:00:03Z", "Running", true, "")
        + &pod_yaml("web-e", "2026-01-01T00:00:04Z", "Running", true, "");
    let h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key()).unwrap();
    // Ready and older first: b and d.
    assert_eq!(kept_names(&out), ["web-b", "web-d"]);
    assert!(new_pods(&out).is_empty());
    let deleted: Vec<&str> = out
        .events
        .iter()
        .filter(|e| e.reason == "SuccessfulDelete")
        .map(|e| e.message.as_str())
        .collect();
    assert_eq!(deleted.len(), 3);
    assert!(deleted.contains(&"Deleted pod: web-a"));
}

#[test]
fn terminating_and_finished_pods_do_not_count() {
    let text = rs_yaml(2, "{}")
        + &pod_yaml(
            "web-a",
            "2026-01-01T00:00:00Z",
            "Running",
            true,
            "deletionTimestamp: \"2026-01-02T00:00:00Z\"",
        )
        + &pod_yaml("web-b", "2026-01-01T00:00:01Z", "Failed", false, "")
        + &pod_yaml("web-c", "2026-01-01T00:00:02Z", "Running", true, "");
    let h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key()).unwrap();
    assert_eq!(kept_names(&out), ["web-c"]);
    assert_eq!(new_pods(&out).len(), 1);
    let status = out.status_updates().next().unwrap();
    assert_eq!(status.get_i64("status.replicas"), Some(1));
}

#[test]
fn status_is_written_only_when_it_changes() {
    let pods = pod_yaml("web-a", "2026-01-01T00:00:00Z", "Running", true, "")
        + &pod_yaml("web-b", "2026-01-01T00:00:01Z", "Running", false, "");
    let h = H::new().with_objects(&(rs_yaml(2, "{}") + &pods)).unwrap();
    let out = h.reconcile_key(&key()).unwrap();
    let updates: Vec<_> = out.status_updates().collect();
    assert_eq!(updates.len(), 1);
    let s = updates[0];
    assert_eq!(s.resource_version(), Some("100"));
    assert_eq!(s.get_i64("status.replicas"), Some(2));
    assert_eq!(s.get_i64("status.fullyLabeledReplicas"), Some(2));
    assert_eq!(s.get_i64("status.readyReplicas"), Some(1));
    assert_eq!(s.get_i64("status.availableReplicas"), Some(1));
    assert_eq!(s.get_i64("status.observedGeneration"), Some(3));
    assert!(matches!(out.writes.last(), Some(Write::UpdateStatus(_))));

    let current = "{replicas: 2, fullyLabeledReplicas: 2, readyReplicas: 1, \
                   availableReplicas: 1, observedGeneration: 3}";
    let h = H::new()
        .with_objects(&(rs_yaml(2, current) + &pods))
        .unwrap();
    let out = h.reconcile_key(&key()).unwrap();
    assert_eq!(out.status_updates().count(), 0);
    assert_eq!(kept_names(&out), ["web-a", "web-b"]);
    assert!(out.events.is_empty());
}

#[test]
fn zero_counts_match_an_empty_status() {
    let text = rs_yaml(0, "{observedGeneration: 3}");
    let out = H::new()
        .with_objects(&text)
        .unwrap()
        .reconcile_key(&key())
        .unwrap();
    assert!(out.writes.is_empty());
    assert!(out.prune_owned);
}

#[test]
fn deleted_or_terminating_replicaset_gets_nothing() {
    let h = H::new();
    assert!(h.reconcile_key(&key()).unwrap().is_empty());

    let text = rs_yaml(3, "{}").replace(
        "  uid: rs-uid",
        "  uid: rs-uid\n  deletionTimestamp: \"2026-01-02T00:00:00Z\"",
    );
    let h = H::new().with_objects(&text).unwrap();
    assert!(h.reconcile_key(&key()).unwrap().is_empty());
}

#[test]
fn replicas_default_to_one() {
    let text = rs_yaml(1, "{}").replace("  replicas: 1\n", "");
    let out = H::new()
        .with_objects(&text)
        .unwrap()
        .reconcile_key(&key())
        .unwrap();
    assert_eq!(new_pods(&out).len(), 1);
}

#[test]
fn invalid_replicas_is_a_permanent_error() {
    let text = rs_yaml(1, "{}").replace("replicas: 1", "replicas: lots");
    let err = H::new()
        .with_objects(&text)
        .unwrap()
        .reconcile_key(&key())
        .unwrap_err();
    assert!(!err.retry);
    assert!(err.message.contains("spec.replicas"), "{err}");
}

#[test]
fn pods_of_other_owners_are_ignored() {
    let text = rs_yaml(1, "{}")
        + &pod_yaml("other", "2026-01-01T00:00:00Z", "Running", true, "").replace("rs-uid", "x");
    let out = H::new()
        .with_objects(&text)
        .unwrap()
        .reconcile_key(&key())
        .unwrap();
    assert!(kept_names(&out).is_empty());
    assert_eq!(new_pods(&out).len(), 1);
}

/// Level-triggered: scaling 1 → 5 → 2 in quick succession (the reconcile
/// for 5 never ran) ends at exactly 2, and again after the 5 was seen.
#[test]
fn scaling_in_quick_succession_ends_at_the_last_value() {
    let mut h = H::new().with_objects(&rs_yaml(1, "{}")).unwrap();
    h.converge(&key(), 5).unwrap();
    assert_eq!(h.list("v1", "Pod").len(), 1);

    // 5 then 2 before any reconcile: only 2 is ever seen.
    for replicas in [5, 2] {
        let mut rs = h.get(&key()).unwrap();
        rs.set("spec.replicas", replicas);
        h.insert(rs);
    }
    h.converge(&key(), 5).unwrap();
    assert_eq!(h.list("v1", "Pod").len(), 2);

    // 5 is reconciled once (pods created), then 2 arrives.
    let mut rs = h.get(&key()).unwrap();
    rs.set("spec.replicas", 5);
    h.insert(rs);
    let out = h.reconcile_key(&key()).unwrap();
    h.apply_outcome(&key(), &out).unwrap();
    assert_eq!(h.list("v1", "Pod").len(), 5);
    let mut rs = h.get(&key()).unwrap();
    rs.set("spec.replicas", 2);
    h.insert(rs);
    let rounds = h.converge(&key(), 5).unwrap();
    assert!(rounds >= 1);
    assert_eq!(h.list("v1", "Pod").len(), 2);
    let rs = h.get(&key()).unwrap();
    assert_eq!(rs.get_i64("status.replicas"), Some(2));

    // Settled: another reconcile writes nothing new.
    let out = h.reconcile_key(&key()).unwrap();
    assert!(new_pods(&out).is_empty());
    assert_eq!(out.status_updates().count(), 0);
}

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

/// Whether an apply creates a pod (it carries the `generateName` a new
/// pod has), rather than keeping one by its identity.
fn is_new(o: &Object) -> bool {
    o.get_str("metadata.generateName").is_some()
}

fn kept_names(out: &Outcome) -> Vec<&str> {
    let mut v: Vec<&str> = out
        .applies()
        .filter(|o| !is_new(o))
        .map(Object::name)
        .collect();
    v.sort_unstable();
    v
}

fn new_pods(out: &Outcome) -> Vec<&Object> {
    out.applies().filter(|o| is_new(o)).collect()
}

/// The `status` an outcome writes.
fn status_written(out: &Outcome) -> serde_json::Value {
    let object = out.writes.iter().find_map(|w| match w {
        Write::UpdateStatus(o) => Some(o),
        _ => None,
    });
    object
        .expect("a status write")
        .get("status")
        .unwrap()
        .clone()
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
    // Nothing is to go: no prune.
    assert!(!out.prune_owned);
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
    // Named as the server names them (`web-` and five characters of its
    // alphabet), each once, and each named in its own event, as upstream's
    // "Created pod: web-x2x4k".
    let mut names: Vec<&str> = new_pods(&out).iter().map(|p| p.name()).collect();
    for n in &names {
        let suffix = n.strip_prefix("web-").expect("web-<suffix>");
        assert_eq!(suffix.len(), 5, "{n}");
        assert!(
            suffix
                .bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b)),
            "{n}"
        );
    }
    let created: Vec<String> = (out.events.iter())
        .filter(|e| e.reason == "SuccessfulCreate")
        .map(|e| e.message.clone())
        .collect();
    let want: Vec<String> = names.iter().map(|n| format!("Created pod: {n}")).collect();
    assert_eq!(created, want);
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 3, "distinct names");
}

#[test]
fn new_pod_names_avoid_cached_pods() {
    // The names the first reconcile draws, then the same reconcile with a
    // pod already holding the first of them.
    let h = H::new().with_objects(&rs_yaml(2, "{}")).unwrap();
    let out = h.reconcile_key(&key()).unwrap();
    let first = new_pods(&out)[0].name().to_owned();
    // Drawn the same way at the same time: the same first name...
    let h = H::new().with_objects(&rs_yaml(3, "{}")).unwrap();
    let again = h.reconcile_key(&key()).unwrap();
    assert_eq!(new_pods(&again)[0].name(), first);
    // ...unless a pod has it.
    let yaml = format!(
        "{}---\n{}",
        rs_yaml(3, "{}"),
        pod_yaml(&first, "2026-01-01T00:00:00Z", "Running", true, "")
    );
    let h = H::new().with_objects(&yaml).unwrap();
    let out = h.reconcile_key(&key()).unwrap();
    let names: Vec<&str> = new_pods(&out).iter().map(|p| p.name()).collect();
    assert_eq!(names.len(), 2);
    assert!(
        !names.contains(&first.as_str()),
        "{first} is taken: {names:?}"
    );
}

#[test]
fn keeps_existing_pods_and_adds_the_rest() {
    let text = rs_yaml(5, "{}")
        + &pod_yaml("web-a", "2026-01-01T00:00:00Z", "Running", true, "")
        + &pod_yaml("web-b", "2026-01-01T00:00:01Z", "Running", true, "");
    let h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key()).unwrap();
    // Nothing is to go: the kept pods are not listed, nothing is pruned.
    assert!(kept_names(&out).is_empty());
    assert!(!out.prune_owned);
    assert_eq!(new_pods(&out).len(), 3);
}

#[test]
fn pods_kept_beside_one_that_goes_are_listed_by_identity() {
    let text = rs_yaml(2, "{}")
        + &pod_yaml("web-a", "2026-01-01T00:00:00Z", "Running", true, "")
        + &pod_yaml("web-b", "2026-01-01T00:00:01Z", "Running", true, "")
        + &pod_yaml("web-c", "2026-01-01T00:00:02Z", "Running", true, "");
    let h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key()).unwrap();
    assert!(out.prune_owned);
    assert_eq!(kept_names(&out).len(), 2);
    // Kept pods are listed by identity only, so `apply` changes nothing.
    let kept = out.applies().find(|o| !o.name().is_empty()).unwrap();
    assert_eq!(kept.get("spec"), None);
    assert_eq!(kept.namespace(), Some("default"));
}

/// A large ReplicaSet at its size writes nothing per pod: the outcome does
/// not grow with the pods kept (the host refuses outcomes of more than
/// 10,000 writes, so listing them would stall a 10,000-replica set).
#[test]
fn the_outcome_does_not_grow_with_the_pods_kept() {
    let n = 1_000;
    let mut text = rs_yaml(n, "{}");
    for i in 0..n {
        text += &pod_yaml(
            &format!("web-{i}"),
            "2026-01-01T00:00:00Z",
            "Running",
            true,
            "",
        );
    }
    let h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key()).unwrap();
    assert!(!out.prune_owned);
    assert!(out.writes.len() <= 1, "{} writes", out.writes.len());
}

/// The pods reach a reconcile as index summaries (a few dozen bytes each),
/// not as their JSON in the request: the request of a ReplicaSet with pods
/// carries none, and the counts still cover them.
#[test]
fn pods_are_read_from_the_index_not_the_request() {
    let text = rs_yaml(3, "{}")
        + &pod_yaml("web-a", "2026-01-01T00:00:00Z", "Running", true, "")
        + &pod_yaml("web-b", "2026-01-01T00:00:01Z", "Pending", false, "");
    let h = H::new().with_objects(&text).unwrap();
    assert!(h.request(&key()).owned.is_empty());
    let out = h.reconcile_key(&key()).unwrap();
    assert_eq!(new_pods(&out).len(), 1);
    let status = status_written(&out);
    assert_eq!(status["replicas"], 2);
    assert_eq!(status["readyReplicas"], 1);

    let pod = h
        .get(&ObjectRef::new("v1", "Pod", "default", "web-a"))
        .unwrap();
    let entry = <ReplicaSetController as windlass_sdk::Controller>::index(&pod).unwrap();
    assert_eq!(entry.keys.len(), 2);
    assert_eq!(entry.keys[0], "rs-uid");
    assert_eq!(entry.amounts, [1, 1, 0, 0]);
    assert!(entry.summary.len() < 160, "{} bytes", entry.summary.len());
}

/// `fullyLabeledReplicas` counts pods carrying every template label,
/// extra labels or not, whether the counts come from the index's sums (all
/// pods labeled exactly as the template) or from each pod's summary.
#[test]
fn fully_labeled_counts_pods_with_every_template_label() {
    fn pod(name: &str, labels: &str) -> String {
        pod_yaml(name, "2026-01-01T00:00:00Z", "Running", true, "")
            .replace("labels: {app: web, tier: front}", labels)
    }
    let exact = |name| pod(name, "labels: {app: web, tier: front}");
    let extra = |name| pod(name, "labels: {app: web, tier: front, canary: \"yes\"}");
    let missing = |name| pod(name, "labels: {app: web}");
    for (pods, want) in [
        (vec![exact("web-a"), exact("web-b")], 2),
        (vec![exact("web-a"), extra("web-b")], 2),
        (vec![exact("web-a"), missing("web-b")], 1),
    ] {
        let text = rs_yaml(2, "{}") + &pods.concat();
        let h = H::new().with_objects(&text).unwrap();
        let out = h.reconcile_key(&key()).unwrap();
        let status = status_written(&out);
        assert_eq!(status["replicas"], 2, "{pods:?}");
        assert_eq!(status["fullyLabeledReplicas"], want, "{pods:?}");
    }
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
    assert!(out.writes.is_empty());
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
    assert!(!out.prune_owned);
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

fn with_status(text: &str, status: &str) -> String {
    text.replace("status: {}", &format!("status: {status}"))
}

/// Ended pods stop counting; the host's pruning deletes them and the
/// replicas are made up with new pods.
#[test]
fn ended_pods_are_replaced() {
    let text = rs_yaml(3, "{}")
        + &pod_yaml("web-a", "2026-01-01T00:00:00Z", "Succeeded", false, "")
        + &pod_yaml("web-b", "2026-01-01T00:00:01Z", "Failed", false, "")
        + &pod_yaml("web-c", "2026-01-01T00:00:02Z", "Running", true, "");
    let mut h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key()).unwrap();
    assert_eq!(kept_names(&out), ["web-c"]);
    assert_eq!(new_pods(&out).len(), 2);
    assert_eq!(
        out.status_updates()
            .next()
            .unwrap()
            .get_i64("status.replicas"),
        Some(1)
    );
    h.converge(&key(), 5).unwrap();
    let pods = h.list("v1", "Pod");
    assert_eq!(pods.len(), 3);
    assert!(
        pods.iter()
            .all(|p| p.name() != "web-a" && p.name() != "web-b")
    );
    assert_eq!(h.get(&key()).unwrap().get_i64("status.replicas"), Some(3));
}

/// Pods being deleted do not count, but are reported as terminating (what a
/// Recreate rollout waits for); ended pods are not terminating.
#[test]
fn terminating_pods_are_counted_apart() {
    let deleting = "deletionTimestamp: \"2026-01-02T00:00:00Z\"";
    let text = rs_yaml(1, "{}")
        + &pod_yaml("web-a", "2026-01-01T00:00:00Z", "Running", true, deleting)
        + &pod_yaml("web-b", "2026-01-01T00:00:01Z", "Running", true, deleting)
        + &pod_yaml("web-c", "2026-01-01T00:00:02Z", "Failed", false, deleting)
        + &pod_yaml("web-d", "2026-01-01T00:00:03Z", "Running", true, "");
    let out = H::new()
        .with_objects(&text)
        .unwrap()
        .reconcile_key(&key())
        .unwrap();
    assert_eq!(kept_names(&out), ["web-d"]);
    let s = out.status_updates().next().unwrap();
    assert_eq!(s.get_i64("status.replicas"), Some(1));
    assert_eq!(s.get_i64("status.terminatingReplicas"), Some(2));
}

/// `availableReplicas` counts pods ready for longer than `minReadySeconds`
/// at `Request::now` (strictly, as upstream), and the reconcile is requeued
/// for when the next ready pod becomes available.
#[test]
fn min_ready_seconds_availability_and_requeue() {
    use std::time::Duration;
    use windlass_sdk::Time;
    // Pods ready since 10:00:00 and 10:00:20; minReadySeconds 30.
    let text = rs_yaml(3, "{}")
        .replace("  replicas: 3\n", "  replicas: 3\n  minReadySeconds: 30\n")
        + &pod_yaml("web-a", "2026-01-01T10:00:00Z", "Running", true, "")
        + &pod_yaml("web-b", "2026-01-01T10:00:20Z", "Running", true, "")
        + &pod_yaml("web-c", "2026-01-01T10:00:20Z", "Running", false, "");
    let at = |s: &str| Time::parse(s).unwrap();
    let ms = Duration::from_millis;
    // (now, available, requeue after)
    let table = [
        ("2026-01-01T10:00:10Z", 0, Some(ms(20_001))),
        ("2026-01-01T10:00:30Z", 0, Some(ms(1))),
        ("2026-01-01T10:00:30.5Z", 1, Some(ms(19_501))),
        ("2026-01-01T10:00:50Z", 1, Some(ms(1))),
        ("2026-01-01T10:01:00Z", 2, None),
    ];
    for (now, available, requeue) in table {
        let h = H::new().with_objects(&text).unwrap().with_now(at(now));
        let out = h.reconcile_key(&key()).unwrap();
        let s = out.status_updates().next().unwrap();
        assert_eq!(s.get_i64("status.readyReplicas"), Some(2), "{now}");
        assert_eq!(
            s.get_i64("status.availableReplicas"),
            Some(available),
            "{now}"
        );
        assert_eq!(out.requeue_after, requeue, "{now}");
    }
    // Without minReadySeconds, ready is available at once.
    let text = text.replace("  minReadySeconds: 30\n", "");
    let h = H::new()
        .with_objects(&text)
        .unwrap()
        .with_now(at("2026-01-01T10:00:10Z"));
    let out = h.reconcile_key(&key()).unwrap();
    let s = out.status_updates().next().unwrap();
    assert_eq!(s.get_i64("status.availableReplicas"), Some(2));
    assert_eq!(out.requeue_after, None);
}

const QUOTA: &str = "pods \"web-x\" is forbidden: exceeded quota: pods, requested: pods=1, \
                     used: pods=1, limited: pods=1";

fn refused(write: u32, code: u16) -> Option<windlass_sdk::WriteFailure> {
    Some(windlass_sdk::WriteFailure {
        write,
        code,
        reason: if code == 403 { "Forbidden" } else { "Conflict" }.into(),
        message: QUOTA.into(),
    })
}

/// A create refused by the server: the next reconcile records it (a
/// `FailedCreate` event, the `ReplicaFailure` condition) and writes nothing
/// else; retries try the creates again without rewriting the condition;
/// once creates go through, the status drops it.
#[test]
fn refused_creates_give_failed_create_until_they_succeed() {
    use windlass_sdk::{EventType, Time};
    let text = rs_yaml(3, "{}") + &pod_yaml("web-a", "2026-01-01T00:00:00Z", "Running", true, "");
    let mut h = H::new()
        .with_objects(&text)
        .unwrap()
        .with_now(Time::parse("2026-01-01T00:05:00Z").unwrap());
    // Writes were: keep web-a (0), create (1), create (2), status; the
    // first create was refused.
    h.set_last_failure(refused(1, 403));
    let out = h.reconcile_key(&key()).unwrap();
    assert_eq!(out.writes.len(), 1, "{out:?}");
    assert!(!out.prune_owned);
    assert_eq!(out.events.len(), 1);
    let e = &out.events[0];
    assert_eq!(e.type_, EventType::Warning);
    assert_eq!(e.reason, "FailedCreate");
    assert_eq!(e.message, format!("Error creating: {QUOTA}"));
    let s = out.status_updates().next().unwrap();
    let cond = s.get("status.conditions.0").unwrap();
    assert_eq!(cond["type"], "ReplicaFailure");
    assert_eq!(cond["status"], "True");
    assert_eq!(cond["reason"], "FailedCreate");
    assert_eq!(cond["message"], QUOTA);
    assert_eq!(cond["lastTransitionTime"], "2026-01-01T00:05:00Z");
    assert_eq!(s.get_i64("status.replicas"), Some(1));
    h.apply_outcome(&key(), &out).unwrap();

    // Still refused: the creates are tried again, the condition stays as it is.
    h.set_last_failure(refused(1, 403));
    let out = h.reconcile_key(&key()).unwrap();
    assert_eq!(new_pods(&out).len(), 2);
    assert_eq!(out.status_updates().count(), 0);
    assert_eq!(out.events.len(), 1);
    assert_eq!(out.events[0].reason, "FailedCreate");

    // The creates go through: the condition is removed after them.
    h.set_last_failure(None);
    let out = h.reconcile_key(&key()).unwrap();
    assert_eq!(new_pods(&out).len(), 2);
    assert!(matches!(out.writes.last(), Some(Write::UpdateStatus(_))));
    assert_eq!(out.events[0].reason, "SuccessfulCreate");
    h.apply_outcome(&key(), &out).unwrap();
    let rs = h.get(&key()).unwrap();
    assert_eq!(rs.get("status.conditions"), None);
    // It settles with three pods and no condition.
    h.converge(&key(), 3).unwrap();
    assert_eq!(h.list("v1", "Pod").len(), 3);
    let rs = h.get(&key()).unwrap();
    assert_eq!(rs.get_i64("status.replicas"), Some(3));
    assert_eq!(rs.get("status.conditions"), None);
}

/// While creates are refused, the counts still follow the pods, as
/// upstream updates the status after every sync: a pod becoming ready is
/// written on its own (no second event, the condition left as it is), and
/// the next attempt tries the creates again.
#[test]
fn a_held_back_replicaset_still_counts_its_ready_pods() {
    let text = rs_yaml(3, "{}") + &pod_yaml("web-a", "2026-01-01T00:00:00Z", "Running", true, "");
    let held = "{replicas: 1, fullyLabeledReplicas: 1, readyReplicas: 0, \
        availableReplicas: 0, observedGeneration: 3, conditions: [{type: ReplicaFailure, \
        status: \"True\", reason: FailedCreate, message: old}]}";
    let mut h = H::new().with_objects(&with_status(&text, held)).unwrap();
    h.set_last_failure(refused(1, 403));
    let out = h.reconcile_key(&key()).unwrap();
    assert_eq!(out.writes.len(), 1, "{out:?}");
    assert!(new_pods(&out).is_empty());
    assert!(out.events.is_empty(), "{:?}", out.events);
    let s = out.status_updates().next().unwrap();
    assert_eq!(s.get_i64("status.readyReplicas"), Some(1));
    assert_eq!(s.get_i64("status.availableReplicas"), Some(1));
    assert_eq!(s.get("status.conditions.0.message").unwrap(), "old");
    h.apply_outcome(&key(), &out).unwrap();

    // That write succeeded, so the host clears the failure: the creates
    // are tried again.
    h.set_last_failure(None);
    let out = h.reconcile_key(&key()).unwrap();
    assert_eq!(new_pods(&out).len(), 2);
}

/// Only a refused create counts: a conflict, or a failure at the status
/// write (or past the outcome), is not a `FailedCreate`. Nothing is to go
/// here, so the outcome is the two creates (writes 0 and 1), then status.
#[test]
fn other_failures_are_not_failed_creates() {
    let text = rs_yaml(3, "{}") + &pod_yaml("web-a", "2026-01-01T00:00:00Z", "Running", true, "");
    let status_with_failure = "{replicas: 1, fullyLabeledReplicas: 1, readyReplicas: 1, \
        availableReplicas: 1, observedGeneration: 3, conditions: [{type: ReplicaFailure, \
        status: \"True\", reason: FailedCreate, message: old}]}";
    // (write, code, status before, creates expected, condition kept)
    let table = [
        (1, 409, "{}", 2, false),
        (2, 403, "{}", 2, false),
        (3, 500, "{}", 2, false),
        (1, 403, status_with_failure, 2, true),
        (2, 403, status_with_failure, 2, false),
    ];
    for (write, code, before, creates, kept) in table {
        let mut h = H::new().with_objects(&with_status(&text, before)).unwrap();
        h.set_last_failure(refused(write, code));
        let out = h.reconcile_key(&key()).unwrap();
        let case = format!("write {write}, code {code}, status {before}");
        assert_eq!(new_pods(&out).len(), creates, "{case}");
        let failed = out.events.iter().any(|e| e.reason == "FailedCreate");
        assert_eq!(failed, kept, "{case}");
        h.apply_outcome(&key(), &out).unwrap();
        let has_condition = h.get(&key()).unwrap().get("status.conditions").is_some();
        assert_eq!(has_condition, kept, "{case}");
    }
}

/// A bare pod (no controller) with the given `labels`, in `namespace`.
fn orphan_yaml(name: &str, namespace: &str, labels: &str, extra: &str) -> String {
    format!(
        r#"
---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {namespace}
  uid: uid-{name}
  resourceVersion: "7"
  creationTimestamp: "2026-01-01T00:00:00Z"
  labels: {labels}
  ownerReferences:
  - {{apiVersion: v1, kind: ConfigMap, name: note, uid: cm-uid}}
  {extra}
spec: {{nodeName: node-1, containers: [{{name: nginx, image: "nginx:1.27"}}]}}
status: {{phase: Running}}
"#
    )
}

/// How many pods the ReplicaSet controls.
fn owned_pods(h: &H) -> usize {
    h.list("v1", "Pod")
        .iter()
        .filter(|p| {
            p.get("metadata.ownerReferences")
                .and_then(|r| r.as_array())
                .is_some_and(|r| r.iter().any(|r| r["uid"] == "rs-uid"))
        })
        .count()
}

fn pod_key(name: &str) -> ObjectRef {
    ObjectRef::new("v1", "Pod", "default", name)
}

/// The docs' *Isolating Pods from a ReplicaSet*: a pod relabelled out of
/// the selector is released (its controller reference removed, on its own,
/// with its uid and resourceVersion as preconditions) and another is made
/// in its place; the released pod is left running.
#[test]
fn a_pod_relabelled_out_of_the_selector_is_released_and_replaced() {
    let text = rs_yaml(2, "{}")
        + &pod_yaml("web-a", "2026-01-01T00:00:00Z", "Running", true, "")
        + &pod_yaml(
            "web-b",
            "2026-01-01T00:00:01Z",
            "Running",
            true,
            "resourceVersion: \"42\"",
        )
        .replace(
            "labels: {app: web, tier: front}",
            "labels: {app: debug, tier: front}",
        );
    let mut h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key()).unwrap();
    assert_eq!(out.writes.len(), 1, "{:?}", out.writes);
    let Write::MergePatch { target, patch, .. } = &out.writes[0] else {
        panic!("a merge patch: {:?}", out.writes[0]);
    };
    assert_eq!(target, &pod_key("web-b"));
    assert_eq!(
        patch["metadata"]["ownerReferences"],
        serde_json::Value::Null
    );
    assert_eq!(patch["metadata"]["uid"], "uid-web-b");
    assert_eq!(patch["metadata"]["resourceVersion"], "42");
    assert!(!out.prune_owned);

    h.apply_outcome(&key(), &out).unwrap();
    let released = h.get(&pod_key("web-b")).unwrap();
    assert!(released.get("metadata.ownerReferences").is_none());
    let out = h.reconcile_key(&key()).unwrap();
    assert_eq!(new_pods(&out).len(), 1, "a replacement: {:?}", out.writes);
    assert_eq!(status_written(&out)["replicas"], 1);
    h.apply_outcome(&key(), &out).unwrap();
    h.converge(&key(), 5).unwrap();
    // Two pods of the ReplicaSet; the released pod is nobody's, and stays.
    assert_eq!(owned_pods(&h), 2);
    assert!(h.get(&pod_key("web-b")).is_some());
}

/// A pod with other owners keeps them when released.
#[test]
fn a_released_pod_keeps_its_other_owners() {
    let extra = "  - {apiVersion: v1, kind: ConfigMap, name: note, uid: cm-uid}";
    let pod = pod_yaml("web-b", "2026-01-01T00:00:01Z", "Running", true, "")
        .replace("labels: {app: web, tier: front}", "labels: {app: debug}")
        .replace(
            "controller: true}\n",
            &format!("controller: true}}\n{extra}\n"),
        );
    let h = H::new().with_objects(&(rs_yaml(1, "{}") + &pod)).unwrap();
    let out = h.reconcile_key(&key()).unwrap();
    let Write::MergePatch { patch, .. } = &out.writes[0] else {
        panic!("a merge patch: {:?}", out.writes);
    };
    assert_eq!(
        patch["metadata"]["ownerReferences"],
        serde_json::json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "note", "uid": "cm-uid"}])
    );
}

/// The docs' *Non-Template Pod acquisitions*: bare pods the selector
/// selects, in the ReplicaSet's namespace, are adopted (on their own, by
/// identity: the writer adds the controller reference); then the
/// ReplicaSet, over its count, deletes the extra. Pods it does not select,
/// of another namespace, ended or being deleted, are left alone.
#[test]
fn orphans_the_selector_selects_are_adopted_and_counted() {
    let text = rs_yaml(2, "{}")
        + &pod_yaml("web-a", "2026-01-01T00:00:00Z", "Running", true, "")
        + &orphan_yaml("bare-1", "default", "{app: web}", "")
        + &orphan_yaml("bare-2", "default", "{app: web, tier: x}", "")
        + &orphan_yaml("db", "default", "{app: db}", "")
        + &orphan_yaml("elsewhere", "other", "{app: web}", "")
        + &orphan_yaml(
            "leaving",
            "default",
            "{app: web}",
            "deletionTimestamp: \"2026-01-01T00:00:09Z\"",
        )
        + &orphan_yaml("done", "default", "{app: web}", "")
            .replace("phase: Running", "phase: Succeeded");
    let mut h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key()).unwrap();
    let mut adopted: Vec<&str> = out.applies().map(Object::name).collect();
    adopted.sort_unstable();
    assert_eq!(adopted, ["bare-1", "bare-2"]);
    assert_eq!(out.writes.len(), 2, "adoption goes on its own");
    h.apply_outcome(&key(), &out).unwrap();
    for name in ["bare-1", "bare-2"] {
        let pod = h.get(&pod_key(name)).unwrap();
        let refs = pod.get("metadata.ownerReferences").unwrap();
        assert_eq!(refs.as_array().unwrap().len(), 2, "{refs}");
        assert_eq!(refs[1]["uid"], "rs-uid");
        assert_eq!(refs[1]["controller"], true);
    }
    // Three pods for two replicas: one goes.
    let out = h.reconcile_key(&key()).unwrap();
    assert!(out.prune_owned);
    assert_eq!(kept_names(&out).len(), 2);
    h.apply_outcome(&key(), &out).unwrap();
    h.converge(&key(), 5).unwrap();
    assert_eq!(owned_pods(&h), 2);
    for name in ["db", "leaving", "done"] {
        let pod = h.get(&pod_key(name)).unwrap();
        assert_eq!(
            pod.get("metadata.ownerReferences").unwrap()[0]["kind"],
            "ConfigMap"
        );
    }
    assert!(
        h.get(&ObjectRef::new("v1", "Pod", "other", "elsewhere"))
            .is_some()
    );
}

/// Live orphans are filed under their namespace, counted like live pods;
/// ended or deleting ones, and pods of other controllers, are not filed.
#[test]
fn live_orphans_are_indexed_by_namespace() {
    let index = |yaml: &str| {
        let h = H::new().with_objects(yaml).unwrap();
        let object = h.list("v1", "Pod").pop().unwrap();
        h.index(&object)
    };
    let entry = index(&orphan_yaml("bare", "team", "{app: web}", "")).unwrap();
    assert_eq!(entry.keys, ["orphans/team"]);
    assert_eq!(entry.amounts, [1, 0, 0, 0]);
    let ended = orphan_yaml("bare", "team", "{app: web}", "").replace("Running", "Failed");
    assert!(index(&ended).is_none());
    let deleting = orphan_yaml(
        "bare",
        "team",
        "{app: web}",
        "deletionTimestamp: \"2026-01-01T00:00:09Z\"",
    );
    assert!(index(&deleting).is_none());
    let job_pod = pod_yaml("p", "2026-01-01T00:00:00Z", "Running", true, "")
        .replace("kind: ReplicaSet", "kind: Job");
    assert!(index(&job_pod).is_none());
}

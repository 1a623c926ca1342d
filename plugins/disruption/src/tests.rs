//! Native tests of the disruption controller, through
//! `windlass_sdk::testing`.

use serde_json::{Value, json};
use windlass_sdk::testing::Harness;
use windlass_sdk::{Object, ObjectRef, Time};

use super::DisruptionController;

type H = Harness<DisruptionController>;

fn t(secs: i64) -> Time {
    let base = Time::parse("2026-03-01T10:00:00Z").unwrap();
    Time::from_millis(base.millis() + secs * 1000)
}

fn pdb_ref() -> ObjectRef {
    ObjectRef::new("policy/v1", "PodDisruptionBudget", "shop", "web")
}

fn pdb(spec: Value) -> Object {
    let mut p = json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "shop", "uid": "pdb-uid",
                     "generation": 1, "resourceVersion": "1"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}}
    });
    for (k, v) in spec.as_object().unwrap() {
        p["spec"][k] = v.clone();
    }
    Object::from_value(p).unwrap()
}

/// A pod of `app` owned by ReplicaSet `rs`, ready or not.
fn pod(name: &str, app: &str, ready: bool) -> Object {
    Object::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "labels": {"app": app},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": "web-1", "uid": "rs-uid", "controller": true}]},
        "status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": if ready { "True" } else { "False" }}]}
    }))
    .unwrap()
}

fn harness(spec: Value, pods: Vec<Object>) -> H {
    let mut h = H::new().with_now(t(0)).with_object(pdb(spec));
    for p in pods {
        h.insert(p);
    }
    h.insert(
        Object::from_value(json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web-1", "namespace": "shop", "uid": "rs-uid",
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                    "name": "web", "uid": "d-uid", "controller": true}]},
            "spec": {"replicas": 3}
        }))
        .unwrap(),
    );
    h.insert(
        Object::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "uid": "d-uid"},
            "spec": {"replicas": 4}
        }))
        .unwrap(),
    );
    h
}

fn status(h: &mut H, secs: i64) -> Value {
    h.set_now(t(secs));
    let out = h.reconcile_key(&pdb_ref()).unwrap();
    h.apply_outcome(&pdb_ref(), &out).unwrap();
    h.get(&pdb_ref()).unwrap().get("status").cloned().unwrap()
}

fn three_pods() -> Vec<Object> {
    vec![
        pod("web-a", "web", true),
        pod("web-b", "web", true),
        pod("web-c", "web", false),
        pod("db-a", "db", true),
    ]
}

#[test]
fn min_available_as_a_number_counts_the_pods() {
    let mut h = harness(json!({"minAvailable": 1}), three_pods());
    let s = status(&mut h, 0);
    assert_eq!(
        (
            &s["expectedPods"],
            &s["desiredHealthy"],
            &s["currentHealthy"],
            &s["disruptionsAllowed"]
        ),
        (&json!(3), &json!(1), &json!(2), &json!(1))
    );
    assert_eq!(s["observedGeneration"], 1);
    assert_eq!(s["conditions"][0]["reason"], "SufficientPods");
    // Nothing changed: no write.
    assert!(h.reconcile_key(&pdb_ref()).unwrap().writes.is_empty());
}

#[test]
fn percentages_and_max_unavailable_count_the_controllers_replicas() {
    // The ReplicaSet belongs to a Deployment of 4: 50% of 4 is 2.
    let mut h = harness(json!({"minAvailable": "50%"}), three_pods());
    let s = status(&mut h, 0);
    assert_eq!(
        (&s["expectedPods"], &s["desiredHealthy"]),
        (&json!(4), &json!(2))
    );
    assert_eq!(s["disruptionsAllowed"], 0);
    assert_eq!(s["conditions"][0]["reason"], "InsufficientPods");
    let mut h = harness(json!({"maxUnavailable": 1}), three_pods());
    let s = status(&mut h, 0);
    assert_eq!(
        (&s["desiredHealthy"], &s["disruptionsAllowed"]),
        (&json!(3), &json!(0))
    );
    let mut h = harness(json!({"maxUnavailable": "25%"}), three_pods());
    assert_eq!(status(&mut h, 0)["desiredHealthy"], 3);
}

#[test]
fn an_eviction_counts_until_its_pod_goes_or_two_minutes_pass() {
    let mut h = harness(json!({"minAvailable": 1}), three_pods());
    status(&mut h, 0);
    // The API server records an eviction of web-a.
    let mut p = h.get(&pdb_ref()).unwrap();
    p.value_mut()["status"]["disruptionsAllowed"] = json!(0);
    p.value_mut()["status"]["disruptedPods"] = json!({"web-a": t(10).to_rfc3339()});
    h.insert(p);
    let s = status(&mut h, 11);
    assert_eq!(s["currentHealthy"], 1);
    assert_eq!(s["disruptionsAllowed"], 0);
    assert!(s["disruptedPods"]["web-a"].is_string());
    // Past the timeout, the pod still there counts again.
    let s = status(&mut h, 131);
    assert_eq!(s["currentHealthy"], 2);
    assert!(s.get("disruptedPods").is_none(), "{s}");
}

#[test]
fn a_pods_change_wakes_the_budgets_that_select_it() {
    let h = harness(json!({"minAvailable": 1}), three_pods());
    assert_eq!(h.map(&pod("web-x", "web", true)).unwrap(), [pdb_ref()]);
    assert!(h.map(&pod("db-x", "db", true)).unwrap().is_empty());
}

#[test]
fn selectors_follow_policy_v1() {
    // matchExpressions.
    let mut h = harness(
        json!({"minAvailable": 0, "selector": {"matchExpressions": [
            {"key": "app", "operator": "In", "values": ["web", "db"]}]}}),
        three_pods(),
    );
    assert_eq!(status(&mut h, 0)["expectedPods"], 4);
    // An empty selector picks every pod of the namespace; none picks none.
    let mut h = harness(json!({"minAvailable": 0, "selector": {}}), three_pods());
    assert_eq!(status(&mut h, 0)["expectedPods"], 4);
    let mut h = harness(json!({"minAvailable": 0, "selector": null}), three_pods());
    assert_eq!(status(&mut h, 0)["expectedPods"], 0);
}

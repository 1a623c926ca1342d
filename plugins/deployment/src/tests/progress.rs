//! Status and conditions: what `kubectl rollout status` reads, the
//! progress deadline, pausing, a refused ReplicaSet create, hash
//! collisions, and ReplicaSet failures.

use std::time::Duration;

use serde_json::{Value, json};
use windlass_sdk::{EventType, Object, WriteFailure};

use super::{H, ROLLING, World, deployment, key, t0};
use crate::conditions::{
    AVAILABLE, FAILED_RS_CREATE, MINIMUM_AVAILABLE, MINIMUM_UNAVAILABLE, NEW_RS_AVAILABLE,
    NEW_RS_CREATED, PAUSED, PROGRESSING, REPLICA_FAILURE, REPLICA_SET_UPDATED, RESUMED, TIMED_OUT,
};
use crate::template;

/// The condition of `type_` in the Deployment's status.
fn condition(d: &Object, type_: &str) -> Value {
    d.get("status.conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == type_).cloned())
        .unwrap_or(Value::Null)
}

fn deadline(seconds: i64) -> String {
    deployment(3, ROLLING).replace(
        "progressDeadlineSeconds: 600",
        &format!("progressDeadlineSeconds: {seconds}"),
    )
}

/// Each stage of a first rollout shows in the conditions, with upstream's
/// reasons and messages.
#[test]
fn conditions_follow_the_rollout() {
    let mut w = World::new(&deployment(3, ROLLING));
    w.reconcile_deployment();
    let rs = w.replica_sets()[0].name().to_owned();
    let d = w.deployment();
    let p = condition(&d, PROGRESSING);
    assert_eq!(
        (p["status"].as_str(), p["reason"].as_str()),
        (Some("True"), Some(NEW_RS_CREATED))
    );
    assert_eq!(p["message"], format!("Created new replica set {rs:?}"));
    assert_eq!(p["lastUpdateTime"], "2026-03-01T12:00:00Z");
    let a = condition(&d, AVAILABLE);
    assert_eq!(
        (a["status"].as_str(), a["reason"].as_str()),
        (Some("False"), Some(MINIMUM_UNAVAILABLE))
    );
    assert_eq!(
        a["message"],
        "Deployment does not have minimum availability."
    );

    // Pods come up one at a time: progress.
    w.reconcile_replica_sets();
    w.kubelet(1);
    w.reconcile_replica_sets();
    w.advance(Duration::from_secs(5));
    w.reconcile_deployment();
    let p = condition(&w.deployment(), PROGRESSING);
    assert_eq!(p["reason"], REPLICA_SET_UPDATED);
    assert_eq!(p["message"], format!("ReplicaSet {rs:?} is progressing."));
    assert_eq!(p["lastUpdateTime"], "2026-03-01T12:00:05Z");
    assert_eq!(p["lastTransitionTime"], "2026-03-01T12:00:00Z");

    w.run(3, 10, |_| {});
    let d = w.deployment();
    let p = condition(&d, PROGRESSING);
    assert_eq!(
        (p["status"].as_str(), p["reason"].as_str()),
        (Some("True"), Some(NEW_RS_AVAILABLE))
    );
    assert_eq!(
        p["message"],
        format!("ReplicaSet {rs:?} has successfully progressed.")
    );
    let a = condition(&d, AVAILABLE);
    assert_eq!(
        (a["status"].as_str(), a["reason"].as_str()),
        (Some("True"), Some(MINIMUM_AVAILABLE))
    );
    assert_eq!(a["message"], "Deployment has minimum availability.");
}

/// Without progress for `progressDeadlineSeconds` the rollout is reported
/// as timed out; until then the reconcile is requeued for the deadline.
#[test]
fn progress_deadline_times_out_with_requeues() {
    let mut w = World::new(&deadline(60));
    let out = w.reconcile_deployment();
    assert_eq!(out.requeue_after, Some(Duration::from_secs(61)));
    w.reconcile_replica_sets();
    let rs = w.replica_sets()[0].name().to_owned();

    // No pod ever becomes ready.
    w.set_now(t0() + Duration::from_secs(30));
    let out = w.reconcile_deployment();
    assert_eq!(out.requeue_after, Some(Duration::from_secs(31)));
    assert_eq!(
        condition(&w.deployment(), PROGRESSING)["reason"],
        NEW_RS_CREATED
    );

    w.set_now(t0() + Duration::from_secs(60));
    w.reconcile_deployment();
    assert_eq!(
        condition(&w.deployment(), PROGRESSING)["reason"],
        NEW_RS_CREATED,
        "not past it yet"
    );

    w.set_now(t0() + Duration::from_secs(61));
    let out = w.reconcile_deployment();
    assert_eq!(out.requeue_after, None);
    let p = condition(&w.deployment(), PROGRESSING);
    assert_eq!(
        (p["status"].as_str(), p["reason"].as_str()),
        (Some("False"), Some(TIMED_OUT))
    );
    assert_eq!(
        p["message"],
        format!("ReplicaSet {rs:?} has timed out progressing.")
    );

    // Timed out stays timed out while nothing moves ...
    let out = w.reconcile_deployment();
    assert!(out.writes.is_empty(), "{out:?}");
    // ... and the rollout still completes when the pods come up.
    w.run(3, 10, |_| {});
    assert_eq!(
        condition(&w.deployment(), PROGRESSING)["reason"],
        NEW_RS_AVAILABLE
    );
}

/// Paused: no rollout, but scaling still applies; the Progressing
/// condition says paused, then resumed, and the rollout goes on.
#[test]
fn paused_deployments_scale_but_do_not_roll_out() {
    let mut w = World::new(&deployment(3, ROLLING));
    w.run(3, 10, |_| {});
    w.edit(|d| d.set("spec.paused", true));
    w.reconcile_deployment();
    let p = condition(&w.deployment(), PROGRESSING);
    assert_eq!(
        (p["status"].as_str(), p["reason"].as_str()),
        (Some("Unknown"), Some(PAUSED))
    );
    assert_eq!(p["message"], "Deployment is paused");

    w.edit(|d| {
        d.set("spec.template.spec.containers.0.image", "nginx:2");
        d.set("spec.replicas", 5);
    });
    w.run(5, 20, |_| {});
    assert_eq!(w.replica_sets().len(), 1, "no rollout while paused");
    assert_eq!(w.replica_sets()[0].get_i64("spec.replicas"), Some(5));
    assert_eq!(w.pods().len(), 5);
    let d = w.deployment();
    assert_eq!(
        d.get_i64("status.updatedReplicas"),
        None,
        "the running pods are not the template's"
    );
    assert_eq!(d.get_i64("status.observedGeneration"), d.generation());

    w.edit(|d| d.set("spec.paused", false));
    let out = w.reconcile_deployment();
    assert_eq!(out.status_updates().count(), 1);
    let p = condition(&w.deployment(), PROGRESSING);
    // Resumed, then the new ReplicaSet in the same reconcile.
    assert_eq!(p["reason"], NEW_RS_CREATED);
    assert!(w.replica_set_with("nginx:2").is_some());
    w.run(5, 30, |_| {});
    assert_eq!(
        w.replica_set_with("nginx:2")
            .unwrap()
            .get_i64("spec.replicas"),
        Some(5)
    );
}

/// A Deployment paused mid-rollout for longer than its deadline does not
/// time out when resumed: resuming restarts the clock.
#[test]
fn resuming_restarts_the_progress_clock() {
    let mut w = World::new(&deadline(60));
    w.reconcile_deployment();
    w.reconcile_replica_sets();
    w.set_now(t0() + Duration::from_secs(10));
    w.edit(|d| d.set("spec.paused", true));
    w.reconcile_deployment();
    assert_eq!(condition(&w.deployment(), PROGRESSING)["reason"], PAUSED);

    w.set_now(t0() + Duration::from_secs(200));
    w.edit(|d| d.set("spec.paused", false));
    let out = w.reconcile_deployment();
    let p = condition(&w.deployment(), PROGRESSING);
    assert_eq!(
        (p["status"].as_str(), p["reason"].as_str()),
        (Some("Unknown"), Some(RESUMED))
    );
    assert_eq!(p["message"], "Deployment is resumed");
    assert_eq!(p["lastUpdateTime"], "2026-03-01T12:03:20Z");
    assert_eq!(out.requeue_after, Some(Duration::from_secs(61)));

    w.set_now(t0() + Duration::from_secs(261));
    w.reconcile_deployment();
    assert_eq!(condition(&w.deployment(), PROGRESSING)["reason"], TIMED_OUT);
}

fn refused(write: u32, code: u16) -> Option<WriteFailure> {
    Some(WriteFailure {
        write,
        code,
        reason: "Forbidden".into(),
        message: "replicasets.apps \"web\" is forbidden: exceeded quota: rs".into(),
    })
}

/// A refused ReplicaSet create: recorded once (a `ReplicaSetCreateError`
/// event and a False Progressing condition), then retried.
#[test]
fn refused_replica_set_create_is_reported_then_retried() {
    let mut h = H::new()
        .with_objects(&deployment(3, ROLLING))
        .unwrap()
        .with_now(t0());
    let name = format!("web-{}", template::hash(&super::template_of(&h), None));
    h.set_last_failure(refused(0, 403));
    let out = h.reconcile_key(&key()).unwrap();
    assert_eq!(out.writes.len(), 1, "only the status: {out:?}");
    let message = format!(
        "Failed to create new replica set {name:?}: replicasets.apps \"web\" is forbidden: exceeded quota: rs"
    );
    assert_eq!(out.events.len(), 1);
    assert_eq!(out.events[0].type_, EventType::Warning);
    assert_eq!(out.events[0].reason, FAILED_RS_CREATE);
    assert_eq!(out.events[0].message, message);
    h.apply_outcome(&key(), &out).unwrap();
    let p = condition(&h.get(&key()).unwrap(), PROGRESSING);
    assert_eq!(
        (p["status"].as_str(), p["reason"].as_str()),
        (Some("False"), Some(FAILED_RS_CREATE))
    );
    assert_eq!(p["message"], message);

    // Refused again: the create is tried again, the condition left as is.
    let out = h.reconcile_key(&key()).unwrap();
    assert_eq!(out.applies().next().map(Object::name), Some(name.as_str()));
    assert_eq!(out.events[0].reason, FAILED_RS_CREATE);
    // A conflict is no refusal.
    h.set_last_failure(refused(0, 409));
    let out = h.reconcile_key(&key()).unwrap();
    assert!(out.events.iter().all(|e| e.reason != FAILED_RS_CREATE));
    h.apply_outcome(&key(), &out).unwrap();
    let p = condition(&h.get(&key()).unwrap(), PROGRESSING);
    assert_eq!(p["reason"], NEW_RS_CREATED);
}

/// A ReplicaSet that has the new one's name but is not the template's (a
/// hash collision) is left alone; `collisionCount` goes up, and the next
/// reconcile creates the ReplicaSet under the next name.
#[test]
fn hash_collisions_bump_the_collision_count() {
    let h = H::new().with_objects(&deployment(3, ROLLING)).unwrap();
    let template = super::template_of(&h);
    let taken = format!("web-{}", template::hash(&template, None));
    let squatter = Object::from_value(json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": taken, "namespace": "default", "uid": "other",
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"replicas": 1, "template": {"metadata": {"labels": {"app": "other"}},
                 "spec": {"containers": [{"name": "x", "image": "x"}]}}}
    }))
    .unwrap();
    let mut h = h.with_object(squatter);
    let out = h.reconcile_key(&key()).unwrap();
    assert_eq!(out.applies().count(), 0);
    h.apply_outcome(&key(), &out).unwrap();
    assert_eq!(
        h.get(&key()).unwrap().get_i64("status.collisionCount"),
        Some(1)
    );
    let out = h.reconcile_key(&key()).unwrap();
    let created = out.applies().next().unwrap();
    assert_eq!(
        created.name(),
        format!("web-{}", template::hash(&template, Some(1)))
    );
    assert_ne!(created.name(), taken);
}

/// A ReplicaSet's `ReplicaFailure` (a quota refusing its pods) shows on
/// the Deployment, and goes with it.
#[test]
fn replica_failures_are_carried_over() {
    let mut w = World::new(&deployment(3, ROLLING));
    w.run(3, 10, |_| {});
    let mut rs = w.replica_sets()[0].clone();
    rs.set(
        "status.conditions",
        json!([{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                "message": "pods \"x\" is forbidden: exceeded quota", "lastTransitionTime": "2026-03-01T11:00:00Z"}]),
    );
    w.dep.insert(rs.clone());
    w.reconcile_deployment();
    let f = condition(&w.deployment(), REPLICA_FAILURE);
    assert_eq!(f["reason"], "FailedCreate");
    assert_eq!(f["message"], "pods \"x\" is forbidden: exceeded quota");
    assert_eq!(f["lastUpdateTime"], "2026-03-01T11:00:00Z");
    rs.remove("status.conditions");
    w.dep.insert(rs);
    w.reconcile_deployment();
    assert_eq!(condition(&w.deployment(), REPLICA_FAILURE), Value::Null);
}

/// An empty selector would select every pod: a warning, and nothing done.
#[test]
fn an_empty_selector_is_refused() {
    let text =
        deployment(3, ROLLING).replace("selector: {matchLabels: {app: web}}", "selector: {}");
    let h = H::new().with_objects(&text).unwrap();
    let out = h.reconcile_key(&key()).unwrap();
    assert_eq!(out.applies().count(), 0);
    assert_eq!(out.events[0].reason, "SelectingAll");
    assert_eq!(out.events[0].type_, EventType::Warning);
    let status = out.status_updates().next().unwrap();
    assert_eq!(status.get_i64("status.observedGeneration"), Some(1));
}

/// A Deployment being deleted only has its status kept up to date.
#[test]
fn a_deployment_being_deleted_gets_only_status() {
    let mut w = World::new(&deployment(3, ROLLING));
    w.run(3, 10, |_| {});
    w.edit(|d| {
        d.set("metadata.deletionTimestamp", "2026-03-01T13:00:00Z");
        d.set("spec.template.spec.containers.0.image", "nginx:2");
    });
    let out = w.reconcile_deployment();
    assert_eq!(out.applies().count(), 0);
    assert_eq!(w.replica_sets().len(), 1);
}

//! Native tests of the pod garbage collector, through `windlass_sdk::testing`.

use serde_json::{Value, json};
use windlass_sdk::testing::Harness;
use windlass_sdk::{Object, ObjectRef, Write};

use super::PodGc;

type H = Harness<PodGc>;

fn pod(f: impl FnOnce(&mut Value)) -> Object {
    let mut p = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "batch", "uid": "u1", "resourceVersion": "7",
                     "finalizers": ["batch.kubernetes.io/job-tracking"]},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        "status": {"phase": "Pending"},
    });
    f(&mut p);
    Object::from_value(p).unwrap()
}

fn deleting(p: &mut Value) {
    p["metadata"]["deletionTimestamp"] = json!("2026-03-01T10:00:00Z");
    p["metadata"]["deletionGracePeriodSeconds"] = json!(0);
}

/// The writes of one reconcile, in order, as `verb target [detail]`.
fn writes(object: &Object) -> Vec<String> {
    let out = H::new()
        .with_object(object.clone())
        .reconcile(object)
        .unwrap();
    out.writes
        .iter()
        .map(|w| match w {
            Write::MergePatch {
                target,
                subresource,
                patch,
            } => format!(
                "patch {}/{} {} {patch}",
                target.namespace.as_deref().unwrap_or_default(),
                target.name,
                subresource.as_deref().unwrap_or_default()
            ),
            Write::Delete { target, options } => format!(
                "delete {} grace={:?} uid={:?}",
                target.name, options.grace_period_seconds, options.uid
            ),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn an_unscheduled_pod_being_deleted_fails_and_goes() {
    assert_eq!(
        writes(&pod(deleting)),
        [
            r#"patch batch/p status {"metadata":{"resourceVersion":"7"},"status":{"phase":"Failed"}}"#,
            r#"delete p grace=Some(0) uid=Some("u1")"#,
        ]
    );
}

#[test]
fn nothing_for_pods_not_being_deleted_or_scheduled_or_already_done() {
    assert!(writes(&pod(|_| {})).is_empty(), "not being deleted");
    let bound = pod(|p| {
        deleting(p);
        p["spec"]["nodeName"] = json!("n1");
    });
    assert!(writes(&bound).is_empty(), "a node's pod is its kubelet's");
    let failed = pod(|p| {
        deleting(p);
        p["status"]["phase"] = json!("Failed");
    });
    assert!(
        writes(&failed).is_empty(),
        "failed and forced: finalizers' turn"
    );
    // Ended but deleted with a grace period: only the forced delete.
    let graceful = pod(|p| {
        deleting(p);
        p["metadata"]["deletionGracePeriodSeconds"] = json!(30);
        p["status"]["phase"] = json!("Succeeded");
    });
    assert_eq!(
        writes(&graceful),
        [r#"delete p grace=Some(0) uid=Some("u1")"#]
    );
}

#[test]
fn a_pod_gone_is_nothing_to_do() {
    let h = H::new();
    let out = h
        .reconcile_key(&ObjectRef::new("v1", "Pod", "batch", "p"))
        .unwrap();
    assert!(out.writes.is_empty());
}

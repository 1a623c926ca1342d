//! Native tests of the node lifecycle controllers, through
//! `windlass_sdk::testing`: a fake cache with Nodes, Pods and Leases, the
//! clock moved by hand, and each outcome applied as the host's writer
//! would.

mod health;
mod manifest;
mod orphans;
mod pods;
mod taints;

use serde_json::{Value, json};
use windlass_sdk::testing::Harness;
use windlass_sdk::{DeleteOptions, Event, EventType, Object, ObjectRef, Outcome, Time};

use super::NodeLifecycle;

pub(crate) type H = Harness<NodeLifecycle>;

/// The test clock: `t(s)` is `s` seconds after 2026-03-01T10:00:00Z.
pub(crate) fn t(secs: i64) -> Time {
    let base = Time::parse("2026-03-01T10:00:00Z").unwrap();
    Time::from_millis(base.millis() + secs * 1000)
}

/// `t(secs)` as the API server writes it.
pub(crate) fn ts(secs: i64) -> String {
    t(secs).to_rfc3339()
}

pub(crate) fn node_key() -> ObjectRef {
    ObjectRef::cluster("v1", "Node", "node-1")
}

pub(crate) fn pod_key(name: &str) -> ObjectRef {
    ObjectRef::new("v1", "Pod", "default", name)
}

/// A node condition posted by a kubelet at `t(heartbeat)`.
pub(crate) fn cond(type_: &str, status: &str, heartbeat: i64) -> Value {
    json!({
        "type": type_, "status": status, "reason": "KubeletSays", "message": "posted",
        "lastHeartbeatTime": ts(heartbeat), "lastTransitionTime": ts(-3600),
    })
}

/// Node `node-1`, created an hour before `t(0)`, with `conditions`; `edit`
/// changes its JSON.
pub(crate) fn node(conditions: Vec<Value>, edit: impl FnOnce(&mut Value)) -> Object {
    let mut v = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "node-1",
            "uid": "node-uid-1",
            "resourceVersion": "1",
            "creationTimestamp": ts(-3600),
        },
        "spec": {},
        "status": {"conditions": conditions},
    });
    edit(&mut v);
    Object::from_value(v).unwrap()
}

/// A node that is ready, with a heartbeat at `t(0)`.
pub(crate) fn healthy(edit: impl FnOnce(&mut Value)) -> Object {
    node(vec![cond("Ready", "True", 0)], edit)
}

/// The heartbeat Lease of `node-1`, renewed at `t(renewed)`.
pub(crate) fn lease(renewed: i64) -> Object {
    let renew = format!("{}.000000Z", ts(renewed).trim_end_matches('Z'));
    Object::from_value(json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "node-1", "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40, "renewTime": renew},
    }))
    .unwrap()
}

/// A running, ready pod `name` bound to `node-1` at `t(-100)`; `edit`
/// changes its JSON.
pub(crate) fn pod(name: &str, edit: impl FnOnce(&mut Value)) -> Object {
    let mut v = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": format!("uid-{name}"),
            "resourceVersion": "7",
            "creationTimestamp": ts(-200),
        },
        "spec": {
            "nodeName": "node-1",
            "containers": [{"name": "app", "image": "nginx:1.27"}],
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": ts(-100)},
                {"type": "Ready", "status": "True", "lastTransitionTime": ts(-90)},
            ],
        },
    });
    edit(&mut v);
    Object::from_value(v).unwrap()
}

/// A harness with short grace periods (5 s monitor, 10 s startup, 4 s
/// quarantine) holding `objects`, at `t(0)`.
pub(crate) fn harness(objects: impl IntoIterator<Item = Object>) -> H {
    let settings = json!({
        "nodeMonitorGracePeriod": "5s",
        "nodeStartupGracePeriod": "10s",
        "orphanedPodQuarantine": "4s",
    });
    let mut h = H::with_settings(settings).unwrap().with_now(t(0));
    for o in objects {
        h.insert(o);
    }
    h
}

/// Reconciles `node-1` at `t(secs)` and applies the outcome.
pub(crate) fn step(h: &mut H, secs: i64) -> Outcome {
    h.set_now(t(secs));
    let out = h.reconcile_key(&node_key()).unwrap();
    h.apply_outcome(&node_key(), &out).unwrap();
    out
}

/// The patches of `target` in `out`: `(subresource, patch)`.
pub(crate) fn patches<'a>(
    out: &'a Outcome,
    target: &ObjectRef,
) -> Vec<(Option<&'a str>, &'a Value)> {
    (out.merge_patches())
        .filter(|(t, _, _)| *t == target)
        .map(|(_, sub, patch)| (sub, patch))
        .collect()
}

/// The pod deletes in `out`.
pub(crate) fn pod_deletes(out: &Outcome) -> Vec<(&str, &DeleteOptions)> {
    (out.deletes_with())
        .filter(|(target, _)| target.is("v1", "Pod"))
        .map(|(target, options)| (target.name.as_str(), options))
        .collect()
}

/// `Type reason: message (about)` of each event.
pub(crate) fn events(out: &Outcome) -> Vec<String> {
    out.events
        .iter()
        .map(|e: &Event| {
            let type_ = match e.type_ {
                EventType::Normal => "Normal",
                EventType::Warning => "Warning",
            };
            let about = e.regarding.as_ref().map_or("node", |r| r.name.as_str());
            format!("{type_} {}: {} ({about})", e.reason, e.message)
        })
        .collect()
}

/// `type=status(reason)` of each condition in `conditions`.
pub(crate) fn summary(conditions: &Value) -> Vec<String> {
    conditions
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{}={}({})",
                c["type"].as_str().unwrap(),
                c["status"].as_str().unwrap(),
                c["reason"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// `key:effect` of each of the stored node's taints.
pub(crate) fn taint_list(h: &H) -> Vec<String> {
    let node = h.get(&node_key()).unwrap();
    node.get("spec.taints")
        .and_then(Value::as_array)
        .map(|ts| {
            ts.iter()
                .map(|t| {
                    format!(
                        "{}:{}",
                        t["key"].as_str().unwrap(),
                        t["effect"].as_str().unwrap()
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

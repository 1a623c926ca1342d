//! Native tests of the simulated kubelet, through `windlass_sdk::testing`:
//! a fake cache with Nodes, Pods and Leases, the clock moved by hand, and
//! each outcome applied the way the host's writer would.

mod deletion;
mod exits;
mod index;
mod node;
mod pods;
mod taints;

use serde_json::{Value, json};
use windlass_sdk::testing::Harness;
use windlass_sdk::{DeleteOptions, Object, ObjectRef, Outcome, Time, Write};

use super::Kubelet;

pub(crate) type H = Harness<Kubelet>;

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

/// A simulated node `node-1` holding its pod CIDR; `edit` changes its
/// JSON.
pub(crate) fn node(edit: impl FnOnce(&mut Value)) -> Object {
    let mut v = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "node-1",
            "uid": "node-uid-1",
            "resourceVersion": "1",
            "labels": {
                "windlass.dev/simulated": "true",
                "kubernetes.io/hostname": "node-1",
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
            },
        },
        // The block it would claim itself (its reports wait for one).
        "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"]},
    });
    edit(&mut v);
    Object::from_value(v).unwrap()
}

/// A pod `name` bound to `node-1` by the scheduler, one `nginx` container
/// `app`; `edit` changes its JSON.
pub(crate) fn pod(name: &str, edit: impl FnOnce(&mut Value)) -> Object {
    let mut v = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": format!("uid-{name}"),
            "resourceVersion": "7",
        },
        "spec": {
            "nodeName": "node-1",
            "containers": [{"name": "app", "image": "nginx:1.27"}],
        },
        "status": {
            "phase": "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": ts(-1)},
            ],
        },
    });
    edit(&mut v);
    Object::from_value(v).unwrap()
}

/// A harness holding `node-1` and `pods`, at `t(0)`.
pub(crate) fn harness(node: Object, pods: impl IntoIterator<Item = Object>) -> H {
    let mut h = H::new().with_now(t(0)).with_object(node);
    for p in pods {
        h.insert(p);
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

/// The status patches of pods in `out`, by pod name.
pub(crate) fn pod_patches(out: &Outcome) -> Vec<(&str, &Value)> {
    (out.merge_patches())
        .filter(|(target, sub, _)| *sub == Some("status") && target.is("v1", "Pod"))
        .map(|(target, _, patch)| (target.name.as_str(), patch))
        .collect()
}

/// The pod deletes in `out`.
pub(crate) fn pod_deletes(out: &Outcome) -> Vec<(&str, &DeleteOptions)> {
    (out.deletes_with())
        .filter(|(target, _)| target.is("v1", "Pod"))
        .map(|(target, options)| (target.name.as_str(), options))
        .collect()
}

/// `reason: message` of each event.
pub(crate) fn events(out: &Outcome) -> Vec<String> {
    out.events.iter().map(ToString::to_string).collect()
}

/// The stored pod's status.
pub(crate) fn status(h: &H, name: &str) -> Value {
    h.get(&pod_key(name))
        .expect("pod exists")
        .get("status")
        .cloned()
        .unwrap()
}

/// `type=status(reason)` of each condition, in order.
pub(crate) fn conditions(status: &Value) -> Vec<String> {
    status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| match c["reason"].as_str() {
            Some(r) => format!(
                "{}={}({r})",
                c["type"].as_str().unwrap(),
                c["status"].as_str().unwrap()
            ),
            None => format!(
                "{}={}",
                c["type"].as_str().unwrap(),
                c["status"].as_str().unwrap()
            ),
        })
        .collect()
}

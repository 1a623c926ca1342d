//! Routing a change to the Node it concerns, for controllers that reconcile
//! per node (a kubelet, the node lifecycle controller): a pod wakes the
//! node it is bound to, a heartbeat Lease the node it is named after.
//!
//! ```
//! use windlass_sdk::{Object, ObjectRef, json};
//! let pod = Object::from_value(json!({
//!     "apiVersion": "v1", "kind": "Pod",
//!     "metadata": {"name": "web-1", "namespace": "default"},
//!     "spec": {"nodeName": "node-1"},
//! }))?;
//! assert_eq!(windlass_sdk::nodes::node_of(&pod), Some(ObjectRef::cluster("v1", "Node", "node-1")));
//! # Ok::<(), windlass_sdk::Error>(())
//! ```

use serde::Deserialize;

use crate::view::{Str, nullable};
use crate::{Object, ObjectRef};

/// The Node `changed` concerns: a Pod's `spec.nodeName` (none while it is
/// unbound), or a Lease's name, as the kubelet names its heartbeat Lease in
/// `kube-node-lease` after its node (watch Leases of that namespace only).
/// Other kinds concern no node.
pub fn node_of(changed: &Object) -> Option<ObjectRef> {
    let r: Routing<'_> = changed.deserialize().ok()?;
    let node = match &*r.kind {
        "Pod" => r.spec.node_name?,
        "Lease" => r.metadata.name,
        _ => return None,
    };
    (!node.is_empty()).then(|| ObjectRef::cluster("v1", "Node", &*node))
}

/// Just enough of any object to route it: one pass over its text.
#[derive(Deserialize, Default)]
struct Routing<'a> {
    #[serde(borrow, default)]
    kind: Str<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    metadata: Meta<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    spec: Spec<'a>,
}

#[derive(Deserialize, Default)]
struct Meta<'a> {
    #[serde(borrow, default)]
    name: Str<'a>,
}

#[derive(Deserialize, Default)]
struct Spec<'a> {
    #[serde(borrow, default, rename = "nodeName")]
    node_name: Option<Str<'a>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: serde_json::Value) -> Object {
        Object::from_value(v).unwrap()
    }

    #[test]
    fn pods_route_to_their_node_and_leases_to_theirs() {
        let node = |n: &str| Some(ObjectRef::cluster("v1", "Node", n));
        let pod = |spec| {
            object(json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": "ns"}, "spec": spec}))
        };
        assert_eq!(node_of(&pod(json!({"nodeName": "n1"}))), node("n1"));
        // Unbound, or bound to nothing: no node.
        assert_eq!(node_of(&pod(json!({}))), None);
        assert_eq!(node_of(&pod(json!({"nodeName": ""}))), None);
        assert_eq!(node_of(&pod(json!(null))), None);
        let lease = object(
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "n2", "namespace": "kube-node-lease"}}),
        );
        assert_eq!(node_of(&lease), node("n2"));
        let other = object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "n3", "namespace": "ns"}}));
        assert_eq!(node_of(&other), None);
    }
}

//! `VolumeBinding` through the SDK harness: claims that are missing or
//! bind at once, a bound volume's node affinity, and the selected-node
//! handshake with the provisioner for `WaitForFirstConsumer` claims.

use serde_json::json;
use windlass_sdk::{Object, ObjectRef, Write};

use super::{BIND_POLL, SELECTED_NODE};
use crate::tests::{H, failed_scheduling, key, node_of, node_yaml, pod_scheduled, pod_yaml};

fn claim_ref(name: &str) -> ObjectRef {
    ObjectRef::new("v1", "PersistentVolumeClaim", "default", name)
}

/// A pod of 100m with the claim `data`.
fn pod_with_claim(name: &str) -> String {
    pod_yaml(
        name,
        "app: db",
        "volumes: [{name: d, persistentVolumeClaim: {claimName: data}}]",
    )
}

fn class(name: &str, mode: &str, provisioner: &str) -> Object {
    Object::from_value(json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner, "volumeBindingMode": mode,
    }))
    .unwrap()
}

fn claim(name: &str, class: &str) -> Object {
    Object::from_value(json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                     "resourceVersion": "1"},
        "spec": {"storageClassName": class, "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Pending"},
    }))
    .unwrap()
}

/// A volume of `class` that admits only `node` (`None`: every node),
/// bound to `claim` if given.
fn volume(name: &str, class: &str, node: Option<&str>, claim: Option<&str>) -> Object {
    let mut v = json!({
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {"storageClassName": class, "capacity": {"storage": "1Gi"},
                 "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/v"}},
    });
    if let Some(node) = node {
        v["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}});
    }
    if let Some(claim) = claim {
        v["spec"]["claimRef"] = json!({"namespace": "default", "name": claim});
    }
    Object::from_value(v).unwrap()
}

fn bind_claim(h: &mut H, name: &str, volume: &str) {
    let mut c = h.get(&claim_ref(name)).unwrap().into_value();
    c["spec"]["volumeName"] = json!(volume);
    c["status"]["phase"] = json!("Bound");
    h.insert(Object::from_value(c).unwrap());
}

fn two_nodes() -> String {
    node_yaml("n1", "4", "8Gi", 110, "") + &node_yaml("n2", "4", "8Gi", 110, "")
}

#[test]
fn a_missing_claim_or_one_that_binds_at_once_leaves_the_pod_unschedulable() {
    let mut h = H::new()
        .with_objects(&(two_nodes() + &pod_with_claim("db")))
        .unwrap();
    let out = h.reconcile_key(&key("db")).unwrap();
    assert_eq!(
        failed_scheduling(&out),
        [
            "0/2 nodes are available: persistentvolumeclaim \"data\" not found. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.."
        ]
    );
    h.apply_outcome(&key("db"), &out).unwrap();
    assert_eq!(pod_scheduled(&h, "db").unwrap()["status"], "False");

    // The claim appearing requeues the pod.
    h.insert(class("fast", "Immediate", "example.com/fast"));
    let data = claim("data", "fast");
    assert_eq!(h.map(&data).unwrap(), [key("db")]);
    h.insert(data);
    let out = h.reconcile_key(&key("db")).unwrap();
    assert_eq!(
        failed_scheduling(&out),
        [
            "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.."
        ]
    );

    // Bound to a volume that is gone.
    bind_claim(&mut h, "data", "pv-gone");
    let out = h.reconcile_key(&key("db")).unwrap();
    assert_eq!(
        failed_scheduling(&out),
        [
            "0/2 nodes are available: 2 node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s). preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.."
        ]
    );
}

#[test]
fn a_bound_volume_takes_the_pod_to_a_node_it_admits() {
    let mut h = H::new()
        .with_objects(&(two_nodes() + &pod_with_claim("db")))
        .unwrap();
    h.insert(class("fast", "Immediate", "example.com/fast"));
    h.insert(claim("data", "fast"));
    h.insert(volume("pv-1", "fast", Some("n2"), Some("data")));
    bind_claim(&mut h, "data", "pv-1");
    let out = h.reconcile_key(&key("db")).unwrap();
    h.apply_outcome(&key("db"), &out).unwrap();
    assert_eq!(node_of(&h, "db").as_deref(), Some("n2"));

    // A volume on a node that is not there: no node will do.
    let mut h = H::new()
        .with_objects(&(two_nodes() + &pod_with_claim("db")))
        .unwrap();
    h.insert(claim("data", "fast"));
    h.insert(volume("pv-1", "fast", Some("gone"), Some("data")));
    bind_claim(&mut h, "data", "pv-1");
    let out = h.reconcile_key(&key("db")).unwrap();
    assert_eq!(
        failed_scheduling(&out),
        [
            "0/2 nodes are available: 2 node(s) had volume node affinity conflict. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.."
        ]
    );
}

/// `WaitForFirstConsumer`: the chosen node goes on the claim, the pod
/// waits (polling) until the claim is bound, then goes where its volume is.
#[test]
fn a_claim_that_waits_for_its_pod_learns_the_node_before_the_pod_is_bound() {
    let mut h = H::new()
        .with_objects(&(two_nodes() + &pod_with_claim("db")))
        .unwrap();
    h.insert(class(
        "standard",
        "WaitForFirstConsumer",
        "windlass.dev/simulated",
    ));
    h.insert(claim("data", "standard"));
    let out = h.reconcile_key(&key("db")).unwrap();
    assert_eq!(out.requeue_after, Some(BIND_POLL));
    assert!(out.events.is_empty(), "{out:?}");
    let [Write::MergePatch { target, patch, .. }] = &out.writes[..] else {
        panic!("one claim patch: {out:?}");
    };
    assert_eq!(target, &claim_ref("data"));
    let node = patch["metadata"]["annotations"][SELECTED_NODE]
        .as_str()
        .unwrap()
        .to_owned();
    h.apply_outcome(&key("db"), &out).unwrap();
    assert_eq!(node_of(&h, "db"), None);

    // Annotated, not yet bound: the pod waits without writing.
    let out = h.reconcile_key(&key("db")).unwrap();
    assert!(out.writes.is_empty() && out.events.is_empty(), "{out:?}");
    assert_eq!(out.requeue_after, Some(BIND_POLL));

    // The provisioner's volume on that node, bound: the pod goes there.
    h.insert(volume(
        "pvc-uid-data",
        "standard",
        Some(&node),
        Some("data"),
    ));
    bind_claim(&mut h, "data", "pvc-uid-data");
    let out = h.reconcile_key(&key("db")).unwrap();
    h.apply_outcome(&key("db"), &out).unwrap();
    assert_eq!(node_of(&h, "db"), Some(node));
}

/// `kubernetes.io/no-provisioner`: only nodes with a free volume of the
/// class will do.
#[test]
fn without_a_provisioner_the_pod_goes_where_a_free_volume_is() {
    let mut h = H::new()
        .with_objects(&(two_nodes() + &pod_with_claim("db")))
        .unwrap();
    h.insert(class(
        "local",
        "WaitForFirstConsumer",
        "kubernetes.io/no-provisioner",
    ));
    h.insert(claim("data", "local"));
    h.insert(volume("taken", "local", Some("n1"), Some("other")));
    h.insert(volume("free", "local", Some("n2"), None));
    let out = h.reconcile_key(&key("db")).unwrap();
    let [Write::MergePatch { patch, .. }] = &out.writes[..] else {
        panic!("one claim patch: {out:?}");
    };
    assert_eq!(patch["metadata"]["annotations"][SELECTED_NODE], "n2");

    h.remove(&ObjectRef::cluster("v1", "PersistentVolume", "free"));
    let out = h.reconcile_key(&key("db")).unwrap();
    assert_eq!(
        failed_scheduling(&out),
        [
            "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.."
        ]
    );
}

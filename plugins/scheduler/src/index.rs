//! How Nodes and Pods are filed in the host's index (see [`crate::keys`]),
//! and which pending pods a change requeues (`map`).
//!
//! `map` runs only when an object's entry changes, so entries hold only
//! what scheduling depends on: a node's heartbeat or a pod's readiness
//! changes nothing here and requeues nothing.
//!
//! Requeueing follows kube-scheduler's queueing: only pods that failed to
//! schedule wait for a change (others are in the queue anyway). A node, a
//! claim, a volume or a storage class that appears or changes requeues
//! them all. A pod bound to a node can only
//! help pods waiting for pod affinity or a spread constraint, so it
//! requeues only those; a bound pod that is being deleted or has finished
//! frees resources and requeues them all. (A bound pod deleted outright
//! looks like one that was bound, so the others wait for the resync.)

use windlass_sdk::{IndexEntry, Object, ObjectRef, cache};

use crate::api::{self, Condition};
use crate::bound::BoundPod;
use crate::keys;
use crate::node::NodeInfo;
use crate::nominated;
use crate::plugins::Usage;
use crate::pod::{self, PodInfo};
use crate::wire::{Reader, Writer};

/// The entry of a Node or a Pod (anything else is not indexed).
pub(crate) fn index(object: &Object) -> Option<IndexEntry> {
    let kind: api::KindView<'_> = object.deserialize().ok()?;
    match &*kind.kind {
        "Node" => {
            let view: api::NodeView<'_> = object.deserialize().ok()?;
            Some(
                IndexEntry::new()
                    .key(keys::NODES)
                    .key(keys::node_shard(keys::shard_of(&view.metadata.name)))
                    .amounts([1])
                    .summary(NodeInfo::encode(&view)),
            )
        }
        "Pod" => {
            let view: api::PodView<'_> = object.deserialize().ok()?;
            index_pod(&view)
        }
        _ => None,
    }
}

fn index_pod(view: &api::PodView<'_>) -> Option<IndexEntry> {
    if pod::is_terminal(view) {
        return None;
    }
    let info = PodInfo::new(view);
    let Some(node) = info.node_name else {
        return index_pending(view, &info);
    };
    let mut e = IndexEntry::new()
        .key(keys::node(node))
        .key(keys::namespace(info.namespace))
        .key(keys::ALL);
    for (k, v) in info.labels.iter() {
        e = e.key(keys::label(k, v));
    }
    if info.has_pod_affinity {
        e = e.key(keys::AFFINITY);
    }
    if info.priority < 0 {
        e = e.key(keys::NEGATIVE_PRIORITY);
    }
    let terminating = view.metadata.deletion_timestamp.is_some();
    if let Some(owner) = info.spread_owner.filter(|_| !terminating) {
        e = e.key(keys::owned_on(owner, node));
    }
    Some(
        e.amounts(Usage::amounts(info.requests, info.scoring_requests))
            .summary(BoundPod::encode(&info, node, terminating)),
    )
}

/// A pending pod is filed only once this scheduler found it unschedulable,
/// or nominated it to a node; its summary starts with its namespace and
/// name, then, if nominated, its claim (`nominated`).
fn index_pending(view: &api::PodView<'_>, info: &PodInfo<'_>) -> Option<IndexEntry> {
    if !pod::is_ours(view) || view.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let nominated = info.nominated_node.filter(|n| !n.is_empty());
    let mut e = IndexEntry::new();
    if waiting(view) {
        e = e.key(keys::UNSCHEDULABLE);
        if !info.affinity.is_empty() || info.spread.iter().any(|c| c.hard) {
            e = e.key(keys::WAITING_FOR_PODS);
        }
    } else if nominated.is_none() {
        return None;
    }
    let mut w = Writer::new();
    w.str(info.namespace);
    w.str(info.name);
    if let Some(node) = nominated {
        e = e.key(keys::NOMINATED);
        nominated::encode_claim(&mut w, info, node);
    }
    Some(e.summary(w.finish()))
}

/// Whether the pod's `PodScheduled` condition says it could not be placed.
fn waiting(view: &api::PodView<'_>) -> bool {
    view.status.conditions.iter().any(|raw| {
        serde_json::from_str::<Condition<'_>>(raw.get()).is_ok_and(|c| {
            c.type_ == "PodScheduled"
                && c.status == "False"
                && matches!(
                    c.reason.as_deref(),
                    Some("Unschedulable" | "SchedulerError")
                )
        })
    })
}

/// Whether `changed` has left the cache: `map` runs after the host's cache
/// took the change, so a bound pod deleted without a graceful phase (a
/// zero-grace delete) is seen here as a live pod the cache no longer holds.
/// Its resources are free, as when it ends.
fn gone(changed: &Object) -> bool {
    matches!(cache::get(&changed.object_ref()), Ok(None))
}

/// The pending pods to reconcile again after `changed` changed.
pub(crate) fn map(changed: &Object) -> Vec<ObjectRef> {
    let Ok(kind) = changed.deserialize::<api::KindView<'_>>() else {
        return Vec::new();
    };
    let key = match &*kind.kind {
        // A claim, volume or class that appears or changes may be what a
        // pod with claims waits for (`VolumeBinding`).
        "Node" | "PersistentVolumeClaim" | "PersistentVolume" | "StorageClass" => {
            keys::UNSCHEDULABLE
        }
        "Pod" => {
            let Ok(view) = changed.deserialize::<api::PodView<'_>>() else {
                return Vec::new();
            };
            if view.spec.node_name.as_deref().is_none_or(str::is_empty) {
                return Vec::new();
            }
            if pod::is_terminal(&view)
                || view.metadata.deletion_timestamp.is_some()
                || gone(changed)
            {
                keys::UNSCHEDULABLE
            } else {
                keys::WAITING_FOR_PODS
            }
        }
        _ => return Vec::new(),
    };
    let Ok(found) = cache::lookup(&windlass_sdk::KindRef::new("v1", "Pod"), key) else {
        return Vec::new();
    };
    found
        .iter()
        .filter_map(|s| {
            let mut r = Reader::new(s);
            Some(ObjectRef::new("v1", "Pod", r.str()?, r.str()?))
        })
        .collect()
}

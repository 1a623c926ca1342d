//! What happens to the pods of a node that is not healthy: their `Ready`
//! condition set to `False` when the node is not ready (upstream's
//! `MarkPodsNotReady`), eviction by `NoExecute` taints (through
//! `windlass_sdk::taints::no_execute`), and force deletion of terminating pods on an
//! out-of-service node (PodGC's `gcTerminating`, see `podgc.rs`).
//!
//! Each pod gets at most one status patch (guarded by its
//! resourceVersion, as it replaces the conditions list) and one delete.
//! The pods are visited from a different one on each failed attempt, so
//! that one pod the API server refuses does not hold up the others.

use serde_json::{Map, Value, json};
use windlass_sdk::taints::{self, Eviction, StoredTaint};
use windlass_sdk::{
    DeleteOptions, Error, Event, KindRef, Object, ObjectRef, Time, Write, cache, log,
};

use crate::conditions;
use crate::health::Ready;
use crate::podgc;
use crate::view::Pod;

/// The writes and events for a node's pods, and when to look again.
#[derive(Debug, Default)]
pub(crate) struct PodWrites {
    pub writes: Vec<Write>,
    pub events: Vec<Event>,
    pub due: Option<Time>,
    /// A pod's `tolerationSeconds` were counted from now for a `NoExecute`
    /// taint without `timeAdded`: stamp one.
    pub stamp_taints: bool,
}

impl PodWrites {
    pub(crate) fn due_at(&mut self, at: Time) {
        self.due = Some(self.due.map_or(at, |d| d.min(at)));
    }
}

/// What the node's reconcile found that matters to its pods.
pub(crate) struct NodeFacts<'a> {
    pub name: &'a str,
    pub ready: Ready,
    /// The node's taints as they will be after this reconcile.
    pub taints: &'a [StoredTaint<'a>],
    /// Whether `NoExecute` taints evict here (not on a simulated node that
    /// is ready: its own kubelet evicts).
    pub evicts: bool,
    pub out_of_service: bool,
    pub now: Time,
}

/// The pods filed under `node` in the index, from a different one on
/// each attempt.
pub(crate) fn on_node(node: &str, attempt: u32) -> Result<Vec<Object>, Error> {
    let mut pods = cache::lookup_objects(&KindRef::new("v1", "Pod"), node)?;
    if !pods.is_empty() {
        let turn = attempt as usize % pods.len();
        pods.rotate_left(turn);
    }
    Ok(pods)
}

/// Reads the node's pods and decides for each.
pub(crate) fn sync(node: &NodeFacts<'_>, attempt: u32) -> Result<PodWrites, Error> {
    let mut out = PodWrites::default();
    for object in on_node(node.name, attempt)? {
        let pod: Pod<'_> = match object.deserialize() {
            Ok(p) => p,
            Err(e) => {
                log::warn!("pod on node {} skipped: {e}", node.name);
                continue;
            }
        };
        if pod.spec.node_name.as_deref() != Some(node.name) || pod.force_deleted() {
            continue;
        }
        sync_pod(node, &pod, &mut out)?;
    }
    Ok(out)
}

fn sync_pod(node: &NodeFacts<'_>, pod: &Pod<'_>, out: &mut PodWrites) -> Result<(), Error> {
    let now = node.now;
    let deleting = pod.metadata.deletion_timestamp.is_some();
    if node.ready != Ready::True && node.out_of_service && deleting {
        podgc::force_delete(pod, None, now, out)?;
        return Ok(());
    }
    let mut conditions = conditions::parse(&pod.status.conditions)?;
    let mut changed = false;
    if node.ready != Ready::True
        && !pod.ended()
        && let Some(c) = conditions
            .iter_mut()
            .find(|c| c["type"] == "Ready" && c["status"] == "True")
    {
        c["status"] = json!("False");
        c["lastTransitionTime"] = json!(now.to_rfc3339());
        changed = true;
        out.events
            .push(Event::warning("NodeNotReady", "Node is not ready").regarding(pod_ref(pod)));
    }
    let mut evict = false;
    if node.evicts && !deleting {
        match taints::no_execute(node.taints, &pod.spec.tolerations, now) {
            Eviction::Now => evict = true,
            Eviction::At { at, unstamped } => {
                out.due_at(at);
                out.stamp_taints |= unstamped;
            }
            Eviction::Stays => {}
        }
    }
    if evict {
        changed |=
            windlass_sdk::conditions::set(&mut conditions, taints::eviction_condition(), now);
    }
    if changed {
        let mut status = Map::new();
        status.insert("conditions".into(), Value::Array(conditions));
        out.writes.push(status_patch(pod, status));
    }
    if evict {
        let target = pod_ref(pod);
        out.writes.push(Write::Delete {
            target: target.clone(),
            options: with_uid(DeleteOptions::new(), pod),
        });
        out.events.push(taints::eviction_event(target));
    }
    Ok(())
}

/// The pod's reference.
pub(crate) fn pod_ref(pod: &Pod<'_>) -> ObjectRef {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    ObjectRef::new("v1", "Pod", ns, &*pod.metadata.name)
}

/// A merge patch of the pod's status, only if the pod is still as read:
/// lists in it (conditions) replace the stored ones whole.
pub(crate) fn status_patch(pod: &Pod<'_>, status: Map<String, Value>) -> Write {
    let mut patch = Map::new();
    if let Some(rv) = pod.metadata.resource_version.as_deref() {
        patch.insert("metadata".into(), json!({ "resourceVersion": rv }));
    }
    patch.insert("status".into(), Value::Object(status));
    Write::MergePatch {
        target: pod_ref(pod),
        subresource: Some("status".to_owned()),
        patch: Value::Object(patch),
    }
}

/// `options`, only if the pod still has its uid.
pub(crate) fn with_uid(options: DeleteOptions, pod: &Pod<'_>) -> DeleteOptions {
    match pod.metadata.uid.as_deref() {
        Some(uid) => options.uid(uid),
        None => options,
    }
}

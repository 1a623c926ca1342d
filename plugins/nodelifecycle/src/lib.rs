//! The node lifecycle controllers of kube-controller-manager as a windlass
//! plugin, for every Node (simulated by the `kubelet` plugin or not):
//!
//! - the **node lifecycle controller**: a node whose kubelet stops posting
//!   (its `Ready` heartbeat and its Lease `kube-node-lease/<node>` both
//!   older than `nodeMonitorGracePeriod`), or never posted within
//!   `nodeStartupGracePeriod`, has its `Ready`, `MemoryPressure`,
//!   `DiskPressure` and `PIDPressure` conditions set to `Unknown`; the
//!   conditions become taints (`NoSchedule` ones for scheduling, and the
//!   `not-ready`/`unreachable` `NoExecute` ones that evict), and the ready
//!   pods of a node that is not ready are marked not ready;
//! - the **taint eviction controller**: pods that do not tolerate a
//!   `NoExecute` taint of their node, or tolerate it for `tolerationSeconds`
//!   that ran out (counted from the taint's `timeAdded`), are deleted;
//! - the node-related parts of **PodGC**: pods bound to a node that no
//!   longer exists are force-deleted after `orphanedPodQuarantine`, and
//!   terminating pods of a node that is not ready and carries the
//!   `node.kubernetes.io/out-of-service` taint at once.
//!
//! It keeps no state: its only clock is `Request::now`, and time that
//! upstream keeps in memory is read from the objects (heartbeats, Lease
//! renewals, `timeAdded`, the pod's `PodScheduled` transition). A healthy
//! node's reconcile reads no pod.
//!
//! Files: `reconcile.rs` (one node's reconcile), `health.rs` (conditions),
//! `taints.rs` (conditions to taints),
//! `pods.rs` (a node's pods), `podgc.rs` (force deletion and orphans), and
//! the helpers `conditions.rs`, `view.rs` and `settings.rs`.

mod conditions;
mod health;
mod podgc;
mod pods;
mod reconcile;
mod settings;
mod taints;
mod view;

use windlass_sdk::{
    Controller, Error, Grant, IndexEntry, Manifest, Object, ObjectRef, Outcome, Request, Watch,
};

use crate::view::Routing;

/// The namespace of the nodes' heartbeat Leases.
pub(crate) const LEASE_NAMESPACE: &str = "kube-node-lease";

/// The node lifecycle controllers.
pub struct NodeLifecycle;

impl Controller for NodeLifecycle {
    fn manifest() -> Manifest {
        Manifest::new("nodelifecycle", Watch::kind("v1", "Node"))
            .version(env!("CARGO_PKG_VERSION"))
            // Bound pods, filed under their node (see `index`).
            .reads(Watch::kind("v1", "Pod").fields("spec.nodeName!=").indexed())
            // Heartbeats: indexed so that `map` runs when a Lease appears
            // or goes, not on every renewal; renewals are read when the
            // node is reconciled.
            .reads(
                Watch::kind("coordination.k8s.io/v1", "Lease")
                    .namespace(LEASE_NAMESPACE)
                    .indexed(),
            )
            // Taints in spec, conditions through status.
            .writes(Grant::kind("v1", "Node"))
            // Pod status patches and deletes.
            .writes(Grant::kind("v1", "Pod"))
            .max_concurrency(4)
    }

    fn try_manifest() -> Result<Manifest, Error> {
        // Refuse settings that make no sense when the plugin is loaded.
        settings::Settings::get()?;
        Ok(Self::manifest())
    }

    fn reconcile(req: Request) -> Result<Outcome, Error> {
        reconcile::reconcile(&req)
    }

    /// A pod wakes its node (one that is gone included: that is how its
    /// orphans are found); a Lease the node of its name.
    fn map(changed: &Object) -> Vec<ObjectRef> {
        windlass_sdk::nodes::node_of(changed).into_iter().collect()
    }

    /// A pod is filed under its node, with the few facts that make its
    /// node's reconcile act on it (so that `map` runs when one of them
    /// changes, and not on every status update); a Lease under its name,
    /// always the same, so that renewals wake nothing.
    fn index(object: &Object) -> Option<IndexEntry> {
        let r: Routing<'_> = object.deserialize().ok()?;
        match &*r.kind {
            "Pod" => {
                let node = r.spec.node_name.as_deref().filter(|n| !n.is_empty())?;
                Some(IndexEntry::new().key(node).summary(r.flags()))
            }
            "Lease" => Some(IndexEntry::new().key(&*r.metadata.name)),
            _ => None,
        }
    }
}

windlass_sdk::export!(NodeLifecycle);

#[cfg(test)]
mod tests;

//! The kubelet as a windlass plugin: a simulated node agent, in the spirit
//! of kwok. No container runs, but the nodes labelled
//! `windlass.dev/simulated: "true"` and the pods bound to them look exactly
//! as a real kubelet reports them, so `kubectl get pods -o wide`,
//! `kubectl describe`, `kubectl get nodes`, `kubectl rollout status` and
//! ReplicaSet readiness all work.
//!
//! The plugin reconciles Nodes; each reconcile does what that node's
//! kubelet would do now: keep the node's status and heartbeat Lease
//! current (recording `Starting`, `NodeHasSufficientMemory`,
//! `NodeHasNoDiskPressure`, `NodeHasSufficientPID`, `NodeAllocatableEnforced`
//! and `NodeReady` on its first report, as a kubelet does when it starts),
//! and sync the pods bound to it (found through the host's index
//! of pods by `spec.nodeName`). A node without `spec.podCIDR` is given a
//! block no other node has, as the node IPAM controller does, and reports
//! nothing until the block is its own, so pod IPs and node InternalIPs are
//! unique across the cluster. A node's pods:
//! - start at once, init containers first, then become `Running` and ready;
//! - with `windlass.dev/exit-after: 30s` (and `windlass.dev/exit-code`)
//!   exit that long after each start, and are restarted (with kubelet's
//!   crash-loop back-off) or end as `Succeeded`/`Failed`, per `restartPolicy`
//!   (a Job's pod without the annotation exits 0 after a second, as kwok's
//!   stages complete Job pods);
//! - when deleted stay `Terminating` for their grace period (`preStop`
//!   hooks count within it), then are removed with a zero-grace delete;
//! - are evicted when the node gains a `NoExecute` taint they do not
//!   tolerate (or tolerate for `tolerationSeconds` that run out).
//!
//! Its only clock is `Request::now`; each outcome asks to be called again
//! when the next thing falls due.
//!
//! Files: `reconcile.rs` (one node's reconcile), `pod.rs` (one pod's sync,
//! with `conditions.rs` and `events.rs`),
//! `timeline.rs` (exits and restarts), `termination.rs` (grace periods),
//! `summary.rs` (the index entries), `node_status.rs`
//! and `lease.rs` (the node's own reports), and the small helpers
//! `network.rs`, `qos.rs`, `quantity.rs`, `ids.rs`,
//! `status.rs`, `view.rs` and `settings.rs`.

mod conditions;
mod events;
mod ids;
mod lease;
mod network;
mod node_status;
mod pod;
mod qos;
mod quantity;
mod reconcile;
mod settings;
mod status;
mod summary;
mod termination;
mod timeline;
mod view;

use windlass_sdk::{
    Controller, Error, Grant, IndexEntry, Manifest, Object, ObjectRef, Outcome, Request, Watch,
};

use crate::summary::Summary;
use crate::view::Pod;

/// The label that puts a node in this plugin's care.
pub const SIMULATED_LABEL: &str = "windlass.dev/simulated";

/// The simulated kubelet.
pub struct Kubelet;

impl Controller for Kubelet {
    fn manifest() -> Manifest {
        Manifest::new(
            "kubelet",
            Watch::kind("v1", "Node")
                .labels(&format!("{SIMULATED_LABEL}=true"))
                // Filed under their pod CIDR, to give each node its own.
                .indexed(),
        )
        .version(env!("CARGO_PKG_VERSION"))
        // Bound pods, filed under their node.
        .reads(Watch::kind("v1", "Pod").fields("spec.nodeName!=").indexed())
        // The heartbeat Leases: read to renew each only when it is due.
        // Indexed so that `map` runs when one appears or goes, not on
        // every renewal.
        .reads(
            Watch::kind("coordination.k8s.io/v1", "Lease")
                .namespace(lease::NAMESPACE)
                .indexed(),
        )
        .writes(Grant::kind("v1", "Pod"))
        .writes(Grant::kind("coordination.k8s.io/v1", "Lease").namespace(lease::NAMESPACE))
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

    /// A pod's changes wake its node; a Lease's (appearing or going) its
    /// holder's.
    fn map(changed: &Object) -> Vec<ObjectRef> {
        windlass_sdk::nodes::node_of(changed).into_iter().collect()
    }

    /// A bound pod is filed under its node with a summary of what it needs
    /// (see `summary.rs`); a Lease under its name, always the same, so that
    /// renewals do not wake anything.
    fn index(object: &Object) -> Option<IndexEntry> {
        // One pass over the text: a Lease reads as a pod without a node.
        let o: Pod<'_> = object.deserialize().ok()?;
        match &*o.kind {
            // A node under its pod CIDR, its name as the summary, and 1 as
            // its amount (so a CIDR's total says whether it is taken).
            "Node" => {
                let node: view::Node<'_> = object.deserialize().ok()?;
                let cidr = node
                    .spec
                    .pod_cidr
                    .as_deref()
                    .and_then(network::Cidr::parse)?;
                Some(
                    IndexEntry::new()
                        .key(reconcile::cidr_key(cidr))
                        .amounts([1])
                        .summary(node.metadata.name.as_bytes().to_vec()),
                )
            }
            "Pod" => {
                let node = o.spec.node_name.as_deref().filter(|n| !n.is_empty())?;
                Some(
                    IndexEntry::new()
                        .key(node)
                        .summary(Summary::of(&o).encode()),
                )
            }
            "Lease" => Some(IndexEntry::new().key(&*o.metadata.name)),
            _ => None,
        }
    }
}

windlass_sdk::export!(Kubelet);

#[cfg(test)]
mod tests;

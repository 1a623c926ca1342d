//! `VolumeBinding`: kube-scheduler's plugin for pods with
//! PersistentVolumeClaims (named, or a generic ephemeral volume's
//! `<pod>-<volume>`).
//!
//! - Pre-filter, before any node is looked at: a claim that does not exist
//!   or is being deleted, or an unbound claim whose class binds at once
//!   (`Immediate`, or no class), leaves the pod unschedulable with
//!   upstream's message (`persistentvolumeclaim "data" not found`, `pod has
//!   unbound immediate PersistentVolumeClaims`), until the claim changes.
//! - Filter, per node: the volume of each bound claim must admit the node
//!   by its node affinity (`node(s) had volume node affinity conflict`); an
//!   unbound claim of a `WaitForFirstConsumer` class needs a class that can
//!   provision there (its `allowedTopologies`), or, for
//!   `kubernetes.io/no-provisioner`, an unclaimed volume of the class that
//!   admits the node (`node(s) didn't find available persistent volumes to
//!   bind`).
//! - Pre-bind, once a node is chosen: each such claim is annotated with
//!   `volume.kubernetes.io/selected-node`, and the pod is bound only when
//!   every claim is bound (the provisioner or the volume binder does that),
//!   asked again every [`BIND_POLL`] as upstream's pre-bind polls.
//!
//! Not modelled: capacity and access modes of static volumes in the
//! filter (the binder checks them when it binds), volume limits per node,
//! and upstream's bind timeout (a claim never bound keeps the pod waiting).

use std::time::Duration;

use serde_json::Value;
use windlass_sdk::{Error, KindRef, Object, ObjectRef, cache};

use crate::api;
use crate::node::NodeInfo;
use crate::plugins::Reason;
use crate::selector::{Labels, NodeSelectorTerm};

/// The claim annotation that asks the provisioner for a volume on a node.
pub(crate) const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// How often a pod waiting for its claims to be bound is looked at again.
pub(crate) const BIND_POLL: Duration = Duration::from_secs(1);

const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";
const UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";
pub(crate) const REASON_NODE_CONFLICT: &str = "node(s) had volume node affinity conflict";
pub(crate) const REASON_BIND_CONFLICT: &str =
    "node(s) didn't find available persistent volumes to bind";
pub(crate) const REASON_NO_VOLUME: &str =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";

/// One claim of the pod, with what deciding on it needs.
struct Claim {
    name: String,
    ephemeral: bool,
    object: Option<Object>,
    /// The volume a bound claim names (`None`: bound to one that is gone).
    volume: Option<Object>,
    /// The class of an unbound claim.
    class: Option<Object>,
    /// For a `no-provisioner` class: the unclaimed volumes of the class.
    free: Vec<Object>,
}

impl Claim {
    fn volume_name(&self) -> Option<&str> {
        let name = self.object.as_ref()?.get_str("spec.volumeName")?;
        (!name.is_empty()).then_some(name)
    }

    fn class_name(&self) -> Option<&str> {
        let claim = self.object.as_ref()?;
        claim
            .get_str("spec.storageClassName")
            .or_else(|| claim.annotation("volume.beta.kubernetes.io/storage-class"))
            .filter(|c| !c.is_empty())
    }

    /// Whether the class waits for the first pod (`WaitForFirstConsumer`).
    fn delayed(&self) -> bool {
        self.class
            .as_ref()
            .and_then(|c| c.get_str("volumeBindingMode"))
            == Some("WaitForFirstConsumer")
    }
}

/// The pod's claims as read from the store.
pub(crate) struct PodVolumes {
    claims: Vec<Claim>,
}

impl PodVolumes {
    /// Reads the claims of `pod` from the host's caches (`None`: it has
    /// none, and nothing is read).
    pub(crate) fn read(pod: &api::PodView<'_>) -> Result<Option<Self>, Error> {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let mut claims = Vec::new();
        for v in &pod.spec.volumes {
            let (name, ephemeral) = match (&v.persistent_volume_claim, &v.ephemeral) {
                (Some(c), _) => (c.claim_name.to_string(), false),
                (None, Some(_)) => (format!("{}-{}", pod.metadata.name, v.name), true),
                (None, None) => continue,
            };
            let object = cache::get(&ObjectRef::new(
                "v1",
                "PersistentVolumeClaim",
                namespace,
                &name,
            ))?;
            claims.push(Claim {
                name,
                ephemeral,
                object,
                volume: None,
                class: None,
                free: Vec::new(),
            });
        }
        if claims.is_empty() {
            return Ok(None);
        }
        let mut volumes: Option<Vec<Object>> = None;
        for c in &mut claims {
            if let Some(volume) = c.volume_name() {
                c.volume = cache::get(&ObjectRef::cluster("v1", "PersistentVolume", volume))?;
                continue;
            }
            let Some(class) = c.class_name() else {
                continue;
            };
            let class = class.to_owned();
            c.class = cache::get(&ObjectRef::cluster(
                "storage.k8s.io/v1",
                "StorageClass",
                &class,
            ))?;
            if c.delayed() && provisioner(c) == Some(NO_PROVISIONER) {
                let all = match &mut volumes {
                    Some(all) => all,
                    None => volumes.insert(cache::list(
                        &KindRef::new("v1", "PersistentVolume"),
                        None,
                        None,
                    )?),
                };
                c.free = all
                    .iter()
                    .filter(|v| v.get_str("spec.storageClassName") == Some(&class))
                    .filter(|v| v.get("spec.claimRef").is_none_or(Value::is_null))
                    .cloned()
                    .collect();
            }
        }
        Ok(Some(Self { claims }))
    }

    /// The pre-filter: why no node can take the pod, or the filter that
    /// checks each node.
    pub(crate) fn pre_filter(&self) -> Result<VolumeFilter<'_>, String> {
        let mut filter = VolumeFilter::default();
        for c in &self.claims {
            let Some(claim) = &c.object else {
                return Err(if c.ephemeral {
                    format!(
                        "waiting for ephemeral volume controller to create the persistentvolumeclaim \"{}\"",
                        c.name
                    )
                } else {
                    format!("persistentvolumeclaim \"{}\" not found", c.name)
                });
            };
            if claim.is_being_deleted() {
                return Err(format!(
                    "persistentvolumeclaim \"{}\" is being deleted",
                    c.name
                ));
            }
            if c.volume_name().is_some() {
                match &c.volume {
                    Some(v) => filter.bound.push(required_terms(v)),
                    None => filter.missing_volume = true,
                }
            } else if c.delayed() {
                filter.delayed.push(Delayed::of(c));
            } else {
                return Err(UNBOUND_IMMEDIATE.to_owned());
            }
        }
        Ok(filter)
    }
}

/// The provisioner of the claim's class.
fn provisioner(c: &Claim) -> Option<&str> {
    c.class.as_ref()?.get_str("provisioner")
}

/// A volume's required node selector terms; `None`: it admits every node.
fn required_terms(volume: &Object) -> Option<Vec<NodeSelectorTerm<'_>>> {
    let view: api::VolumeView<'_> = volume.deserialize().ok()?;
    let required = view.spec.node_affinity.required?;
    Some(
        required
            .node_selector_terms
            .iter()
            .map(NodeSelectorTerm::from_view)
            .collect(),
    )
}

/// An unbound claim that waits for the pod's node.
#[derive(Debug)]
struct Delayed<'a> {
    claim: &'a str,
    selected: Option<&'a str>,
    /// Where the class may provision: `Some(terms)` (none: anywhere), or
    /// `None` when it cannot (`no-provisioner`).
    provision: Option<&'a [Value]>,
    /// The node affinity of the unclaimed volumes it could bind to.
    free: Vec<Option<Vec<NodeSelectorTerm<'a>>>>,
}

impl<'a> Delayed<'a> {
    fn of(c: &'a Claim) -> Self {
        let class = c.class.as_ref();
        let provision = (provisioner(c) != Some(NO_PROVISIONER)).then(|| {
            class
                .and_then(|c| c.get("allowedTopologies"))
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice)
        });
        Self {
            claim: &c.name,
            selected: c.object.as_ref().and_then(|o| o.annotation(SELECTED_NODE)),
            provision,
            free: c.free.iter().map(required_terms).collect(),
        }
    }

    /// Whether the claim can be given a volume on `node`.
    fn fits(&self, node: &NodeInfo<'_>) -> bool {
        let provisionable = self.provision.is_some_and(|topologies| {
            topologies.is_empty() || topologies.iter().any(|t| topology_matches(t, node))
        });
        provisionable || self.free.iter().any(|terms| admits(terms.as_deref(), node))
    }
}

/// Whether a StorageClass's topology term (`matchLabelExpressions`, each a
/// key and its allowed values) admits `node`.
fn topology_matches(term: &Value, node: &NodeInfo<'_>) -> bool {
    let expressions = term["matchLabelExpressions"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    expressions.iter().all(|e| {
        let value = e["key"].as_str().and_then(|k| node.label(k));
        e["values"]
            .as_array()
            .is_some_and(|vs| vs.iter().any(|v| v.as_str().map(str::as_bytes) == value))
    })
}

/// Whether a volume's node affinity (`None`: none) admits `node`.
fn admits(terms: Option<&[NodeSelectorTerm<'_>]>, node: &NodeInfo<'_>) -> bool {
    terms.is_none_or(|terms| terms.iter().any(|t| t.matches(node.name, node)))
}

/// The per-node check of a pod's claims, from [`PodVolumes::pre_filter`].
#[derive(Debug, Default)]
pub(crate) struct VolumeFilter<'a> {
    bound: Vec<Option<Vec<NodeSelectorTerm<'a>>>>,
    missing_volume: bool,
    delayed: Vec<Delayed<'a>>,
}

impl VolumeFilter<'_> {
    pub(crate) fn filter(&self, node: &NodeInfo<'_>) -> Option<Reason> {
        if self.missing_volume {
            return Some(Reason::VolumeMissing);
        }
        if !self
            .bound
            .iter()
            .all(|terms| admits(terms.as_deref(), node))
        {
            return Some(Reason::VolumeNodeConflict);
        }
        if !self.delayed.iter().all(|d| d.fits(node)) {
            return Some(Reason::VolumeBindConflict);
        }
        None
    }

    /// Whether the pod must wait for claims to be bound before its own
    /// binding to `node`; and the claims to annotate with it.
    pub(crate) fn pre_bind(&self, node: &str) -> (bool, Vec<&str>) {
        let annotate = self
            .delayed
            .iter()
            .filter(|d| d.selected != Some(node))
            .map(|d| d.claim)
            .collect();
        (!self.delayed.is_empty(), annotate)
    }
}

#[cfg(test)]
mod tests;

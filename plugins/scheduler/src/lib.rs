//! The Kubernetes scheduler as a windlass plugin: binds each pending Pod
//! (no `spec.nodeName`, `spec.schedulerName` `default-scheduler` or unset)
//! to a Node through `pods/binding`, with kube-scheduler's default filters
//! and scores, and explains a pod that fits nowhere with a
//! `FailedScheduling` event and a `PodScheduled=False` condition.
//!
//! One decision never parses every pod or node: Nodes and Pods are read
//! through indexed watches (see `keys` and `index`), so a decision
//! reads every node's compact summary, the resource totals of the nodes it
//! looks at, and only the pods its affinity and spread rules can select.
//!
//! - `schedule`: one decision (pre-filter, filter, score, select).
//! - `plugins`: the filters and scores, one file per kube-scheduler plugin.
//! - `volumes`: `VolumeBinding`, for pods with PersistentVolumeClaims.
//! - `preemption`: `DefaultPreemption`, for a pod that fits nowhere but
//!   would where pods of lower priority are deleted; `budgets`: the
//!   PodDisruptionBudgets it prefers not to violate; `nominated`: the room
//!   a preemptor waits for, kept from pods of lower priority.
//! - `fit_error`, `status`: the message and condition of a pod that does not fit.
//! - `index`, `keys`: how Nodes and Pods are filed, and which pending pods a change requeues.
//! - `node`, `pod`, `bound`, `term`, `selector`, `requests`, `quantity`: the model.
//! - `api`, `wire`, `snapshot`, `hash`: reading JSON, summaries, the index and hashing.

mod api;
mod bound;
mod budgets;
mod fit_error;
mod hash;
mod index;
mod keys;
mod node;
mod nominated;
mod plugins;
mod pod;
mod preemption;
mod quantity;
mod requests;
mod schedule;
mod selector;
mod snapshot;
mod status;
mod term;
mod volumes;
mod wire;

#[cfg(test)]
mod bench;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod testutil;

use std::time::Duration;

use windlass_sdk::{
    Controller, DeleteOptions, Error, Event, Grant, IndexEntry, Manifest, Object, ObjectRef,
    Outcome, Request, Watch,
};

use schedule::Decision;
use serde_json::json;
use snapshot::{Cluster, HostCache, Stats};
use volumes::PodVolumes;

/// The scheduler.
pub struct Scheduler;

impl Controller for Scheduler {
    fn manifest() -> Manifest {
        Manifest::new(
            "scheduler",
            // Only pods without a node: the scheduler never sees the rest
            // through its primary watch.
            Watch::kind("v1", "Pod").fields("spec.nodeName="),
        )
        .version(env!("CARGO_PKG_VERSION"))
        .reads(Watch::kind("v1", "Node").indexed())
        .reads(Watch::kind("v1", "Pod").indexed())
        // `VolumeBinding`: pods with claims. The claims of a pod waiting
        // for its node get `volume.kubernetes.io/selected-node`.
        .reads(Watch::kind("v1", "PersistentVolumeClaim"))
        .reads(Watch::kind("v1", "PersistentVolume"))
        .reads(Watch::kind("storage.k8s.io/v1", "StorageClass"))
        // Preemption spares pods a PodDisruptionBudget protects, if it can.
        .reads(Watch::kind("policy/v1", "PodDisruptionBudget"))
        .writes(Grant::kind("v1", "Pod").subresource("binding"))
        .writes(Grant::kind("v1", "PersistentVolumeClaim"))
        // Unschedulable pods are retried on relevant changes (`map`); the
        // resync catches what `map` cannot see (a bound pod deleted outright).
        .resync(Duration::from_secs(30))
        // Concurrent bindings to one node conflict in the host (whoever read
        // the node's totals second is refused and retried).
        .max_concurrency(4)
    }

    fn reconcile(req: Request) -> Result<Outcome, Error> {
        reconcile(req)
    }

    fn map(changed: &Object) -> Vec<ObjectRef> {
        index::map(changed)
    }

    fn index(object: &Object) -> Option<IndexEntry> {
        index::index(object)
    }
}

windlass_sdk::export!(Scheduler);

fn reconcile(req: Request) -> Result<Outcome, Error> {
    let Some(object) = &req.object else {
        return Ok(Outcome::new());
    };
    let view: api::PodView<'_> = object.deserialize()?;
    let bound = view
        .spec
        .node_name
        .as_deref()
        .is_some_and(|n| !n.is_empty());
    if bound
        || view.metadata.deletion_timestamp.is_some()
        || !pod::is_ours(&view)
        || pod::is_terminal(&view)
        || already_bound(&req)
    {
        return Ok(Outcome::new());
    }
    let key = ObjectRef::new(
        "v1",
        "Pod",
        view.metadata.namespace.as_deref().unwrap_or("default"),
        &*view.metadata.name,
    );
    if !view.spec.scheduling_gates.is_empty() {
        // Gated pods wait, saying so; removing the gates changes the pod,
        // which brings it back here.
        let patch = status::not_scheduled_patch(
            &view,
            status::SCHEDULING_GATED,
            status::GATED_MESSAGE,
            req.now,
        );
        return Ok(patch.map_or_else(Outcome::new, |p| Outcome::new().patch_status(key, p)));
    }
    let mut pod = pod::PodInfo::new(&view);
    let claims = PodVolumes::read(&view)?;
    let decision = match claims.as_ref().map(PodVolumes::pre_filter) {
        Some(Err(reason)) => {
            let nodes = HostCache.node_count()?;
            Decision::Unschedulable(fit_error::pre_filter_rejection(nodes, &reason))
        }
        Some(Ok(filter)) => {
            pod.volumes = Some(filter);
            schedule::decide(&pod, &mut HostCache, &mut Stats::default())?
        }
        None => schedule::decide(&pod, &mut HostCache, &mut Stats::default())?,
    };
    let (reason, message, nomination_void) = match decision {
        Decision::Bind(node) => return Ok(bind(&pod, &key, &node)),
        Decision::Preempt {
            node,
            victims,
            message,
        } => {
            return preempt(&pod, &view, key, &node, &victims, &message, req.now);
        }
        Decision::Unschedulable(message) => (status::UNSCHEDULABLE, message, true),
        Decision::NotEligible(message) => (status::UNSCHEDULABLE, message, false),
        Decision::NoNodes => (
            status::SCHEDULER_ERROR,
            fit_error::NO_NODES.to_owned(),
            true,
        ),
    };
    let message = fit_error::truncate(&message);
    let mut out = Outcome::new().event(Event::warning("FailedScheduling", message.clone()));
    let mut patch = status::not_scheduled_patch(&view, reason, &message, req.now);
    // A nomination no node bears out is cleared, as upstream's
    // `ClearNominatedNodeName` does, so that its claim (`nominated`) goes.
    if nomination_void && pod.nominated_node.is_some_and(|n| !n.is_empty()) {
        let p = patch.get_or_insert_with(|| json!({}));
        p["status"]["nominatedNodeName"] = serde_json::Value::Null;
    }
    if let Some(patch) = patch {
        out = out.patch_status(key, patch);
    }
    Ok(out)
}

/// Preemption's writes, in upstream's order: each victim marked with the
/// `DisruptionTarget` condition and deleted (its uid as precondition, its
/// grace period kept) with a `Preempted` event, then the preemptor's
/// `FailedScheduling` and its `nominatedNodeName`.
fn preempt(
    pod: &pod::PodInfo<'_>,
    view: &api::PodView<'_>,
    key: ObjectRef,
    node: &str,
    victims: &[preemption::Victim],
    message: &str,
    now: windlass_sdk::Time,
) -> Result<Outcome, Error> {
    let mut out = Outcome::new();
    for v in victims {
        let target = ObjectRef::new("v1", "Pod", &v.namespace, &v.name);
        if let Some(victim) = windlass_sdk::cache::get(&target)? {
            out = out.patch_status(
                target.clone(),
                status::disruption_target_patch(&victim, now),
            );
        }
        let why = format!("Preempted by pod {} on node {node}", pod.uid);
        out = out
            .delete_with(target.clone(), DeleteOptions::new().uid(&v.uid))
            .event(Event::normal("Preempted", why).regarding(target));
    }
    let message = fit_error::truncate(message);
    out = out.event(Event::warning("FailedScheduling", message.clone()));
    let condition = status::not_scheduled_patch(view, status::UNSCHEDULABLE, &message, now);
    if condition.is_some() || pod.nominated_node != Some(node) {
        let mut patch = condition.unwrap_or_else(|| json!({}));
        patch["status"]["nominatedNodeName"] = json!(node);
        out = out.patch_status(key, patch);
    }
    Ok(out)
}

/// The pod's binding to `node`; first, when claims of the pod wait for
/// its node, their `selected-node` annotation, and no binding until the
/// provisioner or the volume binder has bound them all.
fn bind(pod: &pod::PodInfo<'_>, key: &ObjectRef, node: &str) -> Outcome {
    if let Some(filter) = &pod.volumes {
        let (wait, annotate) = filter.pre_bind(node);
        if wait {
            let mut out = Outcome::new().requeue_after(volumes::BIND_POLL);
            for claim in annotate {
                let claim = ObjectRef::new("v1", "PersistentVolumeClaim", pod.namespace, claim);
                let patch = json!({"metadata": {"annotations": {volumes::SELECTED_NODE: node}}});
                out = out.merge_patch(claim, patch);
            }
            return out;
        }
    }
    let message = format!(
        "Successfully assigned {}/{} to {node}",
        pod.namespace, pod.name
    );
    Outcome::new()
        .bind(key, node)
        .event(Event::normal("Scheduled", message))
}

/// Whether the previous attempt's binding failed because the pod is
/// already bound (this scheduler's own earlier binding, not yet seen in
/// the cache): there is nothing left to do.
fn already_bound(req: &Request) -> bool {
    req.last_failure
        .as_ref()
        .is_some_and(|f| f.code == 409 && f.message.contains("already assigned"))
}

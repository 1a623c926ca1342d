//! The Deployment controller as a windlass plugin.
//!
//! It does what kube-controller-manager's deployment controller does
//! (`pkg/controller/deployment`), step for step: one ReplicaSet per pod
//! template, named `<deployment>-<pod-template-hash>` and labelled (with its
//! selector and template) by that hash; `RollingUpdate` within `maxSurge`
//! and `maxUnavailable`, `Recreate`, proportional scaling when the replicas
//! change mid-rollout, `spec.paused`; the `deployment.kubernetes.io/revision`
//! annotations that `kubectl rollout history` and `kubectl rollout undo`
//! read (undo patches the template back; the matching old ReplicaSet is
//! then the new one and gets a new revision); `revisionHistoryLimit`; the
//! status with its `Available`, `Progressing` and `ReplicaFailure`
//! conditions, a requeue for the progress deadline, and
//! `ScalingReplicaSet` events.
//!
//! A reconcile reads the Deployment and the ReplicaSets it controls (from
//! the request) and, only when a new ReplicaSet's name is taken, that one
//! ReplicaSet from the cache. Everything the upstream controller does in a
//! row of API calls is planned on a copy (`plan.rs`) and returned as one
//! ordered outcome.
//!
//! Orphaned ReplicaSets the selector selects are adopted, and owned ones
//! it no longer selects released, before anything else (upstream's
//! `ClaimReplicaSets`, `claim.rs`).
//!
//! Not done: the deprecated `rollbackTo` annotation (kubectl's undo does
//! not use it).

mod claim;
mod conditions;
mod model;
mod plan;
mod progress;
mod recreate;
mod revision;
mod rolling;
mod surge;
mod sync;
mod template;

use windlass_sdk::{
    Controller, Error, IndexEntry, Manifest, Object, ObjectRef, Outcome, Request, Watch, cache,
};

use model::{Deployment, ReplicaSet};
use plan::{Plan, Stop};

/// The Deployment controller.
pub struct DeploymentController;

impl Controller for DeploymentController {
    fn manifest() -> Manifest {
        Manifest::new("deployment", Watch::kind("apps/v1", "Deployment"))
            .version(env!("CARGO_PKG_VERSION"))
            // Indexed: its ReplicaSets by owner uid, and a count of the
            // orphans of each namespace (see `claim.rs`).
            .owns(Watch::kind("apps/v1", "ReplicaSet").indexed())
            .max_concurrency(4)
    }

    fn reconcile(req: Request) -> Result<Outcome, Error> {
        reconcile(&req)
    }

    fn index(object: &Object) -> Option<IndexEntry> {
        claim::index(object)
    }
}

windlass_sdk::export!(DeploymentController);

fn reconcile(req: &Request) -> Result<Outcome, Error> {
    let Some(object) = &req.object else {
        // Gone: garbage collection removes its ReplicaSets.
        return Ok(Outcome::new());
    };
    let d = Deployment::read(object)?;
    let owned = claim::owned(&d)?;
    let mut rss = Vec::with_capacity(owned.len());
    for o in &owned {
        if let Some(rs) = ReplicaSet::read(o)? {
            rss.push(rs);
        }
    }
    if let Some(out) = claim::claim(&d, &rss, &owned)? {
        return Ok(out);
    }
    rss.sort_by(ReplicaSet::by_creation);
    let lookup = |name: &str| {
        let r = ObjectRef::new("apps/v1", "ReplicaSet", d.namespace.clone(), name);
        match cache::get(&r)? {
            Some(o) => ReplicaSet::read_with_controller(&o),
            None => Ok(None),
        }
    };
    let mut plan = Plan::new(&d, rss, req.now, req.last_failure.as_ref(), &lookup);
    match plan.sync_deployment() {
        Ok(()) | Err(Stop::WriteStatus) => plan.finish(),
        Err(Stop::Fail(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests;

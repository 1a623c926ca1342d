//! Pods that hold the tracking finalizer but that no Job the controller
//! knows controls any more: their Job was deleted (background deletion
//! removes it before the garbage collector deletes its pods, which then
//! stay terminating until the finalizer goes), replaced by another of its
//! name, or they were orphaned (`--cascade=orphan`). As upstream's
//! `syncOrphanPod`, their finalizer is removed at once, uncounted: there
//! is no Job left to count them.
//!
//! The host hands a reconcile the pods of its Job only while the Job is in
//! its cache, so such a pod reaches the controller through `map` (Pods are
//! also a `reads` watch): a change of one is mapped to the Job key of the
//! pod's own name, and every reconcile looks for an orphan of its key's
//! name. A Job that is gone also looks for the pods labelled with its name,
//! so that its deletion releases them without waiting for their next
//! change.

use serde::Deserialize;
use serde_json::Value;
use windlass_sdk::view::{Str, nullable};
use windlass_sdk::{Error, KindRef, Object, ObjectRef, cache};

use crate::tracking::{self, release_patch};

/// The label upstream gives a Job's pods (unless its selector is manual).
const JOB_NAME: &str = "batch.kubernetes.io/job-name";

/// Whether a pod holding the finalizer is controlled by no Job in the
/// cache: none at all, or a Job that is gone or has another uid now. A pod
/// controlled by something else than a Job is not the Job controller's.
fn is_orphan(pod: &Object) -> bool {
    let Some(c) = pod.controller_ref() else {
        return true;
    };
    if c.kind != "Job" || !c.api_version.starts_with("batch/") {
        return false;
    }
    let job = ObjectRef::new(
        "batch/v1",
        "Job",
        pod.namespace().unwrap_or("default"),
        c.name,
    );
    match cache::get(&job) {
        Ok(Some(job)) => job.uid() != Some(c.uid),
        Ok(None) => true,
        // Unreadable: leave it for a later look rather than guess.
        Err(_) => false,
    }
}

/// What `map` reads first of every changed pod: its finalizers, borrowed
/// from its text with the rest skipped (a change of any pod in the cluster
/// comes here, and few hold the finalizer).
#[derive(Deserialize, Default)]
struct Held<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    metadata: HeldMeta<'a>,
}

#[derive(Deserialize, Default)]
struct HeldMeta<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    finalizers: Vec<Str<'a>>,
}

/// The `map` of a changed pod: an orphan holding the finalizer is looked
/// at under the Job key of its own name.
pub(crate) fn map(changed: &Object) -> Vec<ObjectRef> {
    let held = changed.deserialize::<Held>().is_ok_and(|h| {
        h.metadata
            .finalizers
            .iter()
            .any(|f| f == tracking::FINALIZER)
    });
    if !held || !changed.is("v1", "Pod") || !is_orphan(changed) {
        return Vec::new();
    }
    let ns = changed.namespace().unwrap_or("default");
    vec![ObjectRef::new("batch/v1", "Job", ns, changed.name())]
}

/// The releases of the orphans a reconcile of `key` finds: the pod of the
/// key's name, and when the Job is gone the pods labelled with its name.
pub(crate) fn releases(key: &ObjectRef, job_gone: bool) -> Result<Vec<(ObjectRef, Value)>, Error> {
    let ns = key.namespace.as_deref().unwrap_or("default");
    let pod_kind = KindRef::new("v1", "Pod");
    let mut found: Vec<Object> = Vec::new();
    if let Some(p) = cache::get(&ObjectRef::new("v1", "Pod", ns, &key.name))? {
        found.push(p);
    }
    // A label value is at most 63 characters (and a Job whose name is
    // longer cannot have had the label).
    if job_gone && key.name.len() <= 63 {
        let selector = format!("{JOB_NAME}={}", key.name);
        for p in cache::list(&pod_kind, Some(ns), Some(&selector))? {
            if !found.iter().any(|f| f.name() == p.name()) {
                found.push(p);
            }
        }
    }
    Ok(found
        .iter()
        .filter(|p| tracking::is_tracked(p) && is_orphan(p))
        .map(release_patch)
        .collect())
}

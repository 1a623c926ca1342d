//! kube-controller-manager's pod garbage collector (`pkg/controller/podgc`)
//! for pods that were never scheduled, as a windlass plugin
//! (`gcUnscheduledTerminating`): a pod being deleted before any node took
//! it, and held by a finalizer, is marked `Failed` and deleted with no
//! grace period. Without it such a pod stays `Pending` while it waits for
//! its finalizer: a Job with `podReplacementPolicy: Failed` or a
//! `podFailurePolicy`, which counts only pods that failed, would wait for
//! it forever, neither counting nor replacing it.
//!
//! Upstream looks every 20 s (`gcCheckPeriod`); this plugin is told of
//! the pod when it changes. Its watch, pods without a node, is the one the
//! scheduler holds: the host shares it, so the plugin costs no watch.
//!
//! The node-related parts of PodGC — pods of a node that is gone, and
//! terminating pods of an out-of-service node — are the `nodelifecycle`
//! plugin's, which reconciles nodes. Not done: `gcTerminated`, which
//! deletes the oldest finished pods above `--terminated-pod-gc-threshold`
//! (12,500 by default), since that reads every pod.

use serde::Deserialize;
use serde_json::json;
use windlass_sdk::view::{Str, nullable};
use windlass_sdk::{
    Controller, DeleteOptions, Error, Grant, Manifest, ObjectRef, Outcome, Request, Watch,
};

/// The pod garbage collector, for pods never scheduled.
pub struct PodGc;

impl Controller for PodGc {
    fn manifest() -> Manifest {
        Manifest::new(
            "podgc",
            // Pods without a node: the scheduler's watch, shared.
            Watch::kind("v1", "Pod").fields("spec.nodeName="),
        )
        .version(env!("CARGO_PKG_VERSION"))
        // The `Failed` phase through status, and the deletes.
        .writes(Grant::kind("v1", "Pod"))
        .max_concurrency(2)
    }

    fn reconcile(req: Request) -> Result<Outcome, Error> {
        let Some(object) = &req.object else {
            return Ok(Outcome::new());
        };
        let pod: Pod<'_> = object.deserialize()?;
        Ok(collect(&pod))
    }
}

windlass_sdk::export!(PodGc);

/// The parts of a pod read here.
#[derive(Deserialize, Default)]
struct Pod<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    metadata: Meta<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    spec: Spec<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    status: Status<'a>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Meta<'a> {
    #[serde(borrow, default)]
    name: Str<'a>,
    #[serde(borrow, default)]
    namespace: Option<Str<'a>>,
    #[serde(borrow, default)]
    uid: Option<Str<'a>>,
    #[serde(borrow, default)]
    resource_version: Option<Str<'a>>,
    #[serde(borrow, default)]
    deletion_timestamp: Option<Str<'a>>,
    #[serde(default)]
    deletion_grace_period_seconds: Option<i64>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Spec<'a> {
    #[serde(borrow, default)]
    node_name: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
struct Status<'a> {
    #[serde(borrow, default)]
    phase: Option<Str<'a>>,
}

/// Upstream's `markFailedAndDeletePod` for a pod being deleted with no
/// node: `Failed` unless it has ended (only if it is still as read), then
/// deleted with no grace period (only if it is still the same pod). A pod
/// already both is left to its finalizers.
fn collect(pod: &Pod<'_>) -> Outcome {
    let m = &pod.metadata;
    let unscheduled = pod.spec.node_name.as_deref().is_none_or(str::is_empty);
    if m.deletion_timestamp.is_none() || !unscheduled {
        return Outcome::new();
    }
    let target = ObjectRef::new(
        "v1",
        "Pod",
        m.namespace.as_deref().unwrap_or("default"),
        &*m.name,
    );
    let ended = matches!(pod.status.phase.as_deref(), Some("Succeeded" | "Failed"));
    let forced = m.deletion_grace_period_seconds == Some(0);
    let mut out = Outcome::new();
    if !ended {
        let mut patch = json!({"status": {"phase": "Failed"}});
        if let Some(rv) = m.resource_version.as_deref() {
            patch["metadata"] = json!({ "resourceVersion": rv });
        }
        out = out.patch_status(target.clone(), patch);
    }
    if !ended || !forced {
        let mut options = DeleteOptions::new().grace_period_seconds(0);
        if let Some(uid) = m.uid.as_deref() {
            options = options.uid(uid);
        }
        out = out.delete_with(target, options);
    }
    out
}

#[cfg(test)]
mod tests;

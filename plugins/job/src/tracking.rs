//! Pod tracking with the `batch.kubernetes.io/job-tracking` finalizer, as
//! upstream's `trackJobStatusAndRemoveFinalizers` does it: a pod that ended
//! is first recorded by uid in `status.uncountedTerminatedPods` (an Indexed
//! Job's success by its index in `completedIndexes`), then its finalizer is
//! removed, then, once no pod of that uid holds the finalizer any more, the
//! uid moves into `status.succeeded` or `status.failed`. Each step is one
//! write the next reconcile finds done or not, so a crash between two of
//! them neither loses a count nor makes one twice, and a pod deleted before
//! it was seen to end is held by its finalizer until it has been counted.

use std::collections::HashSet;

use serde_json::{Value, json};
use windlass_sdk::{Object, ObjectRef};

use crate::job::Spec;
use crate::pods::{Phase, Pod};
use crate::policy::Verdict;

/// The finalizer every pod of a Job carries until the Job has counted it.
pub(crate) const FINALIZER: &str = "batch.kubernetes.io/job-tracking";

/// Upstream's `MaxUncountedPods`: at most this many pods recorded at once
/// (uids in `uncountedTerminatedPods`, and new completed indexes), which
/// keeps the status small and a Job of many pods from starving the others;
/// the rest wait for the next reconcile.
pub(crate) const MAX_UNCOUNTED: usize = 500;

/// `status.uncountedTerminatedPods`: the uids of pods that ended and are
/// not yet in the counts, in the order they were recorded.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Uncounted {
    pub succeeded: Vec<String>,
    pub failed: Vec<String>,
}

impl Uncounted {
    pub(crate) fn of(job: &Object) -> Self {
        let uids = |list: &str| -> Vec<String> {
            job.get(&format!("status.uncountedTerminatedPods.{list}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        };
        Uncounted {
            succeeded: uids("succeeded"),
            failed: uids("failed"),
        }
    }

    /// Whether `uid` is recorded, as a success or a failure.
    pub(crate) fn has(&self, uid: &str) -> bool {
        self.succeeded.iter().chain(&self.failed).any(|u| u == uid)
    }

    pub(crate) fn len(&self) -> usize {
        self.succeeded.len() + self.failed.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// As the status holds it: `{}` when nothing is in flight, an empty
    /// list left out (as upstream's `omitempty`).
    pub(crate) fn to_json(&self) -> Value {
        let mut v = json!({});
        if !self.succeeded.is_empty() {
            v["succeeded"] = json!(self.succeeded);
        }
        if !self.failed.is_empty() {
            v["failed"] = json!(self.failed);
        }
        v
    }
}

/// Whether `o` carries the finalizer.
pub(crate) fn is_tracked(o: &Object) -> bool {
    o.finalizers().any(|f| f == FINALIZER)
}

/// The merge patch that takes the finalizer off `o`: its other finalizers,
/// and its resourceVersion, so that a change made since it was read (a
/// finalizer another controller added) fails the patch with a conflict
/// instead of being overwritten.
pub(crate) fn release_patch(o: &Object) -> (ObjectRef, Value) {
    let rest: Vec<&str> = o.finalizers().filter(|f| *f != FINALIZER).collect();
    let finalizers = if rest.is_empty() {
        Value::Null
    } else {
        json!(rest)
    };
    let mut meta = json!({"finalizers": finalizers});
    if let Some(rv) = o.resource_version() {
        meta["resourceVersion"] = json!(rv);
    }
    (o.object_ref(), json!({"metadata": meta}))
}

/// Whether a pod counts as failed: its phase says so, or (unless only
/// failed pods are replaced) it is being deleted without having succeeded,
/// as upstream's `isPodFailed` (a pod deleted before it ended may never
/// reach `Failed`).
pub(crate) fn considered_failed(spec: &Spec, p: &Pod) -> bool {
    p.phase == Phase::Failed || (!spec.replace_only_failed && p.phase == Phase::Terminating)
}

/// Whether the pod's index counts for an Indexed Job (a pod without one,
/// or past `completions`, counts for nothing).
fn valid_index(spec: &Spec, p: &Pod) -> bool {
    !spec.indexed || p.index.is_some_and(|i| i < spec.completions.unwrap_or(0))
}

/// The counts the controller decides with, as upstream's `getStatus`: the
/// recorded ones, the uids in flight, and the tracked pods that ended since
/// (not yet recorded). Returns (succeeded, failed); an Indexed Job's
/// successes are its completed indexes, counted by the caller.
pub(crate) fn effective(
    spec: &Spec,
    stored_succeeded: u32,
    stored_failed: u32,
    uncounted: &Uncounted,
    pods: &[Pod],
) -> (u32, u32) {
    let fresh = || {
        pods.iter()
            .filter(|p| p.tracked && !uncounted.has(&p.uid) && valid_index(spec, p))
    };
    let succeeded = stored_succeeded
        + uncounted.succeeded.len() as u32
        + fresh().filter(|p| p.phase == Phase::Succeeded).count() as u32;
    let failed = stored_failed
        + uncounted.failed.len() as u32
        + fresh()
            .filter(|p| considered_failed(spec, p) && Verdict::counts(p.verdict.as_ref()))
            .count() as u32;
    (succeeded, failed)
}

/// How the Job ends, when an ending is decided: every pod's finalizer may
/// then go, and with a failure every pod that has not succeeded counts as
/// failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    Success,
    Failure,
}

/// One reconcile's tracking: what moves into the counts, what is recorded,
/// which pods are released.
#[derive(Debug, Default)]
pub(crate) struct Plan<'a> {
    /// Recorded uids whose pods no longer hold the finalizer (or are gone):
    /// they move into `succeeded` and `failed`.
    pub moved_succeeded: u32,
    pub moved_failed: u32,
    /// `uncountedTerminatedPods` as this reconcile writes it.
    pub uncounted: Uncounted,
    /// Pods whose finalizer is removed once the status is written: those
    /// recorded before or in this write, and those that count for nothing.
    pub release: Vec<&'a Pod>,
    /// Tracked pods past the batch: looked at in a later reconcile.
    pub full: bool,
}

impl<'a> Plan<'a> {
    /// The plan for `pods`, given what the status recorded and how the Job
    /// ends (if it does). `held` keeps a failed pod's finalizer (with
    /// `backoffLimitPerIndex`, until its index's replacement exists).
    pub(crate) fn new(
        spec: &Spec,
        recorded: &Uncounted,
        pods: &'a [Pod],
        ending: Option<Ending>,
        held: impl Fn(&Pod) -> bool,
    ) -> Self {
        let mut plan = Plan::default();
        // Uids whose pod holds the finalizer no more are counted now.
        let holding: HashSet<&str> = pods
            .iter()
            .filter(|p| p.tracked)
            .map(|p| p.uid.as_str())
            .collect();
        for (list, moved, out) in [
            (
                &recorded.succeeded,
                &mut plan.moved_succeeded,
                &mut plan.uncounted.succeeded,
            ),
            (
                &recorded.failed,
                &mut plan.moved_failed,
                &mut plan.uncounted.failed,
            ),
        ] {
            for uid in list {
                if holding.contains(uid.as_str()) {
                    out.push(uid.clone());
                } else {
                    *moved += 1;
                }
            }
        }
        let mut new_indexes = 0usize;
        for p in pods.iter().filter(|p| p.tracked) {
            if plan.uncounted.len() + new_indexes >= MAX_UNCOUNTED {
                plan.full = true;
                break;
            }
            if recorded.has(&p.uid) {
                // Recorded by an earlier reconcile: only the release is left.
                plan.release.push(p);
                continue;
            }
            let failed = considered_failed(spec, p);
            let may_go = ending.is_some() || p.phase == Phase::Succeeded || (failed && !held(p));
            if !may_go {
                continue;
            }
            let valid = valid_index(spec, p);
            if p.phase == Phase::Succeeded {
                if valid && spec.indexed {
                    // Its index, in `completedIndexes`, is its record.
                    new_indexes += 1;
                } else if valid {
                    plan.uncounted.succeeded.push(p.uid.clone());
                }
            } else if (failed || ending == Some(Ending::Failure))
                && valid
                && Verdict::counts(p.verdict.as_ref())
            {
                plan.uncounted.failed.push(p.uid.clone());
            }
            plan.release.push(p);
        }
        plan
    }
}

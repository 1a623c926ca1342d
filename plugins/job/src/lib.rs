//! The Job controller as a windlass plugin: runs a Job's pods to
//! completion, as kube-controller-manager's job controller does, so
//! `kubectl create job`, `kubectl wait --for=condition=complete` and
//! `kubectl get jobs` behave as on a cluster.
//!
//! Each reconcile looks at the Job and the pods it controls:
//! - up to `parallelism` pods run at once, until `completions` have
//!   succeeded (with no `completions`, a work queue: no new pod once one has
//!   succeeded, and done when none is left running); an `Indexed` Job runs
//!   one pod per index, each with its index as upstream gives it (the
//!   `batch.kubernetes.io/job-completion-index` annotation and label, the
//!   hostname `<job>-<index>`, `JOB_COMPLETION_INDEX`), and records the
//!   indexes done in `completedIndexes`;
//! - a failed pod is replaced after upstream's back-off (10 s, doubling,
//!   at most 6 min, from when the last failure ended, for the failures
//!   since the last success); more than `backoffLimit` failed pods (or,
//!   with `restartPolicy: OnFailure`, that many container restarts) fail
//!   the Job with `BackoffLimitExceeded`, and `activeDeadlineSeconds` with
//!   `DeadlineExceeded`;
//! - a Job ends as upstream's does since its terminal conditions are
//!   delayed: `FailureTarget` (or `SuccessCriteriaMet`) first, with the
//!   failure's (or success's) reason and message, its running pods
//!   deleted (a failing Job's counted as failed); `Failed` (or `Complete`,
//!   with `completionTime`) with the same reason and message, and the
//!   event, only once none of its pods is terminating;
//! - `successPolicy` (`success.rs`, Indexed Jobs): the first rule the
//!   succeeded indexes meet (`succeededIndexes` all done, or
//!   `succeededCount` of them or of all) ends the Job with reason
//!   `SuccessPolicy`, "Matched rules at index N", its lingering pods
//!   deleted; a failure is looked at first;
//! - `managedBy`: a Job another controller runs (any value but
//!   `kubernetes.io/job-controller`) is left to it, but for its TTL;
//! - `podFailurePolicy` (`policy.rs`): a failed pod is held to the rules in
//!   order (`onExitCodes`, regular containers then init ones, exit code 0
//!   never matching; `onPodConditions`, such as the `DisruptionTarget` of
//!   an evicted or preempted pod), and the first that matches decides:
//!   `FailJob` fails the Job at once with reason `PodFailurePolicy` and
//!   upstream's message, `Ignore` neither counts the failure (not in
//!   `backoffLimit`, not in `status.failed`) nor stops its replacement,
//!   `Count` counts it, `FailIndex` fails the pod's index;
//! - `backoffLimitPerIndex` (`per_index.rs`, Indexed Jobs): each index's
//!   failures travel in its replacement pods'
//!   `batch.kubernetes.io/job-index-failure-count` (and
//!   `job-index-ignored-failure-count`) annotations, each index backs off
//!   on its own, an index past its limit is failed and not retried
//!   (`failedIndexes`), and the Job fails with `FailedIndexes` once every
//!   index has succeeded or failed, or at once with
//!   `MaxFailedIndexesExceeded` past `maxFailedIndexes`;
//! - `podReplacementPolicy: Failed` (always so with a pod failure policy):
//!   a terminating pod is replaced only once it has failed;
//! - `suspend` deletes the running pods and sets `Suspended`; resuming
//!   starts the clock (`startTime`) again;
//! - a finished Job with `ttlSecondsAfterFinished` is deleted that long
//!   after it finished (the TTL-after-finished controller's work), its pods
//!   with it;
//! - pods are tracked with the `batch.kubernetes.io/job-tracking`
//!   finalizer (`tracking.rs`), as upstream since 1.26: every pod is made
//!   with it; one that ended, or is being deleted without having succeeded
//!   (which counts as failed), is recorded by uid in
//!   `uncountedTerminatedPods` (an Indexed Job's success by its index in
//!   `completedIndexes`), then its finalizer is removed (a merge patch
//!   carrying the pod's resourceVersion), then the next reconcile moves it
//!   into `succeeded` or `failed`: at most 500 in flight, and each step
//!   safe to repeat, so a pod deleted before it was counted is counted
//!   once. Decisions count what is recorded, in flight and newly ended; the
//!   final condition waits for nothing to be in flight. With
//!   `backoffLimitPerIndex` an index's last failed pod keeps its finalizer
//!   until its replacement exists;
//! - a Job being deleted (or finished) lets go of every pod it tracks, and
//!   pods whose Job is gone or that were orphaned are released uncounted
//!   (`orphans.rs`): Pods are also a `reads` watch whose `map` sends such a
//!   pod to the Job key of its own name, and a gone Job's key releases the
//!   pods labelled with its name, so background deletion's pods do not
//!   stay terminating.
//!
//! Status (`active`, `ready`, `terminating`, `succeeded`, `failed`,
//! `uncountedTerminatedPods`, `startTime`, `completionTime`,
//! `completedIndexes`, `failedIndexes`; the conditions
//! `SuccessCriteriaMet` and `Complete`, `FailureTarget` and `Failed`,
//! `Suspended`) is written when it changes, and the events are upstream's:
//! `SuccessfulCreate` ("Created pod: …"), `SuccessfulDelete`, `Completed`,
//! `BackoffLimitExceeded`, `DeadlineExceeded`, `PodFailurePolicy`,
//! `FailedIndexes`, `MaxFailedIndexesExceeded`, `Suspended`, `Resumed`,
//! `FailedCreate`.
//!
//! Differences from upstream: pod names are derived from the Job's uid
//! instead of drawn at random, so a reconcile that runs again before its
//! creates reach the cache converges the same pods rather than making
//! more. Upstream records, releases and counts in one sync; here the count
//! comes in the reconcile after the release (the pods' changes requeue the
//! Job). A pod that never had the finalizer (made before it was added)
//! counts as already counted, as upstream's. Upstream adopts orphans its
//! selector matches; this controller does not, and releases them. The
//! back-off is worked out from the pods that exist (upstream keeps a
//! record in memory): failures since the latest success to end, or with no
//! succeeded pod left, every failure the status counts.
//!
//! Files: `job.rs` (the spec and the recorded status), `pods.rs` (what a
//! pod counts as, and new pods from the template), `policy.rs` (the pod
//! failure policy), `success.rs` (the success policy), `per_index.rs`
//! (limits per index), `backoff.rs` (the delay before a replacement),
//! `tracking.rs` (the finalizer's bookkeeping), `orphans.rs` (pods no Job
//! holds).

mod backoff;
mod job;
mod orphans;
mod per_index;
mod pods;
mod policy;
mod success;
mod tracking;

use std::collections::{BTreeSet, HashSet};
use std::time::Duration;

use serde_json::{Map, Value, json};
use windlass_sdk::conditions;
use windlass_sdk::{
    Controller, DeleteOptions, Error, Event, Manifest, Object, ObjectRef, Outcome, Propagation,
    Request, Time, Watch,
};

use job::{Spec, Stored, format_indexes};
use pods::{NewPod, Phase, Pod};
use tracking::Plan;

/// The Job controller.
pub struct JobController;

impl Controller for JobController {
    fn manifest() -> Manifest {
        Manifest::new("job", Watch::kind("batch/v1", "Job"))
            .version(env!("CARGO_PKG_VERSION"))
            .owns(Watch::kind("v1", "Pod"))
            // The same informer: `map` finds the pods no Job holds any
            // more that still carry the finalizer (`orphans.rs`).
            .reads(Watch::kind("v1", "Pod"))
            .max_concurrency(4)
    }

    fn reconcile(req: Request) -> Result<Outcome, Error> {
        let mut out = reconcile(&req)?;
        for (target, patch) in orphans::releases(&req.key, req.object.is_none())? {
            out = out.merge_patch(target, patch);
        }
        Ok(out)
    }

    fn map(changed: &Object) -> Vec<ObjectRef> {
        orphans::map(changed)
    }
}

windlass_sdk::export!(JobController);

fn reconcile(req: &Request) -> Result<Outcome, Error> {
    // Gone: its pods are the garbage collector's (and `orphans.rs`'s).
    let Some(job) = req.object.as_ref() else {
        return Ok(Outcome::new());
    };
    let stored = Stored::of(job);
    let now = req.now;
    if job.is_being_deleted() {
        // As upstream, a Job being deleted lets go of every pod it tracks:
        // the garbage collector deletes them, and they must not be held.
        if job::managed_elsewhere(job).is_some() {
            return Ok(Outcome::new());
        }
        let pods: Vec<Pod> = req
            .owned_of("v1", "Pod")
            .map(|p| Pod::of(p, None))
            .collect();
        return Ok(release_all(Outcome::new(), &pods));
    }
    if job::managed_elsewhere(job).is_some() {
        // Another controller runs it, as upstream's job controller leaves
        // it; the TTL still deletes it once finished (upstream's
        // TTL-after-finished controller does not look at `managedBy`).
        let mut out = Outcome::new();
        if let Some(finished) = stored.finished_at() {
            out = expire(out, job, job::ttl_after_finished(job)?, finished, now);
        }
        return Ok(out);
    }
    let spec = Spec::of(job)?;
    let pods: Vec<Pod> = req
        .owned_of("v1", "Pod")
        .map(|p| Pod::of(p, spec.policy.as_ref()))
        .collect();

    if let Some(finished) = stored.finished_at() {
        return Ok(finished_job(job, &spec, &pods, finished, now));
    }
    let mut run = Run::new(&spec, &stored, &pods, now);
    if let Some(failure) = &req.last_failure
        && !matches!(failure.code, 404 | 409)
    {
        run.events.push(Event::warning(
            "FailedCreate",
            format!("Error creating: {}", failure.message),
        ));
    }
    run.decide(job)?;
    run.track();
    run.outcome(job)
}

/// Takes the finalizer off every pod that still carries it, uncounted (the
/// Job is finished or going).
fn release_all(mut out: Outcome, pods: &[Pod]) -> Outcome {
    for p in pods.iter().filter(|p| p.tracked) {
        let (target, patch) = p.release.clone();
        out = out.merge_patch(target, patch);
    }
    out
}

/// A finished Job: nothing more runs; a pod still tracked is let go (as
/// upstream's `syncOrphanPod` lets go of a finished Job's), pods still
/// running are deleted, and the TTL, if it has one, deletes the Job.
fn finished_job(
    job: &Object,
    spec: &Spec,
    pods: &[Pod],
    finished: Option<Time>,
    now: Time,
) -> Outcome {
    let mut out = release_all(Outcome::new(), pods);
    for p in pods.iter().filter(|p| p.phase == Phase::Active) {
        out = out.delete(p.object_ref());
    }
    expire(out, job, spec.ttl_after_finished, finished, now)
}

/// The TTL-after-finished controller's work: a Job finished at `finished`
/// with a TTL is deleted once it runs out, and looked at again then until
/// it does.
fn expire(
    out: Outcome,
    job: &Object,
    ttl: Option<Duration>,
    finished: Option<Time>,
    now: Time,
) -> Outcome {
    let Some(ttl) = ttl else {
        return out;
    };
    let at = finished.unwrap_or(now) + ttl;
    if now < at {
        return out.requeue_after(now.until(at));
    }
    // As the TTL-after-finished controller: foreground, and only this Job
    // (not one recreated under its name).
    let mut options = DeleteOptions::new().propagation(Propagation::Foreground);
    if let Some(uid) = job.uid() {
        options = options.uid(uid);
    }
    out.delete_with(job.object_ref(), options)
}

/// How a Job ends, as upstream since its terminal conditions are delayed:
/// an interim condition (`SuccessCriteriaMet` or `FailureTarget`) first,
/// then, once no pod of the Job is terminating, the final one (`Complete`
/// or `Failed`) with the same reason and message.
struct Ending {
    success: bool,
    reason: String,
    message: String,
}

impl Ending {
    fn success(reason: &str, message: impl Into<String>) -> Self {
        Ending {
            success: true,
            reason: reason.to_owned(),
            message: message.into(),
        }
    }

    fn failure(reason: &str, message: impl Into<String>) -> Self {
        Ending {
            success: false,
            reason: reason.to_owned(),
            message: message.into(),
        }
    }

    /// The ending an earlier reconcile decided, if one did: its interim
    /// condition is there (success first, as upstream looks).
    fn decided(stored: &Stored) -> Option<Self> {
        ["SuccessCriteriaMet", "FailureTarget"]
            .into_iter()
            .find_map(|type_| stored.condition(type_).filter(|c| c["status"] == "True"))
            .map(|c| Ending {
                success: c["type"] == "SuccessCriteriaMet",
                reason: c["reason"].as_str().unwrap_or_default().to_owned(),
                message: c["message"].as_str().unwrap_or_default().to_owned(),
            })
    }

    fn interim(&self) -> &'static str {
        if self.success {
            "SuccessCriteriaMet"
        } else {
            "FailureTarget"
        }
    }

    fn last(&self) -> &'static str {
        if self.success { "Complete" } else { "Failed" }
    }
}

/// One reconcile's decisions.
struct Run<'a> {
    spec: &'a Spec,
    stored: &'a Stored,
    pods: &'a [Pod],
    now: Time,
    succeeded: u32,
    /// Failed pods that count (the policy did not ignore them).
    failed: u32,
    /// Failed pods the policy ignored: they count only towards the
    /// back-off.
    ignored: u32,
    completed: BTreeSet<u32>,
    /// With `backoffLimitPerIndex`: the indexes failed for good.
    failed_indexes: BTreeSet<u32>,
    start: Option<Time>,
    completion: Option<Time>,
    conditions: Vec<Value>,
    creates: Vec<NewPod>,
    deletes: Vec<&'a Pod>,
    events: Vec<Event>,
    requeue: Option<Duration>,
    /// The ending decided, whose final condition waits for the pods.
    ending: Option<Ending>,
    /// What the tracking finalizer's bookkeeping writes (`track`).
    plan: Plan<'a>,
}

impl<'a> Run<'a> {
    fn new(spec: &'a Spec, stored: &'a Stored, pods: &'a [Pod], now: Time) -> Self {
        let count = |phase| pods.iter().filter(|p| p.phase == phase).count() as u32;
        // What the status counts, what is in flight, and what ended since.
        let effective = tracking::effective(
            spec,
            stored.succeeded,
            stored.failed,
            &stored.uncounted,
            pods,
        );
        let mut completed = BTreeSet::new();
        let succeeded = if spec.indexed {
            let limit = spec.completions.unwrap_or(0);
            completed = stored.completed_indexes.clone();
            completed.extend(
                pods.iter()
                    .filter(|p| p.phase == Phase::Succeeded)
                    .filter_map(|p| p.index),
            );
            completed.retain(|&i| i < limit);
            completed.len() as u32
        } else {
            effective.0
        };
        let counted = pods.iter().filter(|p| p.counted_failure()).count() as u32;
        Run {
            spec,
            stored,
            pods,
            now,
            succeeded,
            failed: effective.1,
            ignored: count(Phase::Failed) - counted,
            completed,
            failed_indexes: per_index::failed_indexes(spec, stored, pods),
            start: stored.start_time,
            completion: None,
            conditions: stored.conditions.clone(),
            creates: Vec::new(),
            deletes: Vec::new(),
            events: Vec::new(),
            requeue: None,
            ending: None,
            plan: Plan::default(),
        }
    }

    fn active(&self) -> impl Iterator<Item = &'a Pod> + use<'a> {
        self.pods.iter().filter(|p| p.phase == Phase::Active)
    }

    fn requeue_in(&mut self, after: Duration) {
        let after = after.max(Duration::from_millis(10));
        self.requeue = Some(self.requeue.map_or(after, |r| r.min(after)));
    }

    /// Sets condition `type_` as upstream's `ensureJobConditionStatus`:
    /// its transition time moves only when its status does.
    fn condition(&mut self, type_: &str, status: &str, reason: &str, message: &str) {
        let wanted = json!({
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastProbeTime": self.now.to_rfc3339(),
        });
        conditions::set(&mut self.conditions, wanted, self.now);
    }

    /// Deletes every running pod (the Job ended or is suspended).
    fn stop_all(&mut self) {
        let active: Vec<&'a Pod> = self.active().collect();
        self.deletes.extend(active);
    }

    /// Ends the Job: its interim condition and the running pods deleted;
    /// the final condition waits (`conclude`).
    fn finish(&mut self, end: Ending) {
        let stopping: Vec<&'a Pod> = self.active().collect();
        if !end.success {
            // Upstream counts the tracked pods a failing Job stops as
            // failed (once: they are recorded as such in this write; the
            // cache may still show them running after that).
            let uncounted = &self.stored.uncounted;
            self.failed += stopping
                .iter()
                .filter(|p| p.tracked && !uncounted.has(&p.uid))
                .count() as u32;
        }
        self.deletes.extend(stopping);
        self.condition(end.interim(), "True", &end.reason, &end.message);
        self.ending = Some(end);
    }

    /// The tracking finalizer's bookkeeping (`tracking.rs`), then the final
    /// condition of an ending, if it may be written now.
    fn track(&mut self) {
        let ending = self.ending.as_ref().map(|e| {
            if e.success {
                tracking::Ending::Success
            } else {
                tracking::Ending::Failure
            }
        });
        let (spec, pods) = (self.spec, self.pods);
        let (completed, failed_indexes) = (&self.completed, &self.failed_indexes);
        self.plan = Plan::new(spec, &self.stored.uncounted, pods, ending, |p| {
            per_index::held(spec, pods, completed, failed_indexes, p)
        });
        if let Some(end) = self.ending.take() {
            self.conclude(end);
        }
    }

    /// The final condition of an ending (with `completionTime` for
    /// `Complete`) and its event, once none of the Job's pods is
    /// terminating and every pod that ended is counted, as upstream's
    /// `enactJobFinished` waits for them.
    fn conclude(&mut self, end: Ending) {
        let terminating = self.pods.iter().any(|p| p.phase == Phase::Terminating);
        if terminating
            || !self.deletes.is_empty()
            || !self.plan.uncounted.is_empty()
            || self.plan.full
        {
            return;
        }
        self.condition(end.last(), "True", &end.reason, &end.message);
        if end.success {
            self.completion = Some(self.now);
            self.events
                .push(Event::normal("Completed", "Job completed"));
        } else {
            self.events.push(Event::warning(&end.reason, end.message));
        }
    }

    fn decide(&mut self, job: &Object) -> Result<(), Error> {
        let spec = self.spec;
        if let Some(end) = Ending::decided(self.stored) {
            self.finish(end);
            return Ok(());
        }
        // Suspended: nothing runs, and the clock stops.
        if spec.suspend {
            self.stop_all();
            if !self.stored.holds("Suspended") {
                self.condition("Suspended", "True", "JobSuspended", "Job suspended");
                self.events
                    .push(Event::normal("Suspended", "Job suspended"));
            }
            self.start = None;
            return Ok(());
        }
        if self.stored.holds("Suspended") {
            self.condition("Suspended", "False", "JobResumed", "Job resumed");
            self.events.push(Event::normal("Resumed", "Job resumed"));
            self.start = None;
        }
        let start = *self.start.get_or_insert(self.now);

        if let Some((reason, message)) = self.failure(start) {
            self.finish(Ending::failure(reason, message));
            return Ok(());
        }
        if let Some(deadline) = spec.active_deadline {
            self.requeue_in(self.now.until(start + deadline));
        }
        if let Some(message) = spec
            .success_policy
            .as_ref()
            .and_then(|p| p.matched(&self.completed))
        {
            self.finish(Ending::success("SuccessPolicy", message));
            return Ok(());
        }

        let active: Vec<&'a Pod> = self.active().collect();
        let done = match spec.completions {
            Some(c) => self.succeeded >= c,
            None => self.succeeded > 0 && active.is_empty(),
        };
        if done {
            // Upstream deletes what still runs once enough have succeeded.
            self.finish(Ending::success(
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            ));
            return Ok(());
        }
        if spec.indexed {
            self.manage_indexed(job, &active)
        } else {
            self.manage(job, &active)
        }
    }

    /// Why the Job fails now, if it does, in upstream's order: a pod that
    /// matched a `FailJob` rule, `backoffLimit` (failed pods, or with
    /// `OnFailure` restarts of running ones), the deadline, then with
    /// `backoffLimitPerIndex` the failed indexes.
    fn failure(&self, start: Time) -> Option<(&'static str, String)> {
        let spec = self.spec;
        if let Some(message) = self.fail_job_message() {
            return Some(("PodFailurePolicy", message));
        }
        let restarts: u32 = if spec.restarts_on_failure {
            self.active().map(|p| p.restarts).sum()
        } else {
            0
        };
        let restarts_exceed = spec.restarts_on_failure
            && if spec.backoff_limit == 0 {
                restarts > 0
            } else {
                restarts >= spec.backoff_limit
            };
        if self.failed > spec.backoff_limit || restarts_exceed {
            return Some((
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit".into(),
            ));
        }
        if spec.active_deadline.is_some_and(|d| self.now >= start + d) {
            return Some((
                "DeadlineExceeded",
                "Job was active longer than specified deadline".into(),
            ));
        }
        self.failed_indexes_failure()
    }

    /// The message of the first failed pod that matched a `FailJob` rule.
    fn fail_job_message(&self) -> Option<String> {
        self.pods
            .iter()
            .filter(|p| p.phase == Phase::Failed)
            .find_map(|p| p.verdict.as_ref()?.message.clone())
    }

    /// With `backoffLimitPerIndex`: more failed indexes than
    /// `maxFailedIndexes` fail the Job at once; otherwise it fails once
    /// every index has either succeeded or failed, and some failed.
    fn failed_indexes_failure(&self) -> Option<(&'static str, String)> {
        let failed = self.failed_indexes.len();
        if self
            .spec
            .max_failed_indexes
            .is_some_and(|max| failed > max as usize)
        {
            return Some((
                "MaxFailedIndexesExceeded",
                "Job has exceeded the specified maximal number of failed indexes".into(),
            ));
        }
        let completions = self.spec.completions.unwrap_or(0) as usize;
        if failed > 0 && failed + self.completed.len() >= completions {
            return Some(("FailedIndexes", "Job has failed indexes".into()));
        }
        None
    }

    /// Whether replacements may be created now, after failures: upstream's
    /// back-off from the last failed pod's end, for the failures since the
    /// last success (ignored ones too, as upstream's back-off record counts
    /// them; a success resets it).
    fn backed_off(&mut self) -> bool {
        let last_success = self
            .pods
            .iter()
            .filter(|p| p.phase == Phase::Succeeded)
            .filter_map(Pod::finished)
            .max();
        let since: Vec<Time> = self
            .pods
            .iter()
            .filter(|p| p.phase == Phase::Failed)
            .filter_map(Pod::finished)
            .filter(|&t| last_success.is_none_or(|s| t > s))
            .collect();
        let Some(&last) = since.iter().max() else {
            return true;
        };
        // Without a success, the failures the status counts too (their pods
        // may be gone).
        let failures = match last_success {
            None => self.failed + self.ignored,
            Some(_) => since.len() as u32,
        };
        match backoff::remaining(failures, last, self.now) {
            None => true,
            Some(wait) => {
                self.requeue_in(wait);
                false
            }
        }
    }

    /// Pods that take a place: running ones, and with
    /// `podReplacementPolicy: Failed` terminating ones too.
    fn holding(&self, active: &[&Pod]) -> usize {
        let terminating = self
            .pods
            .iter()
            .filter(|p| p.phase == Phase::Terminating)
            .count();
        active.len()
            + if self.spec.replace_only_failed {
                terminating
            } else {
                0
            }
    }

    fn manage(&mut self, job: &Object, active: &[&'a Pod]) -> Result<(), Error> {
        let spec = self.spec;
        let want = match spec.completions {
            Some(c) => spec.parallelism.min(c.saturating_sub(self.succeeded)),
            // A work queue with a success lets what runs finish.
            None if self.succeeded > 0 => active.len() as u32,
            None => spec.parallelism,
        } as usize;
        if active.len() > want {
            self.delete_extra(active, active.len() - want);
            return Ok(());
        }
        let missing = want.saturating_sub(self.holding(active));
        if missing > 0 && self.backed_off() {
            let prefix = format!("{}-", job.name());
            for name in self.fresh_names(job, &prefix, missing) {
                self.creates.push(NewPod {
                    name,
                    index: None,
                    failures: None,
                });
            }
        }
        Ok(())
    }

    fn manage_indexed(&mut self, job: &Object, active: &[&'a Pod]) -> Result<(), Error> {
        let spec = self.spec;
        let completions = spec.completions.unwrap_or(0);
        // Pods of an index already done, out of range, without an index,
        // or a second one of an index, go.
        let mut held = HashSet::new();
        let mut keep: Vec<&'a Pod> = Vec::new();
        for p in active {
            match p.index {
                Some(i) if i < completions && !self.completed.contains(&i) && held.insert(i) => {
                    keep.push(p)
                }
                _ => self.deletes.push(p),
            }
        }
        if spec.replace_only_failed {
            held.extend(
                self.pods
                    .iter()
                    .filter(|p| p.phase == Phase::Terminating)
                    .filter_map(|p| p.index),
            );
        }
        let want = spec
            .parallelism
            .min(completions.saturating_sub(self.succeeded)) as usize;
        if keep.len() > want {
            self.delete_extra(&keep, keep.len() - want);
            return Ok(());
        }
        let missing = want.saturating_sub(self.holding(&keep));
        let per_index = spec.backoff_limit_per_index.is_some();
        // With limits per index, each index backs off on its own.
        if missing == 0 || (!per_index && !self.backed_off()) {
            return Ok(());
        }
        let pending: Vec<u32> = (0..completions)
            .filter(|i| {
                !self.completed.contains(i) && !self.failed_indexes.contains(i) && !held.contains(i)
            })
            .take(missing)
            .collect();
        for i in pending {
            let failures = if per_index {
                let last = per_index::last_failed(self.pods, i);
                if let Some(wait) = per_index::remaining(last, self.now) {
                    self.requeue_in(wait);
                    continue;
                }
                Some(per_index::failures_for(last))
            } else {
                None
            };
            let prefix = format!("{}-{i}-", job.name());
            if let Some(name) = self.fresh_names(job, &prefix, 1).pop() {
                self.creates.push(NewPod {
                    name,
                    index: Some(i),
                    failures,
                });
            }
        }
        Ok(())
    }

    /// `n` extra running pods to delete: not ready ones first, then the
    /// newest, as upstream ranks them.
    fn delete_extra(&mut self, active: &[&'a Pod], n: usize) {
        let mut ranked: Vec<&'a Pod> = active.to_vec();
        ranked.sort_by(|a, b| a.ready.cmp(&b.ready).then(b.created.cmp(&a.created)));
        self.deletes.extend(ranked.into_iter().take(n));
    }

    /// `n` names for new pods that no pod of the Job has.
    fn fresh_names(&self, job: &Object, prefix: &str, n: usize) -> Vec<String> {
        let uid = job.uid().unwrap_or_default();
        let taken: HashSet<&str> = self.pods.iter().map(|p| p.name.as_str()).collect();
        (0u32..)
            .map(|k| pods::name(prefix, uid, k))
            .filter(|name| !taken.contains(name.as_str()))
            .take(n)
            .collect()
    }

    /// The writes: creates, the status if it changed (which records the
    /// pods that ended), the finalizers taken off, then deletes (after the
    /// releases: a pod released uncounted, as a succeeding Job's running
    /// ones, is released at the version it was read at).
    fn outcome(self, job: &Object) -> Result<Outcome, Error> {
        let mut out = Outcome::new();
        for new in &self.creates {
            out = out.apply(pods::new_pod(job, new)?).event(Event::normal(
                "SuccessfulCreate",
                format!("Created pod: {}", new.name),
            ));
        }
        let status = self.status(job);
        if job.get("status") != Some(&status) {
            let mut updated = job.clone();
            updated.value_mut()["status"] = status;
            out = out.update_status(updated);
        }
        for p in &self.plan.release {
            let (target, patch) = p.release.clone();
            out = out.merge_patch(target, patch);
        }
        for p in &self.deletes {
            out = out.delete(p.object_ref()).event(Event::normal(
                "SuccessfulDelete",
                format!("Deleted pod: {}", p.name),
            ));
        }
        for e in self.events {
            out = out.event(e);
        }
        if let Some(after) = self.requeue {
            out = out.requeue_after(after);
        }
        Ok(out)
    }

    fn status(&self, job: &Object) -> Value {
        let deleted: HashSet<&str> = self.deletes.iter().map(|p| p.name.as_str()).collect();
        let running = |p: &&Pod| p.phase == Phase::Active && !deleted.contains(p.name.as_str());
        let active = self.pods.iter().filter(running).count() + self.creates.len();
        let ready = self.pods.iter().filter(running).filter(|p| p.ready).count();
        let terminating = self
            .pods
            .iter()
            .filter(|p| p.phase == Phase::Terminating || deleted.contains(p.name.as_str()))
            .count();
        let mut s = Map::new();
        if let Some(c) = job
            .get("status.conditions")
            .filter(|_| self.conditions.is_empty())
        {
            // Kept as stored (an empty list stays one).
            s.insert("conditions".into(), c.clone());
        } else if !self.conditions.is_empty() {
            s.insert("conditions".into(), Value::Array(self.conditions.clone()));
        }
        if let Some(t) = self.start {
            s.insert("startTime".into(), json!(t.to_rfc3339()));
        }
        let completion = self.completion.or(self.stored.completion_time);
        if let Some(t) = completion {
            s.insert("completionTime".into(), json!(t.to_rfc3339()));
        }
        // The counts are what the tracking has counted (an Indexed Job's
        // successes, its completed indexes); decisions use more.
        let succeeded = if self.spec.indexed {
            self.completed.len() as u32
        } else {
            self.stored.succeeded + self.plan.moved_succeeded
        };
        let failed = self.stored.failed + self.plan.moved_failed;
        for (key, n) in [
            ("active", active as u32),
            ("succeeded", succeeded),
            ("failed", failed),
        ] {
            if n > 0 {
                s.insert(key.into(), json!(n));
            }
        }
        if self.spec.indexed && !self.completed.is_empty() {
            s.insert(
                "completedIndexes".into(),
                json!(format_indexes(&self.completed)),
            );
        }
        if self.spec.backoff_limit_per_index.is_some() {
            // Upstream writes it, empty too, whenever the Job has limits
            // per index.
            s.insert(
                "failedIndexes".into(),
                json!(format_indexes(&self.failed_indexes)),
            );
        }
        s.insert("terminating".into(), json!(terminating));
        s.insert("ready".into(), json!(ready));
        s.insert(
            "uncountedTerminatedPods".into(),
            self.plan.uncounted.to_json(),
        );
        Value::Object(s)
    }
}

#[cfg(test)]
mod tests;

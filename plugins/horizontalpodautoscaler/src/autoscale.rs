//! One sync of one HPA, as upstream's `reconcileAutoscaler` runs it on a
//! cluster without metrics: read the target's scale, bring it within
//! `minReplicas`..`maxReplicas`, and otherwise say why no metric could be
//! computed. The status is written only when it changes.

use std::time::Duration;

use serde_json::{Value, json};
use windlass_sdk::{Error, Event, Object, ObjectRef, Outcome, Request, Time, Write};

use crate::metrics::{self, Failure};
use crate::status::{ABLE_TO_SCALE, SCALED_TO_ZERO, SCALING_ACTIVE, Status};
use crate::target::{self, Scale, Target};

/// Upstream's `--horizontal-pod-autoscaler-sync-period` default.
pub(crate) const SYNC_PERIOD: Duration = Duration::from_secs(15);

/// Syncs the HPA `req` is about; one gone or being deleted is left alone.
pub(crate) fn reconcile(req: &Request) -> Result<Outcome, Error> {
    let Some(hpa) = req.live_object() else {
        return Ok(Outcome::new());
    };
    let max = hpa.get_i64("spec.maxReplicas").ok_or_else(|| {
        Error::permanent(format!(
            "HorizontalPodAutoscaler {}/{}: spec.maxReplicas is required",
            hpa.namespace().unwrap_or_default(),
            hpa.name()
        ))
    })?;
    let before = Status::read(hpa.get("status"));
    let mut sync = Sync {
        hpa,
        now: req.now,
        status: before.clone(),
        events: Vec::new(),
        scale: None,
    };
    match target::read(hpa)? {
        Scale::Failed(err) => sync.failed_get_scale(&err),
        Scale::Found(target) => sync.autoscale(&target, max),
    }
    Ok(sync.into_outcome(&req.key, &before))
}

/// Where the replica count must go when it is out of bounds, and why, in
/// upstream's words.
fn bounded(current: i64, min: i64, max: i64) -> Option<(i64, &'static str)> {
    if current > max {
        Some((max, "Current number of replicas above Spec.MaxReplicas"))
    } else if current < min {
        Some((min, "Current number of replicas below Spec.MinReplicas"))
    } else {
        None
    }
}

/// One sync in progress: the status being rewritten, the events, the scale.
struct Sync<'a> {
    hpa: &'a Object,
    now: Time,
    status: Status,
    events: Vec<Event>,
    scale: Option<Write>,
}

impl Sync<'_> {
    /// The target cannot be read: nothing but `AbleToScale` changes.
    fn failed_get_scale(&mut self, err: &str) {
        self.events.push(Event::warning("FailedGetScale", err));
        self.status.set_condition(
            ABLE_TO_SCALE,
            false,
            "FailedGetScale",
            format!("the HPA controller was unable to get the target's current scale: {err}"),
            self.now,
        );
    }

    fn autoscale(&mut self, target: &Target, max: i64) {
        self.status.set_condition(
            ABLE_TO_SCALE,
            true,
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale",
            self.now,
        );
        let current = target.spec_replicas;
        let min = self.hpa.get_i64("spec.minReplicas").unwrap_or(1);
        if current == 0 && min != 0 {
            self.disabled();
        } else if let Some((desired, reason)) = bounded(current, min, max) {
            self.rescale(target, current, desired, reason);
        } else {
            self.metrics_failed(target, current);
        }
    }

    /// Someone scaled the target to zero: autoscaling is off until they
    /// scale it up again.
    fn disabled(&mut self) {
        self.status.set_condition(
            SCALING_ACTIVE,
            false,
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero",
            self.now,
        );
        self.status.remove_condition(SCALED_TO_ZERO);
        self.status
            .record(0, 0, Vec::new(), self.hpa.generation(), None);
    }

    /// Out of bounds: scale to the bound. `ScalingActive` and
    /// `ScalingLimited` stay as they were, as upstream leaves them.
    fn rescale(&mut self, target: &Target, current: i64, desired: i64, reason: &str) {
        self.scale = Some(target.scale_to(desired));
        self.status.set_condition(
            ABLE_TO_SCALE,
            true,
            "SucceededRescale",
            format!("the HPA controller was able to update the target scale to {desired}"),
            self.now,
        );
        self.events.push(Event::normal(
            "SuccessfulRescale",
            format!("New size: {desired}; reason: {reason}"),
        ));
        self.status.remove_condition(SCALED_TO_ZERO);
        let generation = self.hpa.generation();
        self.status
            .record(current, desired, Vec::new(), generation, Some(self.now));
    }

    /// Within bounds, the metrics decide, and none can be fetched: record
    /// the current count and the metrics without values, keep the desired
    /// count, do not scale.
    fn metrics_failed(&mut self, target: &Target, current: i64) {
        let (statuses, error) = if target.has_selector {
            self.fetch_metrics()
        } else {
            self.selector_required()
        };
        let desired = self.status.desired_replicas();
        let generation = self.hpa.generation();
        self.status
            .record(current, desired, statuses, generation, None);
        self.events
            .push(Event::warning("FailedComputeMetricsReplicas", error));
    }

    /// The scale has no selector to find pods by.
    fn selector_required(&mut self) -> (Vec<Value>, String) {
        const REQUIRED: &str = "selector is required";
        self.events
            .push(Event::warning("SelectorRequired", REQUIRED));
        self.status.set_condition(
            SCALING_ACTIVE,
            false,
            "InvalidSelector",
            "the HPA target's scale is missing a selector",
            self.now,
        );
        (Vec::new(), REQUIRED.to_owned())
    }

    /// Tries every metric: each failure is an event, the first one the
    /// condition; each metric's status is listed with no current value.
    fn fetch_metrics(&mut self) -> (Vec<Value>, String) {
        let namespace = self.hpa.namespace().unwrap_or("default");
        let failures: Vec<Failure> = (metrics::specs(self.hpa).iter())
            .map(|spec| metrics::fetch(spec, namespace))
            .collect();
        for f in &failures {
            self.events.push(Event::warning(f.reason, f.cause.clone()));
        }
        // `specs` is never empty, so there is a first failure.
        if let Some(first) = failures.first() {
            self.status.set_condition(
                SCALING_ACTIVE,
                false,
                first.reason,
                format!(
                    "the HPA was unable to compute the replica count: {}",
                    first.cause
                ),
                self.now,
            );
        }
        let n = failures.len();
        let error = format!(
            "invalid metrics ({n} invalid out of {n}), first error is: {}",
            failures.first().map_or("", |f| f.error.as_str())
        );
        (vec![json!({"type": ""}); n], error)
    }

    /// The scale write first, then the status if it changed, as upstream.
    fn into_outcome(self, key: &ObjectRef, before: &Status) -> Outcome {
        let mut out = Outcome::new().requeue_after(SYNC_PERIOD);
        if let Some(scale) = self.scale {
            out = out.write(scale);
        }
        if !self.status.same_as(before) {
            out = out.patch_status(key.clone(), self.status.to_patch());
        }
        self.events.into_iter().fold(out, Outcome::event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_win_over_metrics() {
        assert_eq!(
            bounded(7, 2, 5),
            Some((5, "Current number of replicas above Spec.MaxReplicas"))
        );
        assert_eq!(
            bounded(1, 2, 5),
            Some((2, "Current number of replicas below Spec.MinReplicas"))
        );
        assert_eq!(bounded(3, 2, 5), None);
        assert_eq!(bounded(5, 2, 5), None);
    }
}

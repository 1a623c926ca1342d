//! An HPA's `status` as the controller keeps it: read from the object,
//! changed the way upstream's `setCondition` and `setStatus` change it,
//! compared with what is there and written back as one merge patch.

use serde_json::{Map, Value, json};
use windlass_sdk::Time;

/// The condition types the controller sets.
pub(crate) const ABLE_TO_SCALE: &str = "AbleToScale";
pub(crate) const SCALING_ACTIVE: &str = "ScalingActive";
/// Set only by upstream's scale-to-zero (alpha `HPAScaleToZero`); with
/// that gate off upstream removes it, and so does this plugin.
pub(crate) const SCALED_TO_ZERO: &str = "ScaledToZero";

/// One entry of `status.conditions`.
#[derive(Debug, Clone, PartialEq)]
struct Condition {
    type_: String,
    status: String,
    reason: String,
    message: String,
    last_transition_time: Option<String>,
}

impl Condition {
    fn read(v: &Value) -> Self {
        let text = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
        Self {
            type_: text("type"),
            status: text("status"),
            reason: text("reason"),
            message: text("message"),
            last_transition_time: v["lastTransitionTime"].as_str().map(str::to_owned),
        }
    }

    /// Equal but for `lastTransitionTime`, which moves only with `status`.
    fn same_as(&self, other: &Condition) -> bool {
        (&self.type_, &self.status, &self.reason, &self.message)
            == (&other.type_, &other.status, &other.reason, &other.message)
    }

    fn to_json(&self) -> Value {
        let mut c = json!({"type": self.type_, "status": self.status});
        if let Some(t) = &self.last_transition_time {
            c["lastTransitionTime"] = json!(t);
        }
        c["reason"] = json!(self.reason);
        c["message"] = json!(self.message);
        c
    }
}

/// `status` of an `autoscaling/v2` HorizontalPodAutoscaler.
#[derive(Debug, Clone, Default)]
pub(crate) struct Status {
    observed_generation: Option<i64>,
    last_scale_time: Option<String>,
    current_replicas: i64,
    desired_replicas: i64,
    current_metrics: Vec<Value>,
    conditions: Vec<Condition>,
}

impl Status {
    /// The status as stored; a missing field reads as Go's zero value.
    pub(crate) fn read(status: Option<&Value>) -> Self {
        let Some(s) = status.filter(|s| s.is_object()) else {
            return Self::default();
        };
        let list = |k: &str| s[k].as_array().cloned().unwrap_or_default();
        Self {
            observed_generation: s["observedGeneration"].as_i64(),
            last_scale_time: s["lastScaleTime"].as_str().map(str::to_owned),
            current_replicas: s["currentReplicas"].as_i64().unwrap_or(0),
            desired_replicas: s["desiredReplicas"].as_i64().unwrap_or(0),
            current_metrics: list("currentMetrics"),
            conditions: list("conditions").iter().map(Condition::read).collect(),
        }
    }

    /// The desired replicas last recorded.
    pub(crate) fn desired_replicas(&self) -> i64 {
        self.desired_replicas
    }

    /// Sets a condition as upstream's `setConditionInList`: a new type goes
    /// last, and `lastTransitionTime` moves only when `status` changes.
    pub(crate) fn set_condition(
        &mut self,
        type_: &str,
        status: bool,
        reason: &str,
        message: impl Into<String>,
        now: Time,
    ) {
        let status = if status { "True" } else { "False" };
        let index = match self.conditions.iter().position(|c| c.type_ == type_) {
            Some(i) => i,
            None => {
                self.conditions.push(Condition {
                    type_: type_.to_owned(),
                    status: String::new(),
                    reason: String::new(),
                    message: String::new(),
                    last_transition_time: None,
                });
                self.conditions.len() - 1
            }
        };
        let c = &mut self.conditions[index];
        if c.status != status {
            c.last_transition_time = Some(now.to_rfc3339());
        }
        c.status = status.to_owned();
        c.reason = reason.to_owned();
        c.message = message.into();
    }

    /// Removes the condition `type_`, if there is one.
    pub(crate) fn remove_condition(&mut self, type_: &str) {
        self.conditions.retain(|c| c.type_ != type_);
    }

    /// Upstream's `setStatus`: replicas and metrics are replaced, the
    /// conditions and `lastScaleTime` kept, the latter moved to `scaled_at`
    /// when the controller scaled.
    pub(crate) fn record(
        &mut self,
        current: i64,
        desired: i64,
        metrics: Vec<Value>,
        generation: Option<i64>,
        scaled_at: Option<Time>,
    ) {
        self.current_replicas = current;
        self.desired_replicas = desired;
        self.current_metrics = metrics;
        self.observed_generation = generation;
        if let Some(at) = scaled_at {
            self.last_scale_time = Some(at.to_rfc3339());
        }
    }

    /// Whether `self` says what `other` says (`lastTransitionTime` aside):
    /// upstream's `updateStatusIfNeeded` test.
    pub(crate) fn same_as(&self, other: &Status) -> bool {
        self.observed_generation == other.observed_generation
            && self.last_scale_time == other.last_scale_time
            && self.current_replicas == other.current_replicas
            && self.desired_replicas == other.desired_replicas
            && self.current_metrics == other.current_metrics
            && self.conditions.len() == other.conditions.len()
            && (self.conditions.iter())
                .zip(&other.conditions)
                .all(|(a, b)| a.same_as(b))
    }

    /// The whole status as a merge patch: what `autoscaling/v2` omits
    /// when empty (`currentReplicas` 0, no `lastScaleTime`, ...) is `null`,
    /// so that the patch also clears it.
    pub(crate) fn to_patch(&self) -> Value {
        let mut s = Map::new();
        let or_null = |present: bool, v: Value| if present { v } else { Value::Null };
        s.insert(
            "observedGeneration".into(),
            self.observed_generation.map_or(Value::Null, Value::from),
        );
        s.insert(
            "lastScaleTime".into(),
            self.last_scale_time
                .as_deref()
                .map_or(Value::Null, Value::from),
        );
        s.insert(
            "currentReplicas".into(),
            or_null(self.current_replicas != 0, json!(self.current_replicas)),
        );
        s.insert("desiredReplicas".into(), json!(self.desired_replicas));
        s.insert(
            "currentMetrics".into(),
            or_null(
                !self.current_metrics.is_empty(),
                Value::Array(self.current_metrics.clone()),
            ),
        );
        let conditions = self.conditions.iter().map(Condition::to_json).collect();
        s.insert(
            "conditions".into(),
            or_null(!self.conditions.is_empty(), Value::Array(conditions)),
        );
        json!({"status": Value::Object(s)})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Time {
        Time::from_millis(secs * 1000)
    }

    #[test]
    fn a_condition_moves_its_transition_time_only_when_its_status_changes() {
        let mut s = Status::default();
        s.set_condition(ABLE_TO_SCALE, true, "SucceededGetScale", "a", at(1));
        s.set_condition(ABLE_TO_SCALE, true, "SucceededRescale", "b", at(2));
        assert_eq!(
            s.conditions[0].last_transition_time.as_deref(),
            Some("1970-01-01T00:00:01Z")
        );
        s.set_condition(ABLE_TO_SCALE, false, "FailedGetScale", "c", at(3));
        assert_eq!(
            s.conditions[0].last_transition_time.as_deref(),
            Some("1970-01-01T00:00:03Z")
        );
        s.set_condition(SCALING_ACTIVE, false, "ScalingDisabled", "d", at(4));
        let types: Vec<_> = s.conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, [ABLE_TO_SCALE, SCALING_ACTIVE]);
    }

    #[test]
    fn the_patch_round_trips_and_clears_what_is_gone() {
        let mut s = Status::default();
        s.set_condition(ABLE_TO_SCALE, true, "SucceededGetScale", "m", at(1));
        s.record(0, 2, vec![json!({"type": ""})], Some(3), Some(at(5)));
        let patch = s.to_patch();
        assert_eq!(patch["status"]["currentReplicas"], Value::Null);
        assert_eq!(patch["status"]["lastScaleTime"], "1970-01-01T00:00:05Z");
        let back = Status::read(patch.get("status"));
        assert!(back.same_as(&s));
        let mut later = back.clone();
        later.set_condition(ABLE_TO_SCALE, true, "SucceededGetScale", "m", at(9));
        assert!(later.same_as(&s));
        later.record(1, 2, vec![], Some(3), None);
        assert!(!later.same_as(&s));
    }
}

//! A Deployment's status and its conditions, with upstream's reasons and
//! the rules for setting them (`deployment_util.go`).

use serde::{Deserialize, Serialize};
use windlass_sdk::Time;

/// `Progressing`: a rollout replaced a ReplicaSet's pods.
pub(crate) const REPLICA_SET_UPDATED: &str = "ReplicaSetUpdated";
/// `Progressing`: the new ReplicaSet could not be created.
pub(crate) const FAILED_RS_CREATE: &str = "ReplicaSetCreateError";
/// `Progressing`: the new ReplicaSet was created.
pub(crate) const NEW_RS_CREATED: &str = "NewReplicaSetCreated";
/// `Progressing`: the new ReplicaSet already existed.
pub(crate) const FOUND_NEW_RS: &str = "FoundNewReplicaSet";
/// `Progressing`: the new ReplicaSet has all its replicas available.
pub(crate) const NEW_RS_AVAILABLE: &str = "NewReplicaSetAvailable";
/// `Progressing`: no progress within `progressDeadlineSeconds`.
pub(crate) const TIMED_OUT: &str = "ProgressDeadlineExceeded";
/// `Progressing`: the Deployment is paused.
pub(crate) const PAUSED: &str = "DeploymentPaused";
/// `Progressing`: the Deployment was resumed.
pub(crate) const RESUMED: &str = "DeploymentResumed";
/// `Available`: at least `replicas - maxUnavailable` pods are available.
pub(crate) const MINIMUM_AVAILABLE: &str = "MinimumReplicasAvailable";
/// `Available`: fewer than `replicas - maxUnavailable` pods are available.
pub(crate) const MINIMUM_UNAVAILABLE: &str = "MinimumReplicasUnavailable";

pub(crate) const PROGRESSING: &str = "Progressing";
pub(crate) const AVAILABLE: &str = "Available";
pub(crate) const REPLICA_FAILURE: &str = "ReplicaFailure";

/// One condition of a Deployment (or, for `ReplicaFailure`, of a
/// ReplicaSet, which has no `lastUpdateTime`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

impl Condition {
    /// A condition that changed `now` (upstream's `NewDeploymentCondition`).
    pub fn new(
        type_: &str,
        status: &str,
        reason: &str,
        message: impl Into<String>,
        now: Time,
    ) -> Self {
        let now = now.to_rfc3339();
        Self {
            type_: type_.to_owned(),
            status: status.to_owned(),
            last_update_time: Some(now.clone()),
            last_transition_time: Some(now),
            reason: reason.to_owned(),
            message: message.into(),
        }
    }

    /// A ReplicaSet's condition as a Deployment condition
    /// (`ReplicaSetToDeploymentCondition`).
    pub fn from_replica_set(c: &Condition) -> Self {
        Self {
            last_update_time: c.last_transition_time.clone(),
            ..c.clone()
        }
    }

    /// `lastUpdateTime`, if it is a timestamp.
    pub fn updated_at(&self) -> Option<Time> {
        self.last_update_time.as_deref().and_then(Time::parse)
    }
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// A Deployment's `status`. Zero counts are left out, as the API server
/// writes them, so that reading and writing back changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DeploymentStatus {
    #[serde(default, skip_serializing_if = "is_zero")]
    pub observed_generation: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replicas: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub updated_replicas: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ready_replicas: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub available_replicas: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unavailable_replicas: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminating_replicas: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i64>,
}

impl DeploymentStatus {
    /// The condition of type `type_`.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }

    /// Sets a condition as upstream's `SetDeploymentCondition` does: one
    /// with the same status and reason is left as it is; one with the same
    /// status keeps its `lastTransitionTime`; the new one goes last.
    pub fn set_condition(&mut self, mut condition: Condition) {
        if let Some(current) = self.condition(&condition.type_) {
            if current.status == condition.status && current.reason == condition.reason {
                return;
            }
            if current.status == condition.status {
                condition.last_transition_time = current.last_transition_time.clone();
            }
        }
        self.remove_condition(&condition.type_);
        self.conditions.push(condition);
    }

    /// Removes the condition of type `type_`.
    pub fn remove_condition(&mut self, type_: &str) {
        self.conditions.retain(|c| c.type_ != type_);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Time {
        Time::parse(s).unwrap()
    }

    #[test]
    fn set_condition_keeps_what_did_not_change() {
        let t0 = at("2026-01-01T00:00:00Z");
        let t1 = at("2026-01-01T00:01:00Z");
        let mut s = DeploymentStatus::default();
        s.set_condition(Condition::new(
            AVAILABLE,
            "True",
            MINIMUM_AVAILABLE,
            "a",
            t0,
        ));
        s.set_condition(Condition::new(PROGRESSING, "True", NEW_RS_CREATED, "b", t0));
        // Same status and reason: nothing changes, not even the message.
        s.set_condition(Condition::new(PROGRESSING, "True", NEW_RS_CREATED, "c", t1));
        assert_eq!(s.conditions[1].message, "b");
        // Same status, new reason: moved last, transition time kept.
        s.set_condition(Condition::new(AVAILABLE, "True", "Other", "d", t1));
        assert_eq!(s.conditions[1].type_, AVAILABLE);
        assert_eq!(
            s.conditions[1].last_transition_time.as_deref(),
            Some("2026-01-01T00:00:00Z")
        );
        assert_eq!(
            s.conditions[1].last_update_time.as_deref(),
            Some("2026-01-01T00:01:00Z")
        );
        // New status: both times are new.
        s.set_condition(Condition::new(
            AVAILABLE,
            "False",
            MINIMUM_UNAVAILABLE,
            "e",
            t1,
        ));
        assert_eq!(
            s.conditions[1].last_transition_time.as_deref(),
            Some("2026-01-01T00:01:00Z")
        );
        s.remove_condition(AVAILABLE);
        assert_eq!(s.conditions.len(), 1);
    }

    #[test]
    fn zero_counts_are_left_out() {
        let s = DeploymentStatus {
            replicas: 2,
            terminating_replicas: Some(0),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"replicas":2,"terminatingReplicas":0}"#
        );
        let back: DeploymentStatus =
            serde_json::from_str(r#"{"replicas":2,"terminatingReplicas":0,"x":1}"#).unwrap();
        assert_eq!(back, s);
    }
}

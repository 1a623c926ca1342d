//! The Deployment's status, as upstream's `calculateStatus` and
//! `progress.go`: counts summed over the ReplicaSets, `Available`, and
//! during a rollout `Progressing` (created, progressing, complete, or timed
//! out after `progressDeadlineSeconds` without progress, measured with
//! `Request::now`), plus any ReplicaSet's `ReplicaFailure`.

use std::time::Duration;

use crate::conditions::{
    AVAILABLE, Condition, DeploymentStatus, MINIMUM_AVAILABLE, MINIMUM_UNAVAILABLE,
    NEW_RS_AVAILABLE, PROGRESSING, REPLICA_FAILURE, REPLICA_SET_UPDATED, TIMED_OUT,
};
use crate::model::ReplicaSet;
use crate::plan::Plan;
use crate::surge::max_unavailable;

impl Plan<'_> {
    /// The status the ReplicaSets make (`calculateStatus`).
    fn calculate_status(&self, new: Option<usize>) -> DeploymentStatus {
        let d = self.d;
        let all: Vec<&ReplicaSet> = self
            .olds(new)
            .into_iter()
            .chain(new)
            .map(|i| &self.rss[i])
            .collect();
        let available: i64 = all.iter().map(|rs| rs.status.available).sum();
        // Sizes as the cache had them: upstream's status uses the objects it
        // listed, except a ReplicaSet it just created.
        let total: i64 = all
            .iter()
            .map(|rs| {
                if rs.created_now {
                    rs.replicas
                } else {
                    rs.listed_replicas
                }
            })
            .sum();
        let terminating = all
            .iter()
            .try_fold(0, |sum, rs| rs.status.terminating.map(|t| sum + t));
        let mut status = DeploymentStatus {
            observed_generation: d.generation,
            replicas: all.iter().map(|rs| rs.status.replicas).sum(),
            updated_replicas: new.map_or(0, |i| self.rss[i].status.replicas),
            ready_replicas: all.iter().map(|rs| rs.status.ready).sum(),
            available_replicas: available,
            unavailable_replicas: (total - available).max(0),
            terminating_replicas: terminating,
            conditions: self.status.conditions.clone(),
            collision_count: self.status.collision_count,
        };
        if available >= d.replicas - max_unavailable(d) {
            status.set_condition(Condition::new(
                AVAILABLE,
                "True",
                MINIMUM_AVAILABLE,
                "Deployment has minimum availability.",
                self.now,
            ));
        } else {
            status.set_condition(Condition::new(
                AVAILABLE,
                "False",
                MINIMUM_UNAVAILABLE,
                "Deployment does not have minimum availability.",
                self.now,
            ));
        }
        status
    }

    /// The status outside a rollout (`syncDeploymentStatus`).
    pub fn sync_deployment_status(&mut self, new: Option<usize>) {
        self.new_status = Some(self.calculate_status(new));
    }

    /// The status during a rollout, with its progress
    /// (`syncRolloutStatus`), and when to look again if it may time out.
    pub fn sync_rollout_status(&mut self, new: Option<usize>) {
        let d = self.d;
        let mut status = self.calculate_status(new);
        if !d.has_progress_deadline() {
            status.remove_condition(PROGRESSING);
        }
        let current = self.status.condition(PROGRESSING).cloned();
        let complete_before = status.replicas == status.updated_replicas
            && current
                .as_ref()
                .is_some_and(|c| c.reason == NEW_RS_AVAILABLE);
        let new_name = new.map(|i| self.rss[i].name.as_str());
        let about = |what: &str| match new_name {
            Some(rs) => format!("ReplicaSet {rs:?} {what}"),
            None => format!("Deployment {:?} {what}", d.name),
        };
        if d.has_progress_deadline() && !complete_before {
            if self.deployment_complete(&status) {
                status.set_condition(Condition::new(
                    PROGRESSING,
                    "True",
                    NEW_RS_AVAILABLE,
                    about("has successfully progressed."),
                    self.now,
                ));
            } else if self.deployment_progressing(&status) {
                // Progress refreshes lastUpdateTime even with the same reason.
                let mut c = Condition::new(
                    PROGRESSING,
                    "True",
                    REPLICA_SET_UPDATED,
                    about("is progressing."),
                    self.now,
                );
                if let Some(current) = &current {
                    if current.status == "True" {
                        c.last_transition_time = current.last_transition_time.clone();
                    }
                    status.remove_condition(PROGRESSING);
                }
                status.set_condition(c);
            } else if self.deployment_timed_out(&status) {
                status.set_condition(Condition::new(
                    PROGRESSING,
                    "False",
                    TIMED_OUT,
                    about("has timed out progressing."),
                    self.now,
                ));
            }
        }
        // The new ReplicaSet's failure first, else any other's.
        let failure = new
            .and_then(|i| self.rss[i].status.failure.as_ref())
            .or_else(|| self.rss.iter().find_map(|rs| rs.status.failure.as_ref()));
        match failure {
            Some(f) => status.set_condition(Condition::from_replica_set(f)),
            None => status.remove_condition(REPLICA_FAILURE),
        }
        self.requeue = self.progress_check_after(&status);
        self.new_status = Some(status);
    }

    /// Every replica updated and available, and the latest spec observed
    /// (`DeploymentComplete`).
    pub fn deployment_complete(&self, status: &DeploymentStatus) -> bool {
        let r = self.d.replicas;
        status.updated_replicas == r
            && status.replicas == r
            && status.available_replicas == r
            && status.observed_generation >= self.d.generation
    }

    /// Whether `status` shows progress over the status as read: more
    /// updated, ready or available pods, or fewer old ones
    /// (`DeploymentProgressing`).
    fn deployment_progressing(&self, status: &DeploymentStatus) -> bool {
        let old = &self.status;
        let old_old = old.replicas - old.updated_replicas;
        let new_old = status.replicas - status.updated_replicas;
        status.updated_replicas > old.updated_replicas
            || new_old < old_old
            || status.ready_replicas > old.ready_replicas
            || status.available_replicas > old.available_replicas
    }

    /// Whether the last progress is older than `progressDeadlineSeconds`
    /// (`DeploymentTimedOut`).
    fn deployment_timed_out(&self, status: &DeploymentStatus) -> bool {
        let Some(deadline) = self.deadline() else {
            return false;
        };
        let Some(c) = status.condition(PROGRESSING) else {
            return false;
        };
        match c.reason.as_str() {
            NEW_RS_AVAILABLE => false,
            TIMED_OUT => true,
            // Without a time upstream reads the zero time: long past.
            _ => c.updated_at().is_none_or(|from| from + deadline < self.now),
        }
    }

    fn deadline(&self) -> Option<Duration> {
        let d = self.d;
        d.has_progress_deadline()
            .then(|| Duration::from_secs(d.progress_deadline_seconds.unwrap_or(0).max(0) as u64))
    }

    /// When a rollout that has not finished would time out, plus a second
    /// (as upstream's `requeueStuckDeployment`); none once it is complete,
    /// has timed out, or cannot time out.
    fn progress_check_after(&self, status: &DeploymentStatus) -> Option<Duration> {
        let deadline = self.deadline()?;
        let c = status.condition(PROGRESSING)?;
        if self.deployment_complete(status) || c.reason == TIMED_OUT || c.reason == NEW_RS_AVAILABLE
        {
            return None;
        }
        let from = c.updated_at()?;
        Some(self.now.until(from + deadline) + Duration::from_secs(1))
    }
}

//! The rolling update, as upstream's `rolling.go`: grow the new ReplicaSet
//! within `replicas + maxSurge` pods, shrink the old ones while at least
//! `replicas - maxUnavailable` pods stay available, one step per reconcile.

use crate::model::ReplicaSet;
use crate::plan::{Plan, Stop};
use crate::surge::{max_unavailable, new_rs_new_replicas};

impl Plan<'_> {
    /// One step of a rolling update (`rolloutRolling`).
    pub fn rollout_rolling(&mut self) -> Result<(), Stop> {
        let Some(new) = self.get_all_and_sync_revision(true)? else {
            return Ok(());
        };
        if self.reconcile_new_replica_set(new) {
            self.sync_rollout_status(Some(new));
            return Ok(());
        }
        if self.reconcile_old_replica_sets(new) {
            self.sync_rollout_status(Some(new));
            return Ok(());
        }
        if self.deployment_complete(&self.status.clone()) {
            let olds = self.olds(Some(new));
            self.cleanup_deployment(&olds);
        }
        self.sync_rollout_status(Some(new));
        Ok(())
    }

    /// Grows (or, past the replicas, shrinks) the new ReplicaSet
    /// (`reconcileNewReplicaSet`).
    fn reconcile_new_replica_set(&mut self, new: usize) -> bool {
        let d = self.d;
        let current = self.rss[new].replicas;
        if current == d.replicas {
            return false;
        }
        if current > d.replicas {
            return self.scale_and_record(new, d.replicas);
        }
        let all: i64 = self.rss.iter().map(|rs| rs.replicas).sum();
        let target = new_rs_new_replicas(d, all, current);
        self.scale_and_record(new, target)
    }

    /// Shrinks the old ReplicaSets as far as availability allows
    /// (`reconcileOldReplicaSets`). Unavailable pods of the new ReplicaSet
    /// count against what may go, so that a broken template never takes
    /// old pods away; unhealthy old pods go first, as they cost nothing.
    fn reconcile_old_replica_sets(&mut self, new: usize) -> bool {
        let d = self.d;
        let olds: Vec<usize> = self
            .olds(Some(new))
            .into_iter()
            .filter(|&i| self.rss[i].replicas > 0)
            .collect();
        let old_pods: i64 = olds.iter().map(|&i| self.rss[i].replicas).sum();
        if old_pods == 0 {
            return false;
        }
        let all_pods: i64 = self.rss.iter().map(|rs| rs.replicas).sum();
        let min_available = d.replicas - max_unavailable(d);
        let new_rs = &self.rss[new];
        let new_unavailable = new_rs.replicas - new_rs.status.available;
        let max_scaled_down = all_pods - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return false;
        }
        let Some(cleaned) = self.cleanup_unhealthy_replicas(&olds, max_scaled_down) else {
            // Upstream gives up on this step when status and spec disagree.
            return false;
        };
        let scaled = self.scale_down_old_replica_sets(new, &olds);
        cleaned + scaled > 0
    }

    /// Scales old ReplicaSets down by their unavailable pods, oldest first,
    /// at most `max_cleanup` in all (`cleanupUnhealthyReplicas`); the
    /// ReplicaSet controller deletes unready pods first. `None` if a
    /// ReplicaSet reports more available pods than it should have.
    fn cleanup_unhealthy_replicas(&mut self, olds: &[usize], max_cleanup: i64) -> Option<i64> {
        let mut olds = olds.to_vec();
        olds.sort_by(|&a, &b| ReplicaSet::by_creation(&self.rss[a], &self.rss[b]));
        let mut total = 0;
        for i in olds {
            if total >= max_cleanup {
                break;
            }
            let rs = &self.rss[i];
            if rs.replicas == 0 || rs.replicas == rs.status.available {
                continue;
            }
            let count = (max_cleanup - total).min(rs.replicas - rs.status.available);
            let target = rs.replicas - count;
            if target > rs.replicas {
                return None;
            }
            self.scale_and_record(i, target);
            total += count;
        }
        Some(total)
    }

    /// Scales old ReplicaSets down, oldest first, by as many pods as are
    /// available beyond `replicas - maxUnavailable`
    /// (`scaleDownOldReplicaSetsForRollingUpdate`).
    fn scale_down_old_replica_sets(&mut self, new: usize, olds: &[usize]) -> i64 {
        let d = self.d;
        let min_available = d.replicas - max_unavailable(d);
        let available: i64 = olds
            .iter()
            .chain([&new])
            .map(|&i| self.rss[i].status.available)
            .sum();
        if available <= min_available {
            return 0;
        }
        let mut olds = olds.to_vec();
        olds.sort_by(|&a, &b| ReplicaSet::by_creation(&self.rss[a], &self.rss[b]));
        let budget = available - min_available;
        let mut total = 0;
        for i in olds {
            if total >= budget {
                break;
            }
            let replicas = self.rss[i].replicas;
            if replicas == 0 {
                continue;
            }
            let count = replicas.min(budget - total);
            self.scale_and_record(i, replicas - count);
            total += count;
        }
        total
    }
}

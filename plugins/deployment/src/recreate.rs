//! The Recreate strategy, as upstream's `recreate.go`: scale every old
//! ReplicaSet to zero, wait until their pods are gone, then create (or
//! scale up) the new one.
//!
//! Upstream waits by listing the old ReplicaSets' pods. This plugin reads
//! the old ReplicaSets' `status.replicas` and `status.terminatingReplicas`
//! instead (the pods not yet deleted, and those deleted but still
//! running), which the `replicaset` plugin keeps current: watching every
//! pod in the cluster just for this would cost every pod event a call into
//! this plugin.

use crate::plan::{Plan, Stop};

impl Plan<'_> {
    /// One step of a Recreate rollout (`rolloutRecreate`).
    pub fn rollout_recreate(&mut self) -> Result<(), Stop> {
        // The new ReplicaSet is only created once the old pods are gone.
        let mut new = self.get_all_and_sync_revision(false)?;
        let olds = self.olds(new);
        let mut scaled_down = false;
        for &i in &olds {
            if self.rss[i].replicas > 0 {
                scaled_down |= self.scale_and_record(i, 0);
            }
        }
        if scaled_down || self.old_pods_running(new) {
            self.sync_rollout_status(new);
            return Ok(());
        }
        if new.is_none() {
            new = self.get_all_and_sync_revision(true)?;
        }
        let Some(new) = new else {
            return Ok(());
        };
        self.scale_and_record(new, self.d.replicas);
        if self.deployment_complete(&self.status.clone()) {
            let olds = self.olds(Some(new));
            self.cleanup_deployment(&olds);
        }
        self.sync_rollout_status(Some(new));
        Ok(())
    }

    /// Whether an old ReplicaSet still has pods, running or terminating
    /// (`oldPodsRunning`).
    fn old_pods_running(&self, new: Option<usize>) -> bool {
        self.olds(new).into_iter().any(|i| {
            let s = &self.rss[i].status;
            s.replicas > 0 || s.terminating.unwrap_or(0) > 0
        })
    }
}

//! The steps every reconcile takes, as upstream's `syncDeployment` and
//! `sync.go`: pick the strategy, find (or create) the new ReplicaSet and
//! keep the revision annotations right, scale proportionally on a scaling
//! event or while paused, clean up old history.

use std::cmp::Ordering;

use windlass_sdk::{Event, WriteFailure};

use crate::conditions::{
    Condition, FAILED_RS_CREATE, FOUND_NEW_RS, NEW_RS_CREATED, PAUSED, PROGRESSING, RESUMED,
    TIMED_OUT,
};
use crate::model::{DESIRED_REPLICAS, REVISION, ReplicaSet, RsStatus, Strategy, TEMPLATE_HASH};
use crate::plan::{Op, Plan, Stop, scaled_message};
use crate::revision::{max_revision, set_new_rs_annotations};
use crate::surge::{is_saturated, max_surge, new_rs_new_replicas, proportion};
use crate::template::{Template, equal_ignore_hash, hash};

impl Plan<'_> {
    /// What to do with the Deployment (`syncDeployment`).
    pub fn sync_deployment(&mut self) -> Result<(), Stop> {
        let d = self.d;
        if d.selects_everything() {
            self.events.push(Event::warning(
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            ));
            if self.status.observed_generation < d.generation {
                self.status.observed_generation = d.generation;
            }
            return Ok(());
        }
        if d.deleting {
            return self.sync_status_only();
        }
        self.check_paused_conditions();
        if d.paused || self.is_scaling_event()? {
            return self.sync();
        }
        match d.strategy {
            Strategy::Recreate => self.rollout_recreate(),
            Strategy::RollingUpdate { .. } => self.rollout_rolling(),
        }
    }

    /// Only the status (a Deployment being deleted).
    fn sync_status_only(&mut self) -> Result<(), Stop> {
        let new = self.get_all_and_sync_revision(false)?;
        self.sync_deployment_status(new);
        Ok(())
    }

    /// A scaling event, or a paused Deployment: scale, no rollout (`sync`).
    fn sync(&mut self) -> Result<(), Stop> {
        let new = self.get_all_and_sync_revision(false)?;
        self.scale(new);
        if self.d.paused {
            let olds = self.olds(new);
            self.cleanup_deployment(&olds);
        }
        self.sync_deployment_status(new);
        Ok(())
    }

    /// Keeps the Progressing condition from timing out across a pause
    /// (`checkPausedConditions`).
    fn check_paused_conditions(&mut self) {
        let d = self.d;
        if !d.has_progress_deadline() {
            return;
        }
        let reason = self
            .status
            .condition(PROGRESSING)
            .map(|c| c.reason.as_str());
        if reason == Some(TIMED_OUT) {
            return;
        }
        let paused_noted = reason == Some(PAUSED);
        let (reason, message) = match (d.paused, paused_noted) {
            (true, false) => (PAUSED, "Deployment is paused"),
            (false, true) => (RESUMED, "Deployment is resumed"),
            _ => return,
        };
        self.status.set_condition(Condition::new(
            PROGRESSING,
            "Unknown",
            reason,
            message,
            self.now,
        ));
    }

    /// Whether an active ReplicaSet was sized for other replicas than the
    /// Deployment's now (`isScalingEvent`).
    fn is_scaling_event(&mut self) -> Result<bool, Stop> {
        let new = self.get_all_and_sync_revision(false)?;
        let d = self.d;
        let scaled = self
            .olds(new)
            .into_iter()
            .chain(new)
            .map(|i| &self.rss[i])
            .filter(|rs| rs.replicas > 0)
            .filter_map(|rs| rs.int_annotation(DESIRED_REPLICAS))
            .any(|desired| desired != d.replicas);
        Ok(scaled)
    }

    /// The ReplicaSet running the Deployment's template: the oldest one
    /// whose template is the same but for the hash (`FindNewReplicaSet`).
    pub fn find_new(&mut self) -> Option<usize> {
        let d = self.d;
        *self.found_new.get_or_insert_with(|| {
            self.rss
                .iter()
                .position(|rs| equal_ignore_hash(&rs.template, &d.template))
        })
    }

    /// The new ReplicaSet (created if `create` and absent), with the
    /// revision annotations brought up to date
    /// (`getAllReplicaSetsAndSyncRevision`).
    pub fn get_all_and_sync_revision(&mut self, create: bool) -> Result<Option<usize>, Stop> {
        let d = self.d;
        let existing = self.find_new();
        let new_revision = max_revision(self.olds(existing).into_iter().map(|i| &self.rss[i])) + 1;
        let surge = max_surge(d);
        if let Some(i) = existing {
            let rs = &mut self.rss[i];
            let annotations_changed = set_new_rs_annotations(d, rs, new_revision, true, surge);
            if annotations_changed || rs.min_ready_seconds != d.min_ready_seconds {
                // Upstream updates the ReplicaSet and goes on with it; the
                // Deployment's revision follows on the next reconcile.
                rs.min_ready_seconds = d.min_ready_seconds;
                self.mark_update(i);
                return Ok(Some(i));
            }
            let revision = rs.annotations.get(REVISION).cloned().unwrap_or_default();
            let found = format!("Found new replica set {:?}", rs.name);
            self.set_deployment_revision(revision);
            if d.has_progress_deadline() && self.status.condition(PROGRESSING).is_none() {
                self.status.set_condition(Condition::new(
                    PROGRESSING,
                    "True",
                    FOUND_NEW_RS,
                    found,
                    self.now,
                ));
            }
            return Ok(Some(i));
        }
        if !create {
            return Ok(None);
        }
        self.create_new_replica_set(new_revision)
    }

    /// Creates the new ReplicaSet, named `<deployment>-<pod-template-hash>`.
    fn create_new_replica_set(&mut self, new_revision: i64) -> Result<Option<usize>, Stop> {
        let d = self.d;
        let hash = hash(&d.template, self.status.collision_count);
        let name = format!("{}-{hash}", d.name);
        if let Some((found, controller)) = (self.lookup)(&name)? {
            if controller.as_deref() == Some(d.uid.as_str())
                && equal_ignore_hash(&d.template, &found.template)
            {
                // Ours, and the template's: created before, not yet listed.
                self.rss.push(found);
                let i = self.rss.len() - 1;
                self.found_new = Some(Some(i));
                self.set_deployment_revision(new_revision.to_string());
                return Ok(Some(i));
            }
            // Someone else's, or another template's: a hash collision. A
            // new count makes a new name on the next reconcile.
            self.status.collision_count = Some(self.status.collision_count.unwrap_or(0) + 1);
            return Err(Stop::WriteStatus);
        }

        let mut template = d.template.value().clone();
        if let Some(meta) = template.as_object_mut().map(|t| {
            t.entry("metadata")
                .or_insert_with(|| serde_json::Value::Object(Default::default()))
        }) && let Some(meta) = meta.as_object_mut()
        {
            let labels = meta
                .entry("labels")
                .or_insert_with(|| serde_json::Value::Object(Default::default()));
            if let Some(labels) = labels.as_object_mut() {
                labels.insert(TEMPLATE_HASH.into(), hash.clone().into());
            }
        }
        let mut rs = ReplicaSet {
            name: name.clone(),
            namespace: d.namespace.clone(),
            uid: String::new(),
            created: String::new(),
            generation: 0,
            deleting: false,
            replicas: 0,
            listed_replicas: 0,
            min_ready_seconds: d.min_ready_seconds,
            listed_min_ready_seconds: d.min_ready_seconds,
            annotations: Default::default(),
            labels: Default::default(),
            changed_annotations: Default::default(),
            template: Template::from_value(template),
            status: RsStatus::default(),
            created_now: true,
        };
        let olds_replicas: i64 = self.rss.iter().map(|rs| rs.replicas).sum();
        rs.replicas = new_rs_new_replicas(d, olds_replicas, 0);
        set_new_rs_annotations(d, &mut rs, new_revision, false, max_surge(d));

        if self.ops.is_empty()
            && let Some(refusal) = refused_create(self.last_failure)
        {
            // The create was the first write of the last attempt, and the
            // server refused it (`FailedRSCreateReason`).
            let message = format!("Failed to create new replica set {name:?}: {refusal}");
            self.events
                .push(Event::warning(FAILED_RS_CREATE, message.clone()));
            if d.has_progress_deadline() {
                let before = self.status.clone();
                self.status.set_condition(Condition::new(
                    PROGRESSING,
                    "False",
                    FAILED_RS_CREATE,
                    message,
                    self.now,
                ));
                if self.status != before {
                    // Record it on its own; the create is tried again after.
                    return Err(Stop::WriteStatus);
                }
            }
        }

        let replicas = rs.replicas;
        self.rss.push(rs);
        let i = self.rss.len() - 1;
        self.found_new = Some(Some(i));
        self.ops.push(Op::Create(i, hash));
        if replicas > 0 {
            self.events.push(Event::normal(
                "ScalingReplicaSet",
                scaled_message("up", &name, replicas, 0),
            ));
        }
        self.set_deployment_revision(new_revision.to_string());
        if d.has_progress_deadline() {
            self.status.set_condition(Condition::new(
                PROGRESSING,
                "True",
                NEW_RS_CREATED,
                format!("Created new replica set {name:?}"),
                self.now,
            ));
        }
        Ok(Some(i))
    }

    /// The only active ReplicaSet, or the newest one if none is active;
    /// `None` when several are active (`FindActiveOrLatest`).
    fn find_active_or_latest(&self, new: Option<usize>, olds: &[usize]) -> Option<usize> {
        let mut newest_first = olds.to_vec();
        newest_first.sort_by(|&a, &b| ReplicaSet::by_creation(&self.rss[b], &self.rss[a]));
        let active: Vec<usize> = newest_first
            .iter()
            .copied()
            .chain(new)
            .filter(|&i| self.rss[i].replicas > 0)
            .collect();
        match active.len() {
            0 => new.or(newest_first.first().copied()),
            1 => Some(active[0]),
            _ => None,
        }
    }

    /// Brings the ReplicaSets to the Deployment's size without rolling out
    /// (`scale`): the only active one takes it all; a saturated new one
    /// sends the old ones to zero; during a rolling update the change is
    /// spread in proportion to each one's share, so that scaling neither
    /// hastens nor slows the rollout.
    pub fn scale(&mut self, new: Option<usize>) {
        let d = self.d;
        let olds = self.olds(new);
        if let Some(i) = self.find_active_or_latest(new, &olds) {
            if self.rss[i].replicas != d.replicas {
                self.scale_and_record(i, d.replicas);
            }
            return;
        }
        if let Some(n) = new
            && is_saturated(d, &self.rss[n])
        {
            for i in olds {
                if self.rss[i].replicas > 0 {
                    self.scale_and_record(i, 0);
                }
            }
            return;
        }
        if !d.is_rolling() {
            return;
        }
        let mut all: Vec<usize> = olds
            .into_iter()
            .chain(new)
            .filter(|&i| self.rss[i].replicas > 0)
            .collect();
        let current: i64 = all.iter().map(|&i| self.rss[i].replicas).sum();
        let allowed = if d.replicas > 0 {
            d.replicas + max_surge(d)
        } else {
            0
        };
        let to_add = allowed - current;
        // Larger first; among equals, scale newer ones up and older ones
        // down first (`ReplicaSetsBySizeNewer`, `ReplicaSetsBySizeOlder`).
        let operation = match to_add.cmp(&0) {
            Ordering::Greater => "up",
            Ordering::Less => "down",
            Ordering::Equal => "",
        };
        all.sort_by(|&a, &b| {
            let (a, b) = (&self.rss[a], &self.rss[b]);
            b.replicas.cmp(&a.replicas).then_with(|| {
                let older = ReplicaSet::by_creation(a, b);
                if to_add > 0 { older.reverse() } else { older }
            })
        });
        let mut added = 0;
        let mut sizes = Vec::with_capacity(all.len());
        for &i in &all {
            let rs = &self.rss[i];
            if to_add == 0 {
                sizes.push(rs.replicas);
            } else {
                let p = proportion(rs, d, to_add, added);
                sizes.push(rs.replicas + p);
                added += p;
            }
        }
        for (k, &i) in all.iter().enumerate() {
            let mut size = sizes[k];
            if k == 0 && to_add != 0 {
                // The rounding's leftovers go to the largest.
                size = (size + to_add - added).max(0);
            }
            self.scale_replica_set(i, size, operation);
        }
    }

    /// Deletes the oldest ReplicaSets beyond `revisionHistoryLimit` that
    /// have no pods left (`cleanupDeployment`).
    pub fn cleanup_deployment(&mut self, olds: &[usize]) {
        let Some(limit) = self.d.history_limit() else {
            return;
        };
        let mut cleanable: Vec<usize> = olds
            .iter()
            .copied()
            .filter(|&i| !self.rss[i].deleting)
            .collect();
        let diff = cleanable.len() as i64 - limit;
        if diff <= 0 {
            return;
        }
        // Lowest revision first (`ReplicaSetsByRevision`).
        cleanable.sort_by(|&a, &b| {
            let (a, b) = (&self.rss[a], &self.rss[b]);
            match (a.revision(), b.revision()) {
                (Ok(x), Ok(y)) if x != y => x.cmp(&y),
                _ => ReplicaSet::by_creation(a, b),
            }
        });
        for &i in cleanable.iter().take(diff as usize) {
            let rs = &self.rss[i];
            let busy = rs.status.replicas != 0
                || rs.replicas != 0
                || rs.listed_replicas != 0
                || rs.generation > rs.status.observed_generation
                || rs.deleting;
            if !busy {
                self.ops.push(Op::Delete(i));
            }
        }
    }
}

/// The server's message when the last attempt's first write was refused
/// for a reason other than a stale cache (409, 404).
fn refused_create(failure: Option<&WriteFailure>) -> Option<&str> {
    failure
        .filter(|f| f.write == 0 && !matches!(f.code, 404 | 409))
        .map(|f| f.message.as_str())
}

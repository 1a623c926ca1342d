//! The node-related parts of PodGC (`pkg/controller/podgc`): pods bound
//! to a node that no longer exists (`gcOrphaned`), and terminating pods of
//! an out-of-service node (`gcTerminating`), are marked `Failed` and
//! deleted with no grace period.
//!
//! Upstream waits a quarantine after it first sees a pod's node missing,
//! and keeps that time in memory. A plugin keeps nothing, so the
//! quarantine counts from when the pod was bound (its `PodScheduled`
//! condition's transition, else its creation): a pod is collected once it
//! has been bound that long and its node is gone.

use serde_json::{Map, Value, json};
use windlass_sdk::{DeleteOptions, Error, Outcome, Time};

use crate::conditions;
use crate::pods::{self, PodWrites, pod_ref, status_patch, with_uid};
use crate::view::Pod;

/// Marks `pod` `Failed` (with a `DisruptionTarget` condition of
/// `reason` and `message`, if given) unless it has ended, and deletes it
/// with no grace period: upstream's `markFailedAndDeletePodWithCondition`.
pub(crate) fn force_delete(
    pod: &Pod<'_>,
    condition: Option<(&str, &str)>,
    now: Time,
    out: &mut PodWrites,
) -> Result<(), Error> {
    if !pod.ended() {
        let mut status = Map::new();
        status.insert("phase".into(), json!("Failed"));
        if let Some((reason, message)) = condition {
            let mut list = conditions::parse(&pod.status.conditions)?;
            conditions::set(&mut list, "DisruptionTarget", "True", reason, message, now);
            status.insert("conditions".into(), Value::Array(list));
        }
        out.writes.push(status_patch(pod, status));
    }
    out.writes.push(windlass_sdk::Write::Delete {
        target: pod_ref(pod),
        options: with_uid(DeleteOptions::new().grace_period_seconds(0), pod),
    });
    Ok(())
}

/// The reconcile of a node that is gone: its pods (still filed under its
/// name) are collected once their quarantine is over.
pub(crate) fn orphans(
    node: &str,
    now: Time,
    quarantine: std::time::Duration,
    attempt: u32,
) -> Result<Outcome, Error> {
    let mut out = PodWrites::default();
    for object in pods::on_node(node, attempt)? {
        let Ok(pod) = object.deserialize::<Pod<'_>>() else {
            continue;
        };
        if pod.spec.node_name.as_deref() != Some(node) || pod.force_deleted() {
            continue;
        }
        let conditions = conditions::parse(&pod.status.conditions)?;
        let scheduled = conditions::find(&conditions, "PodScheduled")
            .and_then(|c| c["lastTransitionTime"].as_str());
        let bound = scheduled
            .or(pod.metadata.creation_timestamp.as_deref())
            .and_then(Time::parse)
            .unwrap_or(now);
        let due = bound + quarantine;
        if now < due {
            out.due_at(due);
            continue;
        }
        force_delete(
            &pod,
            Some(("DeletionByPodGC", "PodGC: node no longer exists")),
            now,
            &mut out,
        )?;
    }
    Ok(crate::reconcile::finish(Outcome::new(), out, now))
}

//! The StatefulSet controller as a windlass plugin: pods with a stable
//! identity, made, replaced and updated in order, as
//! kube-controller-manager's statefulset controller keeps them, so
//! `kubectl get sts`, `kubectl rollout status|history|undo sts` and
//! `kubectl scale sts` behave as on a cluster.
//!
//! Each reconcile looks at the set, its pods and its ControllerRevisions:
//! - pod `<set>-<ordinal>` for each ordinal from `spec.ordinals.start`,
//!   with `hostname` its name, `subdomain` the governing `serviceName`,
//!   the `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index`
//!   and `controller-revision-hash` labels, and a volume for each of
//!   `volumeClaimTemplates`, whose claim `<claim>-<set>-<ordinal>` is
//!   created before the pod and outlives it (retention `Retain`);
//! - `OrderedReady` (the default) makes one pod at a time, in order, each
//!   once the one before is Running and Ready, and removes surplus pods
//!   from the highest ordinal down, one at a time; `Parallel` does both at
//!   once; an ended pod is deleted and made again;
//! - `RollingUpdate` replaces pods of an old revision from the highest
//!   ordinal down to `partition`, one at a time, each once the one above
//!   is healthy again (ordinals below the partition are made from the
//!   current revision's template); `OnDelete` only makes deleted pods from
//!   the new one;
//! - each template is a ControllerRevision (`windlass_sdk::revision`), so
//!   `kubectl rollout history` and `undo` work;
//! - a pod of a missing ordinal's name that no controller owns and the
//!   selector selects (left by a set deleted with `--cascade=orphan`) is
//!   adopted, not made again (upstream's `ClaimPods`).
//!
//! Status (`replicas`, `readyReplicas`, `availableReplicas` with
//! `minReadySeconds`, `currentReplicas`, `updatedReplicas`,
//! `currentRevision`, `updateRevision`, `observedGeneration`) is written
//! when it changes; events are upstream's ("create Pod web-0 in
//! StatefulSet web successful", "create Claim …", "delete Pod …").
//!
//! Differences from upstream: claims are created with the pod and never
//! deleted (`persistentVolumeClaimRetentionPolicy` `Delete` is not
//! implemented), and nothing binds them (there is no volume provisioner).
//!
//! Files: `pods.rs` (a pod's ordinal and state; new pods and claims).

mod pods;

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use serde_json::{Map, Value, json};
use windlass_sdk::{
    Controller, Error, Event, Grant, Manifest, Object, Outcome, Request, Watch, revision,
};

use pods::SetPod;
pub(crate) use windlass_sdk::revision::HASH_LABEL;

/// The StatefulSet controller.
pub struct StatefulSetController;

impl Controller for StatefulSetController {
    fn manifest() -> Manifest {
        Manifest::new("statefulset", Watch::kind("apps/v1", "StatefulSet"))
            .version(env!("CARGO_PKG_VERSION"))
            .owns(Watch::kind("v1", "Pod"))
            .owns(Watch::kind("apps/v1", "ControllerRevision"))
            // The pods' claims: made, never owned (they outlive the set).
            .writes(Grant::kind("v1", "PersistentVolumeClaim"))
            .max_concurrency(4)
    }

    fn reconcile(req: Request) -> Result<Outcome, Error> {
        reconcile(&req)
    }
}

windlass_sdk::export!(StatefulSetController);

fn count(set: &Object, path: &str, default: u32) -> Result<u32, Error> {
    match set.get(path) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| Error::permanent(format!("{path}: {v} is not a count"))),
    }
}

fn reconcile(req: &Request) -> Result<Outcome, Error> {
    // Gone, or being deleted: its pods are garbage-collected.
    let Some(set) = req.live_object() else {
        return Ok(Outcome::new());
    };
    let template = set
        .get("spec.template")
        .filter(|t| t.is_object())
        .cloned()
        .ok_or_else(|| Error::permanent("spec.template is required"))?;
    let replicas = count(set, "spec.replicas", 1)?;
    let start = count(set, "spec.ordinals.start", 0)?;
    let partition = count(set, "spec.updateStrategy.rollingUpdate.partition", 0)?;
    let rolling = set.get_str("spec.updateStrategy.type") != Some("OnDelete");
    let monotonic = set.get_str("spec.podManagementPolicy") != Some("Parallel");
    let min_ready = Duration::from_secs(count(set, "spec.minReadySeconds", 0)?.into());

    let pods: Vec<SetPod> = req
        .owned_of("v1", "Pod")
        .map(|p| SetPod::of(p, set.name(), min_ready, req.now))
        .collect();
    let revisions: Vec<&Object> = req.owned_of("apps/v1", "ControllerRevision").collect();
    let in_use: HashSet<&str> = pods.iter().filter_map(|p| p.revision.as_deref()).collect();
    let hash = revision::template_hash(&template);
    let limit = count(set, "spec.revisionHistoryLimit", 10)? as usize;
    let history = revision::history(
        set,
        &template,
        &hash,
        revisions.iter().copied(),
        |r| in_use.contains(r.name()),
        limit,
    )?;
    let update = history.name.clone();
    // The current revision: the status's, while it still exists.
    let current = set
        .get_str("status.currentRevision")
        .filter(|c| *c == update || revisions.iter().any(|r| r.name() == *c))
        .unwrap_or(&update)
        .to_owned();
    let current_template = revisions
        .iter()
        .find(|r| r.name() == current)
        .and_then(|r| r.get("data.spec.template"))
        .map(|t| {
            let mut t = t.clone();
            if let Some(m) = t.as_object_mut() {
                m.remove("$patch");
            }
            t
        })
        .unwrap_or_else(|| template.clone());

    let mut slots: BTreeMap<u32, &SetPod> = BTreeMap::new();
    let mut condemned: Vec<&SetPod> = Vec::new();
    for p in &pods {
        match p.ordinal {
            Some(o) if o >= start && o - start < replicas => {
                slots.insert(o, p);
            }
            _ => condemned.push(p),
        }
    }
    condemned.sort_by_key(|p| std::cmp::Reverse(p.ordinal));

    let mut out = Outcome::new();
    let mut created: Vec<u32> = Vec::new();
    let mut deleted: Vec<&SetPod> = Vec::new();
    let mut blocked = false;
    for ordinal in start..start + replicas {
        let healthy = match slots.get(&ordinal) {
            None => {
                created.push(ordinal);
                false
            }
            Some(p) if p.ended => {
                deleted.push(p);
                false
            }
            Some(p) => p.created && !p.terminating && p.running_ready && p.available,
        };
        if !healthy && monotonic {
            blocked = true;
            break;
        }
    }
    if !blocked {
        // Surplus pods go from the highest ordinal down.
        let waiting = condemned.iter().any(|p| p.terminating);
        for p in condemned.iter().filter(|p| !p.terminating) {
            if monotonic && (waiting || !deleted.is_empty()) {
                break;
            }
            deleted.push(p);
        }
        let settled = deleted.is_empty() && created.is_empty() && !waiting;
        if rolling && settled {
            // Newest ordinal first, down to the partition, one at a time.
            for ordinal in (start + partition.min(replicas)..start + replicas).rev() {
                let Some(p) = slots.get(&ordinal) else { break };
                if p.revision.as_deref() != Some(update.as_str()) && !p.terminating {
                    deleted.push(p);
                    break;
                }
                if p.terminating || !p.running_ready || !p.available {
                    break;
                }
            }
        }
    }

    let set_name = set.name();
    for p in &deleted {
        out = out.delete(p.object_ref()).event(Event::normal(
            "SuccessfulDelete",
            format!("delete Pod {} in StatefulSet {set_name} successful", p.name),
        ));
    }
    for &ordinal in &created {
        // A pod of this name left by a set deleted with `--cascade=orphan`
        // is adopted, not made again (upstream's `ClaimPods`); a rolling
        // update then replaces it if its revision is not the set's.
        if let Some(orphan) = pods::adoptable(set, ordinal)? {
            out = out.apply(orphan);
            continue;
        }
        let (template, revision) = if rolling && ordinal - start < partition {
            (&current_template, current.as_str())
        } else {
            (&template, update.as_str())
        };
        let pod = pods::new_pod(set, template, revision, ordinal)?;
        for claim in pods::new_claims(set, ordinal)? {
            out = out.apply(claim.clone()).event(Event::normal(
                "SuccessfulCreate",
                format!(
                    "create Claim {} Pod {} in StatefulSet {set_name} success",
                    claim.name(),
                    pod.name()
                ),
            ));
        }
        out = out.event(Event::normal(
            "SuccessfulCreate",
            format!(
                "create Pod {} in StatefulSet {set_name} successful",
                pod.name()
            ),
        ));
        out = out.apply(pod);
    }
    for w in history.writes {
        out = out.write(w);
    }

    let status = status(set, &pods, &current, &update, rolling);
    if set.get("status") != Some(&status) {
        let mut updated = set.clone();
        updated.value_mut()["status"] = status;
        out = out.update_status(updated);
    }
    if let Some(at) = pods.iter().filter_map(|p| p.available_at).min() {
        out = out.requeue_after(req.now.until(at).max(Duration::from_millis(10)));
    }
    Ok(out)
}

/// Upstream's status: counts of the pods the cache holds, and the
/// revisions (the current one becomes the update's once every pod is
/// updated and ready).
fn status(set: &Object, pods: &[SetPod], current: &str, update: &str, rolling: bool) -> Value {
    let created: Vec<&SetPod> = pods.iter().filter(|p| p.created).collect();
    let live = || created.iter().filter(|p| !p.terminating);
    let replicas = created.len();
    let ready = created.iter().filter(|p| p.running_ready).count();
    let available = created.iter().filter(|p| p.available).count();
    let updated = live()
        .filter(|p| p.revision.as_deref() == Some(update))
        .count();
    let (current, current_count) = if rolling && updated == replicas && ready == replicas {
        (update, updated)
    } else {
        (
            current,
            live()
                .filter(|p| p.revision.as_deref() == Some(current))
                .count(),
        )
    };
    let mut s: Map<String, Value> = set
        .get("status")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (key, n) in [
        ("replicas", replicas),
        ("readyReplicas", ready),
        ("availableReplicas", available),
        ("currentReplicas", current_count),
        ("updatedReplicas", updated),
    ] {
        s.insert(key.into(), json!(n));
    }
    s.insert("currentRevision".into(), json!(current));
    s.insert("updateRevision".into(), json!(update));
    s.insert(
        "observedGeneration".into(),
        json!(set.generation().unwrap_or(0)),
    );
    s.entry("collisionCount").or_insert(json!(0));
    Value::Object(s)
}

#[cfg(test)]
mod tests;

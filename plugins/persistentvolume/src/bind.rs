//! Binding a claim and a volume, as upstream's `bind`, and the phases both
//! sides are kept at.
//!
//! The writes go in upstream's order, so that a failure half way leaves a
//! state the next reconcile finishes: the volume's `spec.claimRef` (with
//! the claim's uid, carrying the volume's resourceVersion so two claims
//! cannot take the same volume at once), the volume's phase, the claim's
//! `spec.volumeName` and annotations, the claim's status. Each is written
//! only if it would change something.

use serde_json::{Map, Value, json};
use windlass_sdk::{Event, Object, Outcome, Time};

use crate::fields::{
    ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, claim_ref, is_bound_to, phase, reference_to,
    volume_name,
};

/// The writes that bind `claim` to `volume` (or keep them bound).
pub(crate) fn bind(volume: &Object, claim: &Object, now: Time) -> Outcome {
    let mut out = Outcome::new();
    if let Some(patch) = volume_claim_ref(volume, claim) {
        out = out.merge_patch(volume.object_ref(), patch);
    }
    if let Some(patch) = volume_phase(volume, "Bound", now) {
        out = out.patch_status(volume.object_ref(), patch);
    }
    if let Some(patch) = claim_binding(claim, volume.name()) {
        out = out.merge_patch(claim.object_ref(), patch);
    }
    if let Some(patch) = claim_status(claim, volume) {
        out = out.patch_status(claim.object_ref(), patch);
    }
    out
}

/// The patch that points `volume` at `claim` (uid included), unless it
/// already does. The controller marks a link it made itself, not one the
/// user pre-bound by namespace and name.
fn volume_claim_ref(volume: &Object, claim: &Object) -> Option<Value> {
    let complete = claim_ref(volume)
        .is_some_and(|r| r.names(&claim.object_ref()) && Some(r.uid) == claim.uid());
    if complete {
        return None;
    }
    let mut metadata = json!({"resourceVersion": volume.resource_version().unwrap_or("")});
    if !is_bound_to(volume, claim) && volume.annotation(ANN_BOUND_BY_CONTROLLER).is_none() {
        metadata["annotations"] = json!({ANN_BOUND_BY_CONTROLLER: "yes"});
    }
    Some(json!({"metadata": metadata, "spec": {"claimRef": reference_to(claim)}}))
}

/// The status patch that puts `volume` in `phase`, stamping
/// `lastPhaseTransitionTime` as upstream does; none if it is there.
pub(crate) fn volume_phase(volume: &Object, to: &str, now: Time) -> Option<Value> {
    (phase(volume) != to)
        .then(|| json!({"status": {"phase": to, "lastPhaseTransitionTime": now.to_rfc3339()}}))
}

/// The patch of the claim's `spec.volumeName` and binding annotations, if
/// any is missing.
fn claim_binding(claim: &Object, volume: &str) -> Option<Value> {
    let mut patch = Map::new();
    let mut annotations = Map::new();
    if volume_name(claim) != volume {
        patch.insert("spec".into(), json!({"volumeName": volume}));
        if claim.annotation(ANN_BOUND_BY_CONTROLLER).is_none() {
            annotations.insert(ANN_BOUND_BY_CONTROLLER.into(), json!("yes"));
        }
    }
    if claim.annotation(ANN_BIND_COMPLETED).is_none() {
        annotations.insert(ANN_BIND_COMPLETED.into(), json!("yes"));
    }
    if !annotations.is_empty() {
        patch.insert("metadata".into(), json!({"annotations": annotations}));
    }
    (!patch.is_empty()).then_some(Value::Object(patch))
}

/// The claim's status as bound to `volume`: phase, and the volume's access
/// modes and capacity. `None` if it already reads so.
fn claim_status(claim: &Object, volume: &Object) -> Option<Value> {
    let status = json!({
        "phase": "Bound",
        "accessModes": volume.get("spec.accessModes").cloned().unwrap_or(json!([])),
        "capacity": volume.get("spec.capacity").cloned().unwrap_or(json!({})),
    });
    let current = |field: &str| claim.get(&format!("status.{field}"));
    let same = ["phase", "accessModes", "capacity"]
        .iter()
        .all(|f| current(f) == status.get(*f));
    (!same).then(|| json!({ "status": status }))
}

/// Puts `claim` in `phase` unless it is there; with `event` (recorded only
/// on that change, as upstream's `updateClaimStatusWithEvent`).
pub(crate) fn claim_phase(claim: &Object, to: &str, event: Option<Event>) -> Outcome {
    if phase(claim) == to {
        return Outcome::new();
    }
    let out = Outcome::new().patch_status(claim.object_ref(), json!({"status": {"phase": to}}));
    match event {
        Some(e) => out.event(e),
        None => out,
    }
}

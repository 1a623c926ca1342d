//! The volume side of upstream's binder (`syncVolume`, `reclaimVolume`),
//! driven from claim keys: the volumes that name a claim which has gone
//! (or come back with another uid), or which went to another volume, and
//! the volumes that name no claim at all.
//!
//! A volume whose claim is gone becomes `Released`; then its reclaim
//! policy decides. `Delete` on a volume this plugin provisioned deletes it
//! (the simulated deleter); `Delete` on any other volume is left
//! `Released` for its own provisioner (upstream would report
//! `VolumeFailedDelete` for a volume no deleter knows: not done here);
//! `Retain` keeps it `Released` until an administrator clears its
//! claimRef, after which it is `Available` again.
//!
//! The primary kind is the claim, so a volume with no claimRef has no key
//! of its own: `map` files it under the key [`UNCLAIMED_NAMESPACE`]`/<its
//! name>`, whose reconcile makes it `Available` (the API server creates
//! volumes `Pending`, as upstream's does). A real claim of that name there
//! is reconciled as usual; the volume is only made `Available` if that
//! reconcile does not bind it.

use windlass_sdk::{DeleteOptions, Object, ObjectRef, Outcome, Time};

use crate::PROVISIONER;
use crate::bind::volume_phase;
use crate::fields::{
    ANN_BOUND_BY_CONTROLLER, ANN_PROVISIONED_BY, claim_key, claim_ref, phase, volume_name,
};
use crate::writes::{join, touches};

/// The namespace of the keys that stand for unclaimed volumes.
pub(crate) const UNCLAIMED_NAMESPACE: &str = "default";

/// The key an unclaimed volume is reconciled under.
pub(crate) fn unclaimed_key(volume: &Object) -> ObjectRef {
    claim_key(UNCLAIMED_NAMESPACE, volume.name())
}

/// The writes for the volumes whose claimRef names `key`, given `claim`
/// as cached (present even while it is being deleted), leaving alone the
/// volumes `done` already writes.
pub(crate) fn sweep(
    key: &ObjectRef,
    claim: Option<&Object>,
    volumes: &[Object],
    now: Time,
    done: &Outcome,
) -> Outcome {
    let mut out = Outcome::new();
    for volume in volumes {
        let Some(r) = claim_ref(volume).filter(|r| r.names(key)) else {
            continue;
        };
        // A volume being deleted is still released: its protection
        // finalizer holds it until it is no longer `Bound`.
        if touches(done, &volume.object_ref()) {
            continue;
        }
        let step = match claim {
            // Pre-bound by name: reserved for that claim, and free until
            // it comes.
            _ if r.uid.is_empty() => available(volume, now),
            None => release(volume, now),
            Some(c) if c.uid() != Some(r.uid) => release(volume, now),
            Some(c) if !volume_name(c).is_empty() && volume_name(c) != volume.name() => {
                bound_elsewhere(volume, now)
            }
            Some(_) => Outcome::new(),
        };
        out = join(out, step);
    }
    out
}

/// For the key of an unclaimed volume: makes that volume `Available`,
/// unless `done` already writes it.
pub(crate) fn unclaimed(key: &ObjectRef, volumes: &[Object], now: Time, done: &Outcome) -> Outcome {
    if key.namespace.as_deref() != Some(UNCLAIMED_NAMESPACE) {
        return Outcome::new();
    }
    match volumes.iter().find(|v| v.name() == key.name) {
        Some(v) if claim_ref(v).is_none() && !touches(done, &v.object_ref()) => available(v, now),
        _ => Outcome::new(),
    }
}

fn available(volume: &Object, now: Time) -> Outcome {
    match volume_phase(volume, "Available", now) {
        Some(patch) => Outcome::new().patch_status(volume.object_ref(), patch),
        None => Outcome::new(),
    }
}

/// `Released` (unless it already is, or `Failed`), then deleted if it is
/// this plugin's to delete (and not being deleted already).
fn release(volume: &Object, now: Time) -> Outcome {
    let mut out = Outcome::new();
    if !matches!(phase(volume), "Released" | "Failed")
        && let Some(patch) = volume_phase(volume, "Released", now)
    {
        out = out.patch_status(volume.object_ref(), patch);
    }
    if reclaim_policy(volume) == "Delete"
        && volume.annotation(ANN_PROVISIONED_BY) == Some(PROVISIONER)
        && !volume.is_being_deleted()
    {
        let options = DeleteOptions::new().uid(volume.uid().unwrap_or(""));
        out = out.delete_with(volume.object_ref(), options);
    }
    out
}

/// A volume whose claim is bound to another one: a provisioned volume to
/// be deleted is released; one the controller bound is unbound and
/// `Available` again; one the user pre-bound is left alone.
fn bound_elsewhere(volume: &Object, now: Time) -> Outcome {
    if volume.annotation(ANN_PROVISIONED_BY).is_some() && reclaim_policy(volume) == "Delete" {
        return release(volume, now);
    }
    if volume.annotation(ANN_BOUND_BY_CONTROLLER).is_none() {
        return Outcome::new();
    }
    let patch = serde_json::json!({
        "metadata": {
            "resourceVersion": volume.resource_version().unwrap_or(""),
            "annotations": {ANN_BOUND_BY_CONTROLLER: null},
        },
        "spec": {"claimRef": null},
    });
    let out = Outcome::new().merge_patch(volume.object_ref(), patch);
    match volume_phase(volume, "Available", now) {
        Some(status) => out.patch_status(volume.object_ref(), status),
        None => out,
    }
}

/// `spec.persistentVolumeReclaimPolicy`; the API server defaults it to
/// `Retain` for volumes made by hand.
fn reclaim_policy(volume: &Object) -> &str {
    volume
        .get_str("spec.persistentVolumeReclaimPolicy")
        .unwrap_or("Retain")
}

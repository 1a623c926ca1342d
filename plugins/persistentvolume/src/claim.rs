//! What a live claim needs, as upstream's `syncClaim`: an unbound claim is
//! bound to a volume that fits, or provisioned, or left `Pending` with an
//! event saying why; a claim that names its volume is bound to it, kept
//! bound, or marked `Lost` when the volume is gone or taken.

use serde_json::{Map, Value, json};
use windlass_sdk::{Error, Event, Object, Outcome, Time, cache};

use crate::bind::{bind, claim_phase};
use crate::fields::{
    ANN_BETA_STORAGE_PROVISIONER, ANN_BIND_COMPLETED, ANN_SELECTED_NODE, ANN_STORAGE_PROVISIONER,
    claim_ref, class_kind, class_of, class_ref, default_class, has_no_class, is_bound_to,
    volume_name,
};
use crate::writes::join;
use crate::{PROVISIONER, matching, provision};

/// The provisioner of classes whose volumes are made by hand (local
/// volumes): upstream knows no plugin by that name.
const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// The writes and events `claim`, present and not being deleted, needs.
pub(crate) fn sync(claim: &Object, volumes: &[Object], now: Time) -> Result<Outcome, Error> {
    let completed = claim.annotation(ANN_BIND_COMPLETED).is_some();
    match volume_name(claim) {
        "" if completed => Ok(lost(
            claim,
            "ClaimLost",
            "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!",
        )),
        "" => sync_unbound(claim, volumes, now),
        _ => sync_named(claim, volumes, completed, now),
    }
}

/// A claim that names no volume: static binding first, then provisioning,
/// else `Pending` with upstream's reason.
fn sync_unbound(claim: &Object, volumes: &[Object], now: Time) -> Result<Outcome, Error> {
    let class_name = class_of(claim);
    let class = match class_name {
        "" => None,
        name => cache::get(&class_ref(name))?,
    };
    let wait = class
        .as_ref()
        .is_some_and(|c| c.get_str("volumeBindingMode") == Some("WaitForFirstConsumer"));
    if let Some(volume) = matching::best_match(claim, volumes, wait)? {
        return Ok(bind(volume, claim, now));
    }
    if has_no_class(claim) {
        // Upstream's `assignDefaultStorageClass`: a claim made before any
        // default class existed gets the one there is now, and is synced
        // again once the change comes back.
        let classes = cache::list(&class_kind(), None, None)?;
        if let Some(default) = default_class(&classes) {
            let mut patch = json!({"spec": {"storageClassName": default.name()}});
            if let Some(rv) = claim.resource_version() {
                patch["metadata"] = json!({ "resourceVersion": rv });
            }
            return Ok(Outcome::new().merge_patch(claim.object_ref(), patch));
        }
    }
    let Some(class) = class else {
        return Ok(pending(claim, no_class_event(class_name)));
    };
    if wait && claim.annotation(ANN_SELECTED_NODE).is_none() {
        let why = "waiting for first consumer to be created before binding";
        return Ok(pending(claim, Event::normal("WaitForFirstConsumer", why)));
    }
    match class.get_str("provisioner").unwrap_or("") {
        PROVISIONER if claim.get("spec.selector").is_some_and(Value::is_object) => {
            let why = format!(
                "failed to provision volume with StorageClass {:?}: claim Selector is not supported",
                class.name()
            );
            Ok(pending(claim, Event::warning("ProvisioningFailed", why)))
        }
        PROVISIONER => Ok(join(
            announce(claim, PROVISIONER),
            provision::provision(claim, &class, volumes)?,
        )),
        NO_PROVISIONER => {
            let why = format!("no volume plugin matched name: {NO_PROVISIONER}");
            Ok(pending(claim, Event::warning("ProvisioningFailed", why)))
        }
        external => {
            let why = format!(
                "Waiting for a volume to be created either by the external provisioner '{external}' \
                 or manually by the system administrator. If volume creation is delayed, please \
                 verify that the provisioner is running and correctly registered."
            );
            Ok(join(
                announce(claim, external),
                pending(claim, Event::normal("ExternalProvisioning", why)),
            ))
        }
    }
}

/// Why an unbound claim with no usable class waits: it names none, or one
/// that does not exist.
fn no_class_event(class_name: &str) -> Event {
    if class_name.is_empty() {
        let why = "no persistent volumes available for this claim and no storage class is set";
        Event::normal("FailedBinding", why)
    } else {
        let why = format!("storageclass.storage.k8s.io {class_name:?} not found");
        Event::warning("ProvisioningFailed", why)
    }
}

/// A claim whose `spec.volumeName` names its volume: by the user (not yet
/// `bind-completed`) or by an earlier binding.
fn sync_named(
    claim: &Object,
    volumes: &[Object],
    completed: bool,
    now: Time,
) -> Result<Outcome, Error> {
    let name = volume_name(claim);
    let Some(volume) = volumes.iter().find(|v| v.name() == name) else {
        if completed {
            let why = "Bound claim has lost its PersistentVolume. Data on the volume is lost!";
            return Ok(lost(claim, "ClaimLost", why));
        }
        return Ok(claim_phase(claim, "Pending", None));
    };
    if claim_ref(volume).is_none() && !completed {
        if let Some(why) = matching::unsatisfied(volume, claim)? {
            let why = format!("Cannot bind to requested volume {name:?}: {why}");
            return Ok(pending(claim, Event::warning("VolumeMismatch", why)));
        }
        return Ok(bind(volume, claim, now));
    }
    if claim_ref(volume).is_none() || is_bound_to(volume, claim) {
        return Ok(bind(volume, claim, now));
    }
    if completed {
        let why = "Two claims are bound to the same volume, this one is bound incorrectly";
        return Ok(lost(claim, "ClaimMisbound", why));
    }
    // The user asked for a volume someone else holds: wait for it.
    Ok(claim_phase(claim, "Pending", None))
}

/// Marks `claim` `Lost`, with a warning recorded on that change only.
fn lost(claim: &Object, reason: &str, message: &str) -> Outcome {
    claim_phase(claim, "Lost", Some(Event::warning(reason, message)))
}

/// Keeps `claim` `Pending` and records `event`, on every reconcile that
/// finds it waiting, as upstream records it on every sync: the host's
/// recorder counts the repeats into one event (`x3 over 2m` in `kubectl
/// describe`), as client-go's correlator does.
pub(crate) fn pending(claim: &Object, event: Event) -> Outcome {
    claim_phase(claim, "Pending", None).event(event)
}

/// Tells provisioners which of them is to make the claim's volume, as
/// upstream's binder does before any provisioning (`setClaimProvisioner`):
/// both annotations, the GA and the beta one.
fn announce(claim: &Object, provisioner: &str) -> Outcome {
    let annotations: Map<String, Value> = [ANN_STORAGE_PROVISIONER, ANN_BETA_STORAGE_PROVISIONER]
        .into_iter()
        .filter(|a| claim.annotation(a) != Some(provisioner))
        .map(|a| (a.to_owned(), json!(provisioner)))
        .collect();
    if annotations.is_empty() {
        return Outcome::new();
    }
    let patch = json!({"metadata": {"annotations": annotations}});
    Outcome::new().merge_patch(claim.object_ref(), patch)
}

//! The simulated provisioner, `windlass.dev/simulated`: for a claim of one
//! of its classes it makes the PersistentVolume a host-path provisioner
//! (rancher's local-path) would, and nothing else — there is no disk.
//!
//! The volume is named `pvc-<claim uid>` and pre-bound to the claim
//! (`spec.claimRef` with its uid), as sig-storage's external provisioner
//! library makes them; binding then finds it as a volume pre-bound to the
//! claim. The name makes the create idempotent: a volume of that name
//! already in the cache is not made again (and not announced again), and
//! a create the cache had not seen yet fails as a conflict, after which
//! the host reconciles the claim again from fresh state.

use serde_json::json;
use windlass_sdk::{Error, Event, Object, Outcome};

use crate::PROVISIONER;
use crate::fields::{
    ANN_PROVISIONED_BY, ANN_SELECTED_NODE, HOSTNAME_LABEL, claim_display, reference_to, volume_mode,
};

/// Where the simulated volumes would live on their node.
const VOLUME_ROOT: &str = "/var/lib/windlass/volumes";

/// The volume `claim` gets from `class`, with the events the provisioner
/// library records; nothing if it has been made already.
pub(crate) fn provision(
    claim: &Object,
    class: &Object,
    volumes: &[Object],
) -> Result<Outcome, Error> {
    let volume = volume_for(claim, class)?;
    if volumes.iter().any(|v| v.name() == volume.name()) {
        return Ok(Outcome::new());
    }
    let provisioning = format!(
        "External provisioner is provisioning volume for claim {:?}",
        claim_display(claim)
    );
    let succeeded = format!("Successfully provisioned volume {}", volume.name());
    Ok(Outcome::new()
        .apply(volume)
        .event(Event::normal("Provisioning", provisioning))
        .event(Event::normal("ProvisioningSucceeded", succeeded)))
}

/// The PersistentVolume made for `claim` of `class`: the claim's request,
/// access and volume modes, the class's reclaim policy (`Delete` by
/// default) and mount options, a host path named after the claim, and,
/// when the scheduler chose a node for the claim, pinned to that node.
fn volume_for(claim: &Object, class: &Object) -> Result<Object, Error> {
    let missing = |what: &str| {
        Error::permanent(format!(
            "PersistentVolumeClaim {} has no {what}: no volume can be provisioned for it",
            claim_display(claim)
        ))
    };
    let uid = claim.uid().ok_or_else(|| missing("metadata.uid"))?;
    let request = claim
        .get_str("spec.resources.requests.storage")
        .ok_or_else(|| missing("spec.resources.requests.storage"))?;
    let name = format!("pvc-{uid}");
    let namespace = claim.namespace().unwrap_or("");
    let mut spec = json!({
        "capacity": {"storage": request},
        "accessModes": claim.get("spec.accessModes").cloned().unwrap_or(json!([])),
        "persistentVolumeReclaimPolicy": class.get_str("reclaimPolicy").unwrap_or("Delete"),
        "storageClassName": class.name(),
        "volumeMode": volume_mode(claim),
        "claimRef": reference_to(claim),
        "hostPath": {
            "path": format!("{VOLUME_ROOT}/{name}_{namespace}_{}", claim.name()),
            "type": "DirectoryOrCreate",
        },
    });
    if let Some(options) = class
        .get("mountOptions")
        .filter(|o| o.as_array().is_some_and(|a| !a.is_empty()))
    {
        spec["mountOptions"] = options.clone();
    }
    if let Some(node) = claim.annotation(ANN_SELECTED_NODE) {
        spec["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": HOSTNAME_LABEL, "operator": "In", "values": [node]}
        ]}]}});
    }
    Ok(Object::new("v1", "PersistentVolume")
        .with_name(&name)
        .with_annotation(ANN_PROVISIONED_BY, PROVISIONER)
        .with("spec", spec))
}

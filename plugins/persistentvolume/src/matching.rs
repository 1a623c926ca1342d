//! Static binding: which existing PersistentVolume an unbound claim takes,
//! as upstream's `findBestMatchForClaim` / `FindMatchingVolume`, and
//! whether a volume a claim names satisfies it (`checkVolumeSatisfyClaim`).
//!
//! Every candidate must be big enough, have the claim's volume mode, offer
//! all its access modes and not be being deleted. A volume pre-bound to
//! the claim (its claimRef names it) wins outright. Otherwise, among the
//! `Available` volumes with no claimRef, of the claim's class and picked
//! by its selector: those offering the fewest access modes first (upstream
//! walks its access-mode index that way), and of those the smallest.
//!
//! With `WaitForFirstConsumer`, unclaimed volumes are only considered once
//! the claim has a selected node, and only those whose node affinity
//! admits it; a pre-bound volume that does not admit it means no match.

use windlass_sdk::{Error, Object};

use crate::fields::{
    self, ANN_SELECTED_NODE, capacity, claim_ref, class_of, is_bound_to, offers_modes, phase,
    volume_mode,
};
use crate::selector;
use windlass_selector::Quantity;

/// The volume `claim` should be bound to, if any. `wait_for_consumer`:
/// the claim's class binds `WaitForFirstConsumer`.
pub(crate) fn best_match<'v>(
    claim: &Object,
    volumes: &'v [Object],
    wait_for_consumer: bool,
) -> Result<Option<&'v Object>, Error> {
    let request = fields::requested(claim)?;
    let node = wait_for_consumer
        .then(|| claim.annotation(ANN_SELECTED_NODE))
        .flatten();
    let fits = |v: &&Object| fits(v, claim, request);
    let admitted = |v: &Object| node.is_none_or(|n| selector::admits_node(v, n));

    if let Some(pre_bound) = volumes.iter().filter(fits).find(|v| is_bound_to(v, claim)) {
        return Ok(admitted(pre_bound).then_some(pre_bound));
    }
    if wait_for_consumer && node.is_none() {
        return Ok(None);
    }
    let best = volumes
        .iter()
        .filter(fits)
        .filter(|v| claim_ref(v).is_none() && phase(v) == "Available")
        .filter(|v| class_of(v) == class_of(claim))
        .filter(|v| picked_by_selector(v, claim))
        .filter(|v| admitted(v))
        .min_by(|a, b| {
            let modes = |v: &Object| fields::access_modes(v).len();
            let size = |v: &Object| capacity(v).unwrap_or(Quantity::ZERO);
            (modes(a), size(a)).cmp(&(modes(b), size(b)))
        });
    Ok(best)
}

/// What every candidate needs: room for the request, the claim's volume
/// mode, its access modes, and not being deleted.
fn fits(volume: &Object, claim: &Object, request: Quantity) -> bool {
    !volume.is_being_deleted()
        && capacity(volume).is_some_and(|c| c >= request)
        && volume_mode(volume) == volume_mode(claim)
        && offers_modes(volume, claim)
}

/// Whether the claim's `spec.selector`, if it has one, picks `volume`.
fn picked_by_selector(volume: &Object, claim: &Object) -> bool {
    claim
        .get("spec.selector")
        .filter(|s| s.is_object())
        .is_none_or(|s| volume.selected_by(s))
}

/// Why `volume`, which `claim` names in `spec.volumeName`, cannot be bound
/// to it, in upstream's words; `None` if it can.
pub(crate) fn unsatisfied(volume: &Object, claim: &Object) -> Result<Option<String>, Error> {
    let request = fields::requested(claim)?;
    let why = if volume.is_being_deleted() {
        format!("the volume is marked for deletion {:?}", volume.name())
    } else if capacity(volume).is_none_or(|c| c < request) {
        "requested PV is too small".to_owned()
    } else if class_of(volume) != class_of(claim) {
        "storageClassName does not match".to_owned()
    } else if volume_mode(volume) != volume_mode(claim) {
        "incompatible volumeMode".to_owned()
    } else if !offers_modes(volume, claim) {
        "incompatible accessMode".to_owned()
    } else {
        return Ok(None);
    };
    Ok(Some(why))
}

//! kube-controller-manager's PersistentVolume binder as a windlass plugin,
//! with a simulated dynamic provisioner, so that `kubectl get pvc` shows
//! `Bound` as on a kind cluster.
//!
//! For each PersistentVolumeClaim (the primary kind):
//! - an unbound claim is bound to an existing volume that fits it, as
//!   upstream's `findBestMatchForClaim` picks one: a volume pre-bound to
//!   the claim, else the `Available` one of its class, access modes,
//!   volume mode and selector that offers the fewest access modes and the
//!   least room above the request (`matching.rs`). With a
//!   `WaitForFirstConsumer` class, only once the scheduler has written
//!   `volume.kubernetes.io/selected-node` on the claim, and only volumes
//!   whose node affinity admits that node;
//! - binding writes the volume's `spec.claimRef` and phase `Bound`, then
//!   the claim's `spec.volumeName`, its `pv.kubernetes.io/bind-completed`
//!   and `pv.kubernetes.io/bound-by-controller` annotations and its status
//!   (`Bound`, the volume's access modes and capacity), in upstream's
//!   order (`bind.rs`);
//! - a claim no volume fits, of a class whose provisioner is
//!   [`PROVISIONER`], gets a volume made for it (`provision.rs`): the
//!   claim is annotated with `volume.kubernetes.io/storage-provisioner`
//!   (and the beta form), and `pvc-<claim uid>` is created pre-bound to
//!   it, with a host path, the class's reclaim policy and mount options,
//!   and node affinity to the selected node; `Provisioning` and
//!   `ProvisioningSucceeded` are recorded as the external provisioner
//!   library words them;
//! - a claim of another provisioner's class is annotated for that
//!   provisioner, as upstream's binder does, and waits with
//!   `ExternalProvisioning`; a claim with no class at all (not even `""`)
//!   is given the default class once there is one, as upstream's
//!   retroactive default class assignment does for a claim made before
//!   its cluster had one; with no class, `FailedBinding`; with a class
//!   that does not exist, or `kubernetes.io/no-provisioner`,
//!   `ProvisioningFailed`; with `WaitForFirstConsumer` and no node yet,
//!   `WaitForFirstConsumer` — recorded on each reconcile that finds it
//!   waiting, which the host counts into one event (`claim::pending`);
//! - a bound claim whose volume is gone is `Lost` (`ClaimLost`), one whose
//!   volume went to another claim too (`ClaimMisbound`);
//! - a volume whose claim is gone is `Released`; with reclaim policy
//!   `Delete`, one this plugin provisioned is deleted (`reclaim.rs`);
//! - a pod's generic ephemeral volume gets its claim, `<pod>-<volume>`,
//!   owned by the pod (`ephemeral.rs`, upstream's ephemeral volume
//!   controller);
//! - a claim being deleted loses its `kubernetes.io/pvc-protection`
//!   finalizer once no pod uses it, a volume being deleted its
//!   `kubernetes.io/pv-protection` once it is not `Bound` (`protection.rs`,
//!   upstream's `pvc-protection` and `pv-protection` controllers; the API
//!   server adds both finalizers on create).
//!
//! How it differs from upstream:
//! - the PV controller and the external provisioner are one plugin, and
//!   there is no disk: a provisioned volume is a `hostPath` under
//!   `/var/lib/windlass/volumes` that nothing creates;
//! - volumes have no queue of their own: a volume's change wakes the
//!   claim its claimRef names, an unclaimed volume wakes the unbound
//!   claims of its class (so a new volume is found at once, where
//!   upstream waits for its 15-second resync) and the key that makes it
//!   `Available` (see `reclaim.rs`); a StorageClass's change wakes the
//!   unbound claims of the class, and a default class's those that name
//!   none;
//! - no `VolumeFailedDelete` for a `Delete` volume no one can delete, no
//!   recycler, no volume expansion, no data sources, none of the binder's
//!   and provisioner's own finalizers (`kubernetes.io/pv-controller`,
//!   `external-provisioner.volume.kubernetes.io/finalizer`), no
//!   `allowedTopologies`;
//! - whether a pod still uses a claim is decided from the cache alone
//!   (upstream lists pods live before it lets a claim go: see
//!   `protection.rs`);
//! - a claim being deleted is neither bound nor provisioned; its volume is
//!   released once the claim is gone, as upstream.

mod bind;
mod claim;
mod ephemeral;
mod fields;
mod matching;
mod protection;
mod provision;
mod reclaim;
mod selector;
mod writes;

use windlass_sdk::{
    Controller, Error, Grant, IndexEntry, Manifest, Object, ObjectRef, Outcome, Request, Watch,
    cache,
};

use fields::{
    claim_kind, claim_ref, class_of, has_no_class, is_default_class, phase, volume_kind,
    volume_name,
};
use writes::join;

/// The provisioner name of the StorageClasses whose volumes this plugin
/// makes.
pub const PROVISIONER: &str = "windlass.dev/simulated";

/// The PersistentVolume binder and simulated provisioner.
pub struct PersistentVolumeController;

impl Controller for PersistentVolumeController {
    fn manifest() -> Manifest {
        Manifest::new(
            "persistentvolume",
            Watch::kind("v1", "PersistentVolumeClaim"),
        )
        .version(env!("CARGO_PKG_VERSION"))
        .reads(Watch::kind("v1", "PersistentVolume"))
        .reads(Watch::kind("storage.k8s.io/v1", "StorageClass"))
        // Pods' generic ephemeral volumes get their claims here, and a
        // claim being deleted waits for the pods that use it, found
        // through the index (`protection.rs`).
        .reads(Watch::kind("v1", "Pod").indexed())
        // Provisioned volumes are created and deleted, bound ones
        // patched: volumes are read and written, not owned.
        .writes(Grant::kind("v1", "PersistentVolume"))
    }

    fn reconcile(req: Request) -> Result<Outcome, Error> {
        reconcile(&req)
    }

    fn map(changed: &Object) -> Vec<ObjectRef> {
        if changed.is("v1", "PersistentVolume") {
            volume_keys(changed)
        } else if changed.is("storage.k8s.io/v1", "StorageClass") {
            // A new default class is given to the claims that name none.
            let default = is_default_class(changed);
            unbound_claims(|c| class_of(c) == changed.name() || (default && has_no_class(c)))
        } else if changed.is("v1", "Pod") {
            let mut keys = ephemeral::keys(changed);
            for key in protection::waiting_claims(changed) {
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
            keys
        } else {
            Vec::new()
        }
    }

    fn index(object: &Object) -> Option<IndexEntry> {
        protection::index(object)
    }
}

windlass_sdk::export!(PersistentVolumeController);

fn reconcile(req: &Request) -> Result<Outcome, Error> {
    let volumes = cache::list(&volume_kind(), None, None)?;
    let out = match (req.live_object(), &req.object) {
        (Some(claim), _) => claim::sync(claim, &volumes, req.now)?,
        (None, None) => ephemeral::create(&req.key)?,
        (None, Some(deleting)) => protection::claim(deleting)?,
    };
    let swept = reclaim::sweep(&req.key, req.object.as_ref(), &volumes, req.now, &out);
    let out = join(out, swept);
    let unclaimed = reclaim::unclaimed(&req.key, &volumes, req.now, &out);
    let out = join(out, unclaimed);
    let released = protection::volumes(&req.key, &volumes, &out);
    Ok(join(out, released))
}

/// The claim keys a volume's change concerns: the claim it names; or, for
/// a volume naming none, the key that makes it `Available` and, once it
/// is, the unbound claims of its class; for a volume being deleted, the
/// key that takes its finalizer off.
fn volume_keys(volume: &Object) -> Vec<ObjectRef> {
    if let Some(r) = claim_ref(volume).filter(|r| !r.namespace.is_empty()) {
        return vec![r.key()];
    }
    if phase(volume) != "Available" || protection::volume_waits(volume) {
        return vec![reclaim::unclaimed_key(volume)];
    }
    unbound_claims(|c| class_of(c) == class_of(volume))
}

/// The keys of the cached claims that name no volume, are not being
/// deleted, and satisfy `wanted`.
fn unbound_claims(wanted: impl Fn(&Object) -> bool) -> Vec<ObjectRef> {
    let Ok(claims) = cache::list(&claim_kind(), None, None) else {
        return Vec::new();
    };
    claims
        .iter()
        .filter(|c| volume_name(c).is_empty() && !c.is_being_deleted() && wanted(c))
        .map(Object::object_ref)
        .collect()
}

#[cfg(test)]
mod tests;

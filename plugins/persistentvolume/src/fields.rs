//! The fields of claims, volumes and classes the binder reads, the
//! annotations it writes, and the references it makes between them.

use serde_json::{Value, json};
use windlass_sdk::{Error, KindRef, Object, ObjectRef};

use windlass_selector::Quantity;

/// On a claim: the binding has been completed once (upstream's
/// `AnnBindCompleted`).
pub(crate) const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// On a claim or a volume: the controller, not the user, set the link.
pub(crate) const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// On a volume: the provisioner that made it.
pub(crate) const ANN_PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
/// On a claim: the provisioner expected to make its volume.
pub(crate) const ANN_STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
/// The beta form of [`ANN_STORAGE_PROVISIONER`], still written upstream.
pub(crate) const ANN_BETA_STORAGE_PROVISIONER: &str =
    "volume.beta.kubernetes.io/storage-provisioner";
/// On a claim: the node the scheduler chose for its first consumer.
pub(crate) const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The class a claim or volume named before `storageClassName`; it still
/// wins over the field, as upstream's `GetPersistentVolumeClaimClass`.
const ANN_BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// The node label a simulated volume is pinned to.
pub(crate) const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

pub(crate) fn volume_kind() -> KindRef {
    KindRef::new("v1", "PersistentVolume")
}

pub(crate) fn claim_kind() -> KindRef {
    KindRef::new("v1", "PersistentVolumeClaim")
}

pub(crate) fn class_kind() -> KindRef {
    KindRef::new("storage.k8s.io/v1", "StorageClass")
}

pub(crate) fn class_ref(name: &str) -> ObjectRef {
    ObjectRef::cluster("storage.k8s.io/v1", "StorageClass", name)
}

pub(crate) fn claim_key(namespace: &str, name: &str) -> ObjectRef {
    ObjectRef::new("v1", "PersistentVolumeClaim", namespace, name)
}

/// Whether a claim asks for no class at all: neither the beta annotation
/// nor `spec.storageClassName`, not even `""` (upstream's
/// `PersistentVolumeClaimHasClass`, negated). Only such a claim is given
/// the default class after it was made.
pub(crate) fn has_no_class(claim: &Object) -> bool {
    claim.annotation(ANN_BETA_CLASS).is_none()
        && claim
            .get("spec.storageClassName")
            .is_none_or(Value::is_null)
}

/// Whether a StorageClass is marked the default (the GA or beta
/// annotation, `"true"`).
pub(crate) fn is_default_class(class: &Object) -> bool {
    [
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ]
    .iter()
    .any(|a| class.annotation(a) == Some("true"))
}

/// The default StorageClass, as upstream's `GetDefaultClass` picks it
/// when several are marked: the newest, then the first by name.
pub(crate) fn default_class(classes: &[Object]) -> Option<&Object> {
    classes
        .iter()
        .filter(|c| is_default_class(c))
        .min_by(|a, b| {
            (b.creation_timestamp().cmp(&a.creation_timestamp()))
                .then_with(|| a.name().cmp(b.name()))
        })
}

/// The class of a claim or volume; `""` for none.
pub(crate) fn class_of(object: &Object) -> &str {
    object
        .annotation(ANN_BETA_CLASS)
        .or_else(|| object.get_str("spec.storageClassName"))
        .unwrap_or("")
}

/// `spec.accessModes`.
pub(crate) fn access_modes(object: &Object) -> Vec<&str> {
    object
        .get("spec.accessModes")
        .and_then(Value::as_array)
        .map(|modes| modes.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Whether `volume` offers every access mode `claim` asks for.
pub(crate) fn offers_modes(volume: &Object, claim: &Object) -> bool {
    let offered = access_modes(volume);
    access_modes(claim).iter().all(|m| offered.contains(m))
}

/// `spec.volumeMode`, `Filesystem` when unset.
pub(crate) fn volume_mode(object: &Object) -> &str {
    object.get_str("spec.volumeMode").unwrap_or("Filesystem")
}

/// `status.phase`, `""` when unset.
pub(crate) fn phase(object: &Object) -> &str {
    object.get_str("status.phase").unwrap_or("")
}

/// The claim's `spec.volumeName`, `""` when unset.
pub(crate) fn volume_name(claim: &Object) -> &str {
    claim.get_str("spec.volumeName").unwrap_or("")
}

/// The storage a claim requests (`spec.resources.requests.storage`).
pub(crate) fn requested(claim: &Object) -> Result<Quantity, Error> {
    match claim.get_str("spec.resources.requests.storage") {
        None => Ok(Quantity::ZERO),
        Some(text) => Quantity::parse(text).map_err(|_| {
            Error::permanent(format!(
                "PersistentVolumeClaim {}: spec.resources.requests.storage {text:?} is not a quantity",
                claim_display(claim)
            ))
        }),
    }
}

/// The storage a volume offers (`spec.capacity.storage`); `None` if it
/// does not parse.
pub(crate) fn capacity(volume: &Object) -> Option<Quantity> {
    match volume.get_str("spec.capacity.storage") {
        None => Some(Quantity::ZERO),
        Some(text) => Quantity::parse(text).ok(),
    }
}

/// A claim as upstream names it in messages: `namespace/name`.
pub(crate) fn claim_display(claim: &Object) -> String {
    format!("{}/{}", claim.namespace().unwrap_or(""), claim.name())
}

/// A volume's `spec.claimRef`, as far as binding goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClaimRef<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    /// `""` when the volume is pre-bound by name only.
    pub uid: &'a str,
}

impl ClaimRef<'_> {
    /// The key of the claim it names.
    pub(crate) fn key(&self) -> ObjectRef {
        claim_key(self.namespace, self.name)
    }

    /// Whether it names the claim of `key`, by namespace and name.
    pub(crate) fn names(&self, key: &ObjectRef) -> bool {
        key.namespace.as_deref() == Some(self.namespace) && key.name == self.name
    }
}

/// The volume's `spec.claimRef`, if it has one naming a claim.
pub(crate) fn claim_ref(volume: &Object) -> Option<ClaimRef<'_>> {
    let s = |path: &str| volume.get_str(path).unwrap_or("");
    let r = ClaimRef {
        namespace: s("spec.claimRef.namespace"),
        name: s("spec.claimRef.name"),
        uid: s("spec.claimRef.uid"),
    };
    (!r.name.is_empty()).then_some(r)
}

/// Whether `volume` is bound, or pre-bound, to `claim`: its claimRef names
/// the claim and, when it carries a uid, that uid (upstream's
/// `IsVolumeBoundToClaim`).
pub(crate) fn is_bound_to(volume: &Object, claim: &Object) -> bool {
    claim_ref(volume).is_some_and(|r| {
        r.names(&claim.object_ref()) && (r.uid.is_empty() || Some(r.uid) == claim.uid())
    })
}

/// The reference to `claim` a volume's `spec.claimRef` holds, as
/// client-go's `GetReference` makes it.
pub(crate) fn reference_to(claim: &Object) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "namespace": claim.namespace().unwrap_or(""),
        "name": claim.name(),
        "uid": claim.uid().unwrap_or(""),
        "resourceVersion": claim.resource_version().unwrap_or(""),
    })
}

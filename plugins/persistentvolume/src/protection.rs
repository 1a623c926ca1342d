//! kube-controller-manager's `pvc-protection` and `pv-protection`
//! controllers: the API server gives every new claim the finalizer
//! `kubernetes.io/pvc-protection` and every new volume
//! `kubernetes.io/pv-protection`; a claim being deleted loses it once no
//! pod uses the claim, a volume being deleted once it is not `Bound`.
//!
//! A pod uses a claim, as upstream's `podUsesPVC` decides, when it has
//! been scheduled (`spec.nodeName`: the kubelet will not start a pod whose
//! claim is being deleted, and the scheduler will not place one) and one
//! of its volumes is the claim: a `persistentVolumeClaim` volume naming
//! it, whatever the pod's phase (a finished pod keeps its volumes mounted
//! until it is deleted, so upstream waits for the pod object to go), or a
//! generic ephemeral volume whose claim, `<pod>-<volume>`, the pod
//! controls, unless the pod has shut down (being deleted with a grace
//! period of 0: that breaks the cycle of a claim waiting for its pod while
//! the pod waits for its claim).
//!
//! Pods are found through the host's index ([`index`]): each pod is filed
//! under the claims its volumes name, with a summary of the ones it uses
//! now, so a decision reads the few pods of one claim, never every pod.
//! The summary changes when a pod starts or stops using a claim (it is
//! scheduled, or shuts down), and the pod appears in or leaves the index
//! when it is created or deleted: on each of these `map` requeues the
//! claims it names that are waiting ([`waiting_claims`]).
//!
//! How it differs from upstream: the decision is taken on the host's
//! cache alone. Upstream, finding no user in its informer's cache, lists
//! the namespace's pods from the API server before it lets a claim go, in
//! case a pod was created but not yet seen; a plugin cannot list live,
//! so a pod created a moment before its claim's deletion and not yet in
//! the cache does not hold the claim. Upstream also adds the finalizer to
//! claims and volumes that lack it (made before the admission plugin was
//! on); here the API server always gives it, and it is not added back.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::json;
use windlass_sdk::{Error, IndexEntry, Object, ObjectRef, Outcome, cache};

use crate::ephemeral::pod_kind;
use crate::fields::{claim_key, claim_ref, phase};
use crate::reclaim::unclaimed_key;
use crate::writes::touches;

/// The finalizer the API server gives claims.
pub(crate) const CLAIM_FINALIZER: &str = "kubernetes.io/pvc-protection";

/// The finalizer the API server gives volumes.
pub(crate) const VOLUME_FINALIZER: &str = "kubernetes.io/pv-protection";

/// The few fields of a pod its entry is made of.
#[derive(Deserialize)]
struct PodView<'a> {
    #[serde(borrow, default)]
    metadata: PodMeta<'a>,
    #[serde(borrow, default)]
    spec: PodSpec<'a>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodMeta<'a> {
    #[serde(borrow, default)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    namespace: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uid: Cow<'a, str>,
    #[serde(borrow, default)]
    deletion_timestamp: Option<Cow<'a, str>>,
    #[serde(default)]
    deletion_grace_period_seconds: Option<i64>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodSpec<'a> {
    #[serde(borrow, default)]
    node_name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    volumes: Vec<PodVolume<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodVolume<'a> {
    #[serde(borrow, default)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    persistent_volume_claim: Option<ClaimSource<'a>>,
    #[serde(default)]
    ephemeral: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClaimSource<'a> {
    #[serde(borrow, default)]
    claim_name: Cow<'a, str>,
}

/// What a pod's index entry says: the claims it uses now.
#[derive(Serialize, Deserialize, Debug, Default, PartialEq, Eq)]
struct Uses {
    /// The pod's uid: an ephemeral claim is the pod's only if the pod
    /// controls it.
    uid: String,
    /// The claims its `persistentVolumeClaim` volumes name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    claims: Vec<String>,
    /// The claims of its generic ephemeral volumes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    ephemeral: Vec<String>,
}

impl PodView<'_> {
    fn namespace(&self) -> &str {
        self.metadata.namespace.as_deref().unwrap_or("default")
    }

    /// Whether the kubelet is done with the pod, or it was force-deleted:
    /// being deleted with a grace period of 0 (upstream's `podIsShutDown`).
    fn is_shut_down(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
            && self.metadata.deletion_grace_period_seconds == Some(0)
    }

    fn is_scheduled(&self) -> bool {
        self.spec
            .node_name
            .as_deref()
            .is_some_and(|n| !n.is_empty())
    }

    /// The names of the claims its volumes name: `(name, ephemeral)`.
    fn claims(&self) -> impl Iterator<Item = (Cow<'_, str>, bool)> {
        self.spec.volumes.iter().filter_map(|v| {
            if let Some(source) = &v.persistent_volume_claim {
                Some((Cow::Borrowed(&*source.claim_name), false))
            } else if v.ephemeral.is_some() {
                Some((
                    Cow::Owned(format!("{}-{}", self.metadata.name, v.name)),
                    true,
                ))
            } else {
                None
            }
        })
    }
}

/// The index key of claim `name` in `namespace`.
fn index_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

/// The entry of a pod: filed under every claim its volumes name (a pod
/// that names none is filed nowhere), with the ones it uses now.
pub(crate) fn index(pod: &Object) -> Option<IndexEntry> {
    let view: PodView<'_> = pod.deserialize().ok()?;
    let mut entry = IndexEntry::new();
    let mut uses = Uses {
        uid: view.metadata.uid.to_string(),
        ..Uses::default()
    };
    let scheduled = view.is_scheduled();
    for (name, ephemeral) in view.claims() {
        let key = index_key(view.namespace(), &name);
        if !entry.keys.contains(&key) {
            entry = entry.key(key);
        }
        if !scheduled || (ephemeral && view.is_shut_down()) {
            continue;
        }
        let list = if ephemeral {
            &mut uses.ephemeral
        } else {
            &mut uses.claims
        };
        list.push(name.into_owned());
    }
    if entry.keys.is_empty() {
        return None;
    }
    Some(entry.summary(serde_json::to_vec(&uses).ok()?))
}

/// The claims `pod` names that are waiting for their users to go (being
/// deleted, with the finalizer): what a change of the pod's entry
/// requeues.
pub(crate) fn waiting_claims(pod: &Object) -> Vec<ObjectRef> {
    let Ok(view) = pod.deserialize::<PodView<'_>>() else {
        return Vec::new();
    };
    let mut keys: Vec<ObjectRef> = Vec::new();
    for (name, _) in view.claims() {
        let key = claim_key(view.namespace(), &name);
        let waiting = cache::get(&key)
            .ok()
            .flatten()
            .is_some_and(|c| c.is_being_deleted() && has(&c, CLAIM_FINALIZER));
        if waiting && !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

/// For `claim`, being deleted: takes its finalizer off once no pod uses it.
pub(crate) fn claim(claim: &Object) -> Result<Outcome, Error> {
    if !claim.is_being_deleted() || !has(claim, CLAIM_FINALIZER) {
        return Ok(Outcome::new());
    }
    let namespace = claim.namespace().unwrap_or("default");
    let filed = cache::lookup(&pod_kind(), &index_key(namespace, claim.name()))?;
    // An ephemeral volume's claim is its pod's only if the pod controls it.
    let controller = claim.controller_ref();
    let used = filed.iter().any(|summary| {
        let Ok(uses) = serde_json::from_slice::<Uses>(summary) else {
            return false;
        };
        uses.claims.iter().any(|c| c == claim.name())
            || (uses.ephemeral.iter().any(|c| c == claim.name())
                && controller.is_some_and(|r| r.uid == uses.uid))
    });
    if used {
        return Ok(Outcome::new());
    }
    Ok(without(claim, CLAIM_FINALIZER))
}

/// For the reconcile of `key`: the volumes filed under it (see
/// [`filed_under`]) that are being deleted and not `Bound` lose their
/// finalizer, unless `done` writes them already (the next reconcile sees
/// the result).
pub(crate) fn volumes(key: &ObjectRef, volumes: &[Object], done: &Outcome) -> Outcome {
    let mut out = Outcome::new();
    for volume in volumes {
        if volume.is_being_deleted()
            && has(volume, VOLUME_FINALIZER)
            && phase(volume) != "Bound"
            && filed_under(volume) == *key
            && !touches(done, &volume.object_ref())
        {
            out = crate::writes::join(out, without(volume, VOLUME_FINALIZER));
        }
    }
    out
}

/// The claim key a volume's own changes are reconciled under: the claim
/// its claimRef names, else its unclaimed key.
fn filed_under(volume: &Object) -> ObjectRef {
    match claim_ref(volume).filter(|r| !r.namespace.is_empty()) {
        Some(r) => r.key(),
        None => unclaimed_key(volume),
    }
}

/// Whether `volume` waits for this plugin to take its finalizer off.
pub(crate) fn volume_waits(volume: &Object) -> bool {
    volume.is_being_deleted() && has(volume, VOLUME_FINALIZER)
}

fn has(object: &Object, finalizer: &str) -> bool {
    object.finalizers().any(|f| f == finalizer)
}

/// A merge patch of `object`'s finalizers without `finalizer`, at the
/// version read (a `409` if it changed meanwhile, and the key is
/// reconciled again from what changed).
fn without(object: &Object, finalizer: &str) -> Outcome {
    let rest: Vec<&str> = object.finalizers().filter(|f| *f != finalizer).collect();
    let patch = json!({
        "metadata": {
            "resourceVersion": object.resource_version().unwrap_or(""),
            "finalizers": rest,
        },
    });
    Outcome::new().merge_patch(object.object_ref(), patch)
}

//! Upstream's `ClaimPods` (the controller reference manager): a ReplicaSet
//! adopts the orphan pods of its namespace that its selector selects, and
//! releases the pods it controls that its selector no longer selects — a
//! pod relabelled to take it out of service for debugging, as the
//! ReplicaSet docs' *Isolating Pods from a ReplicaSet* has it — and then
//! makes another in its place.
//!
//! Orphans (live pods with no controller) are counted in the index under
//! their namespace ([`orphans_key`]); a reconcile reads that count with its
//! own counts, and lists the pods its selector selects only when there are
//! some. The host wakes a ReplicaSet when an orphan its selector selects
//! appears, loses its controller or is relabelled.
//!
//! Adoption is an `apply` of the pod's identity: the host's writer adds the
//! controller reference (never a second controller) with the pod's
//! resourceVersion as a precondition. A release is a merge patch of the
//! pod's owner references without this ReplicaSet's, with its uid and
//! resourceVersion as preconditions (`Object::release_patch`). Either goes
//! out on its own, before anything is created or pruned: the reconcile the
//! pod's change brings then counts the pods as they are.

use std::borrow::Cow;

use serde_json::Value;
use serde_json::value::RawValue;
use windlass_sdk::{
    Error, IndexEntry, KindRef, Object, ObjectRef, Outcome, cache, selects, selects_everything,
};

use crate::rank::PodRank;
use crate::view::Labels;

/// The index key of the orphan pods of `namespace`.
pub(crate) fn orphans_key(namespace: &str) -> String {
    format!("orphans/{namespace}")
}

/// The index entry of a live orphan pod: counted (in the `LIVE` slot)
/// under its namespace, with no summary. An index entry per orphan and
/// instance costs memory, so it is only a count: the reconcile that finds
/// one lists the pods its selector selects.
pub(crate) fn orphan_entry(namespace: &str) -> IndexEntry {
    IndexEntry::new()
        .key(orphans_key(namespace))
        .amounts([1, 0, 0, 0])
}

/// A ReplicaSet's `spec.selector`. `None` when it has none, or an empty
/// one: such a ReplicaSet (which the API server refuses) claims nothing.
pub(crate) fn selector(raw: Option<&RawValue>) -> Result<Option<Value>, Error> {
    let Some(raw) = raw else { return Ok(None) };
    let selector: Value = serde_json::from_str(raw.get())?;
    let claims = selector.is_object() && !selects_everything(&selector);
    Ok(claims.then_some(selector))
}

/// Whether `selector` selects a pod of `labels`.
pub(crate) fn selected(selector: &Value, labels: &Labels<'_>) -> bool {
    selects(selector, |k| labels.get(k).map(Cow::as_ref))
}

/// The adoption of the live orphans of `namespace` that `selector` selects
/// (not ended: upstream claims only active pods), if there are any.
pub(crate) fn adopt(namespace: &str, selector: &Value) -> Result<Option<Outcome>, Error> {
    let mut out = Outcome::new();
    for pod in cache::orphans(&KindRef::new("v1", "Pod"), namespace, selector)? {
        if !matches!(pod.get_str("status.phase"), Some("Succeeded" | "Failed")) {
            out = out.apply(Object::identity(&pod.object_ref()));
        }
    }
    Ok((!out.is_empty()).then_some(out))
}

/// The release of the `live` pods the ReplicaSet of uid `owner` controls
/// that `selector` no longer selects, if there are any.
pub(crate) fn release(
    owner: &str,
    namespace: &str,
    live: &[PodRank<'_>],
    selector: &Value,
) -> Result<Option<Outcome>, Error> {
    let mut out = Outcome::new();
    for p in live.iter().filter(|p| !selected(selector, &p.labels)) {
        let target = pod_ref(p.namespace.as_deref().unwrap_or(namespace), &p.name);
        // The summary has no owner references or versions: read the pod.
        if let Some(pod) = cache::get(&target)? {
            out = out.merge_patch(target, pod.release_patch(owner));
        }
    }
    Ok((!out.is_empty()).then_some(out))
}

fn pod_ref(namespace: &str, name: &str) -> ObjectRef {
    ObjectRef::new("v1", "Pod", namespace, name)
}

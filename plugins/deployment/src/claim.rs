//! Upstream's `ClaimReplicaSets` (the controller reference manager): a
//! Deployment adopts the orphan ReplicaSets of its namespace that its
//! selector selects — after `kubectl delete deployment --cascade=orphan`,
//! a Deployment made again takes its ReplicaSet and pods back instead of
//! making a second set — and releases the ReplicaSets it controls that its
//! selector no longer selects.
//!
//! Either goes out on its own, before the rollout is planned: the
//! reconcile the ReplicaSet's change brings then plans with the
//! ReplicaSets as they are. An adoption is an `apply` of the ReplicaSet's
//! identity (the host's writer adds the controller reference, with the
//! resourceVersion as a precondition); a release, `Object::release_patch`.
//! The host wakes the Deployment when an orphan its selector selects
//! appears, loses its controller or is relabelled.

use windlass_sdk::{Error, KindRef, Object, ObjectRef, Outcome, cache};

use crate::model::Deployment;

/// The adoptions or releases `d` makes among its `owned` children and the
/// orphan ReplicaSets its selector selects, if any.
pub(crate) fn claim(d: &Deployment, owned: &[Object]) -> Result<Option<Outcome>, Error> {
    if d.deleting || d.selects_everything() {
        return Ok(None);
    }
    let mut out = Outcome::new();
    for rs in owned.iter().filter(|o| is_live_replicaset(o)) {
        if !rs.selected_by(&d.selector) {
            out = out.merge_patch(rs.object_ref(), rs.release_patch(&d.uid));
        }
    }
    if !out.is_empty() {
        return Ok(Some(out));
    }
    let Some(selector) = d
        .selector
        .as_object()
        .and_then(windlass_selector::selector_text)
    else {
        return Ok(None);
    };
    let kind = KindRef::new("apps/v1", "ReplicaSet");
    for rs in cache::list(&kind, Some(&d.namespace), Some(&selector))? {
        if is_live_replicaset(&rs) && rs.controller_ref().is_none() {
            let target = ObjectRef::new("apps/v1", "ReplicaSet", &*d.namespace, rs.name());
            out = out.apply(Object::identity(&target));
        }
    }
    Ok((!out.is_empty()).then_some(out))
}

fn is_live_replicaset(o: &Object) -> bool {
    o.is("apps/v1", "ReplicaSet") && o.deletion_timestamp().is_none()
}

//! Which keys of a plugin's queue a change enqueues: plain functions of the
//! change, as controller-runtime's `EnqueueRequestForOwner` and
//! kube-runtime's `trigger_owners` are.
//!
//! Each queue holds one kind (what the plugin reconciles), so its keys are
//! [`ObjectKey`]s: namespace and name.

use std::sync::Arc;

use windlass_selector::LabelSelector;

use crate::cache::Change;
use crate::informer::Informer;
use crate::model::{CachedObject, KindRef, ObjectKey};

/// The key a change of a primary object enqueues: the object itself.
pub(super) fn primary(change: &Change) -> ObjectKey {
    change.object().key().into()
}

/// The keys a change of an owned child enqueues: its controller owner when
/// that is of the `primary` kind, and on a change also the old object's
/// owner when it had another (a child adopted away leaves its old owner a
/// child short). New owner first.
pub(super) fn owners(primary: &KindRef, change: &Change) -> impl Iterator<Item = ObjectKey> {
    let new = owner(primary, change.object());
    let old = match change {
        Change::Modified { old, .. } => owner(primary, old).filter(|old| Some(old) != new.as_ref()),
        _ => None,
    };
    new.into_iter().chain(old)
}

/// The owners a child's change requeues: its [`owners`] that are in the
/// plugin's `primary` cache. An owner this plugin (or this instance, with
/// its own selector) does not reconcile is not its to wake, and an owner
/// not cached yet is enqueued by its own event when it arrives (as
/// kube-runtime drops such a trigger). Without this, N instances of one
/// plugin each reconciled every owner of every child: N reconciles per pod
/// event, N − 1 of them of nothing.
pub(super) fn cached_owners<'a>(
    kind: &'a KindRef,
    primary: &'a Informer,
    change: &'a Change,
) -> impl Iterator<Item = ObjectKey> + 'a {
    owners(kind, change).filter(|owner| primary.cache().read(|s| s.get(owner).is_some()))
}

/// The keys an orphan child's change enqueues: the cached primaries in its
/// namespace whose `spec.selector` (a `metav1.LabelSelector`) selects it,
/// as kube's controllers look for an orphan's adopters
/// (`getPodReplicaSets`, `getDeploymentsForReplicaSet`, `getPodJobs`).
/// Only a change that can make a child adoptable wakes them: an orphan
/// that appears, a child that loses its controller, or an orphan whose
/// labels change; not one being deleted. A primary without such a selector
/// (a CronJob, a Service's plain label map) adopts nothing.
pub(super) fn adopters(primary: &Informer, change: &Change) -> Vec<ObjectKey> {
    let Some(child) = adoptable(change) else {
        return Vec::new();
    };
    let everything = LabelSelector::everything();
    let namespace = child.namespace().unwrap_or_default();
    let candidates = primary
        .cache()
        .read(|s| s.list(Some(namespace), &everything));
    selecting(&candidates, child)
}

/// The child of a change that may be adopted now, if any. (A child with a
/// controller, the common case, is ruled out first.)
fn adoptable(change: &Change) -> Option<&CachedObject> {
    let (old, new) = match change {
        Change::Added(new) => (None, new),
        Change::Modified { old, new } => (Some(old), new),
        Change::Deleted(_) => return None,
    };
    if new.controller().is_some() || new.is_deleting() {
        return None;
    }
    let changed =
        old.is_none_or(|old| old.controller().is_some() || !old.labels().eq(new.labels()));
    changed.then_some(&**new)
}

/// The keys of the `candidates` (not being deleted) whose selector selects
/// `child`.
fn selecting(candidates: &[Arc<CachedObject>], child: &CachedObject) -> Vec<ObjectKey> {
    candidates
        .iter()
        .filter(|p| !p.is_deleting())
        .filter(|p| spec_selector(p).is_some_and(|s| s.matches(|k| child.label(k))))
        .map(|p| p.key().into())
        .collect()
}

/// An object's `spec.selector` when it is a non-empty `metav1.LabelSelector`
/// (only `matchLabels` and `matchExpressions`, with operators kube knows).
fn spec_selector(object: &CachedObject) -> Option<LabelSelector> {
    #[derive(serde::Deserialize)]
    struct Object {
        spec: Option<Spec>,
    }
    #[derive(serde::Deserialize)]
    struct Spec {
        selector: Option<serde_json::Map<String, serde_json::Value>>,
    }
    let selector = serde_json::from_str::<Object>(object.text())
        .ok()?
        .spec?
        .selector?;
    let shaped = !selector.is_empty()
        && (selector.keys()).all(|k| k == "matchLabels" || k == "matchExpressions");
    if !shaped {
        return None;
    }
    let text = windlass_selector::selector_text(&selector)?;
    (!text.is_empty()).then(|| text.parse().ok()).flatten()
}

/// The key of `child`'s controller owner, when the owner is of the
/// `primary` kind (the same group and kind; any version of it).
pub(super) fn owner(primary: &KindRef, child: &CachedObject) -> Option<ObjectKey> {
    let c = child.controller()?;
    (c.kind == primary.kind && group(c.api_version) == group(&primary.api_version))
        .then(|| ObjectKey::new(child.namespace(), c.name))
}

/// Whether `child`, found by its controller owner's uid, is controlled by
/// an object of the `primary` kind (uids are unique, so the kind is all
/// that is left to check).
pub(super) fn controlled_by_kind(primary: &KindRef, child: &CachedObject) -> bool {
    child.controller().is_some_and(|c| c.kind == primary.kind)
}

/// The API group of an apiVersion (`apps/v1` → `apps`, `v1` → ``).
fn group(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(owner: Option<(&str, &str, &str)>, rv: u32) -> Arc<CachedObject> {
        let mut meta = json!({"name": "p", "namespace": "ns", "uid": "u-p", "resourceVersion": rv.to_string()});
        if let Some((api_version, kind, name)) = owner {
            meta["ownerReferences"] = json!([
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": "u-cm"},
                {"apiVersion": api_version, "kind": kind, "name": name, "uid": format!("u-{name}"), "controller": true},
            ]);
        }
        let text = json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta}).to_string();
        Arc::new(CachedObject::parse(&text).unwrap())
    }

    fn rs() -> KindRef {
        KindRef::new("apps/v1", "ReplicaSet")
    }

    fn keys(change: &Change) -> Vec<String> {
        owners(&rs(), change).map(|k| k.to_string()).collect()
    }

    #[test]
    fn a_primary_change_enqueues_the_object() {
        let change = Change::Added(pod(None, 1));
        assert_eq!(primary(&change), ObjectKey::new(Some("ns"), "p"));
    }

    #[test]
    fn a_child_change_enqueues_its_controller_owner_of_the_primary_kind() {
        let owned = pod(Some(("apps/v1", "ReplicaSet", "web")), 1);
        assert_eq!(keys(&Change::Added(owned.clone())), ["ns/web"]);
        assert_eq!(keys(&Change::Deleted(owned)), ["ns/web"]);
        // Another version of the same group counts; another group does not.
        let beta = pod(Some(("apps/v1beta2", "ReplicaSet", "web")), 1);
        assert_eq!(keys(&Change::Added(beta)), ["ns/web"]);
        let other_group = pod(Some(("example.com/v1", "ReplicaSet", "web")), 1);
        assert!(keys(&Change::Added(other_group)).is_empty());
        let other_kind = pod(Some(("apps/v1", "StatefulSet", "web")), 1);
        assert!(keys(&Change::Added(other_kind)).is_empty());
        // A non-controller reference enqueues nothing.
        assert!(keys(&Change::Added(pod(None, 1))).is_empty());
    }

    #[test]
    fn a_child_adopted_away_enqueues_the_new_owner_then_the_old() {
        let change = Change::Modified {
            old: pod(Some(("apps/v1", "ReplicaSet", "old")), 1),
            new: pod(Some(("apps/v1", "ReplicaSet", "new")), 2),
        };
        assert_eq!(keys(&change), ["ns/new", "ns/old"]);
        // Released: only the old owner is left to look.
        let released = Change::Modified {
            old: pod(Some(("apps/v1", "ReplicaSet", "old")), 1),
            new: pod(None, 2),
        };
        assert_eq!(keys(&released), ["ns/old"]);
        // The same owner before and after: once.
        let same = Change::Modified {
            old: pod(Some(("apps/v1", "ReplicaSet", "web")), 1),
            new: pod(Some(("apps/v1", "ReplicaSet", "web")), 2),
        };
        assert_eq!(keys(&same), ["ns/web"]);
    }

    #[test]
    fn children_are_owned_by_the_primary_kind_only() {
        assert!(controlled_by_kind(
            &rs(),
            &pod(Some(("apps/v1", "ReplicaSet", "web")), 1)
        ));
        assert!(!controlled_by_kind(
            &rs(),
            &pod(Some(("apps/v1", "StatefulSet", "web")), 1)
        ));
        assert!(!controlled_by_kind(&rs(), &pod(None, 1)));
    }

    fn object(value: serde_json::Value) -> Arc<CachedObject> {
        Arc::new(CachedObject::parse(&value.to_string()).unwrap())
    }

    fn orphan(labels: serde_json::Value) -> Arc<CachedObject> {
        object(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u-p", "labels": labels}}))
    }

    fn replicaset(name: &str, selector: serde_json::Value) -> Arc<CachedObject> {
        object(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("u-{name}")},
            "spec": {"selector": selector}}))
    }

    #[test]
    fn an_orphan_wakes_the_primaries_whose_selector_selects_it() {
        let candidates = [
            replicaset("labels", json!({"matchLabels": {"app": "web"}})),
            replicaset(
                "expressions",
                json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}),
            ),
            replicaset("other", json!({"matchLabels": {"app": "db"}})),
            // An empty selector, a plain label map (a Service's), an
            // unknown operator: no adopters.
            replicaset("empty", json!({})),
            replicaset("plain", json!({"app": "web"})),
            replicaset(
                "unknown",
                json!({"matchExpressions": [{"key": "app", "operator": "Like", "values": ["web"]}]}),
            ),
        ];
        let child = orphan(json!({"app": "web", "tier": "a"}));
        let woken: Vec<String> = selecting(&candidates, &child)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(woken, ["ns/labels", "ns/expressions"]);
    }

    #[test]
    fn only_changes_that_can_make_an_orphan_wake_adopters() {
        let web = || orphan(json!({"app": "web"}));
        let is_adoptable = |c: &Change| adoptable(c).is_some();
        assert!(is_adoptable(&Change::Added(web())));
        // Released by its owner, or relabelled while an orphan.
        let owned = pod(Some(("apps/v1", "ReplicaSet", "web")), 1);
        assert!(is_adoptable(&Change::Modified {
            old: owned.clone(),
            new: web()
        }));
        assert!(is_adoptable(&Change::Modified {
            old: orphan(json!({"app": "db"})),
            new: web()
        }));
        // A status change of an orphan, a child with a controller, a
        // deleted or deleting orphan: nothing.
        assert!(!is_adoptable(&Change::Modified {
            old: web(),
            new: web()
        }));
        assert!(!is_adoptable(&Change::Added(owned)));
        assert!(!is_adoptable(&Change::Deleted(web())));
        let deleting = object(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u-p",
                "deletionTimestamp": "2026-01-01T00:00:00Z", "labels": {"app": "web"}}}));
        assert!(!is_adoptable(&Change::Added(deleting)));
    }
}

//! What windlass's writer sends for a plugin's `apply`, and what its
//! `prune-owned` deletes: plain functions over object JSON, used by the
//! host's writer and by the SDK's test harness (which plays that writer
//! against a fake cache), so a plugin's native tests and the host cannot
//! drift apart.
//!
//! - An `apply` creates the object when it is not live, with a controller
//!   owner reference to the primary object for children of `owns` kinds
//!   (never a second controller); else it sends a JSON merge patch of the
//!   given fields that carries the live resourceVersion as a precondition
//!   and keeps the live owner references; when the live object already has
//!   every given field, nothing is sent at all ([`apply`]).
//! - `prune-owned` deletes the owned children that are not already being
//!   deleted and that no `apply` or `replace` of the outcome named
//!   ([`pruned`]).
//!
//! The merge patch itself is applied as RFC 7386 says ([`merge_patch`]), as
//! the API server does.

use std::collections::HashSet;
use std::hash::Hash;

use serde_json::{Map, Value, json};

/// What an `apply` sends.
#[derive(Debug, Clone, PartialEq)]
pub enum Apply {
    /// Nothing is live: create this object.
    Create(Value),
    /// The live object lacks some given fields: send this merge patch.
    Patch(Value),
    /// The live object has every given field: send nothing.
    Converged,
}

/// What applying `desired` sends, given the `live` object (if any), the
/// controller owner reference it should carry (children of `owns` kinds;
/// see [`owner_reference`]), and whether its kind has a status subresource
/// (then the main endpoint ignores `status`, and so does the patch).
pub fn apply(
    desired: Value,
    live: Option<&Value>,
    owner: Option<&Value>,
    has_status: bool,
) -> Apply {
    match live {
        None => Apply::Create(created(desired, owner)),
        Some(live) => match converge_patch(desired, live, owner, has_status) {
            Some(patch) => Apply::Patch(patch),
            None => Apply::Converged,
        },
    }
}

/// `desired` as created: with `owner` among its owner references.
pub fn created(mut desired: Value, owner: Option<&Value>) -> Value {
    if let Some(owner) = owner {
        add_owner(&mut desired, owner);
    }
    desired
}

/// The controller owner reference the children of a primary object get
/// (with `blockOwnerDeletion`, so foreground deletion waits for them).
pub fn owner_reference(api_version: &str, kind: &str, name: &str, uid: &str) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// Sets `metadata.<field>` of `object` to `value`, when there is one.
pub fn set_meta(object: &mut Value, field: &str, value: Option<Value>) {
    let (Some(value), Some(obj)) = (value, object.as_object_mut()) else {
        return;
    };
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(field.to_owned(), value);
    }
}

/// Adds `owner` to the object's owner references unless one with its uid is
/// there; never adds a second controller.
pub fn add_owner(object: &mut Value, owner: &Value) {
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let refs = meta
        .entry("ownerReferences")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Some(refs) = refs.as_array_mut() else {
        return;
    };
    let has_controller = refs.iter().any(|r| r["controller"] == json!(true));
    if refs.iter().any(|r| r["uid"] == owner["uid"]) || has_controller {
        return;
    }
    refs.push(owner.clone());
}

/// The merge patch that brings `live` to have every field of `desired`, or
/// `None` when it already has them. The patch carries the live
/// resourceVersion as a precondition, and keeps the live owner references
/// (a merge patch replaces lists whole).
pub fn converge_patch(
    mut desired: Value,
    live: &Value,
    owner: Option<&Value>,
    has_status: bool,
) -> Option<Value> {
    let obj = desired.as_object_mut()?;
    if has_status {
        // The main endpoint ignores status; `update-status` is for that.
        obj.remove("status");
    }
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for server_owned in [
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "generation",
            "managedFields",
            "selfLink",
            "deletionTimestamp",
        ] {
            meta.remove(server_owned);
        }
        let mut refs = live
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let wanted: Vec<Value> = meta
            .remove("ownerReferences")
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .chain(owner.cloned())
            .collect();
        let before = refs.len();
        for r in wanted {
            let dup = refs.iter().any(|l| l["uid"] == r["uid"]);
            let second_controller = r["controller"] == json!(true)
                && refs.iter().any(|l| l["controller"] == json!(true));
            if !dup && !second_controller {
                refs.push(r);
            }
        }
        if refs.len() != before {
            meta.insert("ownerReferences".into(), Value::Array(refs));
        }
    }
    if is_subset(&desired, live) {
        return None;
    }
    if let Some(rv) = live.pointer("/metadata/resourceVersion") {
        set_meta(&mut desired, "resourceVersion", Some(rv.clone()));
    }
    Some(desired)
}

/// True when every field of `want` is in `have` with the same value; lists
/// match element by element (so server-side defaults inside list items do
/// not count as a difference).
fn is_subset(want: &Value, have: &Value) -> bool {
    match (want, have) {
        (Value::Object(w), Value::Object(h)) => w.iter().all(|(k, v)| {
            h.get(k).is_some_and(|hv| is_subset(v, hv)) || (v.is_null() && !h.contains_key(k))
        }),
        (Value::Array(w), Value::Array(h)) => {
            w.len() == h.len() && w.iter().zip(h).all(|(a, b)| is_subset(a, b))
        }
        (w, h) => w == h,
    }
}

/// Applies an RFC 7386 JSON merge patch to `target`: objects merge key by
/// key, `null` removes a key, anything else (lists included) replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else { return };
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.as_str()).or_insert(Value::Null), v);
        }
    }
}

/// One of the primary object's owned children, as cached, for [`pruned`].
#[derive(Debug, Clone, PartialEq)]
pub struct Child<K, T> {
    /// What names it, as `kept` does.
    pub key: K,
    /// It has a `deletionTimestamp`: its deletion is under way.
    pub deleting: bool,
    /// Whatever the caller needs to delete it.
    pub object: T,
}

/// The children `prune-owned` deletes, in the order given: of the primary
/// object's owned children, those not being deleted already that no
/// `apply` or `replace` of the outcome named (`kept`).
pub fn pruned<K: Eq + Hash, T>(
    owned: impl IntoIterator<Item = Child<K, T>>,
    kept: &HashSet<K>,
) -> Vec<Child<K, T>> {
    owned
        .into_iter()
        .filter(|c| !c.deleting && !kept.contains(&c.key))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn subset_ignores_server_defaults_in_list_items() {
        let want = json!({"spec": {"containers": [{"name": "web", "image": "nginx"}]}});
        let have = json!({"spec": {"containers": [{"name": "web", "image": "nginx", "terminationMessagePath": "/dev/termination-log"}], "dnsPolicy": "ClusterFirst"}});
        assert!(is_subset(&want, &have));
        let changed = json!({"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}});
        assert!(!is_subset(&changed, &have));
        let more = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        assert!(!is_subset(&more, &have));
        assert!(is_subset(&json!({"x": null}), &json!({})));
    }

    #[test]
    fn a_converged_apply_sends_nothing() {
        let live = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d", "resourceVersion": "9", "uid": "u",
            "ownerReferences": [{"uid": "rs1", "controller": true}]}, "spec": {"x": 1}, "status": {"phase": "Running"}});
        let identity =
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"}});
        let owner = json!({"uid": "rs1", "controller": true});
        assert_eq!(
            converge_patch(identity.clone(), &live, Some(&owner), true),
            None
        );
        assert_eq!(
            apply(identity, Some(&live), Some(&owner), true),
            Apply::Converged
        );
    }

    #[test]
    fn a_drifted_apply_patches_with_the_live_version_and_keeps_owners() {
        let live = json!({"metadata": {"name": "p", "resourceVersion": "9", "ownerReferences": [{"uid": "other", "controller": false}]}, "spec": {"x": 1}});
        let desired = json!({"metadata": {"name": "p", "resourceVersion": "1"}, "spec": {"x": 2}, "status": {"y": 1}});
        let owner = json!({"uid": "rs1", "controller": true});
        let patch = converge_patch(desired, &live, Some(&owner), true).unwrap();
        assert_eq!(patch["metadata"]["resourceVersion"], "9");
        assert_eq!(patch["spec"]["x"], 2);
        assert!(
            patch.get("status").is_none(),
            "status goes through update-status"
        );
        let refs = patch["metadata"]["ownerReferences"].as_array().unwrap();
        assert_eq!(
            refs.len(),
            2,
            "the live reference is kept and ours added: {refs:?}"
        );
    }

    #[test]
    fn status_is_patched_where_the_kind_has_no_status_subresource() {
        let live = json!({"metadata": {"name": "c", "resourceVersion": "3"}, "status": {"y": 0}});
        let desired = json!({"metadata": {"name": "c"}, "status": {"y": 1}});
        let Apply::Patch(patch) = apply(desired, Some(&live), None, false) else {
            panic!("status differs, and is an ordinary field here")
        };
        assert_eq!(patch["status"]["y"], 1);
    }

    #[test]
    fn never_a_second_controller() {
        let mut obj = json!({"metadata": {"ownerReferences": [{"uid": "a", "controller": true}]}});
        add_owner(&mut obj, &json!({"uid": "b", "controller": true}));
        assert_eq!(
            obj["metadata"]["ownerReferences"].as_array().unwrap().len(),
            1
        );
        let mut obj = json!({"metadata": {}});
        add_owner(&mut obj, &json!({"uid": "b", "controller": true}));
        assert_eq!(obj["metadata"]["ownerReferences"][0]["uid"], "b");
    }

    #[test]
    fn a_create_carries_the_owner_once() {
        let owner = owner_reference("apps/v1", "ReplicaSet", "web", "rs1");
        let Apply::Create(o) = apply(json!({"metadata": {"name": "p"}}), None, Some(&owner), true)
        else {
            panic!("nothing is live")
        };
        assert_eq!(o["metadata"]["ownerReferences"], json!([owner]));
        assert_eq!(
            o["metadata"]["ownerReferences"][0]["blockOwnerDeletion"],
            true
        );
        // Already named (by uid): not added twice.
        let named = json!({"metadata": {"name": "p", "ownerReferences": [{"uid": "rs1"}]}});
        assert_eq!(
            created(named.clone(), Some(&owner)),
            named,
            "a reference with the owner's uid is there already"
        );
        // No owner (not an owned kind): the object as given.
        let plain = json!({"metadata": {"name": "p"}});
        assert_eq!(apply(plain.clone(), None, None, true), Apply::Create(plain));
    }

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut target = json!({"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]});
        merge_patch(
            &mut target,
            &json!({"a": "z", "c": {"f": null}, "l": [3], "n": {"x": 1}}),
        );
        assert_eq!(
            target,
            json!({"a": "z", "c": {"d": "e"}, "l": [3], "n": {"x": 1}})
        );
        let mut scalar = json!("s");
        merge_patch(&mut scalar, &json!({"k": null, "v": 1}));
        assert_eq!(scalar, json!({"v": 1}));
    }

    #[test]
    fn prune_spares_the_kept_and_the_deleting() {
        let kept: HashSet<&str> = ["a"].into();
        let owned = [("a", false), ("b", false), ("c", true), ("d", false)]
            .into_iter()
            .enumerate()
            .map(|(i, (key, deleting))| Child {
                key,
                deleting,
                object: i,
            });
        let gone: Vec<(&str, usize)> = pruned(owned, &kept)
            .into_iter()
            .map(|c| (c.key, c.object))
            .collect();
        assert_eq!(gone, vec![("b", 1), ("d", 3)]);
        assert!(pruned(Vec::<Child<&str, ()>>::new(), &kept).is_empty());
    }
}

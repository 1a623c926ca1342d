//! Plain functions over object JSON that `apply` uses: the controller
//! owner reference children get (never a second controller), and the merge
//! patch that converges a live object to the fields a plugin gave — none
//! when it already has them.

use serde_json::{Map, Value, json};

use crate::model::{CachedObject, KindRef, ObjectRef};

/// The controller owner reference children of `key` get.
pub(super) fn owner_reference(kind: &KindRef, key: &ObjectRef, primary: &CachedObject) -> Value {
    json!({
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "name": key.name,
        "uid": primary.uid(),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

pub(super) fn set_meta(object: &mut Value, field: &str, value: Option<Value>) {
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
pub(super) fn add_owner(object: &mut Value, owner: &Value) {
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
pub(super) fn converge_patch(
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
        assert_eq!(converge_patch(identity, &live, Some(&owner), true), None);
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
}

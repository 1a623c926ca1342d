//! Patch application: JSON merge (RFC 7386), JSON patch (RFC 6902) and a
//! strategic merge patch covering the built-in kinds' merge keys and
//! directives (and, for server-side apply, a custom resource's list types:
//! `custom_lists.rs`).

use std::collections::{HashMap, HashSet};

use json_patch::PatchOperation;
use json_patch::jsonptr::{Pointer, index::Index};
use serde_json::{Map, Value};

use crate::custom_lists::{self, ListType};
use crate::limits::{MAX_JSON_PATCH_COPY_BYTES, MAX_JSON_PATCH_OPERATIONS};
use crate::nesting;
use crate::status::{ApiError, ApiResult};

/// Which patch a request carries, from its `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchKind {
    Merge,
    Json,
    Strategic,
    Apply,
}

impl PatchKind {
    pub(crate) fn from_content_type(ct: &str) -> Option<Self> {
        match ct.split(';').next().unwrap_or("").trim() {
            "application/merge-patch+json" => Some(Self::Merge),
            "application/json-patch+json" => Some(Self::Json),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// RFC 7386.
pub(crate) fn merge(target: &mut Value, patch: &Value) {
    json_patch::merge(target, patch);
}

/// Why a JSON patch was not applied.
#[derive(Debug, thiserror::Error)]
pub(crate) enum JsonPatchError {
    /// Not a list of operations (kube-apiserver: 400).
    #[error("invalid JSON patch: {0}")]
    Decode(serde_json::Error),
    /// More operations than kube-apiserver takes (413).
    #[error(
        "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {0}"
    )]
    TooManyOperations(usize),
    /// An operation failed (422), with the message evanphx/json-patch gives
    /// kube-apiserver for the copy limit.
    #[error(
        "Unable to complete the copy, the accumulated size increase of copy is {0}, exceeding the limit {MAX_JSON_PATCH_COPY_BYTES}"
    )]
    CopyLimit(usize),
    #[error("operation '/{operation}' failed at path '{path}': {kind}")]
    Operation {
        operation: usize,
        path: String,
        kind: &'static str,
    },
}

/// RFC 6902, bounded as kube-apiserver bounds it: at most
/// [`MAX_JSON_PATCH_OPERATIONS`] operations, and `copy` operations adding at
/// most [`MAX_JSON_PATCH_COPY_BYTES`] of JSON in total. Operations are
/// applied without recursion (values are moved, and copied, compared and
/// dropped with the `nesting` walkers), because a patch can nest the
/// document arbitrarily deep before the result is checked. `target` is
/// left half-patched on error: callers patch a copy.
pub(crate) fn json_patch(target: &mut Value, patch: Value) -> Result<(), JsonPatchError> {
    let ops: json_patch::Patch = serde_json::from_value(patch).map_err(JsonPatchError::Decode)?;
    if ops.0.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(JsonPatchError::TooManyOperations(ops.0.len()));
    }
    let mut copied = 0;
    for (i, op) in ops.0.into_iter().enumerate() {
        let fail = |path: &Pointer, kind| JsonPatchError::Operation {
            operation: i,
            path: path.to_string(),
            kind,
        };
        match op {
            PatchOperation::Add(op) => {
                add(target, &op.path, op.value).map_err(|k| fail(&op.path, k))?;
            }
            PatchOperation::Remove(op) => {
                nesting::drop(remove(target, &op.path).map_err(|k| fail(&op.path, k))?);
            }
            PatchOperation::Replace(op) => {
                let slot = at_mut(target, &op.path).ok_or_else(|| fail(&op.path, INVALID_PATH))?;
                nesting::drop(std::mem::replace(slot, op.value));
            }
            PatchOperation::Move(op) => {
                if op.path.starts_with(&op.from) && op.path.len() != op.from.len() {
                    return Err(fail(&op.path, "cannot move the value inside itself"));
                }
                let v = remove(target, &op.from).map_err(|_| fail(&op.path, INVALID_FROM))?;
                add(target, &op.path, v).map_err(|k| fail(&op.path, k))?;
            }
            PatchOperation::Copy(op) => {
                let source = at(target, &op.from).ok_or_else(|| fail(&op.path, INVALID_FROM))?;
                copied += nesting::json_len(source);
                if copied > MAX_JSON_PATCH_COPY_BYTES {
                    return Err(JsonPatchError::CopyLimit(copied));
                }
                let v = nesting::clone(source);
                add(target, &op.path, v).map_err(|k| fail(&op.path, k))?;
            }
            PatchOperation::Test(op) => {
                let found = at(target, &op.path).ok_or_else(|| fail(&op.path, INVALID_PATH))?;
                if !nesting::equal(found, &op.value) {
                    return Err(fail(&op.path, "value did not match"));
                }
                nesting::drop(op.value);
            }
        }
    }
    Ok(())
}

// The json-patch crate's wording for failed operations.
const INVALID_PATH: &str = "path is invalid";
const INVALID_FROM: &str = "\"from\" path is invalid";

/// The value at `path`, walking one token at a time.
fn at<'a>(doc: &'a Value, path: &Pointer) -> Option<&'a Value> {
    path.tokens().try_fold(doc, |cur, token| match cur {
        Value::Object(m) => m.get(token.decoded().as_ref()),
        Value::Array(a) => match token.to_index().ok()? {
            Index::Num(i) => a.get(i),
            Index::Next => None,
        },
        _ => None,
    })
}

fn at_mut<'a>(doc: &'a mut Value, path: &Pointer) -> Option<&'a mut Value> {
    path.tokens().try_fold(doc, |cur, token| match cur {
        Value::Object(m) => m.get_mut(token.decoded().as_ref()),
        Value::Array(a) => match token.to_index().ok()? {
            Index::Num(i) => a.get_mut(i),
            Index::Next => None,
        },
        _ => None,
    })
}

/// RFC 6902 `add`: sets a member, inserts into an array (`-` appends), or
/// replaces the whole document for the empty path.
fn add(doc: &mut Value, path: &Pointer, value: Value) -> Result<(), &'static str> {
    let Some((parent, last)) = path.split_back() else {
        nesting::drop(std::mem::replace(doc, value));
        return Ok(());
    };
    match at_mut(doc, parent).ok_or(INVALID_PATH)? {
        Value::Object(m) => {
            if let Some(old) = m.insert(last.decoded().into_owned(), value) {
                nesting::drop(old);
            }
        }
        Value::Array(a) => {
            let i = last
                .to_index()
                .ok()
                .and_then(|i| i.for_len_incl(a.len()).ok())
                .ok_or(INVALID_PATH)?;
            a.insert(i, value);
        }
        _ => return Err(INVALID_PATH),
    }
    Ok(())
}

/// RFC 6902 `remove`: takes a member or an array item out and returns it.
fn remove(doc: &mut Value, path: &Pointer) -> Result<Value, &'static str> {
    let (parent, last) = path.split_back().ok_or(INVALID_PATH)?;
    match at_mut(doc, parent).ok_or(INVALID_PATH)? {
        Value::Object(m) => m.remove(last.decoded().as_ref()).ok_or(INVALID_PATH),
        Value::Array(a) => {
            let i = last
                .to_index()
                .ok()
                .and_then(|i| i.for_len(a.len()).ok())
                .ok_or(INVALID_PATH)?;
            Ok(a.remove(i))
        }
        _ => Err(INVALID_PATH),
    }
}

/// The merge key of a list field of a built-in kind, by field name and an item.
pub(crate) fn merge_key(field: &str, item: &Value) -> Option<&'static str> {
    Some(match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets" => "name",
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        "ports" => {
            if item.get("containerPort").is_some() {
                "containerPort"
            } else {
                "port"
            }
        }
        "conditions" => "type",
        "ownerReferences" => "uid",
        "hostAliases" => "ip",
        "topologySpreadConstraints" => "topologyKey",
        "secrets" => "name",
        _ => return None,
    })
}

/// Lists of scalars that merge (union) instead of being replaced.
fn merges_primitives(field: &str) -> bool {
    matches!(field, "finalizers")
}

/// Applies a strategic merge patch to `target` (an object).
pub(crate) fn strategic(target: &mut Value, patch: &Value) -> Result<(), String> {
    match (target.as_object_mut(), patch.as_object()) {
        (Some(t), Some(p)) => merge_map(t, p),
        (_, None) => Err("strategic merge patch must be a JSON object".into()),
        (None, Some(_)) => {
            *target = strip_directives(patch);
            Ok(())
        }
    }
}

fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(
            a.iter()
                .filter(|i| i.get("$patch").is_none())
                .map(strip_directives)
                .collect(),
        ),
        other => other.clone(),
    }
}

fn merge_map(target: &mut Map<String, Value>, patch: &Map<String, Value>) -> Result<(), String> {
    match patch.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            let mut p = patch.clone();
            p.remove("$patch");
            *target = match strip_directives(&Value::Object(p)) {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            return Ok(());
        }
        Some("delete") => {
            target.clear();
            return Ok(());
        }
        Some("merge") | None => {}
        Some(other) => return Err(format!("unknown patch type: {other}")),
    }
    for (k, pv) in patch {
        if k == "$patch" || k == "$retainKeys" || k.starts_with("$setElementOrder/") {
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(items)), Some(del)) = (target.get_mut(field), pv.as_array()) {
                let del: HashSet<String> = del.iter().map(Value::to_string).collect();
                items.retain(|i| !del.contains(&i.to_string()));
            }
            continue;
        }
        if pv.is_null() {
            target.remove(k);
            continue;
        }
        let atomic = || custom_lists::read(|l| l.is_some_and(|l| l.atomic_map(k)));
        match (target.get_mut(k), pv) {
            (Some(Value::Object(t)), Value::Object(p)) if atomic() => {
                *t = match strip_directives(&Value::Object(p.clone())) {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
            }
            (Some(Value::Object(t)), Value::Object(p)) => {
                if p.get("$patch").and_then(Value::as_str) == Some("delete") {
                    target.remove(k);
                } else {
                    merge_map(t, p)?;
                }
            }
            (Some(Value::Array(t)), Value::Array(p)) => merge_list(k, t, p)?,
            (_, pv) => {
                if pv.get("$patch").and_then(Value::as_str) == Some("delete") {
                    target.remove(k);
                } else {
                    target.insert(k.clone(), strip_directives(pv));
                }
            }
        }
    }
    if let Some(Value::Array(keep)) = patch.get("$retainKeys") {
        let keep: HashSet<&str> = keep.iter().filter_map(Value::as_str).collect();
        target.retain(|k, _| keep.contains(k.as_str()));
    }
    Ok(())
}

/// Merges a patch list into a target list. Items are found by merge key
/// through a map, so a patch of `m` items against `n` costs `n + m`, not
/// `n * m`: lists can be long (a pod's env, a Service's ports, an
/// EndpointSlice's endpoints) and the patch is the client's to choose.
fn merge_list(field: &str, target: &mut Vec<Value>, patch: &[Value]) -> Result<(), String> {
    if let Some(t) = custom_lists::read(|l| l.map(|l| l.list_type(field).clone())) {
        return merge_custom_list(field, &t, target, patch);
    }
    if patch
        .iter()
        .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        *target = patch
            .iter()
            .filter(|i| i.get("$patch").is_none())
            .map(strip_directives)
            .collect();
        return Ok(());
    }
    if merges_primitives(field) {
        union(target, patch);
        return Ok(());
    }
    let Some(first) = patch.first().or(target.first()) else {
        *target = vec![];
        return Ok(());
    };
    let Some(key) = merge_key(field, first).filter(|_| first.is_object()) else {
        *target = patch.iter().map(strip_directives).collect();
        return Ok(());
    };
    // Items by the JSON of their key, in list order; deleted ones become
    // `None` and are dropped at the end.
    let mut items: Vec<Option<Value>> = std::mem::take(target).into_iter().map(Some).collect();
    let mut by_key: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        if let Some(id) = item.as_ref().and_then(|t| t.get(key)) {
            by_key.entry(id.to_string()).or_default().push(i);
        }
    }
    for p in patch {
        let Some(pm) = p.as_object() else {
            return Err(format!(
                "list {field} with merge key {key} has a non-object item"
            ));
        };
        let id = pm
            .get(key)
            .ok_or_else(|| format!("map: {p} does not contain declared merge key: {key}"))?
            .to_string();
        if pm.get("$patch").and_then(Value::as_str) == Some("delete") {
            for i in by_key.remove(&id).unwrap_or_default() {
                items[i] = None;
            }
            continue;
        }
        match by_key.get(&id).and_then(|is| is.first()) {
            Some(&i) => {
                if let Some(Value::Object(t)) = &mut items[i] {
                    merge_map(t, pm)?;
                }
            }
            None => {
                by_key.insert(id, vec![items.len()]);
                items.push(Some(strip_directives(p)));
            }
        }
    }
    *target = items.into_iter().flatten().collect();
    Ok(())
}

/// Adds to `target` the items of `patch` it does not hold (a list of
/// scalars merged as a set).
fn union(target: &mut Vec<Value>, patch: &[Value]) {
    let mut present: HashSet<String> = target.iter().map(Value::to_string).collect();
    for p in patch {
        if present.insert(p.to_string()) {
            target.push(p.clone());
        }
    }
}

/// Merges a custom resource's list as its schema's list type says (see
/// `custom_lists.rs`): a `map` list by its keys, a `set` as a union, any
/// other list replaced.
fn merge_custom_list(
    field: &str,
    t: &ListType,
    target: &mut Vec<Value>,
    patch: &[Value],
) -> Result<(), String> {
    let lists = custom_lists::in_effect().expect("called with custom lists in effect");
    match t {
        ListType::Atomic => *target = patch.iter().map(strip_directives).collect(),
        ListType::Set => union(target, patch),
        ListType::Map(keys) => {
            let mut at: HashMap<String, usize> = HashMap::new();
            for (i, item) in target.iter().enumerate() {
                if let Some(seg) = lists.segment(field, item) {
                    at.entry(seg).or_insert(i);
                }
            }
            for p in patch {
                let Some(seg) = lists.segment(field, p) else {
                    let missing = keys.iter().find(|k| p.get(k.as_str()).is_none());
                    return Err(format!(
                        ".{field}: associative list with keys has an element that omits key field {:?}",
                        missing.map_or("", String::as_str)
                    ));
                };
                match at.get(&seg) {
                    Some(&i) => match (&mut target[i], p) {
                        (Value::Object(t), Value::Object(pm)) => merge_map(t, pm)?,
                        (t, p) => *t = strip_directives(p),
                    },
                    None => {
                        at.insert(seg, target.len());
                        target.push(strip_directives(p));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Applies a JSON patch to `v`, with kube-apiserver's status codes: 400
/// for a patch that is not a list of operations, 413 past 10,000
/// operations, 422 for an operation that fails or a result nested deeper
/// than an object may be. On error `v` (which may be nested arbitrarily
/// deep by then) is dropped without recursion.
pub(crate) fn json_patched(v: &mut Value, patch: Value) -> ApiResult<()> {
    let err = match json_patch(v, patch) {
        Ok(()) => match nesting::too_deep(v, nesting::MAX_DEPTH) {
            None => return Ok(()),
            Some(path) => format!(
                "the patched object nests deeper than {} levels at {path}",
                nesting::MAX_DEPTH
            ),
        },
        Err(e @ JsonPatchError::Decode(_)) => {
            return Err(ApiError::bad_request(e.to_string()));
        }
        Err(e @ JsonPatchError::TooManyOperations(_)) => {
            return Err(ApiError::new(413, "RequestEntityTooLarge", e.to_string()));
        }
        Err(e) => e.to_string(),
    };
    nesting::drop(std::mem::take(v));
    Err(ApiError::new(
        422,
        "Invalid",
        format!("the server rejected our request due to an error in our request: {err}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_types() {
        assert_eq!(
            PatchKind::from_content_type("application/merge-patch+json; charset=utf-8"),
            Some(PatchKind::Merge)
        );
        assert_eq!(PatchKind::from_content_type("application/json"), None);
    }

    #[test]
    fn merge_patch_removes_nulls() {
        let mut t = json!({"a": 1, "b": {"c": 2}});
        merge(&mut t, &json!({"a": null, "b": {"d": 3}}));
        assert_eq!(t, json!({"b": {"c": 2, "d": 3}}));
    }

    #[test]
    fn json_patch_ops_and_errors() {
        let mut t = json!({"spec": {"replicas": 1}});
        json_patch(
            &mut t,
            json!([{"op": "replace", "path": "/spec/replicas", "value": 3}]),
        )
        .unwrap();
        assert_eq!(t["spec"]["replicas"], 3);
        assert!(
            json_patch(
                &mut t,
                json!([{"op": "test", "path": "/spec/replicas", "value": 9}])
            )
            .is_err()
        );
        assert!(json_patch(&mut t, json!({"op": "add"})).is_err());
    }

    #[test]
    fn strategic_merges_containers_by_name() {
        let mut t = json!({"spec": {"containers": [
            {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]},
            {"name": "b", "image": "b:1"}]}});
        strategic(
            &mut t,
            &json!({"spec": {"containers": [
            {"name": "a", "image": "a:2", "env": [{"name": "Y", "value": "2"}]},
            {"name": "c", "image": "c:1"},
            {"name": "b", "$patch": "delete"}]}}),
        )
        .unwrap();
        let cs = t["spec"]["containers"].as_array().unwrap();
        assert_eq!(cs.len(), 2);
        assert_eq!(cs[0]["image"], "a:2");
        assert_eq!(cs[0]["env"].as_array().unwrap().len(), 2);
        assert_eq!(cs[1]["name"], "c");
    }

    #[test]
    fn strategic_directives() {
        let mut t =
            json!({"spec": {"template": {"a": 1, "b": 2}}, "metadata": {"finalizers": ["x"]}});
        strategic(
            &mut t,
            &json!({
                "spec": {"template": {"$patch": "replace", "c": 3}},
                "metadata": {"finalizers": ["y"], "$setElementOrder/finalizers": ["x", "y"]}
            }),
        )
        .unwrap();
        assert_eq!(t["spec"]["template"], json!({"c": 3}));
        assert_eq!(t["metadata"]["finalizers"], json!(["x", "y"]));
        strategic(
            &mut t,
            &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}}),
        )
        .unwrap();
        assert_eq!(t["metadata"]["finalizers"], json!(["y"]));
        strategic(
            &mut t,
            &json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        )
        .unwrap();
        assert_eq!(t["spec"]["strategy"], json!({"type": "Recreate"}));
    }

    #[test]
    fn scalar_lists_replace() {
        let mut t = json!({"spec": {"args": ["a", "b"]}});
        strategic(&mut t, &json!({"spec": {"args": ["c"]}})).unwrap();
        assert_eq!(t["spec"]["args"], json!(["c"]));
    }

    /// The limit: `copy` operations may add at most 3 MiB of JSON in all
    /// (kube-apiserver's JSONPatchMaxCopyBytes); issue 12's 17 copies that
    /// doubled a value each time stop at the limit.
    #[test]
    fn copies_are_bounded_in_accumulated_size() {
        let mut t = json!({"data": {"a": "x".repeat(100_000)}});
        let ops: Vec<Value> = (0..17)
            .map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/c{i}")}))
            .collect();
        let err = json_patch(&mut t, Value::Array(ops)).unwrap_err();
        assert!(matches!(err, JsonPatchError::CopyLimit(n) if n > MAX_JSON_PATCH_COPY_BYTES));
        assert!(
            err.to_string().starts_with(
                "Unable to complete the copy, the accumulated size increase of copy is"
            )
        );
        // Under the limit, copies work.
        let mut t = json!({"a": {"b": 1}});
        json_patch(&mut t, json!([{"op": "copy", "from": "/a", "path": "/c"}])).unwrap();
        assert_eq!(t, json!({"a": {"b": 1}, "c": {"b": 1}}));
    }

    /// The limit: 10,000 operations (kube-apiserver's maxJSONPatchOperations).
    #[test]
    fn operations_are_counted() {
        let ops =
            vec![json!({"op": "test", "path": "", "value": {}}); MAX_JSON_PATCH_OPERATIONS + 1];
        let err = json_patch(&mut json!({}), Value::Array(ops)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "The allowed maximum operations in a JSON patch is 10000, got 10001"
        );
    }

    /// Moves nest the document as deep as the patch likes without any
    /// recursion; the caller checks the depth of the result.
    #[test]
    fn deep_intermediate_documents_do_not_recurse() {
        let mut t = json!({"a": {}, "b": {}});
        let mut ops = Vec::new();
        let mut path = String::from("/a");
        for i in 0..20_000 {
            ops.push(json!({"op": "add", "path": format!("{path}/n"), "value": {}}));
            path.push_str("/n");
            if path.len() > 2_000 {
                // Keep the patch small: move the chain under a short path.
                ops.push(json!({"op": "move", "from": "/a", "path": format!("/b/m{i}")}));
                ops.push(json!({"op": "add", "path": "/a", "value": {}}));
                path = String::from("/a");
            }
        }
        ops.truncate(MAX_JSON_PATCH_OPERATIONS);
        json_patch(&mut t, Value::Array(ops)).unwrap();
        assert!(nesting::depth(&t) > 900);
        nesting::drop(t);
    }

    #[test]
    fn json_patch_errors_name_the_operation() {
        let mut t = json!({"a": [1]});
        let err = json_patch(&mut t, json!([{"op": "remove", "path": "/a/5"}])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "operation '/0' failed at path '/a/5': path is invalid"
        );
        let err = json_patch(
            &mut t,
            json!([{"op": "move", "from": "/a", "path": "/a/0"}]),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .ends_with("cannot move the value inside itself")
        );
        json_patch(&mut t, json!([{"op": "add", "path": "/a/-", "value": 2}, {"op": "move", "from": "/a/0", "path": "/b"}])).unwrap();
        assert_eq!(t, json!({"a": [2], "b": 1}));
    }

    /// A strategic merge of 50,000 items into 50,000 is linear: with the
    /// old nested loops this was 2.5 billion comparisons.
    #[test]
    fn strategic_lists_merge_by_key_in_linear_time() {
        let env = |n: usize, v: &str| -> Vec<Value> {
            (0..n)
                .map(|i| json!({"name": format!("E{i}"), "value": v}))
                .collect()
        };
        let mut t = json!({"spec": {"containers": [{"name": "c", "env": env(50_000, "old")}]}});
        let mut patch_env = env(50_000, "new");
        patch_env.push(json!({"name": "E7", "$patch": "delete"}));
        strategic(
            &mut t,
            &json!({"spec": {"containers": [{"name": "c", "env": patch_env}]}}),
        )
        .unwrap();
        let out = t["spec"]["containers"][0]["env"].as_array().unwrap();
        assert_eq!(out.len(), 49_999);
        assert!(out.iter().all(|e| e["value"] == "new" && e["name"] != "E7"));
        let mut f = json!({"metadata": {"finalizers": (0..50_000).map(|i| format!("f{i}")).collect::<Vec<_>>()}});
        let del: Vec<String> = (0..50_000).step_by(2).map(|i| format!("f{i}")).collect();
        strategic(&mut f, &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": del, "finalizers": ["f1", "new"]}})).unwrap();
        assert_eq!(
            f["metadata"]["finalizers"].as_array().unwrap().len(),
            25_001
        );
    }
}

//! Patch application: JSON merge (RFC 7386), JSON patch (RFC 6902) and a
//! strategic merge patch covering the built-in kinds' merge keys and directives.

use serde_json::{Map, Value};

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

/// RFC 6902; the message says which operation failed.
pub(crate) fn json_patch(target: &mut Value, patch: &Value) -> Result<(), String> {
    let p: json_patch::Patch =
        serde_json::from_value(patch.clone()).map_err(|e| format!("invalid JSON patch: {e}"))?;
    json_patch::patch(target, &p).map_err(|e| e.to_string())
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
                items.retain(|i| !del.contains(i));
            }
            continue;
        }
        if pv.is_null() {
            target.remove(k);
            continue;
        }
        match (target.get_mut(k), pv) {
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
        let keep: Vec<&str> = keep.iter().filter_map(Value::as_str).collect();
        target.retain(|k, _| keep.contains(&k.as_str()));
    }
    Ok(())
}

fn merge_list(field: &str, target: &mut Vec<Value>, patch: &[Value]) -> Result<(), String> {
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
        for p in patch {
            if !target.contains(p) {
                target.push(p.clone());
            }
        }
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
    for p in patch {
        let Some(pm) = p.as_object() else {
            return Err(format!(
                "list {field} with merge key {key} has a non-object item"
            ));
        };
        let id = pm
            .get(key)
            .ok_or_else(|| format!("map: {p} does not contain declared merge key: {key}"))?;
        let pos = target.iter().position(|t| t.get(key) == Some(id));
        match pm.get("$patch").and_then(Value::as_str) {
            Some("delete") => {
                target.retain(|t| t.get(key) != Some(id));
            }
            _ => match pos {
                Some(i) => {
                    if let Value::Object(t) = &mut target[i] {
                        merge_map(t, pm)?;
                    }
                }
                None => target.push(strip_directives(p)),
            },
        }
    }
    Ok(())
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
            &json!([{"op": "replace", "path": "/spec/replicas", "value": 3}]),
        )
        .unwrap();
        assert_eq!(t["spec"]["replicas"], 3);
        assert!(
            json_patch(
                &mut t,
                &json!([{"op": "test", "path": "/spec/replicas", "value": 9}])
            )
            .is_err()
        );
        assert!(json_patch(&mut t, &json!({"op": "add"})).is_err());
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
}

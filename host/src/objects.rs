//! Reads Kubernetes objects from files: JSON objects, JSON arrays,
//! multi-document YAML, and `kind: List` wrappers, as `kubectl` accepts them.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

/// A file that does not hold Kubernetes objects; the message names the file.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {reason}")]
pub struct ObjectFileError {
    file: String,
    reason: String,
}

/// Every object in the file at `path`, in order.
pub fn read_objects(path: &Path) -> Result<Vec<Value>, ObjectFileError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ObjectFileError {
        file: file.clone(),
        reason: format!("cannot read: {e}"),
    })?;
    parse_objects(&text).map_err(|reason| ObjectFileError { file, reason })
}

/// Every object in `text` (JSON or YAML), in order.
pub fn parse_objects(text: &str) -> Result<Vec<Value>, String> {
    let mut docs = Vec::new();
    if text.trim_start().starts_with(['{', '[']) {
        docs.push(serde_json::from_str::<Value>(text).map_err(|e| format!("invalid JSON: {e}"))?);
    } else {
        for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
            let value = Value::deserialize(doc)
                .map_err(|e| format!("invalid YAML in document {}: {e}", i + 1))?;
            if !value.is_null() {
                docs.push(value);
            }
        }
    }
    let mut objects = Vec::new();
    for doc in docs {
        flatten(doc, &mut objects)?;
    }
    Ok(objects)
}

fn flatten(value: Value, out: &mut Vec<Value>) -> Result<(), String> {
    match value {
        Value::Array(items) => items.into_iter().try_for_each(|v| flatten(v, out)),
        Value::Object(mut map) => {
            let is_list = map
                .get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| k == "List" || k.ends_with("List"))
                && map.get("items").is_some_and(Value::is_array);
            if is_list {
                return flatten(map.remove("items").unwrap_or_default(), out);
            }
            let object = Value::Object(map);
            for field in ["apiVersion", "kind"] {
                if object
                    .get(field)
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    return Err(format!("an object has no {field}"));
                }
            }
            if object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                return Err(format!(
                    "a {} has no metadata.name",
                    object["kind"].as_str().unwrap_or_default()
                ));
            }
            out.push(object);
            Ok(())
        }
        other => Err(format!("expected an object, found {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_yaml_streams_json_arrays_and_lists() {
        let yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: b}}\n";
        let names: Vec<_> = parse_objects(yaml)
            .unwrap()
            .iter()
            .map(|o| o["metadata"]["name"].clone())
            .collect();
        assert_eq!(names, ["a", "b"]);
        let json = r#"[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"c"}}]"#;
        assert_eq!(parse_objects(json).unwrap().len(), 1);
    }

    #[test]
    fn says_what_is_wrong() {
        assert!(parse_objects("{").unwrap_err().contains("invalid JSON"));
        assert!(
            parse_objects("kind: Pod\nmetadata: {name: a}")
                .unwrap_err()
                .contains("no apiVersion")
        );
        assert!(
            parse_objects("apiVersion: v1\nkind: Pod\n")
                .unwrap_err()
                .contains("no metadata.name")
        );
        assert!(
            parse_objects("- 1")
                .unwrap_err()
                .contains("expected an object")
        );
    }
}

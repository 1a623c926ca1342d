//! Loading test objects from YAML or JSON text.

use serde::Deserialize;
use serde_json::Value;

use crate::{Error, Object};

/// Parses objects from text: one or more YAML documents (`---`-separated),
/// JSON objects, JSON arrays of objects, and lists (`kind: List` or any
/// `…List` kind with `items`) are flattened into their items. Items of typed
/// lists (e.g. `PodList`) without `apiVersion`/`kind` get them from the list.
pub fn parse_objects(text: &str) -> Result<Vec<Object>, Error> {
    let mut out = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        let value = Value::deserialize(doc)
            .map_err(|e| Error::permanent(format!("invalid YAML/JSON test objects: {e}")))?;
        flatten(value, &mut out)?;
    }
    Ok(out)
}

fn flatten(value: Value, out: &mut Vec<Object>) -> Result<(), Error> {
    match value {
        Value::Null => Ok(()),
        Value::Array(items) => items.into_iter().try_for_each(|v| flatten(v, out)),
        Value::Object(mut map) => {
            let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
            if kind.ends_with("List") && map.get("items").is_some_and(Value::is_array) {
                let item_kind = (kind != "List").then(|| kind.trim_end_matches("List").to_owned());
                let api_version = map.get("apiVersion").cloned();
                let Some(Value::Array(items)) = map.remove("items") else {
                    return Ok(());
                };
                for mut item in items {
                    if let (Some(k), Value::Object(m)) = (&item_kind, &mut item) {
                        m.entry("kind").or_insert_with(|| Value::String(k.clone()));
                        if let Some(av) = &api_version {
                            m.entry("apiVersion").or_insert_with(|| av.clone());
                        }
                    }
                    flatten(item, out)?;
                }
                return Ok(());
            }
            let obj = Object::from_value(Value::Object(map))?;
            if obj.api_version().is_empty() || obj.kind().is_empty() || obj.name().is_empty() {
                return Err(Error::permanent(format!(
                    "test object without apiVersion, kind or metadata.name: {}",
                    obj.to_json()
                )));
            }
            out.push(obj);
            Ok(())
        }
        other => Err(Error::permanent(format!(
            "expected an object or a list of objects, got {other}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_document_yaml() {
        let objs = parse_objects(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\n\
             apiVersion: v1\nkind: Pod\nmetadata: {name: b}\n---\n",
        )
        .unwrap();
        let names: Vec<_> = objs.iter().map(Object::name).collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn json_object_and_array() {
        let one = parse_objects(r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}"#);
        assert_eq!(one.unwrap().len(), 1);
        let two = parse_objects(
            r#"[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}},
                {"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"}}]"#,
        );
        assert_eq!(two.unwrap().len(), 2);
    }

    #[test]
    fn lists_are_flattened() {
        let objs = parse_objects(
            "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: a}}\n",
        )
        .unwrap();
        assert_eq!(objs[0].kind(), "Pod");
        let objs = parse_objects("apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a}\n")
            .unwrap();
        assert!(objs[0].is("v1", "Pod"));
    }

    #[test]
    fn objects_need_identity() {
        let err = parse_objects("kind: Pod\nmetadata: {name: a}\n").unwrap_err();
        assert!(err.message.contains("apiVersion"), "{err}");
        assert!(parse_objects("42").is_err());
    }
}

//! `x-kubernetes-list-type: set` and `map` lists hold each item (or each
//! key, `x-kubernetes-list-map-keys`) once: a repeat is a `Duplicate value`
//! cause at its index, worded as kube's structural list-type validation
//! words it (the value as Go's `%#v` prints the decoded JSON).

use serde_json::{Map, Value};

use crate::causes::{self as field, Causes};

/// The repeated items of every set and map list in `obj` under `schema`.
pub(crate) fn errors(schema: &Value, obj: &Value) -> Causes {
    let mut errs = Causes::new();
    if let Some(m) = obj.as_object() {
        object(schema, m, "", &mut errs);
    }
    errs
}

fn object(s: &Value, m: &Map<String, Value>, path: &str, errs: &mut Causes) {
    if let Some(props) = s["properties"].as_object() {
        for (k, x) in m {
            if let Some(sub) = props.get(k) {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                node(sub, x, &p, errs);
            }
        }
    } else if s["additionalProperties"].is_object() {
        for (k, x) in m {
            node(&s["additionalProperties"], x, &format!("{path}[{k}]"), errs);
        }
    }
}

fn node(s: &Value, v: &Value, path: &str, errs: &mut Causes) {
    match v {
        Value::Object(m) => object(s, m, path, errs),
        Value::Array(items) => {
            match s["x-kubernetes-list-type"].as_str() {
                Some("set") => {
                    for i in repeats(items) {
                        field::duplicate(errs, format!("{path}[{i}]"), &go_shown(&items[i]));
                    }
                }
                Some("map") => map_list(s, items, path, errs),
                _ => {}
            }
            if s["items"].is_object() {
                for (i, x) in items.iter().enumerate() {
                    node(&s["items"], x, &format!("{path}[{i}]"), errs);
                }
            }
        }
        _ => {}
    }
}

/// The indexes of the second appearance of each repeated value (a third
/// is not reported again, as kube does not).
fn repeats(items: &[Value]) -> Vec<usize> {
    let mut out = Vec::new();
    for (i, x) in items.iter().enumerate() {
        let before = items[..i].iter().filter(|y| *y == x).count();
        if before == 1 {
            out.push(i);
        }
    }
    out
}

fn map_list(s: &Value, items: &[Value], path: &str, errs: &mut Causes) {
    if let Some((i, x)) = items
        .iter()
        .enumerate()
        .find(|(_, x)| !x.is_object() && !x.is_null())
    {
        let what = "must be an object for an array of list-type map";
        field::invalid_raw(errs, format!("{path}[{i}]"), &go_shown(x), what);
        return;
    }
    let names = strings(&s["x-kubernetes-list-map-keys"]);
    let keys: Vec<Value> = items
        .iter()
        .map(|x| {
            let key: Map<String, Value> = names
                .iter()
                .filter_map(|n| x.get(*n).map(|v| ((*n).to_owned(), v.clone())))
                .collect();
            Value::Object(key)
        })
        .collect();
    for i in repeats(&keys) {
        field::duplicate(errs, format!("{path}[{i}]"), &go_shown(&keys[i]));
    }
}

/// A value as `field.Error` prints it: strings quoted, numbers and
/// booleans bare, anything else as Go's `%#v`.
pub(super) fn go_shown(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        other => go(other),
    }
}

/// Go's `%#v` of a decoded JSON value (`map[string]interface {}{"a":1}`).
fn go(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".into(),
        Value::String(s) => format!("{s:?}"),
        Value::Number(_) | Value::Bool(_) => v.to_string(),
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(go).collect();
            format!("[]interface {{}}{{{}}}", items.join(", "))
        }
        Value::Object(m) => {
            let items: Vec<String> = m.iter().map(|(k, x)| format!("{k:?}:{}", go(x))).collect();
            format!("map[string]interface {{}}{{{}}}", items.join(", "))
        }
    }
}

/// The strings of a schema's list of names (`required`,
/// `x-kubernetes-list-map-keys`); anything else in it is passed over.
pub(super) fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sets_and_map_lists_refuse_repeats() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "pairs": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "proto"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "proto": {"type": "string"}, "port": {"type": "integer"}}}},
            "plain": {"type": "array", "items": {"type": "string"}},
            "groups": {"type": "object", "additionalProperties": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}}}
        }}}});
        let obj = json!({"spec": {
            "tags": ["a", "b", "a", "a"],
            "pairs": [{"k": 1}, {"k": 1}],
            "ports": [{"name": "http", "proto": "TCP", "port": 80}, {"name": "http", "proto": "UDP"}, {"proto": "TCP", "name": "http", "port": 81}],
            "plain": ["x", "x"],
            "groups": {"g": [1, 1]}}});
        let e: Vec<String> = errors(&s, &obj)
            .iter()
            .map(|(f, m)| format!("{f}: {m}"))
            .collect();
        assert_eq!(
            e,
            [
                "spec.groups[g][1]: Duplicate value: 1",
                "spec.pairs[1]: Duplicate value: map[string]interface {}{\"k\":1}",
                "spec.ports[2]: Duplicate value: map[string]interface {}{\"name\":\"http\", \"proto\":\"TCP\"}",
                "spec.tags[2]: Duplicate value: \"a\"",
            ]
        );
    }

    #[test]
    fn a_map_list_holds_objects_only() {
        let s = json!({"properties": {"l": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["k"]}}});
        assert_eq!(
            errors(&s, &json!({"l": [{"k": 1}, "x"]})),
            [(
                "l[1]".to_owned(),
                "Invalid value: \"x\": must be an object for an array of list-type map".to_owned()
            )]
        );
    }
}

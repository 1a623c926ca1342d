//! A custom resource's JSON as the CEL values its rules see, typed by the
//! schema as kube-apiserver types them: `integer` is `int` and `number` is
//! `double` whatever the JSON spelling, declared properties under their
//! escaped names, nulls absent, and a resource root (or embedded resource)
//! exposing only `apiVersion`, `kind` and `metadata.name`/`generateName`.

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map};
use serde_json::Value as Json;

type Cel = cel::Value;

/// Words CEL reserves: a property so named is reached as `__word__`.
const RESERVED: [&str; 18] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
];

/// The name a property has in CEL, or `None` when no rule can reach it
/// (kube allows `[a-zA-Z_.-/][a-zA-Z0-9_.-/]*` and escapes `__`, `.`, `-`,
/// `/`).
pub(crate) fn escape(name: &str) -> Option<String> {
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || "_.-/".contains(c));
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || "_.-/".contains(c)) {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("__") {
            out.push_str("__underscores__");
            rest = after;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

fn map(entries: HashMap<Key, Cel>) -> Cel {
    Cel::Map(Map {
        map: Arc::new(entries),
    })
}

fn string(s: &str) -> Cel {
    Cel::String(Arc::new(s.to_owned()))
}

/// `v` under the schema `s`; `resource` for the root of a custom resource
/// and for `x-kubernetes-embedded-resource` objects.
pub(crate) fn to_cel(s: &Json, v: &Json, resource: bool) -> Cel {
    match v {
        Json::Null => Cel::Null,
        Json::Bool(b) => Cel::Bool(*b),
        Json::String(t) => string(t),
        Json::Number(n) => {
            let f = n.as_f64().unwrap_or_default();
            match (n.as_i64(), n.as_u64()) {
                _ if s["type"] == "number" => Cel::Float(f),
                (Some(i), _) => Cel::Int(i),
                (None, Some(u)) => Cel::UInt(u),
                // `3.0` where the schema says integer is the integer 3.
                _ if s["type"] == "integer" && f.fract() == 0.0 && f.abs() < 9.2e18 => {
                    Cel::Int(f as i64)
                }
                _ => Cel::Float(f),
            }
        }
        Json::Array(items) => {
            let item = &s["items"];
            Cel::List(Arc::new(
                items
                    .iter()
                    .map(|x| to_cel(item, x, is_embedded(item)))
                    .collect(),
            ))
        }
        Json::Object(m) => {
            let props = s["properties"].as_object();
            if let Some(ap) = s["additionalProperties"]
                .as_object()
                .filter(|_| props.is_none())
            {
                let ap = Json::Object(ap.clone());
                let entries = m
                    .iter()
                    .filter(|(_, x)| !x.is_null())
                    .map(|(k, x)| (Key::from(k.clone()), to_cel(&ap, x, is_embedded(&ap))))
                    .collect();
                return map(entries);
            }
            if props.is_none() && !resource {
                // No declared shape (`x-kubernetes-preserve-unknown-fields`
                // or `additionalProperties: true`): every key as written.
                return generic(v);
            }
            let mut entries = HashMap::new();
            for (k, child) in props.into_iter().flatten() {
                if resource && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                let (Some(x), Some(name)) = (m.get(k), escape(k)) else {
                    continue;
                };
                if !x.is_null() {
                    entries.insert(Key::from(name), to_cel(child, x, is_embedded(child)));
                }
            }
            if resource {
                for k in ["apiVersion", "kind"] {
                    if let Some(Json::String(t)) = m.get(k) {
                        entries.insert(Key::from(k.to_owned()), string(t));
                    }
                }
                if let Some(meta) = m.get("metadata").and_then(Json::as_object) {
                    let mut md = HashMap::new();
                    for k in ["name", "generateName"] {
                        if let Some(Json::String(t)) = meta.get(k) {
                            md.insert(Key::from(k.to_owned()), string(t));
                        }
                    }
                    entries.insert(Key::from("metadata".to_owned()), map(md));
                }
            }
            map(entries)
        }
    }
}

pub(crate) fn is_embedded(s: &Json) -> bool {
    s["x-kubernetes-embedded-resource"] == true
}

/// A value with no schema below it: JSON's own types (integers as `int`).
fn generic(v: &Json) -> Cel {
    match v {
        Json::Object(m) => map(m
            .iter()
            .filter(|(_, x)| !x.is_null())
            .map(|(k, x)| (Key::from(k.clone()), generic(x)))
            .collect()),
        other => to_cel(&Json::Null, other, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn get<'a>(v: &'a Cel, k: &str) -> Option<&'a Cel> {
        match v {
            Cel::Map(m) => m.map.get(&Key::from(k.to_owned())),
            _ => None,
        }
    }

    #[test]
    fn names_are_escaped_as_kube_escapes_them() {
        assert_eq!(escape("replicas").as_deref(), Some("replicas"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("x-prop").as_deref(), Some("x__dash__prop"));
        assert_eq!(
            escape("redact__d").as_deref(),
            Some("redact__underscores__d")
        );
        assert_eq!(escape("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(escape("1abc"), None);
        assert_eq!(escape("a b"), None);
    }

    #[test]
    fn numbers_follow_the_schema_type() {
        let s = json!({"type": "object", "properties": {
            "i": {"type": "integer"}, "d": {"type": "number"}, "p": {"x-kubernetes-int-or-string": true},
            "n": {"type": "string", "nullable": true}, "x-y": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "number"}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
        let v = json!({"i": 3, "d": 3, "p": "http", "n": null, "x-y": "z", "undeclared": 1,
            "labels": {"a.b": 1}, "free": {"k": [1, 2.5]},
            "apiVersion": "x/v1", "kind": "K", "metadata": {"name": "w", "labels": {"a": "b"}}});
        let c = to_cel(&s, &v, true);
        assert_eq!(get(&c, "i"), Some(&Cel::Int(3)));
        assert_eq!(get(&c, "d"), Some(&Cel::Float(3.0)));
        assert_eq!(get(&c, "p"), Some(&string("http")));
        assert_eq!(get(&c, "n"), None, "null fields are absent");
        assert_eq!(get(&c, "x__dash__y"), Some(&string("z")));
        assert_eq!(get(&c, "undeclared"), None);
        assert_eq!(
            get(get(&c, "labels").unwrap(), "a.b"),
            Some(&Cel::Float(1.0))
        );
        let free = get(&c, "free").unwrap();
        assert_eq!(
            get(free, "k"),
            Some(&Cel::List(Arc::new(vec![Cel::Int(1), Cel::Float(2.5)])))
        );
        assert_eq!(get(&c, "kind"), Some(&string("K")));
        let meta = get(&c, "metadata").unwrap();
        assert_eq!(get(meta, "name"), Some(&string("w")));
        assert_eq!(get(meta, "labels"), None, "only name and generateName");
    }
}

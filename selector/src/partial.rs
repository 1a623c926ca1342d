//! Parsing only the fields a reader needs out of an object's JSON: the rest
//! is skipped as it is read, never built into a tree (quota usage reads a
//! few fields of every pod it counts; a stored pod is mostly other fields).
//!
//! ```
//! use windlass_selector::partial::{Fields, parse};
//! let pod = br#"{"metadata":{"name":"a","managedFields":[{}]},
//!   "spec":{"containers":[{"name":"app","image":"nginx","resources":{"limits":{"cpu":"1"}}}]},
//!   "status":{"phase":"Running","conditions":[]}}"#;
//! let fields = Fields::of(&["spec.containers.resources", "status.phase"]);
//! let read = parse(pod, &fields).unwrap();
//! assert_eq!(read, serde_json::json!({
//!     "spec": {"containers": [{"resources": {"limits": {"cpu": "1"}}}]},
//!     "status": {"phase": "Running"},
//! }));
//! ```

use std::fmt;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Which fields to keep, as dotted paths (`spec.containers.resources`).
/// A path keeps its last field whole. Arrays are crossed: a path goes on
/// into every element of an array it meets, so `spec.containers.name`
/// keeps each container's name. A value that is not an object where the
/// path goes on is kept as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields {
    /// Keep this value whole (a path ended here).
    whole: bool,
    children: Vec<(String, Fields)>,
}

impl Fields {
    /// The fields named by `paths`.
    pub fn of(paths: &[&str]) -> Self {
        let mut root = Fields::default();
        for path in paths {
            let mut node = &mut root;
            for name in path.split('.') {
                let at = match node.children.iter().position(|(n, _)| n == name) {
                    Some(at) => at,
                    None => {
                        node.children.push((name.to_owned(), Fields::default()));
                        node.children.len() - 1
                    }
                };
                node = &mut node.children[at].1;
            }
            node.whole = true;
        }
        root
    }

    /// Whether nothing is kept (no path was given).
    pub fn is_empty(&self) -> bool {
        !self.whole && self.children.is_empty()
    }
}

/// The fields of the JSON object `json` that `fields` names, as an object
/// holding only them (an empty object, without reading `json`, when
/// `fields` is empty). Fails only on malformed JSON.
pub fn parse(json: &[u8], fields: &Fields) -> serde_json::Result<Value> {
    if fields.is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    let mut de = serde_json::Deserializer::from_slice(json);
    let value = Keep(fields).deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Reads one value, keeping what its [`Fields`] name.
#[derive(Clone, Copy)]
struct Keep<'f>(&'f Fields);

impl<'de> DeserializeSeed<'de> for Keep<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        if self.0.whole {
            Value::deserialize(de)
        } else {
            de.deserialize_any(self)
        }
    }
}

impl<'de> Visitor<'de> for Keep<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(at) = map.next_key_seed(Key(self.0))? {
            match at {
                Some(at) => {
                    let (name, fields) = &self.0.children[at];
                    let v = map.next_value_seed(Keep(fields))?;
                    out.insert(name.clone(), v);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// Reads a key: the position of the field it names, if kept.
struct Key<'f>(&'f Fields);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Option<usize>, D::Error> {
        de.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E>(self, v: &str) -> Result<Option<usize>, E> {
        Ok(self.0.children.iter().position(|(n, _)| n == v))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(v: &Value, paths: &[&str]) -> Value {
        parse(v.to_string().as_bytes(), &Fields::of(paths)).unwrap()
    }

    #[test]
    fn keeps_the_named_fields_through_arrays_and_nothing_else() {
        let pod = json!({
            "metadata": {"name": "a", "annotations": {"x": "1"}, "managedFields": [{"manager": "m"}]},
            "spec": {
                "containers": [
                    {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "1"}}},
                    {"name": "side", "env": [{"name": "A", "value": "b"}]},
                ],
                "activeDeadlineSeconds": 30,
                "nodeName": "n1",
            },
            "status": {"phase": "Running", "podIP": "10.0.0.1"},
        });
        let got = read(
            &pod,
            &[
                "spec.containers.resources",
                "spec.containers.name",
                "spec.activeDeadlineSeconds",
                "status.phase",
                "metadata.annotations",
            ],
        );
        assert_eq!(
            got,
            json!({
                "metadata": {"annotations": {"x": "1"}},
                "spec": {
                    "containers": [
                        {"name": "app", "resources": {"requests": {"cpu": "1"}}},
                        {"name": "side"},
                    ],
                    "activeDeadlineSeconds": 30,
                },
                "status": {"phase": "Running"},
            })
        );
    }

    #[test]
    fn a_path_and_a_longer_one_keep_the_whole_of_the_shorter() {
        let v = json!({"spec": {"a": 1, "b": {"c": 2, "d": 3}}});
        assert_eq!(read(&v, &["spec.b.c", "spec"]), v);
        assert_eq!(read(&v, &["spec", "spec.b.c"]), v);
    }

    #[test]
    fn values_of_every_type_and_escaped_keys_read_as_a_full_parse_does() {
        let v = json!({
            "k\"ey": {"n": -3, "u": 18446744073709551615u64, "f": 1.5, "t": true, "z": null, "s": "é\n"},
            "other": [1, 2, {"deep": [[]]}],
        });
        assert_eq!(read(&v, &["k\"ey"]), json!({"k\"ey": v["k\"ey"]}));
        // Scalars where the path goes on are kept; missing fields are absent.
        let odd = json!({"spec": 7, "status": [1, {"phase": "x", "y": 1}]});
        assert_eq!(
            read(&odd, &["spec.containers", "status.phase", "metadata.name"]),
            json!({"spec": 7, "status": [1, {"phase": "x"}]})
        );
    }

    #[test]
    fn nothing_named_reads_nothing_and_malformed_json_is_an_error() {
        assert_eq!(parse(b"not json", &Fields::of(&[])).unwrap(), json!({}));
        let fields = Fields::of(&["spec"]);
        assert!(parse(b"{\"spec\": ", &fields).is_err());
        assert!(parse(b"{\"a\": 1} trailing", &fields).is_err());
        assert!(parse(b"{\"a\": [1,}", &fields).is_err());
    }
}

//! JSON bodies decoded as kube's strict decoder reads them: the value (a
//! repeated field's last value wins, as in Go) and the paths of the fields
//! repeated within one object (`spec.template.spec.containers[0].image`),
//! each with its place in the document so that they can be reported in
//! document order beside unknown fields.

use std::collections::{HashMap, HashSet};
use std::fmt::{self, Write as _};

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// A decoded body and its repeated fields: `(place, path)`, the place
/// counting the fields of the document in order.
pub(crate) struct Decoded {
    pub(crate) value: Value,
    pub(crate) duplicates: Vec<(usize, String)>,
}

/// Decodes `bytes` as one JSON value, noting repeated fields.
pub(crate) fn decode(bytes: &[u8]) -> serde_json::Result<Decoded> {
    let mut walk = Walk::default();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = Node(&mut walk).deserialize(&mut de)?;
    de.end()?;
    Ok(Decoded {
        value,
        duplicates: walk.duplicates,
    })
}

/// The place in `bytes` where each of `paths` first appears (paths that do
/// not appear, or a body that does not decode, get none).
pub(crate) fn places(bytes: &[u8], paths: &[String]) -> HashMap<String, usize> {
    let wanted: HashSet<String> = paths.iter().cloned().collect();
    let mut walk = Walk {
        wanted: Some(wanted),
        ..Walk::default()
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let _ = Node(&mut walk).deserialize(&mut de);
    walk.found
}

#[derive(Default)]
struct Walk {
    /// The path of the field being read.
    path: String,
    /// How many fields have been read so far.
    place: usize,
    duplicates: Vec<(usize, String)>,
    wanted: Option<HashSet<String>>,
    found: HashMap<String, usize>,
}

struct Node<'w>(&'w mut Walk);

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
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
        let walk = self.0;
        let mut items = Vec::new();
        loop {
            let base = walk.path.len();
            let _ = write!(walk.path, "[{}]", items.len());
            let next = seq.next_element_seed(Node(&mut *walk))?;
            walk.path.truncate(base);
            match next {
                Some(v) => items.push(v),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let walk = self.0;
        let mut m = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let base = walk.path.len();
            if base > 0 {
                walk.path.push('.');
            }
            walk.path.push_str(&key);
            walk.place += 1;
            if let Some(w) = &walk.wanted
                && w.contains(&walk.path)
            {
                walk.found.entry(walk.path.clone()).or_insert(walk.place);
            }
            // The map holds every key read so far: no set of copies beside it.
            if m.contains_key(&key) {
                walk.duplicates.push((walk.place, walk.path.clone()));
            }
            let v = map.next_value_seed(Node(&mut *walk))?;
            walk.path.truncate(base);
            m.insert(key, v);
        }
        Ok(Value::Object(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_fields_are_found_where_they_are() {
        let body = br#"{"spec": {"unknown": 1, "paused": true, "paused": false,
            "template": {"spec": {"containers": [{"name": "a"}, {"image": "x", "image": "y"}]}}},
            "metadata": {"name": "a"}}"#;
        let d = decode(body).unwrap();
        assert_eq!(d.value["spec"]["paused"], false, "the last one wins");
        assert_eq!(
            d.value["spec"]["template"]["spec"]["containers"][1]["image"],
            "y"
        );
        let paths: Vec<&str> = d.duplicates.iter().map(|(_, p)| p.as_str()).collect();
        assert_eq!(
            paths,
            ["spec.paused", "spec.template.spec.containers[1].image"]
        );
        let at = places(body, &["spec.unknown".into(), "metadata.name".into()]);
        assert!(at["spec.unknown"] < d.duplicates[0].0);
        assert!(at["metadata.name"] > d.duplicates[1].0);
        assert!(decode(b"{\"a\": 1} x").is_err());
        assert!(decode(b"[1, {\"a\": [2]}]").unwrap().duplicates.is_empty());
    }
}

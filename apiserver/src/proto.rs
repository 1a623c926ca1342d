//! Decoding of the Kubernetes protobuf request bodies that kubectl's typed
//! clients send (`kubectl create configmap|secret|namespace|serviceaccount`),
//! for those few kinds whose schemas are small. Everything else in protobuf
//! is refused with 415.
//!
//! The envelope is the 4-byte magic `k8s\0` and a `runtime.Unknown`
//! (`typeMeta` = 1 {apiVersion = 1, kind = 2}, `raw` = 2); `raw` is the
//! object's message as in `k8s.io/api/core/v1/generated.proto`.

use base64::Engine;
use serde_json::{Map, Value, json};

const MAGIC: &[u8] = b"k8s\0";

/// One decoded field: number and payload.
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

fn varint(b: &[u8], i: &mut usize) -> Result<u64, String> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*i).ok_or("truncated varint")?;
        *i += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("varint too long".into())
}

fn fields(b: &[u8]) -> Result<Vec<(u64, Field<'_>)>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let key = varint(b, &mut i)?;
        let (num, wire) = (key >> 3, key & 7);
        let f = match wire {
            0 => Field::Varint(varint(b, &mut i)?),
            1 => {
                i += 8;
                Field::Fixed
            }
            2 => {
                let n = varint(b, &mut i)? as usize;
                let end = i
                    .checked_add(n)
                    .filter(|&e| e <= b.len())
                    .ok_or("truncated field")?;
                let s = &b[i..end];
                i = end;
                Field::Bytes(s)
            }
            5 => {
                i += 4;
                Field::Fixed
            }
            w => return Err(format!("unsupported wire type {w}")),
        };
        if i > b.len() {
            return Err("truncated field".into());
        }
        out.push((num, f));
    }
    Ok(out)
}

fn string(b: &[u8]) -> Result<String, String> {
    String::from_utf8(b.to_vec()).map_err(|_| "invalid UTF-8 in a string field".into())
}

/// A `map<string, string>` (or bytes, base64-encoded like JSON) entry into `m`.
fn map_entry(b: &[u8], m: &mut Map<String, Value>, bytes_value: bool) -> Result<(), String> {
    let (mut k, mut v) = (String::new(), Value::String(String::new()));
    for (n, f) in fields(b)? {
        if let Field::Bytes(s) = f {
            match n {
                1 => k = string(s)?,
                2 if bytes_value => v = json!(base64::engine::general_purpose::STANDARD.encode(s)),
                2 => v = json!(string(s)?),
                _ => {}
            }
        }
    }
    m.insert(k, v);
    Ok(())
}

fn object_meta(b: &[u8]) -> Result<Value, String> {
    let mut m = Map::new();
    let (mut labels, mut annotations, mut finalizers) = (Map::new(), Map::new(), Vec::new());
    for (n, f) in fields(b)? {
        match (n, f) {
            (1, Field::Bytes(s)) => _ = m.insert("name".into(), json!(string(s)?)),
            (2, Field::Bytes(s)) => _ = m.insert("generateName".into(), json!(string(s)?)),
            (3, Field::Bytes(s)) => _ = m.insert("namespace".into(), json!(string(s)?)),
            (6, Field::Bytes(s)) => _ = m.insert("resourceVersion".into(), json!(string(s)?)),
            (11, Field::Bytes(s)) => map_entry(s, &mut labels, false)?,
            (12, Field::Bytes(s)) => map_entry(s, &mut annotations, false)?,
            (14, Field::Bytes(s)) => finalizers.push(json!(string(s)?)),
            _ => {}
        }
    }
    if !labels.is_empty() {
        m.insert("labels".into(), Value::Object(labels));
    }
    if !annotations.is_empty() {
        m.insert("annotations".into(), Value::Object(annotations));
    }
    if !finalizers.is_empty() {
        m.insert("finalizers".into(), Value::Array(finalizers));
    }
    Ok(Value::Object(m))
}

fn body(kind: &str, raw: &[u8]) -> Result<Map<String, Value>, String> {
    let mut obj = Map::new();
    let (mut data, mut binary, mut string_data) = (Map::new(), Map::new(), Map::new());
    for (n, f) in fields(raw)? {
        match (kind, n, f) {
            (_, 1, Field::Bytes(s)) => _ = obj.insert("metadata".into(), object_meta(s)?),
            ("ConfigMap", 2, Field::Bytes(s)) => map_entry(s, &mut data, false)?,
            ("ConfigMap", 3, Field::Bytes(s)) => map_entry(s, &mut binary, true)?,
            ("ConfigMap", 4, Field::Varint(v)) | ("Secret", 5, Field::Varint(v)) => {
                _ = obj.insert("immutable".into(), json!(v != 0))
            }
            ("Secret", 2, Field::Bytes(s)) => map_entry(s, &mut data, true)?,
            ("Secret", 3, Field::Bytes(s)) => _ = obj.insert("type".into(), json!(string(s)?)),
            ("Secret", 4, Field::Bytes(s)) => map_entry(s, &mut string_data, false)?,
            ("ServiceAccount", 4, Field::Varint(v)) => {
                _ = obj.insert("automountServiceAccountToken".into(), json!(v != 0))
            }
            ("Namespace", 2, Field::Bytes(s)) => {
                let fins: Vec<Value> = fields(s)?
                    .into_iter()
                    .filter_map(|(n, f)| match (n, f) {
                        (1, Field::Bytes(x)) => string(x).ok().map(Value::String),
                        _ => None,
                    })
                    .collect();
                if !fins.is_empty() {
                    obj.insert("spec".into(), json!({"finalizers": fins}));
                }
            }
            _ => {}
        }
    }
    for (k, m) in [
        ("data", data),
        ("binaryData", binary),
        ("stringData", string_data),
    ] {
        if !m.is_empty() {
            obj.insert(k.into(), Value::Object(m));
        }
    }
    Ok(obj)
}

/// Decodes a protobuf-encoded object into its JSON form.
pub(crate) fn decode(b: &[u8]) -> Result<Value, String> {
    let rest = b
        .strip_prefix(MAGIC)
        .ok_or("missing the k8s protobuf magic prefix")?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), None);
    for (n, f) in fields(rest)? {
        match (n, f) {
            (1, Field::Bytes(tm)) => {
                for (n, f) in fields(tm)? {
                    match (n, f) {
                        (1, Field::Bytes(s)) => api_version = string(s)?,
                        (2, Field::Bytes(s)) => kind = string(s)?,
                        _ => {}
                    }
                }
            }
            (2, Field::Bytes(s)) => raw = Some(s),
            _ => {}
        }
    }
    if api_version != "v1"
        || !matches!(
            kind.as_str(),
            "ConfigMap" | "Secret" | "Namespace" | "ServiceAccount"
        )
    {
        return Err(format!(
            "protobuf bodies are only supported for v1 ConfigMap, Secret, Namespace and ServiceAccount, not {api_version} {kind}; send JSON or YAML"
        ));
    }
    let mut obj = body(&kind, raw.unwrap_or_default())?;
    obj.insert("apiVersion".into(), json!(api_version));
    obj.insert("kind".into(), json!(kind));
    Ok(Value::Object(obj))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(n: u64, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![(n << 3 | 2) as u8, payload.len() as u8];
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn decodes_a_configmap() {
        let meta = [
            field(1, b"cm"),
            field(11, &[field(1, b"app"), field(2, b"web")].concat()),
        ]
        .concat();
        let raw = [
            field(1, &meta),
            field(2, &[field(1, b"k"), field(2, b"v")].concat()),
            field(3, &[field(1, b"b"), field(2, b"\x00\x01")].concat()),
        ]
        .concat();
        let tm = [field(1, b"v1"), field(2, b"ConfigMap")].concat();
        let mut msg = MAGIC.to_vec();
        msg.extend([field(1, &tm), field(2, &raw)].concat());
        let v = decode(&msg).unwrap();
        assert_eq!(v["kind"], "ConfigMap");
        assert_eq!(v["metadata"]["name"], "cm");
        assert_eq!(v["metadata"]["labels"]["app"], "web");
        assert_eq!(v["data"]["k"], "v");
        assert_eq!(v["binaryData"]["b"], "AAE=");
    }

    #[test]
    fn refuses_other_kinds_and_garbage() {
        let tm = [field(1, b"apps/v1"), field(2, b"Deployment")].concat();
        let mut msg = MAGIC.to_vec();
        msg.extend(field(1, &tm));
        assert!(decode(&msg).unwrap_err().contains("only supported"));
        assert!(decode(b"nope").is_err());
        assert!(decode(b"k8s\0\x0a\xff").is_err());
    }
}

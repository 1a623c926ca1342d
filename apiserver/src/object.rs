//! Small accessors and constructors for object metadata.

use serde_json::{Map, Value};

pub(crate) fn name(v: &Value) -> &str {
    v["metadata"]["name"].as_str().unwrap_or_default()
}

pub(crate) fn is_deleting(v: &Value) -> bool {
    v["metadata"]["deletionTimestamp"].is_string()
}

pub(crate) fn finalizers(v: &Value) -> Vec<String> {
    v["metadata"]["finalizers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn set_finalizers(v: &mut Value, f: Vec<String>) {
    let meta = meta_mut(v);
    if f.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert("finalizers".into(), Value::from(f));
    }
}

/// `metadata` as a map, created if missing.
pub(crate) fn meta_mut(v: &mut Value) -> &mut Map<String, Value> {
    if !v["metadata"].is_object() {
        v["metadata"] = Value::Object(Map::new());
    }
    v["metadata"]
        .as_object_mut()
        .expect("metadata is an object")
}

/// A random RFC 4122 version 4 UUID.
pub(crate) fn new_uid() -> String {
    let n = fastrand::u128(..);
    let n = (n & !(0xf << 76) | (0x4 << 76)) & !(0x3 << 62) | (0x2 << 62);
    // Written directly: one per create, and two `format!`s cost three times as much.
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(36);
    for i in 0..32 {
        if matches!(i, 8 | 12 | 16 | 20) {
            out.push('-');
        }
        out.push(char::from(HEX[(n >> (124 - 4 * i)) as usize & 0xf]));
    }
    out
}

/// The 5-character suffix `generateName` appends.
pub(crate) fn name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|_| ALPHABET[fastrand::usize(..ALPHABET.len())] as char)
        .collect()
}

/// The members of `v` other than `skip`, in key order, borrowed.
fn members_but<'a>(
    v: &'a Value,
    skip: &'a [&'a str],
) -> impl Iterator<Item = (&'a String, &'a Value)> + 'a {
    v.as_object()
        .into_iter()
        .flat_map(|m| m.iter())
        .filter(move |(k, _)| !skip.contains(&k.as_str()))
}

/// Whether `a` and `b` differ in anything but `metadata` and `status`:
/// what bumps `generation`. Compared in place, as it runs on every update.
pub(crate) fn spec_differs(a: &Value, b: &Value) -> bool {
    const NOT_SPEC: [&str; 4] = ["metadata", "status", "apiVersion", "kind"];
    !members_but(a, &NOT_SPEC).eq(members_but(b, &NOT_SPEC))
}

/// Whether `a` and `b` are the same objects outside `status` (a status
/// write that changed nothing else).
pub(crate) fn same_outside_status(a: &Value, b: &Value) -> bool {
    a.is_object() && b.is_object() && members_but(a, &["status"]).eq(members_but(b, &["status"]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_are_v4() {
        let u = new_uid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"), "{u}");
        assert_eq!(
            u.char_indices()
                .filter(|&(_, c)| c == '-')
                .map(|(i, _)| i)
                .collect::<Vec<_>>(),
            [8, 13, 18, 23]
        );
        assert_ne!(u, new_uid());
        assert_eq!(name_suffix().len(), 5);
    }
}

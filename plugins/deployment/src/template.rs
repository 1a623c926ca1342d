//! Pod templates: which ReplicaSet runs the Deployment's template, and the
//! `pod-template-hash` that names a new one.
//!
//! Upstream compares templates with a semantic deep equality that ignores
//! the hash label and treats null, empty and absent alike, and names the
//! ReplicaSet after an FNV-32a hash of the template (plus
//! `status.collisionCount` once a hash has collided). Here the hash is
//! FNV-32a over a canonical JSON form of the template (keys sorted, null and
//! empty values and the hash label left out), so it is the same for the
//! same template on every reconcile and every host, whatever order the
//! fields arrive in; it is encoded the way upstream encodes its hashes.

use serde_json::Value;

use crate::model::TEMPLATE_HASH;

/// Whether two pod templates are the same but for the hash label
/// (`EqualIgnoreHash`).
pub(crate) fn equal_ignore_hash(a: &Value, b: &Value) -> bool {
    same(a, b, Place::Root)
}

/// The `pod-template-hash` of a template for `collision_count`
/// (`ComputeHash`).
pub(crate) fn hash(template: &Value, collision_count: Option<i64>) -> String {
    let mut text = String::new();
    canonical(template, Place::Root, &mut text);
    let mut h = Fnv32a::new();
    h.write(text.as_bytes());
    if let Some(c) = collision_count {
        // As upstream: the count as 4 little-endian bytes.
        h.write(&(c as u32).to_le_bytes());
    }
    safe_encode(&h.0.to_string())
}

/// Where in a template a value is, as far as finding the hash label goes
/// (`metadata.labels.pod-template-hash`, which both functions skip).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Root,
    Metadata,
    Labels,
    Elsewhere,
}

impl Place {
    /// The place of the value under `key`.
    fn child(self, key: &str) -> Place {
        match (self, key) {
            (Place::Root, "metadata") => Place::Metadata,
            (Place::Metadata, "labels") => Place::Labels,
            _ => Place::Elsewhere,
        }
    }

    /// Whether the entry `key` here is left out.
    fn skips(self, key: &str) -> bool {
        self == Place::Labels && key == TEMPLATE_HASH
    }
}

/// Whether `v` (found at `at`) says nothing, and so equals absent: null,
/// `[]`, or an object of nothing but such values (and the hash label).
fn is_void(v: &Value, at: Place) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m
            .iter()
            .all(|(k, v)| at.skips(k) || is_void(v, at.child(k))),
        _ => false,
    }
}

/// Semantic equality: empty values equal absent ones, numbers compare by
/// value, the hash label is skipped.
fn same(a: &Value, b: &Value, at: Place) -> bool {
    const NULL: Value = Value::Null;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.iter()
                .filter(|(k, _)| !at.skips(k))
                .all(|(k, v)| same(v, y.get(k).unwrap_or(&NULL), at.child(k)))
                && y.iter()
                    .filter(|(k, _)| !at.skips(k))
                    .all(|(k, v)| x.contains_key(k) || is_void(v, at.child(k)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b, Place::Elsewhere))
        }
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        _ => (is_void(a, at) && is_void(b, at)) || a == b,
    }
}

/// Canonical JSON: object keys sorted, empty values and the hash label
/// left out.
fn canonical(v: &Value, at: Place, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m
                .iter()
                .filter(|(k, v)| !at.skips(k) && !is_void(v, at.child(k)))
                .map(|(k, _)| k)
                .collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&m[k], at.child(k), out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, Place::Elsewhere, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// 32-bit FNV-1a.
struct Fnv32a(u32);

impl Fnv32a {
    fn new() -> Self {
        Self(0x811c_9dc5)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u32::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0193);
        }
    }
}

/// Upstream's `rand.SafeEncodeString`: each character mapped into an
/// alphabet without vowels or look-alikes, so a name never spells a word.
fn safe_encode(s: &str) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    s.bytes()
        .map(|b| ALPHANUMS[usize::from(b) % ALPHANUMS.len()] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn template() -> Value {
        json!({
            "metadata": {"labels": {"app": "web"}, "creationTimestamp": null},
            "spec": {"containers": [{"name": "c", "image": "nginx:1", "ports": [], "resources": {}}]}
        })
    }

    #[test]
    fn equality_ignores_the_hash_label_and_empty_values() {
        let a = template();
        let mut b = json!({
            "spec": {"containers": [{"image": "nginx:1", "name": "c"}]},
            "metadata": {"labels": {"app": "web", "pod-template-hash": "xyz"}}
        });
        assert!(equal_ignore_hash(&a, &b));
        b["spec"]["containers"][0]["image"] = json!("nginx:2");
        assert!(!equal_ignore_hash(&a, &b));
        let mut c = template();
        c["metadata"]["labels"]["tier"] = json!("front");
        assert!(!equal_ignore_hash(&a, &c));
        // The label only counts where labels are.
        let mut e = template();
        e["spec"]["pod-template-hash"] = json!("x");
        assert!(!equal_ignore_hash(&a, &e));
        // A template whose only label is the hash equals one without labels.
        let bare = json!({"spec": {"containers": [{"name": "c", "image": "nginx:1"}]}});
        let hashed = json!({"metadata": {"labels": {"pod-template-hash": "x"}},
                            "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}});
        assert!(equal_ignore_hash(&bare, &hashed));
        assert_eq!(hash(&bare, None), hash(&hashed, None));
        let mut d = template();
        d["spec"]["terminationGracePeriodSeconds"] = json!(30);
        assert!(!equal_ignore_hash(&a, &d));
    }

    #[test]
    fn hash_is_stable_and_follows_the_template() {
        let a = template();
        // The same template in another order and with empty fields dropped.
        let b = json!({
            "spec": {"containers": [{"image": "nginx:1", "name": "c"}]},
            "metadata": {"labels": {"pod-template-hash": "old", "app": "web"}}
        });
        let h = hash(&a, None);
        assert_eq!(h, hash(&b, None));
        assert_eq!(h, hash(&a, None));
        // Upstream's encoding of a decimal u32: up to ten characters of 4-9, b, c, d, f.
        assert!((1..=10).contains(&h.len()));
        assert!(h.chars().all(|c| "456789bcdf".contains(c)), "{h}");
        let mut other = template();
        other["spec"]["containers"][0]["image"] = json!("nginx:2");
        assert_ne!(hash(&other, None), h);
        // A collision count makes a different name, and each count another.
        assert_ne!(hash(&a, Some(0)), h);
        assert_ne!(hash(&a, Some(1)), hash(&a, Some(0)));
    }

    #[test]
    fn fnv_matches_the_reference_values() {
        let mut h = Fnv32a::new();
        h.write(b"");
        assert_eq!(h.0, 0x811c_9dc5);
        let mut h = Fnv32a::new();
        h.write(b"a");
        assert_eq!(h.0, 0xe40c_292c);
        let mut h = Fnv32a::new();
        h.write(b"foobar");
        assert_eq!(h.0, 0xbf9c_f968);
    }
}

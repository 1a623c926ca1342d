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
//!
//! Templates stay the JSON text they came in: a reconcile usually only asks
//! whether a ReplicaSet's template is the Deployment's, and the text of the
//! two (the API server writes both the same way) answers that without
//! building either as a tree. Only when the texts differ, or a hash is
//! needed, is the template parsed, once.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::BTreeMap;

use serde_json::Value;
use serde_json::value::RawValue;
use windlass_sdk::revision::{Fnv32a, safe_encode};

use crate::model::TEMPLATE_HASH;

/// A pod template: the JSON text of its two parts, parsed on first need.
#[derive(Debug, Clone, Default)]
pub(crate) struct Template {
    metadata: Option<String>,
    spec: Option<String>,
    value: OnceCell<Value>,
}

/// A template's parts, borrowed from the object's text.
#[derive(serde::Deserialize, Default)]
pub(crate) struct TemplateView<'a> {
    #[serde(borrow, default)]
    metadata: Option<&'a RawValue>,
    #[serde(borrow, default)]
    spec: Option<&'a RawValue>,
}

impl Template {
    /// A template read from an object (absent reads as `{}`).
    pub fn read(view: Option<TemplateView<'_>>) -> Self {
        let view = view.unwrap_or_default();
        Self {
            metadata: view.metadata.map(|m| m.get().to_owned()),
            spec: view.spec.map(|s| s.get().to_owned()),
            value: OnceCell::new(),
        }
    }

    /// A template built here.
    pub fn from_value(value: Value) -> Self {
        let part = |key: &str| {
            value
                .get(key)
                .filter(|v| !v.is_null())
                .map(Value::to_string)
        };
        Self {
            metadata: part("metadata"),
            spec: part("spec"),
            value: OnceCell::from(value),
        }
    }

    /// The template as a JSON tree (its parts came from valid JSON; text
    /// that still does not parse reads as absent).
    pub fn value(&self) -> &Value {
        self.value.get_or_init(|| {
            let mut t = serde_json::Map::new();
            for (key, part) in [("metadata", &self.metadata), ("spec", &self.spec)] {
                if let Some(v) = part.as_deref().and_then(|p| serde_json::from_str(p).ok()) {
                    t.insert(key.into(), v);
                }
            }
            Value::Object(t)
        })
    }
}

/// Whether two pod templates are the same but for the hash label
/// (`EqualIgnoreHash`).
pub(crate) fn equal_ignore_hash(a: &Template, b: &Template) -> bool {
    same_text(a, b) || same(a.value(), b.value(), Place::Root)
}

/// The `pod-template-hash` of a template for `collision_count`
/// (`ComputeHash`).
pub(crate) fn hash(template: &Template, collision_count: Option<i64>) -> String {
    let mut text = String::new();
    canonical(template.value(), Place::Root, &mut text);
    let mut h = Fnv32a::new();
    h.write(text.as_bytes());
    if let Some(c) = collision_count {
        // As upstream: the count as 4 little-endian bytes.
        h.write(&(c as u32).to_le_bytes());
    }
    safe_encode(&h.finish().to_string())
}

/// The quick, text-level check: the specs written the same, every other
/// metadata field too, and the labels the same but for the hash. Only a
/// "yes" is final; templates written differently are compared as trees.
fn same_text(a: &Template, b: &Template) -> bool {
    if a.spec != b.spec {
        return false;
    }
    let (ma, mb) = match (&a.metadata, &b.metadata) {
        (None, None) => return true,
        (Some(x), Some(y)) => match (parts(x), parts(y)) {
            (Some(x), Some(y)) => (x, y),
            _ => return false,
        },
        _ => return false,
    };
    if !same_parts(&ma, &mb, "labels") {
        return false;
    }
    match (labels(&ma), labels(&mb)) {
        (Some(x), Some(y)) => x == y,
        (None, None) => true,
        _ => false,
    }
}

type Parts<'a> = BTreeMap<Cow<'a, str>, &'a RawValue>;

/// The fields of a JSON object, each as its text.
fn parts(text: &str) -> Option<Parts<'_>> {
    serde_json::from_str(text).ok()
}

/// Whether both have the same fields, written the same but for `except`.
fn same_parts(a: &Parts<'_>, b: &Parts<'_>, except: &str) -> bool {
    a.len() == b.len()
        && a.iter()
            .all(|(k, v)| k == except || b.get(k).is_some_and(|w| v.get() == w.get()))
}

/// The labels of a metadata object, without the hash label.
fn labels<'a>(meta: &Parts<'a>) -> Option<BTreeMap<Cow<'a, str>, Cow<'a, str>>> {
    let raw: &'a RawValue = meta.get("labels")?;
    let mut labels: BTreeMap<Cow<'a, str>, Cow<'a, str>> = serde_json::from_str(raw.get()).ok()?;
    labels.remove(TEMPLATE_HASH);
    Some(labels)
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// As read from an object: text only.
    fn read(v: &Value) -> Template {
        let text = v.to_string();
        let view: TemplateView<'_> = serde_json::from_str(&text).unwrap();
        Template::read(Some(view))
    }

    /// Whether the templates are equal, checking that the text check never
    /// says yes where the tree comparison says no.
    fn eq(a: &Value, b: &Value) -> bool {
        let (x, y) = (read(a), read(b));
        let tree = same(x.value(), y.value(), Place::Root);
        assert!(!same_text(&x, &y) || tree, "{a} {b}");
        assert_eq!(equal_ignore_hash(&x, &y), tree);
        tree
    }

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
        assert!(eq(&a, &b));
        b["spec"]["containers"][0]["image"] = json!("nginx:2");
        assert!(!eq(&a, &b));
        let mut c = template();
        c["metadata"]["labels"]["tier"] = json!("front");
        assert!(!eq(&a, &c));
        // The label only counts where labels are.
        let mut e = template();
        e["spec"]["pod-template-hash"] = json!("x");
        assert!(!eq(&a, &e));
        let mut f = template();
        f["metadata"]["annotations"] = json!({"pod-template-hash": "x"});
        assert!(!eq(&a, &f));
        // A template whose only label is the hash equals one without labels.
        let bare = json!({"spec": {"containers": [{"name": "c", "image": "nginx:1"}]}});
        let hashed = json!({"metadata": {"labels": {"pod-template-hash": "x"}},
                            "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}});
        assert!(eq(&bare, &hashed));
        assert_eq!(hash(&read(&bare), None), hash(&read(&hashed), None));
        let mut d = template();
        d["spec"]["terminationGracePeriodSeconds"] = json!(30);
        assert!(!eq(&a, &d));
    }

    #[test]
    fn the_text_check_answers_for_templates_written_alike() {
        let text = |t: &str| {
            let view: TemplateView<'_> = serde_json::from_str(t).unwrap();
            Template::read(Some(view))
        };
        let deployment = text(
            r#"{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"image":"nginx:1","name":"c"}]}}"#,
        );
        let replica_set = r#"{"metadata":{"labels":{"app":"web","pod-template-hash":"7c5d"}},"spec":{"containers":[{"image":"nginx:1","name":"c"}]}}"#;
        assert!(same_text(&deployment, &text(replica_set)));
        assert!(!same_text(
            &deployment,
            &text(&replica_set.replace("nginx:1", "nginx:2"))
        ));
        assert!(!same_text(
            &deployment,
            &text(&replica_set.replace(r#""app":"web","#, ""))
        ));
        // Written differently: the text check declines, the trees agree.
        let reordered = text(
            r#"{"spec":{"containers":[{"name":"c","image":"nginx:1"}]},"metadata":{"labels":{"app":"web"}}}"#,
        );
        assert!(!same_text(&deployment, &reordered));
        assert!(equal_ignore_hash(&deployment, &reordered));
    }

    #[test]
    fn hash_is_stable_and_follows_the_template() {
        let a = read(&template());
        // The same template in another order and with empty fields dropped.
        let b = read(&json!({
            "spec": {"containers": [{"image": "nginx:1", "name": "c"}]},
            "metadata": {"labels": {"pod-template-hash": "old", "app": "web"}}
        }));
        let h = hash(&a, None);
        assert_eq!(h, hash(&b, None));
        assert_eq!(h, hash(&Template::from_value(template()), None));
        // Upstream's encoding of a decimal u32: up to ten characters of 4-9, b, c, d, f.
        assert!((1..=10).contains(&h.len()));
        assert!(h.chars().all(|c| "456789bcdf".contains(c)), "{h}");
        let mut other = template();
        other["spec"]["containers"][0]["image"] = json!("nginx:2");
        assert_ne!(hash(&read(&other), None), h);
        // A collision count makes a different name, and each count another.
        assert_ne!(hash(&a, Some(0)), h);
        assert_ne!(hash(&a, Some(1)), hash(&a, Some(0)));
    }
}

//! How a custom resource's lists are keyed and merged by server-side apply
//! and managed fields: as its CRD schema says (`x-kubernetes-list-type`), the
//! way kube's structured merge treats custom resources, where the built-in
//! kinds' strategic merge keys (`patch::merge_key`) do not apply. A `map`
//! list's items are `k:{"key":value,...}` (every `x-kubernetes-list-map-keys`
//! key, by name), a `set`'s are `v:value`, and any other list is atomic:
//! owned and replaced whole, as is an object marked
//! `x-kubernetes-map-type: atomic`.
//!
//! The functions that key and merge lists name a list by its field only, so
//! the lists of a schema are filed by field name; a name that two lists of
//! one schema share with different types is taken as atomic. The table is
//! in effect for one write, on the thread that runs it ([`with`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

/// How a list of a custom resource merges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListType {
    /// Items are objects merged by these keys (sorted by name).
    Map(Vec<String>),
    /// Items are distinct scalars, merged as a union.
    Set,
    /// The list is one value.
    Atomic,
}

/// The lists of a CRD schema, by field name, and its objects marked
/// `x-kubernetes-map-type: atomic` (owned and replaced whole).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CustomLists(HashMap<String, ListType>, HashMap<String, bool>);

impl CustomLists {
    /// The lists of an `openAPIV3Schema`.
    pub(crate) fn of_schema(schema: &Value) -> Self {
        let mut lists = Self::default();
        let mut todo = vec![schema];
        while let Some(s) = todo.pop() {
            for (name, p) in s["properties"].as_object().into_iter().flatten() {
                if p["type"] == "array" || p["items"].is_object() {
                    lists.file(name, list_type(p));
                } else if p["type"] == "object" {
                    // One name both atomic and granular: granular.
                    let atomic = p["x-kubernetes-map-type"] == "atomic";
                    let known = lists.1.entry(name.clone()).or_insert(atomic);
                    *known &= atomic;
                }
                todo.push(p);
            }
            for k in ["items", "additionalProperties"] {
                if s[k].is_object() {
                    todo.push(&s[k]);
                }
            }
        }
        lists
    }

    fn file(&mut self, name: &str, t: ListType) {
        match self.0.get(name) {
            Some(known) if *known != t => {
                self.0.insert(name.to_owned(), ListType::Atomic);
            }
            Some(_) => {}
            None => {
                self.0.insert(name.to_owned(), t);
            }
        }
    }

    /// Whether the object `field` is `x-kubernetes-map-type: atomic`.
    pub(crate) fn atomic_map(&self, field: &str) -> bool {
        self.1.get(field).copied().unwrap_or(false)
    }

    /// How the list `field` merges; a list the schema does not name is atomic.
    pub(crate) fn list_type(&self, field: &str) -> &ListType {
        self.0.get(field).unwrap_or(&ListType::Atomic)
    }

    /// The `fieldsV1` segment of `item` of list `field`; `None` when the
    /// list is atomic or the item is not one of its kind (a map item
    /// without one of its keys).
    pub(crate) fn segment(&self, field: &str, item: &Value) -> Option<String> {
        match self.list_type(field) {
            ListType::Map(keys) => {
                let mut s = String::from("k:{");
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    s.push_str(&Value::String(k.clone()).to_string());
                    s.push(':');
                    s.push_str(&item.as_object()?.get(k)?.to_string());
                }
                s.push('}');
                Some(s)
            }
            ListType::Set if !item.is_object() && !item.is_array() => Some(format!("v:{item}")),
            ListType::Set | ListType::Atomic => None,
        }
    }
}

fn list_type(p: &Value) -> ListType {
    match p["x-kubernetes-list-type"].as_str() {
        Some("map") => {
            let mut keys: Vec<String> = p["x-kubernetes-list-map-keys"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|k| k.as_str().map(str::to_owned))
                .collect();
            if keys.is_empty() {
                return ListType::Atomic;
            }
            keys.sort();
            ListType::Map(keys)
        }
        Some("set") => ListType::Set,
        _ => ListType::Atomic,
    }
}

thread_local! {
    static IN_EFFECT: RefCell<Option<Arc<CustomLists>>> = const { RefCell::new(None) };
}

/// Runs `f` with `lists` keying and merging lists (a custom resource's
/// write), or with the built-in kinds' merge keys (`None`).
pub(crate) fn with<R>(lists: Option<Arc<CustomLists>>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<CustomLists>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            IN_EFFECT.with(|c| *c.borrow_mut() = before);
        }
    }
    let before = IN_EFFECT.with(|c| c.replace(lists));
    let _restore = Restore(before);
    f()
}

/// The lists in effect, if a custom resource's.
pub(crate) fn in_effect() -> Option<Arc<CustomLists>> {
    IN_EFFECT.with(|c| c.borrow().clone())
}

/// `f` of the lists in effect (without counting a reference: this runs for
/// every list item of every object written).
pub(crate) fn read<R>(f: impl FnOnce(Option<&CustomLists>) -> R) -> R {
    IN_EFFECT.with(|c| f(c.borrow().as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_are_keyed_as_their_schema_says() {
        let lists = CustomLists::of_schema(&json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "rules": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["port", "path"],
                "items": {"type": "object", "properties": {"tags": {"type": "array",
                    "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}},
            "plain": {"type": "array", "items": {"type": "string"}},
            "dup": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic"},
            "both": {"type": "object", "x-kubernetes-map-type": "atomic"},
        }},
        "status": {"type": "object", "properties": {
            "dup": {"type": "array", "items": {"type": "string"}},
            "both": {"type": "object"},
        }}}}));
        let rule = json!({"path": "/a", "port": 80, "backend": "x"});
        assert_eq!(
            lists.segment("rules", &rule).as_deref(),
            Some(r#"k:{"path":"/a","port":80}"#)
        );
        assert_eq!(lists.segment("rules", &json!({"path": "/a"})), None);
        assert_eq!(
            lists.segment("tags", &json!("t")).as_deref(),
            Some(r#"v:"t""#)
        );
        assert_eq!(lists.segment("plain", &json!("t")), None);
        assert_eq!(lists.segment("unknown", &json!({"name": "a"})), None);
        // One name, two types: atomic.
        assert_eq!(lists.list_type("dup"), &ListType::Atomic);
        // Objects are granular unless marked (everywhere they appear).
        assert!(lists.atomic_map("selector"));
        assert!(!lists.atomic_map("both") && !lists.atomic_map("spec"));
        // In effect only inside `with`, and restored after.
        assert!(in_effect().is_none());
        let inner = with(Some(Arc::new(lists.clone())), || {
            with(None, || assert!(in_effect().is_none()));
            in_effect()
        });
        assert_eq!(inner.as_deref(), Some(&lists));
        assert!(in_effect().is_none());
    }
}

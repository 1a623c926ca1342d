//! A fixed set of objects standing in for the informer caches, for offline
//! runs (`windlass plugin reconcile`) and tests.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use windlass_selector::LabelSelector;

use crate::index::SharedIndex;
use crate::model::{CacheReader, IndexReader, KindRef, ObjectKey, ObjectRef, Text};
use crate::runtime::{Plugin, PluginError};

/// Kind, namespace and name.
type Key = (KindRef, Option<String>, String);

/// Objects keyed by kind, namespace and name, and a plugin's indexes of
/// them; read-only once built.
#[derive(Default, Clone)]
pub struct StaticCache {
    objects: BTreeMap<Key, (Value, Text)>,
    indexes: Vec<(KindRef, Arc<SharedIndex>)>,
}

impl std::fmt::Debug for StaticCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticCache")
            .field("objects", &self.objects.len())
            .finish_non_exhaustive()
    }
}

impl StaticCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) an object. It must have apiVersion, kind and name.
    pub fn insert(&mut self, object: Value) {
        let Some(r) = object_ref(&object) else { return };
        let text: Text = object.to_string().into();
        self.objects
            .insert((r.kind_ref(), r.namespace, r.name), (object, text));
    }

    /// Files the objects of every kind `plugin` indexes with its `index`, as
    /// the host's indexes would hold them, so `cache.lookup` and
    /// `cache.totals` answer offline too. Fails with the plugin's error.
    pub fn index_for(&mut self, plugin: &Plugin) -> Result<(), PluginError> {
        let cache: Arc<dyn CacheReader> = Arc::new(self.clone());
        let mut indexes = Vec::new();
        for (_, watch) in plugin.manifest().watches().filter(|(_, w)| w.indexed) {
            let index = SharedIndex::new();
            for ((kind, ns, name), (value, text)) in &self.objects {
                if *kind != watch.kind {
                    continue;
                }
                let entry = plugin.index(text, cache.clone())?;
                let version = value
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                let key = ObjectKey::new(ns.as_deref(), name);
                index.write(|i| i.file(key, version, text.clone(), entry));
            }
            indexes.push((watch.kind.clone(), Arc::new(index)));
        }
        self.indexes = indexes;
        Ok(())
    }

    /// How many objects the cache holds.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// True when the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

/// The reference of an object value, when it has the identifying fields.
pub fn object_ref(object: &Value) -> Option<ObjectRef> {
    let s = |p: &str| {
        object
            .pointer(p)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    Some(ObjectRef {
        api_version: s("/apiVersion")?.to_owned(),
        kind: s("/kind")?.to_owned(),
        namespace: s("/metadata/namespace").map(str::to_owned),
        name: s("/metadata/name")?.to_owned(),
    })
}

impl CacheReader for StaticCache {
    fn index(&self, kind: &KindRef) -> Option<&dyn IndexReader> {
        self.indexes
            .iter()
            .find(|(k, _)| k == kind)
            .map(|(_, i)| i.as_ref() as &dyn IndexReader)
    }

    fn get(&self, r: &ObjectRef) -> Option<Text> {
        self.objects
            .get(&(r.kind_ref(), r.namespace.clone(), r.name.clone()))
            .map(|(_, text)| text.clone())
    }

    fn list(&self, kind: &KindRef, namespace: Option<&str>, selector: &LabelSelector) -> Vec<Text> {
        self.objects
            .iter()
            .filter(|((k, ns, _), _)| {
                k == kind && (namespace.is_none() || ns.as_deref() == namespace)
            })
            .filter(|(_, (value, _))| {
                let labels = value.pointer("/metadata/labels");
                selector.matches(|key| labels.and_then(|l| l.get(key)).and_then(Value::as_str))
            })
            .map(|(_, (_, text))| text.clone())
            .collect()
    }
}

/// The request the host would build for `object` with these owned children.
pub fn request_for(object: &Value, owned: &[Value]) -> Option<crate::contract::Request> {
    Some(crate::contract::Request::new(
        object_ref(object)?,
        Some(object.to_string()),
        owned.iter().map(Value::to_string).collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gets_and_lists_by_namespace_and_labels() {
        let mut cache = StaticCache::new();
        for (ns, name, app) in [("a", "p1", "web"), ("a", "p2", "db"), ("b", "p3", "web")] {
            cache.insert(json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":name,"namespace":ns,"labels":{"app":app}}}));
        }
        let pod = KindRef::new("v1", "Pod");
        let web = LabelSelector::parse("app=web").unwrap();
        assert_eq!(cache.list(&pod, None, &web).len(), 2);
        assert_eq!(cache.list(&pod, Some("a"), &web).len(), 1);
        assert_eq!(
            cache
                .list(&pod, Some("a"), &LabelSelector::everything())
                .len(),
            2
        );
        let r = ObjectRef {
            api_version: "v1".into(),
            kind: "Pod".into(),
            namespace: Some("b".into()),
            name: "p3".into(),
        };
        assert!(cache.get(&r).unwrap().contains("\"p3\""));
        assert!(
            cache
                .list(&KindRef::new("v1", "Secret"), None, &web)
                .is_empty()
        );
    }
}

//! What lists, watches, rendering and garbage collection read of a stored
//! object, kept beside its bytes so that none of them parses it: kube's
//! `GetAttrs` (labels and selectable fields) plus the metadata the garbage
//! collector's graph holds.
//!
//! A stored object is kept as its serialized bytes and these attributes
//! only: a parsed `serde_json::Value` tree costs several times the bytes
//! (every JSON map a B-tree node), and a store holds every object of the
//! cluster. Readers that need the whole object parse it
//! ([`crate::state::Obj::value`]).

use serde_json::Value;

use crate::fields;

/// One owner reference, as the garbage collector and the write path's
/// "may this write give the collector work" check compare them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OwnerRef {
    pub(crate) api_version: Box<str>,
    pub(crate) kind: Box<str>,
    pub(crate) name: Box<str>,
    pub(crate) uid: Box<str>,
    pub(crate) controller: Option<bool>,
    pub(crate) block_owner_deletion: Option<bool>,
}

impl OwnerRef {
    fn of(r: &Value) -> Self {
        let s = |k: &str| Box::from(r[k].as_str().unwrap_or_default());
        Self {
            api_version: s("apiVersion"),
            kind: s("kind"),
            name: s("name"),
            uid: s("uid"),
            controller: r["controller"].as_bool(),
            block_owner_deletion: r["blockOwnerDeletion"].as_bool(),
        }
    }
}

/// The attributes of one stored object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Attrs {
    pub(crate) api_version: Box<str>,
    pub(crate) namespace: Box<str>,
    pub(crate) name: Box<str>,
    pub(crate) uid: Box<str>,
    /// `metadata.deletionTimestamp` is set.
    pub(crate) deleting: bool,
    pub(crate) finalizers: Box<[Box<str>]>,
    pub(crate) owners: Box<[OwnerRef]>,
    /// String-valued labels, sorted by key.
    labels: Box<[(Box<str>, Box<str>)]>,
    /// The values of the resource's own selectable fields
    /// ([`fields::own_fields_of`]), in that list's order, one after the
    /// other (one allocation, not one per field), and where each ends;
    /// empty for `metadata.name` and `metadata.namespace`, read above.
    fields: Box<str>,
    field_ends: Box<[u32]>,
}

impl Attrs {
    /// The attributes of `v`, an object of resource `group`/`plural`.
    pub(crate) fn of(group: &str, plural: &str, v: &Value) -> Self {
        let meta = &v["metadata"];
        let s = |v: &Value| Box::from(v.as_str().unwrap_or_default());
        let labels = meta["labels"].as_object().map_or_else(Box::default, |m| {
            // A `Map` iterates in key order: the result is sorted.
            m.iter()
                .filter_map(|(k, v)| Some((Box::from(k.as_str()), Box::from(v.as_str()?))))
                .collect()
        });
        let mut fields = String::new();
        let mut field_ends = Vec::new();
        let mut push = |value: &str| {
            fields.push_str(value);
            field_ends.push(u32::try_from(fields.len()).unwrap_or(u32::MAX));
        };
        for f in fields::own_fields_of(group, plural).unwrap_or_default() {
            match *f {
                "metadata.name" | "metadata.namespace" => push(""),
                f => push(&fields::value(group, plural, v, f)),
            }
        }
        Self {
            api_version: s(&v["apiVersion"]),
            namespace: s(&meta["namespace"]),
            name: s(&meta["name"]),
            uid: s(&meta["uid"]),
            deleting: meta["deletionTimestamp"].is_string(),
            finalizers: meta["finalizers"]
                .as_array()
                .map_or_else(Box::default, |a| {
                    a.iter()
                        .filter_map(|f| Some(Box::from(f.as_str()?)))
                        .collect()
                }),
            owners: meta["ownerReferences"]
                .as_array()
                .map_or_else(Box::default, |a| a.iter().map(OwnerRef::of).collect()),
            labels,
            fields: fields.into_boxed_str(),
            field_ends: field_ends.into_boxed_slice(),
        }
    }

    /// The value of label `key`.
    pub(crate) fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &*self.labels[i].1)
    }

    /// The value of selectable `field` of this object of resource
    /// `group`/`plural`, as a field selector compares it (empty when the
    /// resource has no such field: [`fields::check`] refuses those first).
    pub(crate) fn field(&self, group: &str, plural: &str, field: &str) -> &str {
        match field {
            "metadata.name" => &self.name,
            "metadata.namespace" => &self.namespace,
            _ => fields::own_fields_of(group, plural)
                .and_then(|own| own.iter().position(|f| *f == field))
                .and_then(|i| {
                    let start = i.checked_sub(1).map_or(0, |j| self.field_ends[j]);
                    self.fields
                        .get(start as usize..*self.field_ends.get(i)? as usize)
                })
                .unwrap_or(""),
        }
    }

    /// `(uid, blockOwnerDeletion)` of every owner reference with a uid.
    pub(crate) fn owner_uids(&self) -> Vec<(String, bool)> {
        self.owners
            .iter()
            .filter(|r| !r.uid.is_empty())
            .map(|r| (r.uid.to_string(), r.block_owner_deletion.unwrap_or(false)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_what_selectors_and_the_collector_read() {
        let pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "p", "namespace": "d", "uid": "u1",
                "labels": {"b": "2", "a": "1", "odd": 3},
                "finalizers": ["x/y"],
                "deletionTimestamp": "2026-01-01T00:00:00Z",
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "o1", "controller": true}],
            },
            "spec": {"nodeName": "n1"},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]},
        });
        let a = Attrs::of("", "pods", &pod);
        assert_eq!(
            (&*a.api_version, &*a.namespace, &*a.name, &*a.uid),
            ("v1", "d", "p", "u1")
        );
        assert!(a.deleting);
        assert_eq!(&*a.finalizers, [Box::from("x/y")]);
        assert_eq!(a.label("a"), Some("1"));
        assert_eq!(a.label("b"), Some("2"));
        assert_eq!(a.label("odd"), None, "not a string");
        assert_eq!(a.label("c"), None);
        assert_eq!(a.field("", "pods", "spec.nodeName"), "n1");
        assert_eq!(a.field("", "pods", "spec.host"), "n1");
        assert_eq!(a.field("", "pods", "status.phase"), "Running");
        assert_eq!(a.field("", "pods", "status.podIP"), "10.0.0.1");
        assert_eq!(a.field("", "pods", "spec.hostNetwork"), "false");
        assert_eq!(a.field("", "pods", "metadata.name"), "p");
        assert_eq!(a.owner_uids(), vec![("o1".to_owned(), false)]);
        assert_eq!(a.owners[0].controller, Some(true));
    }

    #[test]
    fn every_own_field_reads_as_the_object_does() {
        let objects = [
            (
                "",
                "nodes",
                json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true}}),
            ),
            (
                "apps",
                "replicasets",
                json!({"metadata": {"name": "r"}, "status": {"replicas": 3}}),
            ),
            (
                "",
                "events",
                json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "Started", "reportingComponent": "kubelet", "source": {}}),
            ),
            (
                "",
                "secrets",
                json!({"metadata": {"name": "s"}, "type": "Opaque"}),
            ),
            ("", "pods", json!({"metadata": {"name": "p"}})),
            (
                "",
                "pods",
                json!({"metadata": {"name": "p", "namespace": "d"},
                "spec": {"nodeName": "n", "restartPolicy": "Never", "schedulerName": "s", "serviceAccountName": "sa", "hostNetwork": true},
                "status": {"phase": "Running", "podIP": "10.0.0.2", "podIPs": [{"ip": "10.0.0.1"}], "nominatedNodeName": "m"}}),
            ),
        ];
        for (group, plural, v) in objects {
            let a = Attrs::of(group, plural, &v);
            for f in fields::own_fields_of(group, plural).unwrap() {
                assert_eq!(
                    a.field(group, plural, f),
                    fields::value(group, plural, &v, f),
                    "{plural} {f}"
                );
            }
        }
    }
}

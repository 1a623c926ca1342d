//! Managed fields: the field sets (`fieldsV1`) an object sets, the
//! `managedFields` entries that say which manager owns which fields, and
//! recording an update's changes in them. Server-side apply (`ssa.rs`)
//! decides conflicts and merges with these; every other write records
//! itself with [`record_update`].
//!
//! A field set is a set of paths; a path is a list of `fieldsV1` segments
//! (`f:spec`, `k:{"name":"web"}`). A built-in kind's list items are keyed by
//! the same merge keys the strategic merge patch uses, a custom resource's
//! as its schema's list types say (`custom_lists.rs`); other lists are atomic.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value, json};

use crate::custom_lists;
use crate::object::meta_mut;
use crate::patch;
use crate::time::now_rfc3339;

pub(crate) type Path = Vec<String>;
pub(crate) type FieldSet = BTreeSet<Path>;

const SKIP_META: [&str; 8] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
];

/// The leaf paths an object sets.
pub(crate) fn field_set(v: &Value, with_status: bool) -> FieldSet {
    let mut out = FieldSet::new();
    if let Some(m) = v.as_object() {
        for (k, x) in m {
            if k == "apiVersion" || k == "kind" || (k == "status" && !with_status) {
                continue;
            }
            let mut p = vec![member(k)];
            if k == "metadata" {
                if let Some(mm) = x.as_object() {
                    for (mk, mx) in mm
                        .iter()
                        .filter(|(mk, _)| !SKIP_META.contains(&mk.as_str()))
                    {
                        p.push(member(mk));
                        collect(mx, mk, &mut p, &mut out);
                        p.pop();
                    }
                }
                continue;
            }
            collect(x, k, &mut p, &mut out);
        }
    }
    out
}

/// The segment of member `k`, `f:k` (built directly: this runs for every
/// field of every object written, and `format!` costs several times more).
fn member(k: &str) -> String {
    let mut s = String::with_capacity(k.len() + 2);
    s.push_str("f:");
    s.push_str(k);
    s
}

/// Whether the object `field` is owned whole (a custom resource's
/// `x-kubernetes-map-type: atomic`).
fn atomic_map(field: &str) -> bool {
    custom_lists::read(|l| l.is_some_and(|l| l.atomic_map(field)))
}

/// The segment of `item` of list `field`: `k:{..}` for a keyed item (a
/// custom resource's `v:` for a set's, see `custom_lists.rs`); `None` when
/// the list is atomic.
fn item_key(field: &str, item: &Value) -> Option<String> {
    if let Some(custom) = custom_lists::read(|l| l.map(|l| l.segment(field, item))) {
        return custom;
    }
    let key = patch::merge_key(field, item)?;
    let id = item.get(key)?;
    // `k:{"name":"web"}`: the one-member object `{key: id}` as compact JSON,
    // written out without building it (merge keys need no escaping).
    let mut s = String::with_capacity(key.len() + 16);
    s.push_str("k:{\"");
    s.push_str(key);
    s.push_str("\":");
    s.push_str(&id.to_string());
    s.push('}');
    Some(s)
}

/// The longest field path tracked: a path of `n` segments nests `n + 1`
/// levels in `fieldsV1`, itself 4 levels into the object
/// (`metadata.managedFields[i].fieldsV1`), and the object may nest at most
/// `MAX_DEPTH`. Anything deeper is owned as a whole, at this depth.
pub(crate) const MAX_FIELD_PATH: usize = crate::nesting::MAX_DEPTH - 5;

fn collect(v: &Value, field: &str, prefix: &mut Path, out: &mut FieldSet) {
    // Room for two more segments (a keyed item and its field) or none.
    if prefix.len() + 2 > MAX_FIELD_PATH {
        out.insert(prefix.clone());
        return;
    }
    match v {
        Value::Object(m) if !m.is_empty() && !atomic_map(field) => {
            for (k, x) in m {
                prefix.push(member(k));
                collect(x, k, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) if !a.is_empty() && a.iter().all(|i| item_key(field, i).is_some()) => {
            for i in a {
                prefix.push(item_key(field, i).expect("checked above"));
                out.insert(prefix.clone());
                if let Value::Object(m) = i {
                    for (k, x) in m {
                        prefix.push(member(k));
                        collect(x, k, prefix, out);
                        prefix.pop();
                    }
                }
                prefix.pop();
            }
        }
        _ => {
            out.insert(prefix.clone());
        }
    }
}

/// `to_fields_v1(&field_set(v, false))`, built in one walk of `v` without
/// the set of paths between (every create records one: its whole object).
/// It follows [`field_set`] and [`collect`] step for step: a node for each
/// segment of each path, `"."` in each keyed item's node.
fn fields_v1_of(v: &Value) -> Map<String, Value> {
    fn node(parent: &mut Map<String, Value>, seg: String) -> &mut Map<String, Value> {
        match parent
            .entry(seg)
            .or_insert_with(|| Value::Object(Map::new()))
        {
            Value::Object(m) => m,
            _ => unreachable!("fieldsV1 nodes are objects"),
        }
    }
    /// `v`, the value of `field`, below `at`, the node of a path of `len`
    /// segments (the node itself stands for the path's leaf).
    fn walk(v: &Value, field: &str, at: &mut Map<String, Value>, len: usize) {
        if len + 2 > MAX_FIELD_PATH {
            return;
        }
        match v {
            Value::Object(m) if !m.is_empty() && !atomic_map(field) => {
                for (k, x) in m {
                    walk(x, k, node(at, member(k)), len + 1);
                }
            }
            Value::Array(a) if !a.is_empty() => {
                let Some(keys) = a
                    .iter()
                    .map(|i| item_key(field, i))
                    .collect::<Option<Vec<String>>>()
                else {
                    return;
                };
                for (i, key) in a.iter().zip(keys) {
                    let keyed = key.starts_with("k:");
                    let item = node(at, key);
                    if keyed {
                        item.entry(".").or_insert_with(|| Value::Object(Map::new()));
                    }
                    if let Value::Object(m) = i {
                        for (k, x) in m {
                            walk(x, k, node(item, member(k)), len + 2);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let mut root = Map::new();
    for (k, x) in v.as_object().into_iter().flatten() {
        if k == "apiVersion" || k == "kind" || k == "status" {
            continue;
        }
        if k == "metadata" {
            for (mk, mx) in x
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(mk, _)| !SKIP_META.contains(&mk.as_str()))
            {
                let meta = node(&mut root, member(k));
                walk(mx, mk, node(meta, member(mk)), 2);
            }
            continue;
        }
        walk(x, k, node(&mut root, member(k)), 1);
    }
    root
}

/// Finds values by field path in one object. Each keyed list is indexed by
/// its items' keys the first time a path goes through it, so a lookup costs
/// the length of the path, not of the lists: an object can carry lists of
/// tens of thousands of items (a pod's env), and every path of it is
/// looked up in both the old and the new object.
pub(crate) struct Lookup<'a> {
    root: &'a Value,
    lists: RefCell<HashMap<*const Value, HashMap<String, Vec<usize>>>>,
}

impl<'a> Lookup<'a> {
    pub(crate) fn new(root: &'a Value) -> Self {
        Self {
            root,
            lists: RefCell::default(),
        }
    }

    /// The positions of the items of `list` (the value of `field`) with key
    /// segment `seg`.
    fn items(&self, list: &'a Value, field: &str, seg: &str) -> Vec<usize> {
        let mut lists = self.lists.borrow_mut();
        let index = lists.entry(list as *const Value).or_insert_with(|| {
            let mut index: HashMap<String, Vec<usize>> = HashMap::new();
            for (i, item) in list.as_array().into_iter().flatten().enumerate() {
                if let Some(k) = item_key(field, item) {
                    index.entry(k).or_default().push(i);
                }
            }
            index
        });
        index.get(seg).cloned().unwrap_or_default()
    }

    /// The value at `path`, if present.
    fn get(&self, path: &[String]) -> Option<&'a Value> {
        let mut cur = self.root;
        let mut field = "";
        for seg in path {
            if let Some(f) = seg.strip_prefix("f:") {
                cur = cur.get(f)?;
                field = f;
            } else {
                let i = *self.items(cur, field, seg).first()?;
                cur = cur.as_array()?.get(i)?;
            }
        }
        Some(cur)
    }

    /// `path` as concrete steps, one per item when it ends at a keyed item
    /// (every item with that key goes).
    pub(crate) fn steps(&self, path: &[String]) -> Vec<Vec<Step>> {
        let Some((last, parent)) = path.split_last() else {
            return vec![];
        };
        let mut steps = Vec::with_capacity(path.len());
        let mut cur = self.root;
        let mut field = "";
        for seg in parent {
            if let Some(f) = seg.strip_prefix("f:") {
                let Some(next) = cur.get(f) else {
                    return vec![];
                };
                steps.push(Step::Key(f.to_owned()));
                (cur, field) = (next, f);
            } else {
                let Some(&i) = self.items(cur, field, seg).first() else {
                    return vec![];
                };
                steps.push(Step::Index(i));
                cur = &cur[i];
            }
        }
        match last.strip_prefix("f:") {
            Some(f) => vec![[steps, vec![Step::Key(f.to_owned())]].concat()],
            None => self
                .items(cur, field, last)
                .into_iter()
                .map(|i| [steps.clone(), vec![Step::Index(i)]].concat())
                .collect(),
        }
    }
}

/// One step into a value: a member or an item.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Step {
    Key(String),
    Index(usize),
}

/// Whether two objects differ at `path`; a list item's key marker only records presence.
pub(crate) fn differs(a: &Lookup<'_>, b: &Lookup<'_>, path: &[String]) -> bool {
    if path.last().is_some_and(|s| s.starts_with("k:")) {
        a.get(path).is_some() != b.get(path).is_some()
    } else {
        a.get(path) != b.get(path)
    }
}

/// `fieldsV1` for a set.
pub(crate) fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for p in set {
        let mut cur = &mut root;
        for seg in p {
            let next = cur.entry(seg.clone()).or_insert_with(|| json!({}));
            if seg.starts_with("k:") {
                next.as_object_mut()
                    .expect("object")
                    .entry(".")
                    .or_insert_with(|| json!({}));
            }
            cur = next.as_object_mut().expect("fieldsV1 nodes are objects");
        }
    }
    Value::Object(root)
}

/// The set a `fieldsV1` describes.
pub(crate) fn from_fields_v1(v: &Value) -> FieldSet {
    fn walk(v: &Value, prefix: &mut Path, out: &mut FieldSet) {
        let children: Vec<(&String, &Value)> = v
            .as_object()
            .map(|m| m.iter().filter(|(k, _)| *k != ".").collect())
            .unwrap_or_default();
        if (v.get(".").is_some() || children.is_empty()) && !prefix.is_empty() {
            out.insert(prefix.clone());
        }
        for (k, x) in children {
            prefix.push(k.clone());
            walk(x, prefix, out);
            prefix.pop();
        }
    }
    let mut out = FieldSet::new();
    walk(v, &mut vec![], &mut out);
    out
}

/// A `managedFields` entry.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) manager: String,
    pub(crate) operation: String,
    pub(crate) api_version: String,
    pub(crate) fields: FieldSet,
    pub(crate) subresource: Option<String>,
    /// When the entry last changed; `None` for "now".
    pub(crate) time: Option<String>,
}

pub(crate) fn entries(v: &Value) -> Vec<Entry> {
    v["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| Entry {
                    manager: e["manager"].as_str().unwrap_or_default().into(),
                    operation: e["operation"].as_str().unwrap_or("Update").into(),
                    api_version: e["apiVersion"].as_str().unwrap_or_default().into(),
                    fields: from_fields_v1(&e["fieldsV1"]),
                    subresource: e["subresource"].as_str().map(str::to_owned),
                    time: e["time"].as_str().map(str::to_owned),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A `managedFields` entry. Built member by member: `json!` would copy
/// `fields` (it serializes every value it is given into a new one).
fn entry_json(
    manager: &str,
    operation: &str,
    api_version: &str,
    time: String,
    fields: Value,
) -> Value {
    let mut m = Map::new();
    m.insert("manager".into(), Value::String(manager.into()));
    m.insert("operation".into(), Value::String(operation.into()));
    m.insert("apiVersion".into(), Value::String(api_version.into()));
    m.insert("time".into(), Value::String(time));
    m.insert("fieldsType".into(), Value::String("FieldsV1".into()));
    m.insert("fieldsV1".into(), fields);
    Value::Object(m)
}

pub(crate) fn store_entries(v: &mut Value, es: &[Entry]) {
    let now = now_rfc3339();
    let list: Vec<Value> = es
        .iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let time = e.time.clone().unwrap_or_else(|| now.clone());
            let mut x = entry_json(
                &e.manager,
                &e.operation,
                &e.api_version,
                time,
                to_fields_v1(&e.fields),
            );
            if let Some(s) = &e.subresource {
                x["subresource"] = json!(s);
            }
            x
        })
        .collect();
    let meta = meta_mut(v);
    if list.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), Value::Array(list));
    }
}

/// Records that `manager` (an Update) changed the fields that differ between `old` and `new`.
pub(crate) fn record_update(old: &Value, new: &mut Value, manager: &str, api_version: &str) {
    // A status write (the kubelet's, a controller's) changes nothing an
    // update's field set holds: found by one comparison, without building
    // the sets of both objects only to find them equal.
    if crate::object::same_outside_status(old, new) {
        return;
    }
    if old.as_object().is_none_or(Map::is_empty) {
        // A create: every field the new object sets is a change, and there
        // is no earlier entry to take any from: the manager's entry is
        // the object's field set, as `store_entries` writes one.
        let fields = fields_v1_of(new);
        if !fields.is_empty() {
            let entry = entry_json(
                manager,
                "Update",
                api_version,
                now_rfc3339(),
                Value::Object(fields),
            );
            meta_mut(new).insert("managedFields".into(), Value::Array(vec![entry]));
        }
        return;
    }
    let new_set = field_set(new, false);
    let old_set = field_set(old, false);
    let changed: FieldSet = {
        let (lo, ln) = (Lookup::new(old), Lookup::new(new));
        new_set
            .iter()
            .filter(|p| differs(&lo, &ln, p))
            .cloned()
            .collect()
    };
    let removed: FieldSet = old_set.difference(&new_set).cloned().collect();
    if changed.is_empty() && removed.is_empty() {
        return;
    }
    let mut es = entries(old);
    for e in &mut es {
        let before = e.fields.len();
        e.fields
            .retain(|p| !changed.contains(p) && !removed.contains(p));
        if e.fields.len() != before {
            e.time = None;
        }
    }
    match es
        .iter_mut()
        .find(|e| e.manager == manager && e.operation == "Update")
    {
        Some(e) => {
            e.fields.extend(changed);
            e.time = None;
        }
        None => es.push(Entry {
            manager: manager.into(),
            operation: "Update".into(),
            api_version: api_version.into(),
            fields: changed,
            subresource: None,
            time: None,
        }),
    }
    store_entries(new, &es);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `record_update` writes for a create, built directly, is what
    /// the field set of the object makes: keyed lists (a repeated key
    /// too), atomic lists, empty objects, and paths cut at the depth limit.
    #[test]
    fn a_creates_fields_are_its_field_set() {
        let mut deep = json!("leaf");
        for i in 0..MAX_FIELD_PATH + 3 {
            deep = json!({ format!("l{i}"): deep, "x": i });
        }
        let objects = [
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": "d", "uid": "u", "labels": {"app": "a", "t": ""},
                    "annotations": {}, "ownerReferences": [{"uid": "o", "name": "rs", "controller": true}],
                    "finalizers": ["a", "b"], "managedFields": [{"manager": "m"}]},
                "spec": {"containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 80}, {"containerPort": 80, "protocol": "UDP"}],
                    "env": [{"name": "A", "value": "1"}, {"name": "A"}], "resources": {"requests": {"cpu": "1"}}},
                    {"name": "side", "args": ["x", "y"]}], "volumes": [{"name": "v"}, {"emptyDir": {}}], "nodeName": null},
                "status": {"phase": "Pending"}}),
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"generateName": "p."},
                "involvedObject": {"kind": "Pod", "name": "p"}, "count": 1, "deep": deep}),
            json!({"metadata": {"name": "only-skipped"}}),
            json!({"metadata": "not an object", "data": []}),
            json!([1, 2]),
        ];
        assert_eq!(
            entry_json("m", "Update", "v1", "t".into(), json!({"f:a": {}})),
            json!({"manager": "m", "operation": "Update", "apiVersion": "v1", "time": "t",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:a": {}}})
        );
        assert_eq!(
            item_key("ports", &json!({"containerPort": 80, "name": "x"})).as_deref(),
            Some(r#"k:{"containerPort":80}"#)
        );
        assert_eq!(
            item_key("env", &json!({"name": "a\"b"})),
            Some(format!("k:{}", json!({"name": "a\"b"})))
        );
        for v in objects {
            assert_eq!(
                Value::Object(fields_v1_of(&v)),
                to_fields_v1(&field_set(&v, false)),
                "{v}"
            );
        }
    }
}

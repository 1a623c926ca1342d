//! Server-side apply: field sets (`fieldsV1`), managers in `managedFields`,
//! conflicts and the apply merge.
//!
//! A field set is a set of paths; a path is a list of `fieldsV1` segments
//! (`f:spec`, `k:{"name":"web"}`). List items are keyed by the same merge keys
//! the strategic merge patch uses; other lists are atomic.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value, json};

use crate::object::meta_mut;
use crate::patch;
use crate::state::Obj;
use crate::status::{ApiError, ApiResult};
use crate::time::now_rfc3339;
use crate::update::Next;
use crate::write::{self, Part, Req};

type Path = Vec<String>;
type FieldSet = BTreeSet<Path>;

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
            let mut p = vec![format!("f:{k}")];
            if k == "metadata" {
                if let Some(mm) = x.as_object() {
                    for (mk, mx) in mm
                        .iter()
                        .filter(|(mk, _)| !SKIP_META.contains(&mk.as_str()))
                    {
                        p.push(format!("f:{mk}"));
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

fn item_key(field: &str, item: &Value) -> Option<String> {
    let key = patch::merge_key(field, item)?;
    let id = item.get(key)?;
    Some(format!("k:{}", json!({ key: id })))
}

/// The longest field path tracked: a path of `n` segments nests `n + 1`
/// levels in `fieldsV1`, itself 4 levels into the object
/// (`metadata.managedFields[i].fieldsV1`), and the object may nest at most
/// `MAX_DEPTH`. Anything deeper is owned as a whole, at this depth.
const MAX_FIELD_PATH: usize = crate::nesting::MAX_DEPTH - 5;

fn collect(v: &Value, field: &str, prefix: &mut Path, out: &mut FieldSet) {
    // Room for two more segments (a keyed item and its field) or none.
    if prefix.len() + 2 > MAX_FIELD_PATH {
        out.insert(prefix.clone());
        return;
    }
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                prefix.push(format!("f:{k}"));
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
                        prefix.push(format!("f:{k}"));
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

/// Finds values by field path in one object. Each keyed list is indexed by
/// its items' keys the first time a path goes through it, so a lookup costs
/// the length of the path, not of the lists: an object can carry lists of
/// tens of thousands of items (a pod's env), and every path of it is
/// looked up in both the old and the new object.
struct Lookup<'a> {
    root: &'a Value,
    lists: RefCell<HashMap<*const Value, HashMap<String, Vec<usize>>>>,
}

impl<'a> Lookup<'a> {
    fn new(root: &'a Value) -> Self {
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
    fn steps(&self, path: &[String]) -> Vec<Vec<Step>> {
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
enum Step {
    Key(String),
    Index(usize),
}

/// Whether two objects differ at `path`; a list item's key marker only records presence.
fn differs(a: &Lookup<'_>, b: &Lookup<'_>, path: &[String]) -> bool {
    if path.last().is_some_and(|s| s.starts_with("k:")) {
        a.get(path).is_some() != b.get(path).is_some()
    } else {
        a.get(path) != b.get(path)
    }
}

/// Removes the values at `paths` from `v`. The paths are resolved to
/// positions first, then removed highest position first, so that taking
/// an item out of a list never moves one still to be removed.
fn remove_all<'p>(v: &mut Value, paths: impl Iterator<Item = &'p Path>) {
    let mut all: Vec<Vec<Step>> = {
        let lookup = Lookup::new(v);
        paths.flat_map(|p| lookup.steps(p)).collect()
    };
    all.sort_by(|a, b| b.cmp(a));
    all.dedup();
    for steps in all {
        let Some((last, parent)) = steps.split_last() else {
            continue;
        };
        let target = parent.iter().try_fold(&mut *v, |cur, step| match step {
            Step::Key(k) => cur.get_mut(k.as_str()),
            Step::Index(i) => cur.get_mut(*i),
        });
        match (target, last) {
            (Some(Value::Object(m)), Step::Key(k)) => {
                m.remove(k);
            }
            (Some(Value::Array(a)), Step::Index(i)) if *i < a.len() => {
                a.remove(*i);
            }
            _ => {}
        }
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

fn display(path: &[String]) -> String {
    let mut s = String::new();
    for seg in path {
        if let Some(f) = seg.strip_prefix("f:") {
            s.push('.');
            s.push_str(f);
        } else if let Some(Ok(key)) = seg
            .strip_prefix("k:")
            .map(serde_json::from_str::<Map<String, Value>>)
        {
            for (k, v) in key {
                s.push_str(&format!("[{k}={v}]"));
            }
        }
    }
    s
}

/// A `managedFields` entry.
#[derive(Debug, Clone)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    fields: FieldSet,
    subresource: Option<String>,
    /// When the entry last changed; `None` for "now".
    time: Option<String>,
}

fn entries(v: &Value) -> Vec<Entry> {
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

fn store_entries(v: &mut Value, es: &[Entry]) {
    let now = now_rfc3339();
    let list: Vec<Value> = es
        .iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let mut x = json!({"manager": e.manager, "operation": e.operation, "apiVersion": e.api_version,
                "time": e.time.clone().unwrap_or_else(|| now.clone()), "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(&e.fields)});
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
    let mut es = entries(old);
    let old_set = field_set(old, false);
    let new_set = field_set(new, false);
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

/// `(field, manager)` pairs where `applied` would change a value another manager owns.
fn conflicts(
    old: &Value,
    applied_set: &FieldSet,
    applied: &Value,
    manager: &str,
    es: &[Entry],
) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let (lo, la) = (Lookup::new(old), Lookup::new(applied));
    for e in es.iter().filter(|e| e.manager != manager) {
        for p in applied_set.intersection(&e.fields) {
            if differs(&lo, &la, p) {
                out.push((display(p), e.manager.clone(), e.api_version.clone()));
            }
        }
    }
    out
}

/// Server-side apply of `applied` by `manager` to `existing`: the object to
/// create or the successor to store. Computed without the store's lock
/// (see `update.rs`).
pub(crate) fn apply(
    req: &Req<'_>,
    name: &str,
    existing: Option<&Obj>,
    mut applied: Value,
    manager: &str,
    force: bool,
    part: Part,
) -> ApiResult<Next> {
    write::check_identity(req, &mut applied)?;
    if applied["metadata"]["name"]
        .as_str()
        .is_some_and(|n| n != name)
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object does not match the name on the URL ({name})"
        )));
    }
    meta_mut(&mut applied).insert("name".into(), json!(name));
    let av = req.res.api_version(req.version);
    let with_status = part == Part::Status;
    let applied_set = field_set(&applied, with_status);
    let mine = Entry {
        manager: manager.into(),
        operation: "Apply".into(),
        api_version: av.clone(),
        fields: applied_set.clone(),
        subresource: with_status.then(|| "status".into()),
        time: None,
    };
    let Some(old) = existing else {
        let mut obj = applied;
        meta_mut(&mut obj).remove("managedFields");
        store_entries(&mut obj, &[mine]);
        return Ok(Next::Create(obj));
    };
    let mut es = entries(&old.value);
    let found = conflicts(&old.value, &applied_set, &applied, manager, &es);
    if !found.is_empty() && !force {
        let n = found.len();
        let text: Vec<String> = found
            .iter()
            .map(|(f, m, a)| format!("conflict with {m:?} using {a}: {f}"))
            .collect();
        let causes: Vec<Value> = found
            .iter()
            .map(|(f, m, a)| json!({"reason": "FieldManagerConflict", "message": format!("conflict with {m:?} using {a}"), "field": f}))
            .collect();
        let mut e = ApiError::new(
            409,
            "Conflict",
            format!(
                "Apply failed with {n} conflict{}: {}",
                if n == 1 { "" } else { "s" },
                text.join("\n")
            ),
        );
        e.details = Some(
            json!({"name": name, "group": req.res.group, "kind": req.res.plural, "causes": causes}),
        );
        return Err(e);
    }
    let mut new = old.value.clone();
    let previously: FieldSet = es
        .iter()
        .filter(|e| e.manager == manager && e.operation == "Apply")
        .flat_map(|e| e.fields.iter().cloned())
        .collect();
    let others: FieldSet = es
        .iter()
        .filter(|e| e.manager != manager)
        .flat_map(|e| e.fields.iter().cloned())
        .collect();
    remove_all(
        &mut new,
        previously
            .difference(&applied_set)
            .filter(|p| !others.contains(*p)),
    );
    let mut body = applied.clone();
    meta_mut(&mut body).remove("managedFields");
    patch::strategic(&mut new, &body).map_err(ApiError::bad_request)?;
    let (lo, la) = (Lookup::new(&old.value), Lookup::new(&applied));
    for e in &mut es {
        if e.manager != manager {
            let before = e.fields.len();
            e.fields
                .retain(|p| !applied_set.contains(p) || !differs(&lo, &la, p));
            if e.fields.len() != before {
                e.time = None;
            }
        }
    }
    // Replace this manager's entry in place, keeping its time when its set is
    // unchanged, so that re-applying the same configuration is a no-op.
    match es
        .iter_mut()
        .find(|e| e.manager == manager && e.operation == "Apply")
    {
        Some(e) if e.fields == mine.fields => {}
        Some(e) => *e = mine,
        None => es.push(mine),
    }
    store_entries(&mut new, &es);
    Ok(Next::Update(write::merge_parts(req, &old.value, new, part)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_sets_key_containers_by_name() {
        let v = json!({"apiVersion": "v1", "metadata": {"name": "x", "labels": {"a": "1"}},
            "spec": {"replicas": 2, "containers": [{"name": "web", "image": "i"}], "args": ["a"]}});
        let s = field_set(&v, false);
        let shown: Vec<String> = s.iter().map(|p| display(p)).collect();
        assert!(shown.contains(&".metadata.labels.a".to_string()));
        assert!(shown.contains(&".spec.containers[name=\"web\"].image".to_string()));
        assert!(shown.contains(&".spec.args".to_string()));
        assert!(!shown.iter().any(|p| p.contains("metadata.name")));
        assert_eq!(from_fields_v1(&to_fields_v1(&s)), s);
    }

    #[test]
    fn updates_move_ownership() {
        let old = json!({"spec": {"replicas": 1}});
        let mut new = json!({"spec": {"replicas": 3}});
        record_update(&old, &mut new, "kubectl-scale", "apps/v1");
        let es = entries(&new);
        assert_eq!(es.len(), 1);
        assert_eq!(es[0].manager, "kubectl-scale");
        let applied = json!({"spec": {"replicas": 5}});
        let c = conflicts(&new, &field_set(&applied, false), &applied, "kubectl", &es);
        assert_eq!(c[0].0, ".spec.replicas");
        assert_eq!(c[0].1, "kubectl-scale");
        let same = json!({"spec": {"replicas": 3}});
        assert!(conflicts(&new, &field_set(&same, false), &same, "kubectl", &es).is_empty());
    }

    #[test]
    fn remove_paths() {
        let mut v = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c", "x": 1}], "x": 1}});
        let paths: Vec<Path> = vec![
            vec![
                "f:spec".into(),
                "f:containers".into(),
                "k:{\"name\":\"a\"}".into(),
            ],
            vec![
                "f:spec".into(),
                "f:containers".into(),
                "k:{\"name\":\"c\"}".into(),
                "f:x".into(),
            ],
            vec!["f:spec".into(), "f:x".into()],
            vec!["f:spec".into(), "f:missing".into()],
        ];
        remove_all(&mut v, paths.iter());
        assert_eq!(
            v,
            json!({"spec": {"containers": [{"name": "b"}, {"name": "c"}]}})
        );
    }

    /// Managed fields of a list of 50,000 items are computed in linear
    /// time: looking each item's path up in a list scanned from the start
    /// took seconds at 8,000 items.
    #[test]
    fn long_lists_are_looked_up_by_key() {
        let env = |v: &str| -> Vec<Value> {
            (0..50_000)
                .map(|i| json!({"name": format!("E{i}"), "value": v}))
                .collect()
        };
        let old = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "env": env("a")}]}});
        let mut new = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "env": env("b")}]}});
        record_update(&old, &mut new, "m", "v1");
        let fields = &entries(&new)[0].fields;
        let values = fields
            .iter()
            .filter(|p| p.last().is_some_and(|s| s == "f:value"));
        assert_eq!(values.count(), 50_000, "every value changed");
        assert!(
            !fields
                .iter()
                .any(|p| p.last().is_some_and(|s| s == "f:name"))
        );
        let mut gone = new.clone();
        let set = field_set(&new, false);
        remove_all(&mut gone, set.iter().filter(|p| p.len() == 5));
        assert_eq!(
            gone["spec"]["containers"][0]["env"]
                .as_array()
                .unwrap()
                .len(),
            0
        );
    }

    /// However deep the object, its managed fields nest no deeper than an
    /// object may: paths stop at MAX_FIELD_PATH segments.
    #[test]
    fn field_paths_stop_short_of_the_depth_limit() {
        let mut v = json!("leaf");
        for i in 0..crate::nesting::MAX_DEPTH {
            v = if i % 2 == 0 {
                json!({ "a": v })
            } else {
                json!({ "containers": [{"name": format!("c{i}"), "x": v}] })
            };
        }
        let mut obj = json!({"metadata": {"name": "deep"}, "spec": v});
        record_update(&Value::Null, &mut obj, "m", "v1");
        let depth = crate::nesting::depth(&obj["metadata"]);
        assert!(depth < crate::nesting::MAX_DEPTH, "{depth}");
        assert!(
            field_set(&obj, false)
                .iter()
                .all(|p| p.len() <= MAX_FIELD_PATH)
        );
    }
}

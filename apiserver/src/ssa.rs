//! Server-side apply: conflicts with other managers and the apply merge,
//! over the field sets and `managedFields` entries of `managed.rs`.

use serde_json::{Map, Value, json};

use crate::custom_lists;
use crate::managed::{
    Entry, FieldSet, Lookup, Path, Step, differs, entries, field_set, store_entries,
};
use crate::object::meta_mut;
use crate::patch;
use crate::scope::Req;
use crate::state::Current;
use crate::status::{ApiError, ApiResult};
use crate::update::Next;
use crate::write::{self, Part};

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
            let pairs: Vec<String> = key.iter().map(|(k, v)| format!("{k}={v}")).collect();
            s.push_str(&format!("[{}]", pairs.join(",")));
        } else if let Some(v) = seg.strip_prefix("v:") {
            s.push_str(&format!("[={v}]"));
        }
    }
    s
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
    existing: Option<&Current>,
    applied: Value,
    manager: &str,
    force: bool,
    part: Part,
) -> ApiResult<Next> {
    // A custom resource's lists merge as its schema says.
    custom_lists::with(req.res.custom_lists(req.version), || {
        apply_merged(req, name, existing, applied, manager, force, part)
    })
}

fn apply_merged(
    req: &Req<'_>,
    name: &str,
    existing: Option<&Current>,
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
        return Ok(Next::Create(defaulted(req, obj)));
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
    let new = write::merge_parts(req, &old.value, new, part);
    Ok(Next::Update(defaulted(req, new)))
}

/// A custom resource's schema defaults filled into an applied result, as
/// kube's field manager for custom resources defaults what it applied. The
/// fields defaulted are no manager's.
fn defaulted(req: &Req<'_>, mut v: Value) -> Value {
    if let Some(s) = req.res.schema(req.version) {
        s.default(&mut v);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::managed::{MAX_FIELD_PATH, from_fields_v1, record_update, to_fields_v1};

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

//! `meta.k8s.io/v1` Table responses, so `kubectl get` prints real columns:
//! a built-in kind's columns as kube prints them (`printers.rs`), a custom
//! resource's `additionalPrinterColumns`, NAME and AGE otherwise.

use serde_json::{Value, json};

use crate::printers::{self, Column};
use crate::request::Query;
use crate::resources::Resource;
use crate::status::{ApiError, ApiResult};
use crate::time::{human_age, now_secs, parse_rfc3339};

fn definition(name: &str, typ: &str, format: &str, priority: i64) -> Value {
    json!({"name": name, "type": typ, "format": format, "description": name, "priority": priority})
}

fn age(v: &Value) -> Value {
    match v["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(parse_rfc3339)
    {
        Some(t) => json!(human_age(now_secs() - t)),
        None => json!("<unknown>"),
    }
}

fn name(v: &Value) -> Value {
    json!(v["metadata"]["name"].as_str().unwrap_or_default())
}

/// The default columns: NAME and AGE.
fn default_columns() -> Vec<Column> {
    vec![
        Column {
            name: "Name",
            typ: "string",
            format: "name",
            priority: 0,
            cell: name,
        },
        Column {
            name: "Age",
            typ: "string",
            format: "",
            priority: 0,
            cell: age,
        },
    ]
}

fn built_in(res: &Resource) -> Vec<Column> {
    printers::columns(&res.group, &res.plural).unwrap_or_else(default_columns)
}

/// Column definitions for a resource.
pub(crate) fn columns(res: &Resource) -> Vec<Value> {
    if !res.builtin && !res.printer_columns.is_empty() {
        let mut cols = vec![definition("Name", "string", "name", 0)];
        for c in &res.printer_columns {
            cols.push(definition(&c.name, &c.type_, "", 0));
        }
        return cols;
    }
    built_in(res)
        .iter()
        .map(|c| {
            let format = if c.name == "Name" { "name" } else { c.format };
            definition(c.name, c.typ, format, c.priority)
        })
        .collect()
}

/// Evaluates a simple `.a.b` JSON path of a printer column.
fn json_path<'a>(v: &'a Value, path: &str) -> &'a Value {
    let mut cur = v;
    for p in path
        .trim_start_matches('.')
        .split('.')
        .filter(|p| !p.is_empty())
    {
        cur = &cur[p];
    }
    cur
}

/// Cells for one object.
pub(crate) fn cells(res: &Resource, v: &Value) -> Vec<Value> {
    if !res.builtin && !res.printer_columns.is_empty() {
        let mut c = vec![name(v)];
        for pc in &res.printer_columns {
            let val = json_path(v, &pc.json_path);
            c.push(if pc.type_ == "date" {
                match val.as_str().and_then(parse_rfc3339) {
                    Some(t) => json!(human_age(now_secs() - t)),
                    None => val.clone(),
                }
            } else {
                val.clone()
            });
        }
        return c;
    }
    built_in(res).iter().map(|c| (c.cell)(v)).collect()
}

/// What each row of a Table carries beside its cells (`includeObject`):
/// the object's metadata unless the client asks for all of it (`kubectl
/// get --sort-by` sorts by the rows' objects) or for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowObject {
    None,
    Metadata,
    Object,
}

impl RowObject {
    /// The request's `includeObject`, in kube's words when it is none of
    /// the three.
    pub(crate) fn of(q: &Query) -> ApiResult<Self> {
        match q.get("includeObject").unwrap_or_default() {
            "" | "Metadata" => Ok(Self::Metadata),
            "Object" => Ok(Self::Object),
            "None" => Ok(Self::None),
            other => Err(ApiError::bad_request(format!(
                "unrecognized includeObject value: {other:?}"
            ))),
        }
    }

    fn of_row(self, o: &Value) -> Value {
        match self {
            Self::None => Value::Null,
            Self::Metadata => crate::represent::partial(o),
            Self::Object => o.clone(),
        }
    }
}

/// A Table of `objects`; `with_columns` false leaves out the definitions (watch events after the first).
pub(crate) fn table<'a>(
    res: &Resource,
    objects: impl Iterator<Item = &'a Value>,
    rows_carry: RowObject,
    rv: Option<String>,
    cont: Option<String>,
    with_columns: bool,
) -> Value {
    let rows: Vec<Value> = objects
        .map(|o| json!({"cells": cells(res, o), "object": rows_carry.of_row(o)}))
        .collect();
    let mut meta = json!({});
    if let Some(rv) = rv {
        meta["resourceVersion"] = json!(rv);
    }
    if let Some(c) = cont {
        meta["continue"] = json!(c);
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": if with_columns { columns(res) } else { vec![] },
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::builtins;

    fn res(plural: &str) -> Resource {
        builtins()
            .into_iter()
            .find(|r| r.plural == plural && r.group != "events.k8s.io")
            .unwrap()
    }

    #[test]
    fn pod_row() {
        let pod = json!({"metadata": {"name": "p", "creationTimestamp": crate::time::now_rfc3339()},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Running", "containerStatuses": [{"ready": true, "restartCount": 2}]}});
        let c = cells(&res("pods"), &pod);
        assert_eq!(c[1], "1/2");
        assert_eq!(c[2], "Running");
        assert_eq!(c[3], "2");
        assert_eq!(columns(&res("pods")).len(), c.len());
    }

    #[test]
    fn every_builtin_has_matching_cells() {
        let obj = json!({"metadata": {"name": "x"}});
        for r in builtins() {
            assert_eq!(columns(&r).len(), cells(&r, &obj).len(), "{}", r.plural);
        }
    }

    #[test]
    fn table_shape() {
        let obj = json!({"metadata": {"name": "c"}, "data": {"a": "1"}});
        let t = table(
            &res("configmaps"),
            [&obj].into_iter(),
            RowObject::Metadata,
            Some("5".into()),
            None,
            true,
        );
        assert_eq!(t["rows"][0]["cells"][1], 1);
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(t["metadata"]["resourceVersion"], "5");
    }

    /// `includeObject`: the whole object (what `kubectl get --sort-by`
    /// sorts by), its metadata (the default) or nothing.
    #[test]
    fn rows_carry_what_include_object_asks() {
        let obj = json!({"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}});
        let row = |include: &str| {
            let q = Query::parse(Some(&format!("includeObject={include}")));
            let rows = RowObject::of(&q).unwrap();
            table(
                &res("configmaps"),
                [&obj].into_iter(),
                rows,
                None,
                None,
                false,
            )["rows"][0]["object"]
                .clone()
        };
        assert_eq!(row("Object"), obj);
        assert_eq!(row("Metadata")["kind"], "PartialObjectMetadata");
        assert_eq!(row("None"), Value::Null);
        let q = Query::parse(Some("includeObject=All"));
        assert_eq!(
            RowObject::of(&q).unwrap_err().message,
            "unrecognized includeObject value: \"All\""
        );
    }
}

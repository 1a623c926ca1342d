//! `meta.k8s.io/v1` Table responses, so `kubectl get` prints real columns:
//! a built-in kind's columns as kube prints them (`printers.rs`), a custom
//! resource's `additionalPrinterColumns`, NAME and AGE otherwise.

use serde_json::{Value, json};

use crate::printers::{self, Column};
use crate::request::Query;
use crate::resources::{PrinterColumn, Resource};
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
            cols.push(json!({"name": c.name, "type": c.type_, "format": c.format,
                "description": c.description, "priority": c.priority}));
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

/// The first value a printer column's path finds, as kube's table
/// convertor takes it (`null` when it finds none).
fn column_value<'a>(v: &'a Value, c: &PrinterColumn) -> &'a Value {
    match &c.query {
        Some(q) => jsonpath_rust::query::js_path_process(q, v)
            .ok()
            .and_then(|found| found.into_iter().next())
            .map_or(&Value::Null, |r| r.val()),
        None => json_path(v, &c.json_path),
    }
}

/// A printer column's cell as kube's `cellForJSONValue` makes it from the
/// value found: of the column's type or empty, a `date` as an age, and a
/// `string` column printing whatever it found.
fn column_cell(type_: &str, value: &Value) -> Value {
    match (type_, value) {
        (_, Value::Null) => Value::Null,
        ("integer", Value::Number(n)) => match n.as_i64() {
            Some(i) => json!(i),
            None => json!(n.as_f64().unwrap_or_default() as i64),
        },
        ("number", Value::Number(n)) => json!(n.as_f64()),
        ("boolean", Value::Bool(b)) => json!(b),
        ("date", Value::String(t)) => match parse_rfc3339(t) {
            Some(t) => json!(human_age(now_secs() - t)),
            None => json!("<invalid>"),
        },
        ("string", Value::String(s)) => json!(s),
        ("string", other) => json!(other.to_string()),
        _ => Value::Null,
    }
}

/// Cells for one object.
pub(crate) fn cells(res: &Resource, v: &Value) -> Vec<Value> {
    if !res.builtin && !res.printer_columns.is_empty() {
        let mut c = vec![name(v)];
        for pc in &res.printer_columns {
            c.push(column_cell(&pc.type_, column_value(v, pc)));
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
    fn custom_columns_follow_their_json_paths_types_and_priorities() {
        let crd = json!({"metadata": {"name": "certs.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
        "names": {"plural": "certs", "kind": "Cert"},
        "versions": [{"name": "v1", "served": true, "storage": true,
            "additionalPrinterColumns": [
                {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                {"name": "Secret", "type": "string", "jsonPath": ".spec.secret-name"},
                {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                {"name": "Issuer", "type": "string", "jsonPath": ".spec.issuerRef", "priority": 1},
                {"name": "First", "type": "string", "jsonPath": ".spec.dnsNames[0]"},
                {"name": "Renewed", "type": "date", "jsonPath": ".status.renewed"},
                {"name": "Missing", "type": "boolean", "jsonPath": ".status.nothing"},
            ]}]}});
        let certs = crate::resources::from_crd(&crd).unwrap();
        let cert = json!({"metadata": {"name": "c"},
            "spec": {"secret-name": "tls", "replicas": 2.0, "issuerRef": {"name": "ca"}, "dnsNames": ["a.com", "b.com"]},
            "status": {"renewed": "not a time", "conditions": [
                {"type": "Issuing", "status": "False"}, {"type": "Ready", "status": "True"}]}});
        assert_eq!(
            cells(&certs, &cert),
            [
                json!("c"),
                json!("True"),
                json!("tls"),
                json!(2),
                json!("{\"name\":\"ca\"}"),
                json!("a.com"),
                json!("<invalid>"),
                Value::Null
            ]
        );
        let cols = columns(&certs);
        let priorities: Vec<i64> = cols
            .iter()
            .map(|c| c["priority"].as_i64().unwrap())
            .collect();
        assert_eq!(priorities, [0, 0, 0, 0, 1, 0, 0, 0]);
        assert_eq!(cols[5]["name"], "First");
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

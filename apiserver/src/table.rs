//! `meta.k8s.io/v1` Table responses, so `kubectl get` prints real columns.

use serde_json::{Value, json};

use crate::resources::Resource;
use crate::time::{human_age, now_secs, parse_rfc3339};

fn col(name: &str, typ: &str, format: &str, priority: i64) -> Value {
    json!({"name": name, "type": typ, "format": format, "description": name, "priority": priority})
}

/// Column definitions for a resource.
pub(crate) fn columns(res: &Resource) -> Vec<Value> {
    let name = col("Name", "string", "name", 0);
    let age = col("Age", "string", "", 0);
    let mut cols = vec![name];
    match (res.group.as_str(), res.plural.as_str()) {
        ("", "pods") => cols.extend([
            col("Ready", "string", "", 0),
            col("Status", "string", "", 0),
            col("Restarts", "string", "", 0),
            age,
            col("IP", "string", "", 1),
            col("Node", "string", "", 1),
        ]),
        ("apps", "replicasets") => cols.extend([
            col("Desired", "integer", "", 0),
            col("Current", "integer", "", 0),
            col("Ready", "integer", "", 0),
            age,
        ]),
        ("apps", "deployments") => cols.extend([
            col("Ready", "string", "", 0),
            col("Up-to-date", "integer", "", 0),
            col("Available", "integer", "", 0),
            age,
        ]),
        ("", "namespaces") => cols.extend([col("Status", "string", "", 0), age]),
        ("", "nodes") => cols.extend([
            col("Status", "string", "", 0),
            col("Roles", "string", "", 0),
            age,
            col("Version", "string", "", 0),
        ]),
        ("", "configmaps") => cols.extend([col("Data", "integer", "", 0), age]),
        ("", "secrets") => cols.extend([
            col("Type", "string", "", 0),
            col("Data", "integer", "", 0),
            age,
        ]),
        ("", "services") => cols.extend([
            col("Type", "string", "", 0),
            col("Cluster-IP", "string", "", 0),
            col("External-IP", "string", "", 0),
            col("Port(s)", "string", "", 0),
            age,
        ]),
        ("apiextensions.k8s.io", _) => cols.push(col("Created At", "date", "", 0)),
        _ if !res.printer_columns.is_empty() => {
            for c in &res.printer_columns {
                cols.push(col(&c.name, &c.type_, "", 0));
            }
        }
        _ => cols.push(age),
    }
    cols
}

fn age(v: &Value) -> String {
    match v["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(parse_rfc3339)
    {
        Some(t) => human_age(now_secs() - t),
        None => "<unknown>".into(),
    }
}

fn int(v: &Value) -> Value {
    json!(v.as_i64().unwrap_or(0))
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
    let name = json!(v["metadata"]["name"].as_str().unwrap_or_default());
    let s = &v["status"];
    let deleting = v["metadata"]["deletionTimestamp"].is_string();
    match (res.group.as_str(), res.plural.as_str()) {
        ("", "pods") => {
            let total = v["spec"]["containers"].as_array().map_or(0, Vec::len);
            let statuses = s["containerStatuses"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let ready = statuses
                .iter()
                .filter(|c| c["ready"].as_bool() == Some(true))
                .count();
            let restarts: i64 = statuses
                .iter()
                .filter_map(|c| c["restartCount"].as_i64())
                .sum();
            let mut phase = s["reason"]
                .as_str()
                .or(s["phase"].as_str())
                .unwrap_or("Unknown")
                .to_owned();
            if deleting {
                phase = "Terminating".into();
            }
            vec![
                name,
                json!(format!("{ready}/{total}")),
                json!(phase),
                json!(restarts.to_string()),
                json!(age(v)),
                json!(s["podIP"].as_str().unwrap_or("<none>")),
                json!(v["spec"]["nodeName"].as_str().unwrap_or("<none>")),
            ]
        }
        ("apps", "replicasets") => {
            vec![
                name,
                int(&v["spec"]["replicas"]),
                int(&s["replicas"]),
                int(&s["readyReplicas"]),
                json!(age(v)),
            ]
        }
        ("apps", "deployments") => vec![
            name,
            json!(format!(
                "{}/{}",
                s["readyReplicas"].as_i64().unwrap_or(0),
                v["spec"]["replicas"].as_i64().unwrap_or(0)
            )),
            int(&s["updatedReplicas"]),
            int(&s["availableReplicas"]),
            json!(age(v)),
        ],
        ("", "namespaces") => vec![
            name,
            json!(s["phase"].as_str().unwrap_or("Active")),
            json!(age(v)),
        ],
        ("", "nodes") => {
            let ready = s["conditions"]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
                .map(|c| {
                    if c["status"] == "True" {
                        "Ready"
                    } else if c["status"] == "False" {
                        "NotReady"
                    } else {
                        "Unknown"
                    }
                })
                .unwrap_or("Unknown");
            vec![
                name,
                json!(ready),
                json!("<none>"),
                json!(age(v)),
                json!(s["nodeInfo"]["kubeletVersion"].as_str().unwrap_or("")),
            ]
        }
        ("", "configmaps") => {
            let n = v["data"].as_object().map_or(0, |m| m.len())
                + v["binaryData"].as_object().map_or(0, |m| m.len());
            vec![name, json!(n), json!(age(v))]
        }
        ("", "secrets") => vec![
            name,
            json!(v["type"].as_str().unwrap_or("Opaque")),
            json!(v["data"].as_object().map_or(0, |m| m.len())),
            json!(age(v)),
        ],
        ("", "services") => {
            let ports: Vec<String> = v["spec"]["ports"]
                .as_array()
                .map(|ps| {
                    ps.iter()
                        .map(|p| {
                            format!(
                                "{}/{}",
                                p["port"].as_i64().unwrap_or(0),
                                p["protocol"].as_str().unwrap_or("TCP")
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            vec![
                name,
                json!(v["spec"]["type"].as_str().unwrap_or("ClusterIP")),
                json!(v["spec"]["clusterIP"].as_str().unwrap_or("<none>")),
                json!("<none>"),
                json!(if ports.is_empty() {
                    "<none>".to_owned()
                } else {
                    ports.join(",")
                }),
                json!(age(v)),
            ]
        }
        ("apiextensions.k8s.io", _) => vec![name, v["metadata"]["creationTimestamp"].clone()],
        _ if !res.printer_columns.is_empty() => {
            let mut c = vec![name];
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
            c
        }
        _ => vec![name, json!(age(v))],
    }
}

/// A Table of `objects`; `with_columns` false leaves out the definitions (watch events after the first).
pub(crate) fn table<'a>(
    res: &Resource,
    objects: impl Iterator<Item = &'a Value>,
    rv: Option<String>,
    cont: Option<String>,
    with_columns: bool,
) -> Value {
    let rows: Vec<Value> = objects
        .map(|o| json!({"cells": cells(res, o), "object": crate::represent::partial(o)}))
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
            Some("5".into()),
            None,
            true,
        );
        assert_eq!(t["rows"][0]["cells"][1], 1);
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(t["metadata"]["resourceVersion"], "5");
    }
}

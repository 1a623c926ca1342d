//! `kubectl get` columns of the workloads: pods, pod templates, replication
//! controllers and replica sets, deployments, stateful and daemon sets,
//! controller revisions, jobs, cron jobs, pod disruption budgets and
//! horizontal pod autoscalers.

use serde_json::{Value, json};

use super::*;

fn template_containers(spec: &Value) -> (Value, Value) {
    let cs = spec["template"]["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    (
        json!(join(cs.iter().map(|c| s(&c["name"]).to_owned()))),
        json!(join(cs.iter().map(|c| s(&c["image"]).to_owned()))),
    )
}

fn containers(v: &Value) -> Value {
    template_containers(&v["spec"]).0
}

fn images(v: &Value) -> Value {
    template_containers(&v["spec"]).1
}

fn job_containers(v: &Value) -> Value {
    template_containers(&v["spec"]["jobTemplate"]["spec"]).0
}

fn job_images(v: &Value) -> Value {
    template_containers(&v["spec"]["jobTemplate"]["spec"]).1
}

fn spec_selector(v: &Value) -> Value {
    selector(&v["spec"]["selector"])
}

fn pod_status(v: &Value) -> Value {
    let st = &v["status"];
    if v["metadata"]["deletionTimestamp"].is_string() {
        return json!("Terminating");
    }
    let waiting = st["containerStatuses"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|c| {
            c["state"]["waiting"]["reason"]
                .as_str()
                .or(c["state"]["terminated"]["reason"].as_str())
        });
    json!(
        waiting
            .or(st["reason"].as_str())
            .or(st["phase"].as_str())
            .unwrap_or("Unknown")
    )
}

fn pod_ready(v: &Value) -> Value {
    let total = v["spec"]["containers"].as_array().map_or(0, Vec::len);
    let ready = v["status"]["containerStatuses"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["ready"] == true)
        .count();
    json!(format!("{ready}/{total}"))
}

fn pod_restarts(v: &Value) -> Value {
    let r: i64 = v["status"]["containerStatuses"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| n(&c["restartCount"]))
        .sum();
    json!(r.to_string())
}

fn hpa_targets(v: &Value) -> Value {
    let current = v["status"]["currentMetrics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for (i, m) in v["spec"]["metrics"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let kind = s(&m["type"]);
        let key = match kind {
            "Resource" => "resource",
            "ContainerResource" => "containerResource",
            "Pods" => "pods",
            "Object" => "object",
            _ => "external",
        };
        let target = &m[key]["target"];
        let cur = &current
            .get(i)
            .map_or(Value::Null, |c| c[key]["current"].clone());
        let (want, have) = match target["averageUtilization"].as_i64() {
            Some(u) => (
                format!("{u}%"),
                cur["averageUtilization"].as_i64().map(|x| format!("{x}%")),
            ),
            None => (
                target["averageValue"]
                    .as_str()
                    .or(target["value"].as_str())
                    .unwrap_or_default()
                    .to_owned(),
                cur["averageValue"]
                    .as_str()
                    .or(cur["value"].as_str())
                    .map(str::to_owned),
            ),
        };
        let name = s(&m[key]["name"]);
        let label = if name.is_empty() {
            String::new()
        } else {
            format!("{name}: ")
        };
        out.push(format!(
            "{label}{}/{want}",
            have.as_deref().unwrap_or("<unknown>")
        ));
    }
    or_none(&out.join(", "))
}

fn intstr(v: &Value) -> Value {
    match v {
        Value::Null => json!("N/A"),
        Value::String(s) => json!(s),
        other => json!(other.to_string()),
    }
}

/// The columns of `group`/`plural` if they are among this file's kinds.
pub(super) fn columns(group: &str, plural: &str) -> Option<Vec<Column>> {
    let cols = match (group, plural) {
        ("", "pods") => vec![
            col("Name", name),
            col("Ready", pod_ready),
            col("Status", pod_status),
            col("Restarts", pod_restarts),
            col("Age", age),
            wide("IP", |v| or_none(s(&v["status"]["podIP"]))),
            wide("Node", |v| or_none(s(&v["spec"]["nodeName"]))),
            wide("Nominated Node", |v| {
                or_none(s(&v["status"]["nominatedNodeName"]))
            }),
            wide("Readiness Gates", |v| {
                let gates = v["spec"]["readinessGates"].as_array().map_or(0, Vec::len);
                if gates == 0 {
                    json!("<none>")
                } else {
                    json!(format!("0/{gates}"))
                }
            }),
        ],
        ("", "podtemplates") => vec![
            col("Name", name),
            col("Containers", |v| template_containers(v).0),
            col("Images", |v| template_containers(v).1),
            col("Pod Labels", |v| {
                map_selector(&v["template"]["metadata"]["labels"])
            }),
        ],
        ("", "replicationcontrollers") | ("apps", "replicasets") => vec![
            col("Name", name),
            int("Desired", |v| json!(n(&v["spec"]["replicas"]))),
            int("Current", |v| json!(n(&v["status"]["replicas"]))),
            int("Ready", |v| json!(n(&v["status"]["readyReplicas"]))),
            col("Age", age),
            wide("Containers", containers),
            wide("Images", images),
            wide("Selector", |v| match &v["spec"]["selector"] {
                sel if sel.get("matchLabels").is_some()
                    || sel.get("matchExpressions").is_some() =>
                {
                    selector(sel)
                }
                sel => map_selector(sel),
            }),
        ],
        ("apps", "deployments") => vec![
            col("Name", name),
            col("Ready", |v| {
                json!(format!(
                    "{}/{}",
                    n(&v["status"]["readyReplicas"]),
                    n(&v["spec"]["replicas"])
                ))
            }),
            int("Up-to-date", |v| json!(n(&v["status"]["updatedReplicas"]))),
            int("Available", |v| json!(n(&v["status"]["availableReplicas"]))),
            col("Age", age),
            wide("Containers", containers),
            wide("Images", images),
            wide("Selector", spec_selector),
        ],
        ("apps", "statefulsets") => vec![
            col("Name", name),
            col("Ready", |v| {
                json!(format!(
                    "{}/{}",
                    n(&v["status"]["readyReplicas"]),
                    n(&v["spec"]["replicas"])
                ))
            }),
            col("Age", age),
            wide("Containers", containers),
            wide("Images", images),
        ],
        ("apps", "daemonsets") => vec![
            col("Name", name),
            int("Desired", |v| {
                json!(n(&v["status"]["desiredNumberScheduled"]))
            }),
            int("Current", |v| {
                json!(n(&v["status"]["currentNumberScheduled"]))
            }),
            int("Ready", |v| json!(n(&v["status"]["numberReady"]))),
            int("Up-to-date", |v| {
                json!(n(&v["status"]["updatedNumberScheduled"]))
            }),
            int("Available", |v| json!(n(&v["status"]["numberAvailable"]))),
            col("Node Selector", |v| {
                map_selector(&v["spec"]["template"]["spec"]["nodeSelector"])
            }),
            col("Age", age),
            wide("Containers", containers),
            wide("Images", images),
            wide("Selector", spec_selector),
        ],
        ("apps", "controllerrevisions") => vec![
            col("Name", name),
            col("Controller", |v| {
                let o = v["metadata"]["ownerReferences"]
                    .as_array()
                    .and_then(|os| os.iter().find(|o| o["controller"] == true).cloned());
                match o {
                    Some(o) => json!(format!(
                        "{}/{}",
                        s(&o["kind"]).to_lowercase(),
                        s(&o["name"])
                    )),
                    None => json!("<none>"),
                }
            }),
            int("Revision", |v| json!(n(&v["revision"]))),
            col("Age", age),
        ],
        ("batch", "jobs") => vec![
            col("Name", name),
            col("Status", |v| {
                let done = |t: &str| {
                    v["status"]["conditions"].as_array().is_some_and(|cs| {
                        cs.iter().any(|c| c["type"] == t && c["status"] == "True")
                    })
                };
                json!(if done("Complete") {
                    "Complete"
                } else if done("Failed") {
                    "Failed"
                } else if v["spec"]["suspend"] == true {
                    "Suspended"
                } else {
                    "Running"
                })
            }),
            col("Completions", |v| {
                json!(format!(
                    "{}/{}",
                    n(&v["status"]["succeeded"]),
                    v["spec"]["completions"].as_i64().unwrap_or(1)
                ))
            }),
            col("Duration", |v| {
                match (
                    v["status"]["startTime"].as_str().and_then(parse_rfc3339),
                    v["status"]["completionTime"]
                        .as_str()
                        .and_then(parse_rfc3339),
                ) {
                    (Some(a), Some(b)) => json!(human_age(b - a)),
                    (Some(a), None) => json!(human_age(now_secs() - a)),
                    _ => json!(""),
                }
            }),
            col("Age", age),
            wide("Containers", containers),
            wide("Images", images),
            wide("Selector", spec_selector),
        ],
        ("batch", "cronjobs") => vec![
            col("Name", name),
            col("Schedule", |v| json!(s(&v["spec"]["schedule"]))),
            col("Timezone", |v| or_none(s(&v["spec"]["timeZone"]))),
            col("Suspend", |v| {
                json!(if v["spec"]["suspend"] == true {
                    "True"
                } else {
                    "False"
                })
            }),
            int("Active", |v| {
                json!(v["status"]["active"].as_array().map_or(0, Vec::len))
            }),
            col("Last Schedule", |v| match v["status"]["lastScheduleTime"] {
                Value::String(_) => since(&v["status"]["lastScheduleTime"]),
                _ => json!("<none>"),
            }),
            col("Age", age),
            wide("Containers", job_containers),
            wide("Images", job_images),
            wide("Selector", |v| {
                selector(&v["spec"]["jobTemplate"]["spec"]["selector"])
            }),
        ],
        ("policy", "poddisruptionbudgets") => vec![
            col("Name", name),
            col("Min Available", |v| intstr(&v["spec"]["minAvailable"])),
            col("Max Unavailable", |v| intstr(&v["spec"]["maxUnavailable"])),
            int("Allowed Disruptions", |v| {
                json!(n(&v["status"]["disruptionsAllowed"]))
            }),
            col("Age", age),
        ],
        ("autoscaling", "horizontalpodautoscalers") => vec![
            col("Name", name),
            col("Reference", |v| {
                let r = &v["spec"]["scaleTargetRef"];
                json!(format!("{}/{}", s(&r["kind"]), s(&r["name"])))
            }),
            col("Targets", hpa_targets),
            col("MinPods", |v| {
                json!(
                    v["spec"]["minReplicas"]
                        .as_i64()
                        .map_or("<unset>".to_owned(), |m| m.to_string())
                )
            }),
            int("MaxPods", |v| json!(n(&v["spec"]["maxReplicas"]))),
            int("Replicas", |v| json!(n(&v["status"]["currentReplicas"]))),
            col("Age", age),
        ],
        _ => return None,
    };
    Some(cols)
}

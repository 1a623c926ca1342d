//! The columns `kubectl get` prints for each built-in kind, as kube's
//! printers (`pkg/printers/internalversion`) define them: names, types,
//! priorities (1 is shown with `-o wide`) and how each cell is computed.
//! Kinds not listed get NAME and AGE, as kube's default table does.

use serde_json::{Value, json};

use crate::time::{human_age, now_secs, parse_rfc3339};

/// One column: its definition and how a cell of it is computed.
pub(crate) struct Column {
    pub(crate) name: &'static str,
    pub(crate) typ: &'static str,
    pub(crate) format: &'static str,
    pub(crate) priority: i64,
    pub(crate) cell: fn(&Value) -> Value,
}

const fn col(name: &'static str, cell: fn(&Value) -> Value) -> Column {
    Column {
        name,
        typ: "string",
        format: "",
        priority: 0,
        cell,
    }
}

const fn int(name: &'static str, cell: fn(&Value) -> Value) -> Column {
    Column {
        typ: "integer",
        ..col(name, cell)
    }
}

const fn wide(name: &'static str, cell: fn(&Value) -> Value) -> Column {
    Column {
        priority: 1,
        ..col(name, cell)
    }
}

fn name(v: &Value) -> Value {
    json!(s(&v["metadata"]["name"]))
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn or_none(x: &str) -> Value {
    json!(if x.is_empty() { "<none>" } else { x })
}

fn n(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

/// How long ago an RFC 3339 time was, as kubectl says it.
fn since(t: &Value) -> Value {
    match t.as_str().and_then(parse_rfc3339) {
        Some(t) => json!(human_age(now_secs() - t)),
        None => json!("<unknown>"),
    }
}

fn age(v: &Value) -> Value {
    since(&v["metadata"]["creationTimestamp"])
}

fn created_at(v: &Value) -> Value {
    v["metadata"]["creationTimestamp"].clone()
}

fn join(items: impl Iterator<Item = String>) -> String {
    let all: Vec<String> = items.filter(|x| !x.is_empty()).collect();
    all.join(",")
}

/// A label selector (`matchLabels` and `matchExpressions`) as kubectl prints it.
fn selector(sel: &Value) -> Value {
    let mut parts: Vec<String> = sel["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", s(v)))
        .collect();
    for e in sel["matchExpressions"].as_array().into_iter().flatten() {
        let values: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .map(s)
            .collect();
        parts.push(match s(&e["operator"]) {
            "In" => format!("{} in ({})", s(&e["key"]), values.join(",")),
            "NotIn" => format!("{} notin ({})", s(&e["key"]), values.join(",")),
            "Exists" => s(&e["key"]).to_owned(),
            "DoesNotExist" => format!("!{}", s(&e["key"])),
            other => format!("{} {other}", s(&e["key"])),
        });
    }
    or_none(&parts.join(","))
}

/// A map selector (a Service's, a ReplicationController's).
fn map_selector(m: &Value) -> Value {
    or_none(&join(
        m.as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("{k}={}", s(v))),
    ))
}

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

fn node_status(v: &Value) -> Value {
    let ready = v["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
        .map(|c| match s(&c["status"]) {
            "True" => "Ready",
            "False" => "NotReady",
            _ => "Unknown",
        })
        .unwrap_or("Unknown");
    let mut status = ready.to_owned();
    if v["spec"]["unschedulable"] == true {
        status.push_str(",SchedulingDisabled");
    }
    json!(status)
}

fn node_roles(v: &Value) -> Value {
    let roles = join(
        v["metadata"]["labels"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, _)| {
                k.strip_prefix("node-role.kubernetes.io/")
                    .map(str::to_owned)
            }),
    );
    or_none(&roles)
}

fn node_address(v: &Value, typ: &str) -> Value {
    let a = v["status"]["addresses"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["type"] == typ)
        .map(|a| s(&a["address"]).to_owned())
        .unwrap_or_default();
    or_none(&a)
}

fn ports(ps: &Value) -> String {
    join(ps.as_array().into_iter().flatten().map(|p| {
        let proto = p["protocol"].as_str().unwrap_or("TCP");
        match p["nodePort"].as_i64() {
            Some(np) => format!("{}:{np}/{proto}", n(&p["port"])),
            None => format!("{}/{proto}", n(&p["port"])),
        }
    }))
}

fn service_external_ip(v: &Value) -> Value {
    let mut ips: Vec<String> = v["spec"]["externalIPs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|x| s(x).to_owned())
        .collect();
    for i in v["status"]["loadBalancer"]["ingress"]
        .as_array()
        .into_iter()
        .flatten()
    {
        ips.push(
            i["ip"]
                .as_str()
                .or(i["hostname"].as_str())
                .unwrap_or_default()
                .to_owned(),
        );
    }
    if ips.is_empty() && v["spec"]["type"] == "LoadBalancer" {
        return json!("<pending>");
    }
    or_none(&ips.join(","))
}

fn endpoints(v: &Value) -> Value {
    let mut out = Vec::new();
    for sub in v["subsets"].as_array().into_iter().flatten() {
        for a in sub["addresses"].as_array().into_iter().flatten() {
            let ports: Vec<i64> = sub["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| n(&p["port"]))
                .collect();
            if ports.is_empty() {
                out.push(s(&a["ip"]).to_owned());
            }
            for p in ports {
                out.push(format!("{}:{p}", s(&a["ip"])));
            }
        }
    }
    or_none(&out.join(","))
}

fn slice_endpoints(v: &Value) -> Value {
    or_none(&join(
        v["endpoints"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|e| e["addresses"].as_array().cloned().unwrap_or_default())
            .map(|a| s(&a).to_owned()),
    ))
}

fn slice_ports(v: &Value) -> Value {
    or_none(&join(
        v["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| n(&p["port"]).to_string()),
    ))
}

fn event_object(v: &Value, r: &str) -> Value {
    let o = &v[r];
    json!(format!(
        "{}/{}",
        s(&o["kind"]).to_lowercase(),
        s(&o["name"])
    ))
}

fn event_last_seen(v: &Value) -> Value {
    for t in [
        &v["lastTimestamp"],
        &v["eventTime"],
        &v["deprecatedLastTimestamp"],
        &v["series"]["lastObservedTime"],
    ] {
        if t.is_string() {
            return since(t);
        }
    }
    age(v)
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

fn csr_condition(v: &Value) -> Value {
    let mut cs: Vec<&str> = v["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["type"].as_str())
        .collect();
    if cs.is_empty() {
        cs.push("Pending");
    }
    if v["status"]["certificate"]
        .as_str()
        .is_some_and(|c| !c.is_empty())
    {
        cs.push("Issued");
    }
    json!(cs.join(","))
}

fn subjects(v: &Value, kind: &str) -> Value {
    json!(join(
        v["subjects"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|x| x["kind"] == kind)
            .map(|x| match kind {
                "ServiceAccount" => format!("{}/{}", s(&x["namespace"]), s(&x["name"])),
                _ => s(&x["name"]).to_owned(),
            })
    ))
}

fn quota(v: &Value, prefix: &str, keep: fn(&str) -> bool) -> Value {
    json!(join(
        v["status"]["hard"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| keep(k))
            .map(|(k, h)| format!(
                "{}{k}: {}/{}",
                prefix,
                s(&v["status"]["used"][k.as_str()]),
                s(h)
            ))
    ))
}

/// The columns of `group`/`plural`, or `None` for NAME and AGE only.
pub(crate) fn columns(group: &str, plural: &str) -> Option<Vec<Column>> {
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
        ("", "services") => vec![
            col("Name", name),
            col("Type", |v| {
                json!(v["spec"]["type"].as_str().unwrap_or("ClusterIP"))
            }),
            col("Cluster-IP", |v| or_none(s(&v["spec"]["clusterIP"]))),
            col("External-IP", service_external_ip),
            col("Port(s)", |v| or_none(&ports(&v["spec"]["ports"]))),
            col("Age", age),
            wide("Selector", |v| map_selector(&v["spec"]["selector"])),
        ],
        ("", "endpoints") => vec![
            col("Name", name),
            col("Endpoints", endpoints),
            col("Age", age),
        ],
        ("discovery.k8s.io", "endpointslices") => vec![
            col("Name", name),
            col("AddressType", |v| json!(s(&v["addressType"]))),
            col("Ports", slice_ports),
            col("Endpoints", slice_endpoints),
            col("Age", age),
        ],
        ("networking.k8s.io", "ingresses") => vec![
            col("Name", name),
            col("Class", |v| or_none(s(&v["spec"]["ingressClassName"]))),
            col("Hosts", |v| {
                let h = join(
                    v["spec"]["rules"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|r| s(&r["host"]).to_owned()),
                );
                json!(if h.is_empty() { "*".to_owned() } else { h })
            }),
            col("Address", |v| {
                json!(join(
                    v["status"]["loadBalancer"]["ingress"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|i| {
                            i["ip"]
                                .as_str()
                                .or(i["hostname"].as_str())
                                .unwrap_or_default()
                                .to_owned()
                        })
                ))
            }),
            col("Ports", |v| {
                json!(
                    if v["spec"]["tls"].as_array().is_some_and(|t| !t.is_empty()) {
                        "80, 443"
                    } else {
                        "80"
                    }
                )
            }),
            col("Age", age),
        ],
        ("networking.k8s.io", "ingressclasses") => vec![
            col("Name", name),
            col("Controller", |v| json!(s(&v["spec"]["controller"]))),
            col("Parameters", |v| {
                let p = &v["spec"]["parameters"];
                if p.is_object() {
                    json!(format!("{}/{}", s(&p["kind"]), s(&p["name"])))
                } else {
                    json!("<none>")
                }
            }),
            col("Age", age),
        ],
        ("networking.k8s.io", "networkpolicies") => vec![
            col("Name", name),
            col("Pod-Selector", |v| selector(&v["spec"]["podSelector"])),
            col("Age", age),
        ],
        ("", "nodes") => vec![
            col("Name", name),
            col("Status", node_status),
            col("Roles", node_roles),
            col("Age", age),
            col("Version", |v| {
                json!(s(&v["status"]["nodeInfo"]["kubeletVersion"]))
            }),
            wide("Internal-IP", |v| node_address(v, "InternalIP")),
            wide("External-IP", |v| node_address(v, "ExternalIP")),
            wide("OS-Image", |v| {
                json!(s(&v["status"]["nodeInfo"]["osImage"]))
            }),
            wide("Kernel-Version", |v| {
                json!(s(&v["status"]["nodeInfo"]["kernelVersion"]))
            }),
            wide("Container-Runtime", |v| {
                json!(s(&v["status"]["nodeInfo"]["containerRuntimeVersion"]))
            }),
        ],
        ("", "namespaces") => vec![
            col("Name", name),
            col("Status", |v| {
                json!(v["status"]["phase"].as_str().unwrap_or("Active"))
            }),
            col("Age", age),
        ],
        ("", "events") => vec![
            col("Last Seen", event_last_seen),
            col("Type", |v| json!(s(&v["type"]))),
            col("Reason", |v| json!(s(&v["reason"]))),
            col("Object", |v| event_object(v, "involvedObject")),
            wide("Subobject", |v| json!(s(&v["involvedObject"]["fieldPath"]))),
            wide("Source", |v| json!(s(&v["source"]["component"]))),
            col("Message", |v| json!(s(&v["message"]).trim())),
            wide("First Seen", |v| since(&v["firstTimestamp"])),
            wide("Count", |v| json!(v["count"].as_i64().unwrap_or(1))),
            wide("Name", name),
        ],
        ("events.k8s.io", "events") => vec![
            col("Last Seen", event_last_seen),
            col("Type", |v| json!(s(&v["type"]))),
            col("Reason", |v| json!(s(&v["reason"]))),
            col("Object", |v| event_object(v, "regarding")),
            wide("Subobject", |v| json!(s(&v["regarding"]["fieldPath"]))),
            wide("Source", |v| json!(s(&v["reportingController"]))),
            col("Message", |v| json!(s(&v["note"]).trim())),
            wide("First Seen", |v| since(&v["deprecatedFirstTimestamp"])),
            wide("Count", |v| {
                json!(v["series"]["count"].as_i64().unwrap_or(1))
            }),
            wide("Name", name),
        ],
        ("", "secrets") => vec![
            col("Name", name),
            col("Type", |v| json!(v["type"].as_str().unwrap_or("Opaque"))),
            int("Data", |v| {
                json!(v["data"].as_object().map_or(0, |m| m.len()))
            }),
            col("Age", age),
        ],
        ("", "serviceaccounts") => vec![
            col("Name", name),
            int("Secrets", |v| {
                json!(v["secrets"].as_array().map_or(0, Vec::len))
            }),
            col("Age", age),
        ],
        ("", "configmaps") => vec![
            col("Name", name),
            int("Data", |v| {
                json!(
                    v["data"].as_object().map_or(0, |m| m.len())
                        + v["binaryData"].as_object().map_or(0, |m| m.len())
                )
            }),
            col("Age", age),
        ],
        ("", "persistentvolumes") => vec![
            col("Name", name),
            col("Capacity", |v| json!(s(&v["spec"]["capacity"]["storage"]))),
            col("Access Modes", |v| access_modes(&v["spec"]["accessModes"])),
            col("Reclaim Policy", |v| {
                json!(
                    v["spec"]["persistentVolumeReclaimPolicy"]
                        .as_str()
                        .unwrap_or("Retain")
                )
            }),
            col("Status", |v| json!(s(&v["status"]["phase"]))),
            col("Claim", |v| {
                let c = &v["spec"]["claimRef"];
                if c.is_object() {
                    json!(format!("{}/{}", s(&c["namespace"]), s(&c["name"])))
                } else {
                    json!("")
                }
            }),
            col("StorageClass", |v| json!(s(&v["spec"]["storageClassName"]))),
            col("VolumeAttributesClass", |v| {
                or_none(s(&v["spec"]["volumeAttributesClassName"]))
            }),
            col("Reason", |v| json!(s(&v["status"]["reason"]))),
            col("Age", age),
            wide("VolumeMode", |v| {
                json!(v["spec"]["volumeMode"].as_str().unwrap_or("Filesystem"))
            }),
        ],
        ("", "persistentvolumeclaims") => vec![
            col("Name", name),
            col("Status", |v| json!(s(&v["status"]["phase"]))),
            col("Volume", |v| json!(s(&v["spec"]["volumeName"]))),
            col("Capacity", |v| {
                json!(s(&v["status"]["capacity"]["storage"]))
            }),
            col("Access Modes", |v| {
                access_modes(&v["status"]["accessModes"])
            }),
            col("StorageClass", |v| json!(s(&v["spec"]["storageClassName"]))),
            col("VolumeAttributesClass", |v| {
                or_none(s(&v["spec"]["volumeAttributesClassName"]))
            }),
            col("Age", age),
            wide("VolumeMode", |v| {
                json!(v["spec"]["volumeMode"].as_str().unwrap_or("Filesystem"))
            }),
        ],
        ("", "resourcequotas") => vec![
            col("Name", name),
            col("Age", age),
            col("Request", |v| quota(v, "", |k| !k.starts_with("limits."))),
            col("Limit", |v| quota(v, "", |k| k.starts_with("limits."))),
        ],
        ("", "limitranges")
        | ("rbac.authorization.k8s.io", "roles" | "clusterroles")
        | ("apiextensions.k8s.io", "customresourcedefinitions") => {
            vec![
                col("Name", name),
                Column {
                    format: "date-time",
                    ..col("Created At", created_at)
                },
            ]
        }
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => vec![
            col("Name", name),
            col("Role", |v| {
                json!(format!(
                    "{}/{}",
                    s(&v["roleRef"]["kind"]),
                    s(&v["roleRef"]["name"])
                ))
            }),
            col("Age", age),
            wide("Users", |v| subjects(v, "User")),
            wide("Groups", |v| subjects(v, "Group")),
            wide("ServiceAccounts", |v| subjects(v, "ServiceAccount")),
        ],
        ("certificates.k8s.io", "certificatesigningrequests") => vec![
            col("Name", name),
            col("Age", age),
            col("SignerName", |v| json!(s(&v["spec"]["signerName"]))),
            col("Requestor", |v| json!(s(&v["spec"]["username"]))),
            col(
                "RequestedDuration",
                |v| match v["spec"]["expirationSeconds"].as_i64() {
                    Some(secs) => json!(human_age(secs)),
                    None => json!("<none>"),
                },
            ),
            col("Condition", csr_condition),
        ],
        ("coordination.k8s.io", "leases") => vec![
            col("Name", name),
            col("Holder", |v| json!(s(&v["spec"]["holderIdentity"]))),
            col("Age", age),
        ],
        ("storage.k8s.io", "storageclasses") => vec![
            col("Name", name),
            col("Provisioner", |v| json!(s(&v["provisioner"]))),
            col("ReclaimPolicy", |v| {
                json!(v["reclaimPolicy"].as_str().unwrap_or("Delete"))
            }),
            col("VolumeBindingMode", |v| {
                json!(v["volumeBindingMode"].as_str().unwrap_or("Immediate"))
            }),
            col("AllowVolumeExpansion", |v| {
                json!(
                    v["allowVolumeExpansion"]
                        .as_bool()
                        .unwrap_or(false)
                        .to_string()
                )
            }),
            col("Age", age),
        ],
        ("scheduling.k8s.io", "priorityclasses") => vec![
            col("Name", name),
            int("Value", |v| json!(n(&v["value"]))),
            col("Global-Default", |v| {
                json!(v["globalDefault"].as_bool().unwrap_or(false).to_string())
            }),
            col("Age", age),
            col("PreemptionPolicy", |v| {
                json!(
                    v["preemptionPolicy"]
                        .as_str()
                        .unwrap_or("PreemptLowerPriority")
                )
            }),
        ],
        ("node.k8s.io", "runtimeclasses") => vec![
            col("Name", name),
            col("Handler", |v| json!(s(&v["handler"]))),
            col("Age", age),
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
        ("apiregistration.k8s.io", "apiservices") => vec![
            col("Name", name),
            col("Service", |v| {
                let svc = &v["spec"]["service"];
                if svc.is_object() {
                    json!(format!("{}/{}", s(&svc["namespace"]), s(&svc["name"])))
                } else {
                    json!("Local")
                }
            }),
            col("Available", |v| {
                let c = v["status"]["conditions"]
                    .as_array()
                    .and_then(|cs| cs.iter().find(|c| c["type"] == "Available").cloned());
                match c {
                    Some(c) if c["status"] == "True" => json!("True"),
                    Some(c) => json!(format!("{} ({})", s(&c["status"]), s(&c["reason"]))),
                    None => json!("Unknown"),
                }
            }),
            col("Age", age),
        ],
        _ => return None,
    };
    Some(cols)
}

fn intstr(v: &Value) -> Value {
    match v {
        Value::Null => json!("N/A"),
        Value::String(s) => json!(s),
        other => json!(other.to_string()),
    }
}

fn access_modes(v: &Value) -> Value {
    json!(join(v.as_array().into_iter().flatten().map(|m| {
        match s(m) {
            "ReadWriteOnce" => "RWO".to_owned(),
            "ReadOnlyMany" => "ROX".to_owned(),
            "ReadWriteMany" => "RWX".to_owned(),
            "ReadWriteOncePod" => "RWOP".to_owned(),
            other => other.to_owned(),
        }
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(group: &str, plural: &str, v: &Value) -> Vec<(String, Value)> {
        columns(group, plural)
            .unwrap()
            .into_iter()
            .map(|c| (c.name.to_owned(), (c.cell)(v)))
            .collect()
    }

    fn cell(group: &str, plural: &str, v: &Value, column: &str) -> Value {
        row(group, plural, v)
            .into_iter()
            .find(|(n, _)| n == column)
            .unwrap_or_else(|| panic!("no column {column}"))
            .1
    }

    #[test]
    fn cells_as_kubectl_prints_them() {
        let hpa = json!({"metadata": {"name": "web"}, "spec": {"minReplicas": 2, "maxReplicas": 5,
            "scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}});
        assert_eq!(
            cell("autoscaling", "horizontalpodautoscalers", &hpa, "Reference"),
            "Deployment/web"
        );
        assert_eq!(
            cell("autoscaling", "horizontalpodautoscalers", &hpa, "Targets"),
            "cpu: <unknown>/80%"
        );
        assert_eq!(
            cell("autoscaling", "horizontalpodautoscalers", &hpa, "MinPods"),
            "2"
        );
        let node = json!({"spec": {"unschedulable": true}, "status": {"conditions": [{"type": "Ready", "status": "True"}]},
            "metadata": {"labels": {"node-role.kubernetes.io/control-plane": ""}}});
        assert_eq!(
            cell("", "nodes", &node, "Status"),
            "Ready,SchedulingDisabled"
        );
        assert_eq!(cell("", "nodes", &node, "Roles"), "control-plane");
        let svc = json!({"spec": {"type": "NodePort", "clusterIP": "10.0.0.1", "ports": [{"port": 80, "nodePort": 30080}]}});
        assert_eq!(cell("", "services", &svc, "Port(s)"), "80:30080/TCP");
        let ev = json!({"type": "Normal", "reason": "Scheduled", "message": "ok ", "involvedObject": {"kind": "Pod", "name": "p"}});
        assert_eq!(row("", "events", &ev)[0].0, "Last Seen");
        assert_eq!(cell("", "events", &ev, "Object"), "pod/p");
        let api = json!({"metadata": {"name": "v1.apps"}, "status": {"conditions": [{"type": "Available", "status": "True"}]}});
        assert_eq!(
            cell("apiregistration.k8s.io", "apiservices", &api, "Service"),
            "Local"
        );
        assert_eq!(
            cell("apiregistration.k8s.io", "apiservices", &api, "Available"),
            "True"
        );
        let csr = json!({"spec": {"signerName": "x", "username": "u"}, "status": {}});
        assert_eq!(
            cell(
                "certificates.k8s.io",
                "certificatesigningrequests",
                &csr,
                "Condition"
            ),
            "Pending"
        );
        let d = json!({"spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": {"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "busybox"}]}}},
            "status": {"readyReplicas": 1}});
        assert_eq!(cell("apps", "deployments", &d, "Ready"), "1/3");
        assert_eq!(cell("apps", "deployments", &d, "Images"), "nginx,busybox");
        assert_eq!(cell("apps", "deployments", &d, "Selector"), "app=web");
    }
}

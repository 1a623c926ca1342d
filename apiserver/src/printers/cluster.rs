//! `kubectl get` columns of cluster-level kinds: nodes, namespaces, both
//! kinds of events, limit ranges, RBAC, custom resource definitions,
//! certificate signing requests, leases, priority and runtime classes and
//! API services.

use serde_json::{Value, json};

use super::*;

fn created_at(v: &Value) -> Value {
    v["metadata"]["creationTimestamp"].clone()
}

fn node_status(v: &Value) -> Value {
    let ready = v["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
        // As kubectl prints it: `NotReady` for False and Unknown alike;
        // `Unknown` only when the node has no Ready condition at all.
        .map(|c| match s(&c["status"]) {
            "True" => "Ready",
            _ => "NotReady",
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

/// The object an Event is about, `kind/name` (the kind alone without a name).
fn event_object(v: &Value) -> Value {
    let o = &v["involvedObject"];
    let kind = s(&o["kind"]).to_lowercase();
    match s(&o["name"]) {
        "" => json!(kind),
        name => json!(format!("{kind}/{name}")),
    }
}

/// When an Event was first seen: its `firstTimestamp`, else its
/// `eventTime` (an event recorded through events.k8s.io has only that).
fn event_first_seen(v: &Value) -> Value {
    if v["firstTimestamp"].is_string() {
        since(&v["firstTimestamp"])
    } else {
        since(&v["eventTime"])
    }
}

/// When an Event was last seen: its series' last observation, else its
/// `lastTimestamp`, else when it was first seen (kube's `printEvent`).
fn event_last_seen(v: &Value) -> Value {
    if v["series"].is_object() {
        since(&v["series"]["lastObservedTime"])
    } else if v["lastTimestamp"].is_string() {
        since(&v["lastTimestamp"])
    } else {
        event_first_seen(v)
    }
}

/// How often an Event happened: its series' count, else its `count`, and 1
/// for a singleton (which events.k8s.io records without a count).
fn event_count(v: &Value) -> Value {
    if v["series"].is_object() {
        json!(v["series"]["count"].as_i64().unwrap_or(0))
    } else {
        json!(v["count"].as_i64().filter(|c| *c != 0).unwrap_or(1))
    }
}

/// Who recorded an Event, as kube prints it: the component (else the
/// reporting controller), then `, ` and the host (else the reporting
/// instance) when there is one.
fn event_source(v: &Value) -> Value {
    fn first<'a>(a: &'a Value, b: &'a Value) -> &'a str {
        let a = s(a);
        if a.is_empty() { s(b) } else { a }
    }
    let component = first(&v["source"]["component"], &v["reportingComponent"]);
    let instance = first(&v["source"]["host"], &v["reportingInstance"]);
    if instance.is_empty() {
        json!(component)
    } else {
        json!(format!("{component}, {instance}"))
    }
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

/// The columns of `group`/`plural` if they are among this file's kinds.
pub(super) fn columns(group: &str, plural: &str) -> Option<Vec<Column>> {
    let cols = match (group, plural) {
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
        // Both groups' Events are stored in the core form (`convert.rs`),
        // and kube prints them alike.
        ("", "events") | ("events.k8s.io", "events") => vec![
            col("Last Seen", event_last_seen),
            col("Type", |v| json!(s(&v["type"]))),
            col("Reason", |v| json!(s(&v["reason"]))),
            col("Object", event_object),
            wide("Subobject", |v| json!(s(&v["involvedObject"]["fieldPath"]))),
            wide("Source", event_source),
            col("Message", |v| json!(s(&v["message"]).trim())),
            wide("First Seen", event_first_seen),
            wide("Count", event_count),
            wide("Name", name),
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

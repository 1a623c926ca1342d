//! The columns `kubectl get` prints for each built-in kind, as kube's
//! printers (`pkg/printers/internalversion`) define them: names, types,
//! priorities (1 is shown with `-o wide`) and how each cell is computed.
//! Kinds not listed get NAME and AGE, as kube's default table does.

mod cluster;
mod network;
mod storage;
mod workloads;

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

fn join(items: impl Iterator<Item = String>) -> String {
    let all: Vec<String> = items.filter(|x| !x.is_empty()).collect();
    all.join(",")
}

/// A label selector (`matchLabels` and `matchExpressions`) as kubectl prints
/// it: `LabelSelectorAsSelector(..).String()`, its requirements sorted by
/// key and the values of `in` and `notin` sorted.
fn selector(sel: &Value) -> Value {
    let mut parts: Vec<(&str, String)> = sel["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), format!("{k}={}", s(v))))
        .collect();
    for e in sel["matchExpressions"].as_array().into_iter().flatten() {
        let mut values: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .map(s)
            .collect();
        values.sort_unstable();
        let key = s(&e["key"]);
        parts.push((
            key,
            match s(&e["operator"]) {
                "In" => format!("{key} in ({})", values.join(",")),
                "NotIn" => format!("{key} notin ({})", values.join(",")),
                "Exists" => key.to_owned(),
                "DoesNotExist" => format!("!{key}"),
                other => format!("{key} {other}"),
            },
        ));
    }
    parts.sort_by(|a, b| a.0.cmp(b.0));
    let parts: Vec<String> = parts.into_iter().map(|(_, p)| p).collect();
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

/// The columns of `group`/`plural`, or `None` for NAME and AGE only.
pub(crate) fn columns(group: &str, plural: &str) -> Option<Vec<Column>> {
    workloads::columns(group, plural)
        .or_else(|| network::columns(group, plural))
        .or_else(|| cluster::columns(group, plural))
        .or_else(|| storage::columns(group, plural))
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
    fn selectors_print_sorted_by_key() {
        let sel = json!({
            "matchLabels": {"tier": "web", "app": "shop"},
            "matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["b", "a"]},
                {"key": "env", "operator": "NotIn", "values": ["prod", "dev"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "beta", "operator": "Exists"},
            ],
        });
        assert_eq!(
            selector(&sel),
            "app=shop,beta,!canary,env notin (dev,prod),tier=web,zone in (a,b)"
        );
        assert_eq!(selector(&json!({})), "<none>");
    }

    #[test]
    fn claims_and_volumes_as_kubectl_prints_them() {
        let pending = json!({"metadata": {"name": "data"},
            "spec": {"resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Pending", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}});
        let row = row("", "persistentvolumeclaims", &pending);
        let at = |c: &str| row.iter().find(|(n, _)| n == c).unwrap().1.clone();
        assert_eq!((at("Capacity"), at("Access Modes")), (json!(""), json!("")));
        assert_eq!(at("VolumeAttributesClass"), "<unset>");
        assert_eq!(at("VolumeMode"), "<unset>");
        let mut bound = pending.clone();
        bound["spec"]["volumeName"] = json!("pv-1");
        bound["spec"]["volumeAttributesClassName"] = json!("fast");
        let claim = |column| cell("", "persistentvolumeclaims", &bound, column);
        assert_eq!(claim("Capacity"), "1Gi");
        assert_eq!(claim("Access Modes"), "RWO");
        assert_eq!(claim("VolumeAttributesClass"), "fast");
        let pv = json!({"metadata": {"name": "pv-1", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"volumeMode": "Block"}, "status": {"phase": "Bound"}});
        let volume = |column| cell("", "persistentvolumes", &pv, column);
        assert_eq!(volume("Status"), "Terminating");
        assert_eq!(volume("VolumeAttributesClass"), "<unset>");
        assert_eq!(volume("VolumeMode"), "Block");
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
        // kubectl prints `NotReady` for a Ready condition that is False or
        // Unknown, and `Unknown` only for a node without one.
        for (ready, want) in [("False", "NotReady"), ("Unknown", "NotReady")] {
            let node = json!({"status": {"conditions": [{"type": "Ready", "status": ready}]}});
            assert_eq!(cell("", "nodes", &node, "Status"), want, "{ready}");
        }
        assert_eq!(cell("", "nodes", &json!({}), "Status"), "Unknown");
        let svc = json!({"spec": {"type": "NodePort", "clusterIP": "10.0.0.1", "ports": [{"port": 80, "nodePort": 30080}]}});
        assert_eq!(cell("", "services", &svc, "Port(s)"), "80:30080/TCP");
        let ev = json!({"type": "Normal", "reason": "Scheduled", "message": "ok ", "involvedObject": {"kind": "Pod", "name": "p"}});
        assert_eq!(row("", "events", &ev)[0].0, "Last Seen");
        assert_eq!(cell("", "events", &ev, "Object"), "pod/p");
        assert_eq!(cell("", "events", &ev, "Count"), 1);
        assert_eq!(cell("", "events", &ev, "First Seen"), "<unknown>");
        // kube's `formatEventSource`: the component (else the reporting
        // controller), and the host (else the reporting instance).
        for (event, want) in [
            (
                json!({"source": {"component": "kubelet", "host": "n1"}}),
                "kubelet, n1",
            ),
            (
                json!({"source": {"component": "replicaset-controller"}}),
                "replicaset-controller",
            ),
            (
                json!({"reportingComponent": "default-scheduler", "reportingInstance": "s-1"}),
                "default-scheduler, s-1",
            ),
        ] {
            assert_eq!(cell("", "events", &event, "Source"), want, "{event}");
        }
        // An events.k8s.io event (stored as a core one): no timestamps or
        // count but its series'.
        let series = json!({"involvedObject": {"kind": "Node"}, "eventTime": "2026-01-01T00:00:00.000000Z",
            "series": {"count": 4, "lastObservedTime": "2026-01-01T00:00:09.000000Z"}});
        assert_eq!(
            row("events.k8s.io", "events", &series),
            row("", "events", &series)
        );
        assert_eq!(cell("", "events", &series, "Count"), 4);
        assert_eq!(cell("", "events", &series, "Object"), "node");
        assert_ne!(cell("", "events", &series, "First Seen"), "<unknown>");
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

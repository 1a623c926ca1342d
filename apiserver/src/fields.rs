//! Field selectors as each built-in kind supports them in a cluster: which
//! fields a selector may name (kube's field label conversion functions,
//! with their error messages) and the value each field has (the registries'
//! `GetAttrs`: a missing boolean is `false`, a missing count `0`).

use std::borrow::Cow;

use serde_json::Value;

use crate::resources::Resource;

/// The fields of kinds with their own conversion function (beyond these,
/// kube accepts `metadata.name` and `metadata.namespace` only), by the
/// resource's group and plural.
pub(crate) fn own_fields_of(group: &str, plural: &str) -> Option<&'static [&'static str]> {
    let fields: &'static [&'static str] = match (group, plural) {
        ("", "pods") => &[
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
            // What clients before v1 sent for `spec.nodeName`.
            "spec.host",
        ],
        ("", "nodes") => &["metadata.name", "spec.unschedulable"],
        ("", "replicationcontrollers") => {
            &["metadata.name", "metadata.namespace", "status.replicas"]
        }
        ("", "events") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
            "metadata.namespace",
            "metadata.name",
        ],
        ("", "namespaces") => &["status.phase", "metadata.name"],
        ("", "secrets") => &["type", "metadata.namespace", "metadata.name"],
        ("", "services") => &[
            "metadata.namespace",
            "metadata.name",
            "spec.clusterIP",
            "spec.type",
        ],
        ("apps", "replicasets") => &["metadata.name", "metadata.namespace", "status.replicas"],
        ("apps", "statefulsets") => &["metadata.name", "metadata.namespace", "status.successful"],
        ("batch", "jobs") => &["metadata.name", "metadata.namespace", "status.successful"],
        ("certificates.k8s.io", "certificatesigningrequests") => {
            &["metadata.name", "spec.signerName"]
        }
        _ => return None,
    };
    Some(fields)
}

/// The fields an `events.k8s.io` field selector may name and the core
/// Event field each is (kube's `AddFieldLabelConversionsForEvent`; the
/// default conversion takes the name and namespace, and refuses the rest).
const EVENTS_API_FIELDS: [(&str, &str); 10] = [
    ("reason", "reason"),
    ("regarding.kind", "involvedObject.kind"),
    ("regarding.namespace", "involvedObject.namespace"),
    ("regarding.name", "involvedObject.name"),
    ("regarding.uid", "involvedObject.uid"),
    ("regarding.apiVersion", "involvedObject.apiVersion"),
    (
        "regarding.resourceVersion",
        "involvedObject.resourceVersion",
    ),
    ("regarding.fieldPath", "involvedObject.fieldPath"),
    ("reportingController", "reportingComponent"),
    ("type", "type"),
];

/// The core Event field an `events.k8s.io` field selector's `field` is.
pub(crate) fn core_event_field(field: &str) -> Option<&'static str> {
    EVENTS_API_FIELDS
        .iter()
        .find(|(theirs, _)| *theirs == field)
        .map(|(_, core)| *core)
}

/// Whether a field selector may name `field` for `res` in `version`; the
/// error is kube's message (a `400 BadRequest`).
pub(crate) fn check(res: &Resource, version: &str, field: &str) -> Result<(), String> {
    let own = if res.is_events_api() {
        core_event_field(field).is_some()
    } else {
        match own_fields_of(&res.group, &res.plural) {
            Some(fields) if fields.contains(&field) => true,
            Some(_) => return Err(format!("field label not supported: {field}")),
            None => res.selectable_fields(version).iter().any(|f| f == field),
        }
    };
    if own || matches!(field, "metadata.name" | "metadata.namespace") {
        Ok(())
    } else {
        Err(format!(
            "{field:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        ))
    }
}

fn string(v: &Value) -> Cow<'_, str> {
    Cow::Borrowed(v.as_str().unwrap_or_default())
}

fn boolean(v: &Value) -> Cow<'static, str> {
    Cow::Borrowed(if v.as_bool() == Some(true) {
        "true"
    } else {
        "false"
    })
}

fn count(v: &Value) -> Cow<'static, str> {
    Cow::Owned(v.as_i64().unwrap_or(0).to_string())
}

/// The value of `field` in `obj`, of resource `group`/`plural`, as the
/// selector compares it (borrowed from `obj` where it is a string there).
pub(crate) fn value<'a>(group: &str, plural: &str, obj: &'a Value, field: &str) -> Cow<'a, str> {
    let meta = &obj["metadata"];
    match (group, plural, field) {
        (_, _, "metadata.name") => string(&meta["name"]),
        (_, _, "metadata.namespace") => string(&meta["namespace"]),
        ("", "pods", "spec.host") => string(&obj["spec"]["nodeName"]),
        ("", "pods", "spec.hostNetwork") => boolean(&obj["spec"]["hostNetwork"]),
        // The first of `podIPs`, as kube (which ignores `podIP` itself).
        ("", "pods", "status.podIP") => string(&obj["status"]["podIPs"][0]["ip"]),
        // Accepted by kube's conversion but not among the pod's fields:
        // empty for every pod.
        ("", "pods", "status.podIPs") => Cow::Borrowed(""),
        ("", "nodes", "spec.unschedulable") => boolean(&obj["spec"]["unschedulable"]),
        ("", "replicationcontrollers", "status.replicas")
        | ("apps", "replicasets", "status.replicas") => count(&obj["status"]["replicas"]),
        ("batch", "jobs", "status.successful") => count(&obj["status"]["succeeded"]),
        // StatefulSets have no such field: kube selects on an empty value.
        ("apps", "statefulsets", "status.successful") => Cow::Borrowed(""),
        // The reporting component when the deprecated source is empty.
        ("", "events", "source") => match obj["source"]["component"].as_str() {
            Some(c) if !c.is_empty() => Cow::Borrowed(c),
            _ => string(&obj["reportingComponent"]),
        },
        _ => path(obj, field),
    }
}

/// The value of a custom resource's selectable field `path` in `obj`, as
/// kube's `selectableFieldSet` gives it: a string as it is, an integer or
/// a boolean printed; anything else (or nothing) as no value, which a
/// selector compares as "".
pub(crate) fn selectable_value(obj: &Value, path: &str) -> Option<String> {
    match at(obj, path)? {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

/// The value at a dotted path, if there is one.
fn at<'a>(v: &'a Value, field: &str) -> Option<&'a Value> {
    field.split('.').try_fold(v, |v, p| v.get(p))
}

/// A dotted path's string value (empty when missing).
fn path<'a>(v: &'a Value, field: &str) -> Cow<'a, str> {
    match at(v, field) {
        Some(Value::String(s)) => Cow::Borrowed(s),
        None | Some(Value::Null) => Cow::Borrowed(""),
        Some(other) => Cow::Owned(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::builtins;
    use serde_json::json;

    fn res(group: &str, plural: &str) -> Resource {
        builtins()
            .into_iter()
            .find(|r| r.group == group && r.plural == plural)
            .unwrap()
    }

    #[test]
    fn each_kind_accepts_what_kube_accepts() {
        let nodes = res("", "nodes");
        assert!(check(&nodes, "v1", "spec.unschedulable").is_ok());
        assert_eq!(
            check(&nodes, "v1", "metadata.namespace").unwrap_err(),
            "field label not supported: metadata.namespace"
        );
        let cms = res("", "configmaps");
        assert!(check(&cms, "v1", "metadata.namespace").is_ok());
        assert_eq!(
            check(&cms, "v1", "data.x").unwrap_err(),
            "\"data.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        for f in [
            "spec.schedulerName",
            "spec.serviceAccountName",
            "status.podIP",
            "status.nominatedNodeName",
        ] {
            assert!(check(&res("", "pods"), "v1", f).is_ok(), "{f}");
        }
        assert!(check(&res("", "services"), "v1", "spec.type").is_ok());
        assert!(
            check(
                &res("certificates.k8s.io", "certificatesigningrequests"),
                "v1",
                "spec.signerName"
            )
            .is_ok()
        );
    }

    #[test]
    fn values_default_as_in_go() {
        let node =
            |spec| value("", "nodes", &json!({ "spec": spec }), "spec.unschedulable").into_owned();
        assert_eq!(node(json!({})), "false");
        assert_eq!(node(json!({"unschedulable": true})), "true");
        let pod = json!({"spec": {"nodeName": "n1"}, "status": {"podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}]}});
        assert_eq!(value("", "pods", &pod, "spec.hostNetwork"), "false");
        assert_eq!(value("", "pods", &pod, "spec.host"), "n1");
        assert_eq!(value("", "pods", &pod, "status.podIP"), "10.0.0.1");
        assert_eq!(
            value("apps", "replicasets", &json!({}), "status.replicas"),
            "0"
        );
        let job = json!({"status": {"succeeded": 2}});
        assert_eq!(value("batch", "jobs", &job, "status.successful"), "2");
        let event = json!({"source": {}, "reportingComponent": "kubelet"});
        assert_eq!(value("", "events", &event, "source"), "kubelet");
    }
}

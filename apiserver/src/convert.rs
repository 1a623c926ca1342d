//! Conversion between the versions a built-in kind is served in:
//! HorizontalPodAutoscaler is stored as `autoscaling/v2` and also served as
//! `autoscaling/v1` (what `kubectl autoscale` writes). As kube converts
//! them: v1's `targetCPUUtilizationPercentage` is v2's CPU `Utilization`
//! resource metric, and what v1 has no field for (other metrics, behavior,
//! conditions, other current metrics) rides in `autoscaling.alpha.kubernetes.io/*`
//! annotations so that a v1 client's read-modify-write keeps it. (kube writes
//! those annotations in v1's alpha metric format; here they hold the v2
//! objects as they are.)
//!
//! Events are one kind served by two groups: `events.k8s.io/v1` Events are
//! stored as core v1 Events, with kube's field renames
//! ([`EVENT_RENAMES`]).

use serde_json::{Map, Value, json};

use crate::resources::Resource;

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";

/// Core v1 Event fields and their `events.k8s.io/v1` names (kube's
/// `Convert_v1_Event_To_core_Event` and back); the other fields are the same.
const EVENT_RENAMES: [(&str, &str); 7] = [
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
];

/// Whether `version` of `res` is not its stored form.
pub(crate) fn needed(res: &Resource, version: &str) -> bool {
    res.is_events_api()
        || (res.builtin
            && res.group == "autoscaling"
            && res.plural == "horizontalpodautoscalers"
            && version == "v1")
}

/// The stored object as `version` shows it.
pub(crate) fn to_version(res: &Resource, version: &str, stored: &Value) -> Value {
    let mut v = stored.clone();
    v["apiVersion"] = json!(res.api_version(version));
    if res.is_events_api() {
        rename(&mut v, |(core, events)| (core, events));
    } else if needed(res, version) {
        hpa_v2_to_v1(&mut v);
    }
    v
}

/// An object sent as `version`, in its stored form.
pub(crate) fn from_version(res: &Resource, version: &str, mut v: Value) -> Value {
    if needed(res, version) && v.is_object() {
        if res.is_events_api() {
            rename(&mut v, |(core, events)| (events, core));
        } else {
            hpa_v1_to_v2(&mut v);
        }
        v["apiVersion"] = json!(res.stored_api_version());
    }
    v
}

/// Renames an Event's fields, each pair of [`EVENT_RENAMES`] taken as
/// `(from, to)` by `direction`. A field already under its new name (a body
/// that mixes the two forms) is dropped first, as kube's typed decoding
/// never sees it.
fn rename(
    v: &mut Value,
    direction: impl Fn((&'static str, &'static str)) -> (&'static str, &'static str),
) {
    let Some(m) = v.as_object_mut() else {
        return;
    };
    let moved: Vec<(&str, Option<Value>)> = EVENT_RENAMES
        .iter()
        .map(|&pair| {
            let (from, to) = direction(pair);
            m.remove(to);
            (to, m.remove(from))
        })
        .collect();
    for (to, value) in moved {
        if let Some(value) = value {
            m.insert(to.to_owned(), value);
        }
    }
}

fn is_cpu_utilization(m: &Value) -> bool {
    m["type"] == "Resource"
        && m["resource"]["name"] == "cpu"
        && m["resource"]["target"]["type"] == "Utilization"
}

fn is_cpu_current(m: &Value) -> bool {
    m["type"] == "Resource"
        && m["resource"]["name"] == "cpu"
        && m["resource"]["current"]["averageUtilization"].is_i64()
}

fn annotations(v: &mut Value) -> &mut Map<String, Value> {
    let meta = crate::object::meta_mut(v);
    if !meta.get("annotations").is_some_and(Value::is_object) {
        meta.insert("annotations".into(), json!({}));
    }
    meta["annotations"]
        .as_object_mut()
        .expect("made an object above")
}

fn take(m: &mut Map<String, Value>, k: &str) -> Option<Value> {
    m.remove(k)
}

/// Moves `value` into annotation `key` as JSON text, unless it is empty.
fn stash(v: &mut Value, key: &str, value: Value) {
    let empty = value.is_null() || value.as_array().is_some_and(Vec::is_empty);
    if !empty {
        annotations(v).insert(
            key.into(),
            json!(serde_json::to_string(&value).expect("JSON values serialize")),
        );
    }
}

/// Takes annotation `key` back as a JSON value.
fn unstash(v: &mut Value, key: &str) -> Option<Value> {
    let a = v
        .get_mut("metadata")?
        .get_mut("annotations")?
        .as_object_mut()?;
    let text = a.remove(key)?;
    if a.is_empty() {
        crate::object::meta_mut(v).remove("annotations");
    }
    serde_json::from_str(text.as_str()?).ok()
}

fn hpa_v2_to_v1(v: &mut Value) {
    let mut spec = v["spec"].as_object().cloned().unwrap_or_default();
    let metrics = take(&mut spec, "metrics")
        .and_then(|m| m.as_array().cloned())
        .unwrap_or_default();
    let behavior = take(&mut spec, "behavior");
    let (cpu, others): (Vec<Value>, Vec<Value>) = metrics.into_iter().partition(is_cpu_utilization);
    if let Some(u) = cpu
        .first()
        .and_then(|m| m["resource"]["target"]["averageUtilization"].as_i64())
    {
        spec.insert("targetCPUUtilizationPercentage".into(), json!(u));
    }
    v["spec"] = Value::Object(spec);
    stash(v, METRICS, Value::Array(others));
    stash(v, BEHAVIOR, behavior.unwrap_or(Value::Null));
    if let Some(mut status) = v["status"].as_object().cloned() {
        let current = take(&mut status, "currentMetrics")
            .and_then(|m| m.as_array().cloned())
            .unwrap_or_default();
        let conditions = take(&mut status, "conditions");
        let (cpu, others): (Vec<Value>, Vec<Value>) = current.into_iter().partition(is_cpu_current);
        if let Some(u) = cpu
            .first()
            .and_then(|m| m["resource"]["current"]["averageUtilization"].as_i64())
        {
            status.insert("currentCPUUtilizationPercentage".into(), json!(u));
        }
        v["status"] = Value::Object(status);
        stash(v, CURRENT_METRICS, Value::Array(others));
        stash(v, CONDITIONS, conditions.unwrap_or(Value::Null));
    }
}

fn hpa_v1_to_v2(v: &mut Value) {
    let mut spec = v["spec"].as_object().cloned().unwrap_or_default();
    let mut metrics = Vec::new();
    if let Some(u) = take(&mut spec, "targetCPUUtilizationPercentage").filter(|u| !u.is_null()) {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": u}}}));
    }
    if let Some(Value::Array(more)) = unstash(v, METRICS) {
        metrics.extend(more);
    }
    if !metrics.is_empty() {
        spec.insert("metrics".into(), Value::Array(metrics));
    }
    if let Some(b) = unstash(v, BEHAVIOR) {
        spec.insert("behavior".into(), b);
    }
    v["spec"] = Value::Object(spec);
    let current_more = unstash(v, CURRENT_METRICS);
    let conditions = unstash(v, CONDITIONS);
    if let Some(mut status) = v["status"].as_object().cloned() {
        let mut current = Vec::new();
        if let Some(u) =
            take(&mut status, "currentCPUUtilizationPercentage").filter(|u| !u.is_null())
        {
            current.push(json!({"type": "Resource", "resource": {"name": "cpu",
                "current": {"averageUtilization": u}}}));
        }
        if let Some(Value::Array(more)) = current_more {
            current.extend(more);
        }
        if !current.is_empty() {
            status.insert("currentMetrics".into(), Value::Array(current));
        }
        if let Some(c) = conditions {
            status.insert("conditions".into(), c);
        }
        v["status"] = Value::Object(status);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::builtins;

    fn hpa() -> Resource {
        builtins()
            .into_iter()
            .find(|r| r.plural == "horizontalpodautoscalers")
            .unwrap()
    }

    #[test]
    fn v1_cpu_target_is_a_v2_resource_metric_and_back() {
        let res = hpa();
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                "minReplicas": 2, "maxReplicas": 5, "targetCPUUtilizationPercentage": 80}});
        let v2 = from_version(&res, "v1", v1.clone());
        assert_eq!(v2["apiVersion"], "autoscaling/v2");
        assert_eq!(
            v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            80
        );
        assert!(v2["spec"].get("targetCPUUtilizationPercentage").is_none());
        assert!(v2["metadata"].get("annotations").is_none());
        assert_eq!(to_version(&res, "v1", &v2), v1);
    }

    #[test]
    fn what_v1_cannot_say_survives_a_round_trip() {
        let res = hpa();
        let v2 = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "annotations": {"a": "b"}},
            "spec": {"maxReplicas": 3, "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
                {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1k"}}}],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}},
            "status": {"currentReplicas": 1, "desiredReplicas": 1,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 12}}}],
                "conditions": [{"type": "AbleToScale", "status": "True"}]}});
        let v1 = to_version(&res, "v1", &v2);
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 50);
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 12);
        assert!(
            v1["metadata"]["annotations"][METRICS]
                .as_str()
                .unwrap()
                .contains("qps")
        );
        assert!(v1["spec"].get("metrics").is_none() && v1["spec"].get("behavior").is_none());
        assert_eq!(from_version(&res, "v1", v1), v2);
    }
}

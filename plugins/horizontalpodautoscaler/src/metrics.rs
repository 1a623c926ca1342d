//! The metrics an HPA scales on, and how fetching each one fails on a
//! server that serves no metrics API: upstream's error texts, as its
//! metrics clients, replica calculator and controller wrap them in turn.
//!
//! Resource and ContainerResource metrics come from `metrics.k8s.io`,
//! which client-go finds missing with a bare 404; Pods and Object metrics
//! from `custom.metrics.k8s.io`, whose client looks the group up in
//! discovery first; External metrics from `external.metrics.k8s.io`, a
//! plain REST client whose resource is the metric's name.

use serde_json::{Value, json};
use windlass_sdk::Object;

/// The resource metrics client's error, without `metrics.k8s.io`.
const NO_RESOURCE_METRICS: &str = "unable to fetch metrics from resource metrics API: \
     the server could not find the requested resource (get pods.metrics.k8s.io)";

/// The custom metrics client's error, without `custom.metrics.k8s.io`.
const NO_CUSTOM_METRICS: &str = "unable to fetch metrics from custom metrics API: \
     no custom metrics API (custom.metrics.k8s.io) registered";

/// How computing a replica count from one metric failed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Failure {
    /// The reason of the Warning event and of `ScalingActive=False`.
    pub(crate) reason: &'static str,
    /// The error that event and that condition carry.
    pub(crate) cause: String,
    /// The error `computeReplicasForMetric` returns: the cause, wrapped;
    /// what `FailedComputeMetricsReplicas` quotes for the first metric.
    pub(crate) error: String,
}

/// `spec.metrics`, or upstream's default when there are none: CPU at an
/// average utilization of 80 %. Never empty.
pub(crate) fn specs(hpa: &Object) -> Vec<Value> {
    match hpa.get("spec.metrics").and_then(Value::as_array) {
        Some(metrics) if !metrics.is_empty() => metrics.clone(),
        _ => vec![json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}})],
    }
}

/// Fetches the metric `spec` for an HPA in `namespace`: here, always a
/// failure.
pub(crate) fn fetch(spec: &Value, namespace: &str) -> Failure {
    match spec["type"].as_str().unwrap_or_default() {
        "Resource" => resource(&spec["resource"]),
        "ContainerResource" => container_resource(&spec["containerResource"]),
        "Pods" => pods(&spec["pods"]),
        "Object" => object(&spec["object"], namespace),
        "External" => external(&spec["external"], namespace),
        other => {
            let e = format!("unknown metric source type {other:?}");
            Failure {
                reason: "InvalidMetricSourceType",
                cause: e.clone(),
                error: e,
            }
        }
    }
}

fn is_set(v: &Value) -> bool {
    !v.is_null()
}

fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v[field].as_str().unwrap_or_default()
}

/// What the replica calculator fails with for a resource, averaged over
/// the pods (`usage`) or as a share of their requests (`utilization`).
fn resource_cause(name: &str, target: &Value) -> String {
    let fetched = |what: &str| {
        format!(
            "failed to get {name} {what}: unable to get metrics for resource {name}: \
             {NO_RESOURCE_METRICS}"
        )
    };
    if is_set(&target["averageValue"]) {
        fetched("usage")
    } else if is_set(&target["averageUtilization"]) {
        fetched("utilization")
    } else {
        "invalid resource metric source: neither an average utilization target nor an \
         average value (usage) target was set"
            .into()
    }
}

fn resource(source: &Value) -> Failure {
    let name = text(source, "name");
    let cause = resource_cause(name, &source["target"]);
    Failure {
        reason: "FailedGetResourceMetric",
        error: format!("failed to get {name} resource metric value: {cause}"),
        cause,
    }
}

fn container_resource(source: &Value) -> Failure {
    let cause = resource_cause(text(source, "name"), &source["target"]);
    Failure {
        reason: "FailedGetContainerResourceMetric",
        error: format!(
            "failed to get {} container metric value: {cause}",
            text(source, "container")
        ),
        cause,
    }
}

fn pods(source: &Value) -> Failure {
    let cause = format!(
        "unable to get metric {}: {NO_CUSTOM_METRICS}",
        text(&source["metric"], "name")
    );
    Failure {
        reason: "FailedGetPodsMetric",
        error: format!("failed to get pods metric value: {cause}"),
        cause,
    }
}

fn object(source: &Value, namespace: &str) -> Failure {
    let metric = text(&source["metric"], "name");
    let described = &source["describedObject"];
    let target = &source["target"];
    let fetched = format!(
        "unable to get metric {metric} on {} {namespace}/{}: {NO_CUSTOM_METRICS}",
        text(described, "kind"),
        text(described, "name")
    );
    let (cause, returned) = match text(target, "type") {
        "Value" if is_set(&target["value"]) => (fetched.clone(), fetched),
        "AverageValue" if is_set(&target["averageValue"]) => {
            let wrapped = format!("failed to get {metric} object metric: {fetched}");
            (fetched, wrapped)
        }
        _ => {
            let e = "invalid object metric source: neither a value target nor an average \
                     value target was set";
            (e.to_owned(), e.to_owned())
        }
    };
    Failure {
        reason: "FailedGetObjectMetric",
        cause,
        error: format!("failed to get object metric value: {returned}"),
    }
}

fn external(source: &Value, namespace: &str) -> Failure {
    let metric = text(&source["metric"], "name");
    let target = &source["target"];
    let fetched = format!(
        "unable to get external metric {namespace}/{metric}/{}: unable to fetch metrics \
         from external metrics API: the server could not find the requested resource \
         (get {metric}.external.metrics.k8s.io)",
        go_label_selector(&source["metric"]["selector"])
    );
    let (cause, returned) = if is_set(&target["averageValue"]) {
        let wrapped = format!("failed to get {metric} external metric: {fetched}");
        (fetched, wrapped)
    } else if is_set(&target["value"]) {
        let wrapped = format!("failed to get external metric {metric}: {fetched}");
        (fetched, wrapped)
    } else {
        let e = "invalid external metric source: neither a value target nor an average \
                 value target was set";
        (e.to_owned(), e.to_owned())
    };
    Failure {
        reason: "FailedGetExternalMetric",
        cause,
        error: format!("failed to get {metric} external metric value: {returned}"),
    }
}

/// A `*metav1.LabelSelector` as Go's `%+v` prints it (its generated
/// `String()`): `nil`, or every field with sorted match labels.
fn go_label_selector(selector: &Value) -> String {
    let Value::Object(sel) = selector else {
        return "nil".into();
    };
    let mut labels: Vec<(&String, &Value)> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    labels.sort_by(|a, b| a.0.cmp(b.0));
    let labels: String = labels
        .iter()
        .map(|(k, v)| format!("{k}: {},", v.as_str().unwrap_or_default()))
        .collect();
    let expressions: String = (sel.get("matchExpressions").and_then(Value::as_array))
        .into_iter()
        .flatten()
        .map(go_requirement)
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},\
         MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}

/// One match expression inside [`go_label_selector`].
fn go_requirement(r: &Value) -> String {
    let values: Vec<&str> = r["values"]
        .as_array()
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    format!(
        "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
        text(r, "key"),
        text(r, "operator"),
        values.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_utilization_fails_as_on_a_cluster_without_metrics_server() {
        let f = fetch(
            &specs(&Object::new("autoscaling/v2", "HorizontalPodAutoscaler"))[0],
            "ns",
        );
        assert_eq!(f.reason, "FailedGetResourceMetric");
        assert_eq!(
            f.cause,
            "failed to get cpu utilization: unable to get metrics for resource cpu: unable to \
             fetch metrics from resource metrics API: the server could not find the requested \
             resource (get pods.metrics.k8s.io)"
        );
        assert_eq!(
            f.error,
            format!("failed to get cpu resource metric value: {}", f.cause)
        );
    }

    #[test]
    fn container_and_object_metrics_wrap_as_upstream() {
        let f = fetch(
            &json!({"type": "ContainerResource", "containerResource": {"name": "memory",
                "container": "app", "target": {"type": "AverageValue", "averageValue": "100Mi"}}}),
            "ns",
        );
        assert_eq!(f.reason, "FailedGetContainerResourceMetric");
        assert!(f.cause.starts_with(
            "failed to get memory usage: unable to get metrics for resource memory: "
        ));
        assert!(
            f.error.starts_with(
                "failed to get app container metric value: failed to get memory usage"
            )
        );
        let f = fetch(
            &json!({"type": "Object", "object": {"metric": {"name": "hits"},
                "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
                "target": {"type": "AverageValue", "averageValue": "10"}}}),
            "shop",
        );
        assert_eq!(
            f.cause,
            format!("unable to get metric hits on Ingress shop/main: {NO_CUSTOM_METRICS}")
        );
        assert_eq!(
            f.error,
            format!(
                "failed to get object metric value: failed to get hits object metric: {}",
                f.cause
            )
        );
    }

    #[test]
    fn external_metrics_name_their_selector_as_go_prints_it() {
        let f = fetch(
            &json!({"type": "External", "external": {"metric": {"name": "queue",
                "selector": {"matchLabels": {"z": "1", "a": "2"},
                    "matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}]}},
                "target": {"type": "Value", "value": "5"}}}),
            "shop",
        );
        assert_eq!(f.reason, "FailedGetExternalMetric");
        assert_eq!(
            f.cause,
            "unable to get external metric shop/queue/&LabelSelector{MatchLabels:map[string]string{a: 2,z: 1,},\
             MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],},},}: \
             unable to fetch metrics from external metrics API: the server could not find the requested \
             resource (get queue.external.metrics.k8s.io)"
        );
        assert_eq!(
            f.error,
            format!(
                "failed to get queue external metric value: failed to get external metric queue: {}",
                f.cause
            )
        );
        assert_eq!(go_label_selector(&Value::Null), "nil");
    }

    #[test]
    fn a_target_without_a_value_is_invalid() {
        let f = fetch(
            &json!({"type": "Resource", "resource": {"name": "cpu", "target": {}}}),
            "ns",
        );
        assert_eq!(
            f.cause,
            "invalid resource metric source: neither an average utilization target nor an \
             average value (usage) target was set"
        );
        let f = fetch(&json!({"type": "Mystery"}), "ns");
        assert_eq!(
            (f.reason, f.error.as_str()),
            (
                "InvalidMetricSourceType",
                r#"unknown metric source type "Mystery""#
            )
        );
    }
}

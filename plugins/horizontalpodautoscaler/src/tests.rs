//! Native tests of the HorizontalPodAutoscaler controller, through
//! `windlass_sdk::testing`.

use serde_json::{Value, json};
use windlass_sdk::testing::Harness;
use windlass_sdk::{Event, EventType, Object, ObjectRef, Outcome, Time, Write};

use super::HorizontalPodAutoscalerController;
use crate::autoscale::SYNC_PERIOD;

type H = Harness<HorizontalPodAutoscalerController>;

const NO_CPU_METRICS: &str = "failed to get cpu utilization: unable to get metrics for \
     resource cpu: unable to fetch metrics from resource metrics API: the server could \
     not find the requested resource (get pods.metrics.k8s.io)";

fn t(secs: i64) -> Time {
    let base = Time::parse("2026-03-01T10:00:00Z").unwrap();
    Time::from_millis(base.millis() + secs * 1000)
}

fn hpa_ref() -> ObjectRef {
    ObjectRef::new("autoscaling/v2", "HorizontalPodAutoscaler", "shop", "web")
}

fn deployment_ref() -> ObjectRef {
    ObjectRef::new("apps/v1", "Deployment", "shop", "web")
}

/// What `kubectl autoscale deployment web --min=2 --max=5 --cpu-percent=80`
/// stores, with `spec` fields overridden by `spec`.
fn hpa(spec: Value) -> Object {
    let mut h = json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "shop", "uid": "hpa-uid",
                     "generation": 1, "resourceVersion": "1"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2, "maxReplicas": 5,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}]
        }
    });
    for (k, v) in spec.as_object().unwrap() {
        h["spec"][k] = v.clone();
    }
    Object::from_value(h).unwrap()
}

fn deployment(name: &str, replicas: i64) -> Object {
    Object::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "shop", "uid": format!("{name}-uid"),
                     "generation": 1, "resourceVersion": "1"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}},
        "status": {"replicas": replicas}
    }))
    .unwrap()
}

fn harness(spec: Value, replicas: Option<i64>) -> H {
    let mut h = H::new().with_now(t(0)).with_object(hpa(spec));
    if let Some(r) = replicas {
        h.insert(deployment("web", r));
    }
    h
}

/// Reconciles the HPA at `secs` and applies the outcome as the host would.
fn sync(h: &mut H, secs: i64) -> Outcome {
    h.set_now(t(secs));
    let out = h.reconcile_key(&hpa_ref()).unwrap();
    h.apply_outcome(&hpa_ref(), &out).unwrap();
    out
}

fn status(h: &H) -> Value {
    h.get(&hpa_ref()).unwrap().get("status").cloned().unwrap()
}

fn condition(status: &Value, type_: &str) -> Value {
    (status["conditions"].as_array().unwrap().iter())
        .find(|c| c["type"] == type_)
        .cloned()
        .unwrap_or(Value::Null)
}

/// `(status, reason, message)` of a condition.
fn cond(c: &Value) -> (&str, &str, &str) {
    let f = |k: &str| c[k].as_str().unwrap_or_default();
    (f("status"), f("reason"), f("message"))
}

fn events(out: &Outcome) -> Vec<(EventType, &str, &str)> {
    (out.events.iter())
        .map(|e: &Event| (e.type_, e.reason.as_str(), e.message.as_str()))
        .collect()
}

fn scale_writes(out: &Outcome) -> Vec<&Write> {
    (out.writes.iter())
        .filter(|w| w.subresource() != Some("status"))
        .collect()
}

fn replicas(h: &H) -> i64 {
    h.get(&deployment_ref())
        .unwrap()
        .get_i64("spec.replicas")
        .unwrap()
}

#[test]
fn below_min_it_scales_up_to_min() {
    let mut h = harness(json!({}), Some(1));
    let out = sync(&mut h, 0);
    assert_eq!(
        scale_writes(&out),
        [&Write::MergePatch {
            target: deployment_ref(),
            subresource: Some("scale".into()),
            patch: json!({"spec": {"replicas": 2}}),
        }]
    );
    assert_eq!(
        events(&out),
        [(
            EventType::Normal,
            "SuccessfulRescale",
            "New size: 2; reason: Current number of replicas below Spec.MinReplicas"
        )]
    );
    assert_eq!(out.requeue_after, Some(SYNC_PERIOD));
    assert_eq!(replicas(&h), 2);
    let s = status(&h);
    assert_eq!(
        (
            &s["currentReplicas"],
            &s["desiredReplicas"],
            &s["lastScaleTime"]
        ),
        (&json!(1), &json!(2), &json!(t(0).to_rfc3339()))
    );
    assert_eq!(
        cond(&condition(&s, "AbleToScale")),
        (
            "True",
            "SucceededRescale",
            "the HPA controller was able to update the target scale to 2"
        )
    );
    // Upstream sets no ScalingActive when it rescales for the bounds.
    assert!(condition(&s, "ScalingActive").is_null());
    assert!(s.get("currentMetrics").is_none(), "{s}");

    // The next sync finds 2 within bounds and no metrics to go on.
    let out = sync(&mut h, 15);
    assert!(scale_writes(&out).is_empty());
    let s = status(&h);
    assert_eq!(
        (&s["currentReplicas"], &s["desiredReplicas"]),
        (&json!(2), &json!(2))
    );
    assert_eq!(cond(&condition(&s, "AbleToScale")).1, "SucceededGetScale");
    assert_eq!(
        cond(&condition(&s, "ScalingActive")).1,
        "FailedGetResourceMetric"
    );
    // The scale is remembered.
    assert_eq!(s["lastScaleTime"], t(0).to_rfc3339());
}

#[test]
fn above_max_it_scales_down_to_max() {
    let mut h = harness(json!({}), Some(8));
    let out = sync(&mut h, 0);
    assert_eq!(
        events(&out),
        [(
            EventType::Normal,
            "SuccessfulRescale",
            "New size: 5; reason: Current number of replicas above Spec.MaxReplicas"
        )]
    );
    assert_eq!(replicas(&h), 5);
    let s = status(&h);
    assert_eq!(
        (&s["currentReplicas"], &s["desiredReplicas"]),
        (&json!(8), &json!(5))
    );
}

#[test]
fn within_bounds_without_metrics_it_says_why_and_does_not_scale() {
    let mut h = harness(json!({}), Some(3));
    let out = sync(&mut h, 0);
    assert!(scale_writes(&out).is_empty());
    assert_eq!(replicas(&h), 3);
    assert_eq!(
        events(&out),
        [
            (
                EventType::Warning,
                "FailedGetResourceMetric",
                NO_CPU_METRICS
            ),
            (
                EventType::Warning,
                "FailedComputeMetricsReplicas",
                &*format!(
                    "invalid metrics (1 invalid out of 1), first error is: \
                     failed to get cpu resource metric value: {NO_CPU_METRICS}"
                )
            ),
        ]
    );
    let s = status(&h);
    assert_eq!(
        cond(&condition(&s, "AbleToScale")),
        (
            "True",
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale"
        )
    );
    assert_eq!(
        cond(&condition(&s, "ScalingActive")),
        (
            "False",
            "FailedGetResourceMetric",
            &*format!("the HPA was unable to compute the replica count: {NO_CPU_METRICS}")
        )
    );
    assert_eq!(
        condition(&s, "ScalingActive")["lastTransitionTime"],
        t(0).to_rfc3339()
    );
    assert!(condition(&s, "ScalingLimited").is_null());
    assert_eq!(s["currentReplicas"], 3);
    // Never computed: upstream's zero.
    assert_eq!(s["desiredReplicas"], 0);
    assert_eq!(s["currentMetrics"], json!([{"type": ""}]));
    assert_eq!(s["observedGeneration"], 1);
    assert!(s.get("lastScaleTime").is_none(), "{s}");
}

#[test]
fn a_second_sync_of_the_same_state_writes_nothing() {
    for replicas in [Some(3), Some(0), None] {
        let mut h = harness(json!({}), replicas);
        let first = sync(&mut h, 0);
        assert!(!first.writes.is_empty(), "{replicas:?}");
        let again = sync(&mut h, 15);
        assert!(again.writes.is_empty(), "{replicas:?}: {:?}", again.writes);
        // Upstream records its warnings again on every sync.
        assert_eq!(events(&again), events(&first));
        assert_eq!(again.requeue_after, Some(SYNC_PERIOD));
    }
}

#[test]
fn a_missing_target_cannot_be_scaled() {
    let mut h = harness(json!({}), None);
    let out = sync(&mut h, 0);
    assert!(scale_writes(&out).is_empty());
    assert_eq!(
        events(&out),
        [(
            EventType::Warning,
            "FailedGetScale",
            r#"deployments.apps "web" not found"#
        )]
    );
    let s = status(&h);
    assert_eq!(
        cond(&condition(&s, "AbleToScale")),
        (
            "False",
            "FailedGetScale",
            r#"the HPA controller was unable to get the target's current scale: deployments.apps "web" not found"#
        )
    );
    assert!(s.get("currentReplicas").is_none(), "{s}");
    assert!(s.get("observedGeneration").is_none(), "{s}");

    // The target appears: AbleToScale turns True, with a new transition time.
    h.insert(deployment("web", 3));
    sync(&mut h, 30);
    let s = status(&h);
    let able = condition(&s, "AbleToScale");
    assert_eq!(cond(&able).0, "True");
    assert_eq!(able["lastTransitionTime"], t(30).to_rfc3339());
    assert_eq!(s["currentReplicas"], 3);
}

#[test]
fn a_kind_that_cannot_be_scaled_says_so() {
    for (target, err) in [
        (
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "name": "w"}),
            r#"no matches for kind "Widget" in group "example.com""#,
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "logs"}),
            "the server could not find the requested resource (get daemonsets.apps logs)",
        ),
        (
            json!({"apiVersion": "extensions/v1beta1", "kind": "Deployment", "name": "web"}),
            r#"no matches for kind "Deployment" in group "extensions""#,
        ),
    ] {
        let mut h = harness(json!({"scaleTargetRef": target}), Some(3));
        let out = sync(&mut h, 0);
        assert_eq!(events(&out), [(EventType::Warning, "FailedGetScale", err)]);
    }
}

#[test]
fn a_target_scaled_to_zero_disables_scaling() {
    let mut h = harness(json!({}), Some(0));
    let out = sync(&mut h, 0);
    assert!(scale_writes(&out).is_empty());
    assert!(out.events.is_empty());
    assert_eq!(replicas(&h), 0);
    let s = status(&h);
    assert_eq!(
        cond(&condition(&s, "ScalingActive")),
        (
            "False",
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero"
        )
    );
    assert_eq!(cond(&condition(&s, "AbleToScale")).1, "SucceededGetScale");
    assert!(s.get("currentReplicas").is_none(), "{s}");
    assert_eq!(s["desiredReplicas"], 0);
}

#[test]
fn each_kind_of_metric_fails_with_its_own_reason() {
    let memory = json!({"type": "Resource", "resource": {"name": "memory",
        "target": {"type": "AverageValue", "averageValue": "500Mi"}}});
    let pods = json!({"type": "Pods", "pods": {"metric": {"name": "packets-per-second"},
        "target": {"type": "AverageValue", "averageValue": "1k"}}});
    let no_memory = "failed to get memory usage: unable to get metrics for resource memory: \
         unable to fetch metrics from resource metrics API: the server could not find the \
         requested resource (get pods.metrics.k8s.io)";
    let no_pods = "unable to get metric packets-per-second: unable to fetch metrics from \
         custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered";

    let mut h = harness(json!({"metrics": [memory, pods]}), Some(3));
    let out = sync(&mut h, 0);
    assert_eq!(
        events(&out),
        [
            (EventType::Warning, "FailedGetResourceMetric", no_memory),
            (EventType::Warning, "FailedGetPodsMetric", no_pods),
            (
                EventType::Warning,
                "FailedComputeMetricsReplicas",
                &*format!(
                    "invalid metrics (2 invalid out of 2), first error is: \
                     failed to get memory resource metric value: {no_memory}"
                )
            ),
        ]
    );
    let s = status(&h);
    assert_eq!(
        cond(&condition(&s, "ScalingActive")).1,
        "FailedGetResourceMetric"
    );
    assert_eq!(s["currentMetrics"], json!([{"type": ""}, {"type": ""}]));

    // The first metric decides the condition.
    let mut h = harness(json!({"metrics": [pods, memory]}), Some(3));
    let out = sync(&mut h, 0);
    assert_eq!(
        cond(&condition(&status(&h), "ScalingActive")),
        (
            "False",
            "FailedGetPodsMetric",
            &*format!("the HPA was unable to compute the replica count: {no_pods}")
        )
    );
    assert_eq!(
        out.events.last().unwrap().message,
        format!(
            "invalid metrics (2 invalid out of 2), first error is: \
             failed to get pods metric value: {no_pods}"
        )
    );
}

#[test]
fn no_metrics_means_cpu_at_80_percent() {
    let mut h = harness(json!({"metrics": null}), Some(3));
    let out = sync(&mut h, 0);
    assert_eq!(
        events(&out)[0],
        (
            EventType::Warning,
            "FailedGetResourceMetric",
            NO_CPU_METRICS
        )
    );
    assert_eq!(status(&h)["currentMetrics"], json!([{"type": ""}]));
}

#[test]
fn a_scale_without_a_selector_is_refused() {
    let mut h = harness(json!({}), None);
    let mut d = deployment("web", 3);
    d.set("spec.selector", json!({}));
    h.insert(d);
    let out = sync(&mut h, 0);
    assert_eq!(
        events(&out),
        [
            (
                EventType::Warning,
                "SelectorRequired",
                "selector is required"
            ),
            (
                EventType::Warning,
                "FailedComputeMetricsReplicas",
                "selector is required"
            ),
        ]
    );
    let s = status(&h);
    assert_eq!(
        cond(&condition(&s, "ScalingActive")),
        (
            "False",
            "InvalidSelector",
            "the HPA target's scale is missing a selector"
        )
    );
    assert!(s.get("currentMetrics").is_none(), "{s}");
}

#[test]
fn a_replication_controller_is_scaled_through_its_scale() {
    let rc = ObjectRef::new("v1", "ReplicationController", "shop", "legacy");
    let mut h = harness(
        json!({"scaleTargetRef": {"apiVersion": "v1", "kind": "ReplicationController",
            "name": "legacy"}}),
        None,
    );
    h.insert(
        Object::from_value(json!({
            "apiVersion": "v1", "kind": "ReplicationController",
            "metadata": {"name": "legacy", "namespace": "shop", "uid": "rc-uid"},
            "spec": {"replicas": 9, "selector": {"app": "legacy"}}
        }))
        .unwrap(),
    );
    let out = sync(&mut h, 0);
    assert_eq!(
        scale_writes(&out),
        [&Write::MergePatch {
            target: rc.clone(),
            subresource: Some("scale".to_owned()),
            patch: json!({"spec": {"replicas": 5}}),
        }]
    );
    assert_eq!(h.get(&rc).unwrap().get_i64("spec.replicas"), Some(5));
}

#[test]
fn a_targets_change_wakes_the_hpas_that_name_it() {
    let mut h = harness(json!({}), Some(3));
    let mut other = hpa(json!({"scaleTargetRef": {"apiVersion": "apps/v1",
        "kind": "Deployment", "name": "api"}}));
    other.set("metadata.name", "api");
    h.insert(other);
    assert_eq!(h.map(&deployment("web", 4)).unwrap(), [hpa_ref()]);
    let api = ObjectRef::new("autoscaling/v2", "HorizontalPodAutoscaler", "shop", "api");
    assert_eq!(h.map(&deployment("api", 4)).unwrap(), [api]);
    assert!(h.map(&deployment("db", 4)).unwrap().is_empty());
    // Same name, other kind: not this HPA's target.
    let mut rs = deployment("web", 4);
    rs.set("kind", "ReplicaSet");
    assert!(h.map(&rs).unwrap().is_empty());
}

#[test]
fn the_manifest_grants_the_scale_subresources() {
    let h = harness(json!({}), None);
    let m = h.manifest();
    for (api_version, kind) in [
        ("apps/v1", "Deployment"),
        ("apps/v1", "ReplicaSet"),
        ("apps/v1", "StatefulSet"),
        ("v1", "ReplicationController"),
    ] {
        assert!(
            m.may_write_in(api_version, kind, Some("shop"), Some("scale")),
            "{kind}"
        );
        assert!(!m.may_write(api_version, kind), "{kind}");
        assert!(m.may_read(api_version, kind), "{kind}");
    }
    assert!(m.may_write_in(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        Some("shop"),
        Some("status")
    ));
}

#[test]
fn an_hpa_being_deleted_is_left_alone() {
    let mut h = harness(json!({}), Some(1));
    let mut gone = hpa(json!({}));
    gone.set("metadata.deletionTimestamp", "2026-03-01T09:00:00Z");
    h.insert(gone);
    assert!(h.reconcile_key(&hpa_ref()).unwrap().is_empty());
}

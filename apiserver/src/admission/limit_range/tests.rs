//! LimitRange rules over plain JSON: defaulting, validation, pod defaults,
//! and every bound with upstream's message.

use serde_json::{Value, json};

use super::*;

/// [`default_pod`], checking that the defaults it adds to the parsed pod
/// are what parsing the defaulted pod gives.
fn defaulted(ranges: &[&Range], pod: &mut Value) {
    let mut parsed = PodResources::of(pod).expect("the test's pod parses");
    default_pod(ranges, pod, &mut parsed);
    assert_eq!(Ok(parsed), PodResources::of(pod));
}

/// [`pod_violation`] of a pod as admission parses it.
fn violation(ranges: &[&Range], pod: &Value) -> Option<String> {
    pod_violation(
        ranges,
        &PodResources::of(pod).expect("the test's pod parses"),
    )
}

fn range(limits: Value) -> Value {
    let mut lr = json!({"metadata": {"name": "lr"}, "spec": {"limits": limits}});
    default_range(&mut lr);
    crate::admission::requirements::canonicalize("limitranges", &mut lr);
    lr
}

fn pod(containers: Value) -> Value {
    json!({"metadata": {"name": "p"}, "spec": {"containers": containers}})
}

fn errs(lr: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    errors(lr, &mut out);
    out
}

#[test]
fn container_items_are_defaulted_from_max_default_and_min() {
    let lr = range(json!([
        {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"ephemeral-storage": "1Mi"}},
        {"type": "Pod", "max": {"cpu": "4"}},
    ]));
    assert_eq!(
        lr["spec"]["limits"][0],
        json!({
            "type": "Container",
            "max": {"cpu": "2", "memory": "1Gi"},
            "min": {"ephemeral-storage": "1Mi"},
            "default": {"cpu": "2", "memory": "1Gi"},
            "defaultRequest": {"cpu": "2", "memory": "1Gi", "ephemeral-storage": "1Mi"},
        })
    );
    assert_eq!(
        lr["spec"]["limits"][1],
        json!({"type": "Pod", "max": {"cpu": "4"}})
    );
    assert!(errs(&lr).is_empty(), "{:?}", errs(&lr));
}

#[test]
fn the_seed_notes_range_contradicts_itself() {
    // default memory 5G is above max 1024Mi; the default request (500Mi) is fine.
    let lr = range(json!([{
        "type": "Container",
        "default": {"cpu": "1", "memory": "5G"},
        "defaultRequest": {"cpu": "500m", "memory": "500Mi"},
        "max": {"cpu": "2", "memory": "1024Mi"},
        "min": {"cpu": "100m", "memory": "100Mi"},
    }]));
    assert_eq!(
        errs(&lr),
        [(
            "spec.limits[0].default[memory]".to_string(),
            "Invalid value: \"1Gi\": default value 5G is greater than max value 1Gi".to_string()
        )]
    );
}

#[test]
fn every_contradiction_names_its_field() {
    let lr = range(json!([{
        "type": "Container",
        "min": {"cpu": "2"},
        "max": {"cpu": "1"},
        "default": {"memory": "1Gi"},
        "defaultRequest": {"memory": "2Gi"},
        "maxLimitRequestRatio": {"memory": "500m"},
    }]));
    let fields: Vec<String> = errs(&lr)
        .into_iter()
        .map(|(f, m)| format!("{f}: {m}"))
        .collect();
    assert_eq!(
        fields,
        [
            "spec.limits[0].min[cpu]: Invalid value: \"2\": min value 2 is greater than max value 1",
            // max cpu 1 became the default limit, and that the default request.
            "spec.limits[0].defaultRequest[cpu]: Invalid value: \"1\": min value 2 is greater than default request value 1",
            "spec.limits[0].default[cpu]: Invalid value: \"2\": min value 2 is greater than default value 1",
            "spec.limits[0].defaultRequest[memory]: Invalid value: \"2Gi\": default request value 2Gi is greater than default limit value 1Gi",
            "spec.limits[0].maxLimitRequestRatio[memory]: Invalid value: \"500m\": ratio 500m is less than 1",
        ]
    );
}

#[test]
fn item_shapes() {
    let lr = range(json!([
        {"type": "Pod", "default": {"cpu": "1"}, "max": {"cpu": "2"}},
        {"type": "Pod", "max": {"cpu": "2"}},
        {"type": "PersistentVolumeClaim", "max": {"cpu": "2"}},
        {"type": "Bogus"},
        {"type": "Container", "max": {"gpu": "1"}},
    ]));
    let fields: Vec<String> = errs(&lr)
        .into_iter()
        .map(|(f, m)| format!("{f}: {m}"))
        .collect();
    assert_eq!(
        fields,
        [
            "spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'",
            "spec.limits[1].type: Duplicate value: \"Pod\"",
            "spec.limits[2].limits: Required value: either minimum or maximum storage value is required, but neither was provided",
            "spec.limits[3].type: Invalid value: \"Bogus\": must be a standard limit type or fully qualified",
            "spec.limits[4].max[gpu]: Invalid value: \"gpu\": must be a standard resource for containers",
            "spec.limits[4].default[gpu]: Invalid value: \"gpu\": must be a standard resource for containers",
            "spec.limits[4].defaultRequest[gpu]: Invalid value: \"gpu\": must be a standard resource for containers",
        ]
    );
    let ratio = range(
        json!([{"type": "Container", "min": {"cpu": "100m"}, "max": {"cpu": "200m"}, "maxLimitRequestRatio": {"cpu": "3"}}]),
    );
    assert_eq!(
        errs(&ratio)[0].1,
        "Invalid value: \"3\": ratio 3 is greater than max/min = 2.000000"
    );
    let gpu = range(
        json!([{"type": "Container", "default": {"example.com/gpu": "2"}, "defaultRequest": {"example.com/gpu": "1"}}]),
    );
    assert_eq!(
        errs(&gpu)[0].1,
        "Invalid value: \"1\": default value 2 must equal to defaultRequest value 1 in example.com/gpu"
    );
}

#[test]
fn a_bare_pod_gets_the_defaults_and_the_annotation() {
    let lr = range(json!([{"type": "Container",
        "default": {"cpu": "500m", "memory": "512Mi"},
        "defaultRequest": {"cpu": "250m", "memory": "256Mi"}}]));
    let mut p = pod(json!([
        {"name": "app"},
        {"name": "side", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}},
    ]));
    p["spec"]["initContainers"] = json!([{"name": "init"}]);
    defaulted(&[&Range::of(&lr)], &mut p);
    assert_eq!(
        p["spec"]["containers"][0]["resources"],
        json!({"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}})
    );
    assert_eq!(
        p["spec"]["containers"][1]["resources"],
        json!({"requests": {"cpu": "1", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}})
    );
    assert_eq!(
        p["spec"]["initContainers"][0]["resources"]["limits"],
        json!({"cpu": "500m", "memory": "512Mi"})
    );
    assert_eq!(
        p["metadata"]["annotations"][ANNOTATION],
        "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app; \
         memory request for container side; memory limit for container side; \
         cpu, memory request for init container init; cpu, memory limit for init container init"
    );
    // A range without defaults changes nothing.
    let mut q = pod(json!([{"name": "a"}]));
    let before = q.clone();
    defaulted(
        &[&Range::of(&range(
            json!([{"type": "Pod", "max": {"cpu": "1"}}]),
        ))],
        &mut q,
    );
    assert_eq!(q, before);
}

fn container(requests: Value, limits: Value) -> Value {
    json!({"name": "c", "resources": {"requests": requests, "limits": limits}})
}

#[test]
fn container_bounds_with_upstream_messages() {
    let lr = range(json!([{"type": "Container",
        "max": {"memory": "1Gi"}, "min": {"cpu": "100m"}, "maxLimitRequestRatio": {"cpu": "2"}}]));
    let check = |requests: Value, limits: Value| {
        violation(
            &[&Range::of(&lr)],
            &pod(json!([container(requests, limits)])),
        )
    };
    assert_eq!(
        check(
            json!({"cpu": "200m", "memory": "1Gi"}),
            json!({"cpu": "400m", "memory": "2Gi"})
        )
        .as_deref(),
        Some("maximum memory usage per Container is 1Gi, but limit is 2Gi")
    );
    assert_eq!(
        check(json!({"cpu": "200m"}), json!({"cpu": "400m"})).as_deref(),
        Some("maximum memory usage per Container is 1Gi.  No limit is specified")
    );
    assert_eq!(
        check(
            json!({"cpu": "50m", "memory": "2Gi"}),
            json!({"cpu": "100m", "memory": "1Gi"})
        )
        .as_deref(),
        Some(
            "[minimum cpu usage per Container is 100m, but request is 50m, maximum memory usage per Container is 1Gi, but request is 2Gi]"
        )
    );
    assert_eq!(
        check(
            json!({"cpu": "100m", "memory": "1Gi"}),
            json!({"cpu": "300m", "memory": "1Gi"})
        )
        .as_deref(),
        Some("cpu max limit to request ratio per Container is 2, but provided ratio is 3.000000")
    );
    assert_eq!(
        check(
            json!({"cpu": "100m", "memory": "1Gi"}),
            json!({"memory": "1Gi"})
        )
        .as_deref(),
        Some(
            "cpu max limit to request ratio per Container is 2, but no limit is specified or limit is 0"
        )
    );
    assert_eq!(
        check(
            json!({"cpu": "100m", "memory": "512Mi"}),
            json!({"cpu": "200m", "memory": "1Gi"})
        ),
        None
    );
    let no_request = range(json!([{"type": "Container", "min": {"cpu": "100m"}}]));
    // A min makes a default request, so only a pod admitted without the
    // range's defaults can lack it.
    let bare = pod(json!([{"name": "c"}]));
    assert_eq!(
        violation(&[&Range::of(&no_request)], &bare).as_deref(),
        Some("minimum cpu usage per Container is 100m.  No request is specified")
    );
}

#[test]
fn pod_bounds_sum_the_containers() {
    let lr = range(json!([{"type": "Pod", "max": {"cpu": "1"}, "min": {"memory": "100Mi"}}]));
    let p = pod(json!([
        container(
            json!({"cpu": "600m", "memory": "60Mi"}),
            json!({"cpu": "600m", "memory": "60Mi"})
        ),
        container(
            json!({"cpu": "600m", "memory": "60Mi"}),
            json!({"cpu": "600m", "memory": "60Mi"})
        ),
    ]));
    assert_eq!(
        violation(&[&Range::of(&lr)], &p).as_deref(),
        Some("maximum cpu usage per Pod is 1, but limit is 1200m")
    );
    let small = pod(json!([container(
        json!({"cpu": "500m", "memory": "50Mi"}),
        json!({"cpu": "500m", "memory": "200Mi"})
    )]));
    assert_eq!(
        violation(&[&Range::of(&lr)], &small).as_deref(),
        Some("minimum memory usage per Pod is 100Mi, but request is 50Mi")
    );
}

#[test]
fn claims_are_bounded_by_what_they_request() {
    let lr = range(
        json!([{"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}}]),
    );
    let claim = |storage: &str| json!({"spec": {"resources": {"requests": {"storage": storage}}}});
    assert_eq!(
        claim_violation(&[&Range::of(&lr)], &claim("500Mi")).as_deref(),
        Some("minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi")
    );
    assert_eq!(
        claim_violation(&[&Range::of(&lr)], &claim("20Gi")).as_deref(),
        Some("maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi")
    );
    assert_eq!(claim_violation(&[&Range::of(&lr)], &claim("5Gi")), None);
    assert_eq!(
        claim_violation(&[&Range::of(&lr)], &json!({"spec": {}})).as_deref(),
        Some(
            "[minimum storage usage per PersistentVolumeClaim is 1Gi.  No request is specified, maximum storage usage per PersistentVolumeClaim is 10Gi.  No request is specified]"
        )
    );
    // Pod and container items do not apply to claims.
    let containers = range(json!([{"type": "Container", "max": {"storage": "1"}}]));
    assert_eq!(
        claim_violation(&[&Range::of(&containers)], &claim("5Gi")),
        None
    );
}

#[test]
fn the_first_range_broken_is_the_one_reported() {
    let a = range(json!([{"type": "Container", "max": {"cpu": "1"}}]));
    let b = range(json!([{"type": "Container", "max": {"cpu": "500m"}}]));
    let p = pod(json!([container(
        json!({"cpu": "800m"}),
        json!({"cpu": "800m"})
    )]));
    assert_eq!(
        violation(&[&Range::of(&a), &Range::of(&b)], &p).as_deref(),
        Some("maximum cpu usage per Container is 500m, but limit is 800m")
    );
}

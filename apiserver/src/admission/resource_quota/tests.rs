//! ResourceQuota rules over plain JSON: validation, the status a new quota
//! gets, and every admission outcome with upstream's message.

use serde_json::{Value, json};
use windlass_selector::quota::Evaluator;
use windlass_selector::resources::list_to_json;

use super::*;

fn quota(name: &str, hard: Value, used: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": {"hard": hard}, "status": {"hard": hard, "used": used}})
}

fn pod(requests: Value, limits: Value) -> Value {
    json!({"spec": {"containers": [{"name": "app", "resources": {"requests": requests, "limits": limits}}]}})
}

fn errs(q: &Value) -> Vec<String> {
    let mut out = Vec::new();
    errors(q, &mut out);
    out.into_iter().map(|(f, m)| format!("{f}: {m}")).collect()
}

/// Checks `obj` against `quotas`; the charges as `name: used` JSON.
fn admit(
    quotas: &[Value],
    ev: &Evaluator,
    old: Option<&Value>,
    obj: &Value,
) -> Result<Vec<(String, Value)>, String> {
    let qs: Vec<Quota> = quotas.iter().map(Quota::of).collect();
    let refs: Vec<&Quota> = qs.iter().collect();
    // As admission reads a pod: parsed once, its QoS class from that.
    let pod =
        (*ev == Evaluator::Pods).then(|| PodResources::of(obj).expect("the test's pod parses"));
    let qos = || {
        pod.as_ref()
            .map_or(QosClass::BestEffort, PodResources::qos_class)
    };
    let subject = Subject {
        obj,
        pod: pod.as_ref(),
        usage: None,
        qos: &qos,
    };
    check(&refs, ev, old, &subject).map(|charges| {
        charges
            .into_iter()
            .map(|(i, used)| (qs[i].name.to_string(), list_to_json(&used)))
            .collect()
    })
}

#[test]
fn valid_quotas_pass() {
    let q = quota(
        "compute-resources",
        json!({"requests.cpu": "1", "requests.memory": "1Gi", "limits.cpu": "2", "limits.memory": "2Gi", "pods": "4",
               "count/deployments.apps": "3", "requests.nvidia.com/gpu": "2", "hugepages-2Mi": "1Gi"}),
        json!({}),
    );
    assert!(errs(&q).is_empty(), "{:?}", errs(&q));
}

#[test]
fn names_values_and_scopes_are_validated() {
    let mut q = json!({"spec": {"hard":
        {"cpus": "1", "pods": "1.5", "memory": "-1", "count/pods": "500m"}}});
    q["spec"]["scopes"] = json!(["BestEffort", "NotBestEffort", "Sometimes"]);
    let shown = r#"["BestEffort","NotBestEffort","Sometimes"]"#;
    assert_eq!(
        errs(&q),
        [
            "spec.hard[count/pods]: Invalid value: \"500m\": must be an integer".to_owned(),
            "spec.hard[cpus]: Invalid value: \"cpus\": must be a standard resource for quota"
                .into(),
            "spec.hard[memory]: Invalid value: \"-1\": must be greater than or equal to 0".into(),
            "spec.hard[pods]: Invalid value: \"1500m\": must be an integer".into(),
            // BestEffort does not apply to memory.
            format!("spec.scopes: Invalid value: {shown}: unsupported scope applied to resource"),
            format!("spec.scopes: Invalid value: {shown}: unsupported scope"),
            format!("spec.scopes: Invalid value: {shown}: conflicting scopes"),
        ]
    );
    let mut status = quota("q", json!({"pods": "1"}), json!({"pods": "-1"}));
    status["status"]["hard"] = json!({"pods": "2.5"});
    assert_eq!(
        errs(&status),
        [
            "status.hard[pods]: Invalid value: \"2500m\": must be an integer",
            "status.used[pods]: Invalid value: \"-1\": must be greater than or equal to 0",
        ]
    );
    let mut sel = quota("q", json!({"pods": "1"}), json!({}));
    sel["spec"]["scopeSelector"] = json!({"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In"},
        {"scopeName": "Terminating", "operator": "In", "values": ["x"]},
        {"scopeName": "PriorityClass", "operator": "Exists", "values": ["x"]},
        {"scopeName": "PriorityClass", "operator": "Near"},
    ]});
    let fields: Vec<String> = errs(&sel)
        .into_iter()
        .map(|e| e.split(": ").next().unwrap().to_owned())
        .collect();
    assert_eq!(
        fields,
        [
            "spec.scopeSelector.matchExpressions.values",
            "spec.scopeSelector.matchExpressions.operator",
            "spec.scopeSelector.matchExpressions.values",
            "spec.scopeSelector.matchExpressions.operator",
        ]
    );
}

#[test]
fn a_new_quota_counts_what_its_namespace_holds() {
    let mut q = json!({"metadata": {"name": "q"}, "spec": {"hard":
        {"pods": "4", "requests.cpu": "2", "configmaps": "10", "example.com/x": "1"}}});
    let pods = [
        pod(json!({"cpu": "500m"}), json!({})),
        pod(json!({"cpu": "250m"}), json!({})),
    ];
    set_status(&mut q, |group, resource, visit| {
        if (group, resource) == ("", "pods") {
            for p in &pods {
                visit(p);
            }
        }
        true
    });
    // A name no kind counts has no usage (kubectl shows it as 0).
    assert_eq!(
        q["status"],
        json!({
            "hard": {"pods": "4", "requests.cpu": "2", "configmaps": "10", "example.com/x": "1"},
            "used": {"pods": "2", "requests.cpu": "750m", "configmaps": "0"},
        })
    );
}

#[test]
fn admits_and_charges_within_the_quota() {
    let q = quota(
        "compute-resources",
        json!({"requests.cpu": "2", "pods": "4"}),
        json!({"requests.cpu": "500m", "pods": "1"}),
    );
    let other = quota(
        "object-counts",
        json!({"configmaps": "10"}),
        json!({"configmaps": "3"}),
    );
    let charges = admit(
        &[q, other],
        &Evaluator::Pods,
        None,
        &pod(json!({"cpu": "1"}), json!({"cpu": "1"})),
    )
    .unwrap();
    assert_eq!(
        charges,
        [(
            "compute-resources".to_owned(),
            json!({"requests.cpu": "1500m", "pods": "2"})
        )]
    );
}

#[test]
fn refuses_what_would_exceed_with_upstreams_message() {
    let q = quota(
        "compute-resources",
        json!({"requests.cpu": "2", "requests.memory": "1Gi", "pods": "4"}),
        json!({"requests.cpu": "1", "requests.memory": "0", "pods": "1"}),
    );
    assert_eq!(
        admit(
            &[q],
            &Evaluator::Pods,
            None,
            &pod(json!({"cpu": "1500m", "memory": "100Mi"}), json!({}))
        ),
        Err("exceeded quota: compute-resources, requested: requests.cpu=1500m, used: requests.cpu=1, limited: requests.cpu=2".into())
    );
    let full = quota("pods", json!({"pods": "1"}), json!({"pods": "1"}));
    assert_eq!(
        admit(&[full], &Evaluator::Pods, None, &pod(json!({}), json!({}))),
        Err("exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1".into())
    );
    let cms = quota(
        "object-counts",
        json!({"configmaps": "10"}),
        json!({"configmaps": "10"}),
    );
    let ev = Evaluator::of("", "configmaps").unwrap();
    assert_eq!(
        admit(&[cms], &ev, None, &json!({})),
        Err("exceeded quota: object-counts, requested: configmaps=1, used: configmaps=10, limited: configmaps=10".into())
    );
}

#[test]
fn a_pod_must_state_what_a_quota_limits() {
    let q = quota(
        "compute-resources",
        json!({"requests.cpu": "2", "limits.memory": "2Gi", "pods": "4"}),
        json!({"requests.cpu": "0", "limits.memory": "0", "pods": "0"}),
    );
    assert_eq!(
        admit(&[q], &Evaluator::Pods, None, &pod(json!({}), json!({}))),
        Err("failed quota: compute-resources: must specify limits.memory for: app; requests.cpu for: app".into())
    );
}

#[test]
fn a_quota_without_usage_refuses_until_it_has_some() {
    let q = quota("q", json!({"pods": "4"}), json!({}));
    assert_eq!(
        admit(&[q], &Evaluator::Pods, None, &pod(json!({}), json!({}))),
        Err("status unknown for quota: q, resources: pods".into())
    );
}

#[test]
fn scopes_pick_the_pods_a_quota_counts() {
    let mut best_effort = quota("be", json!({"pods": "1"}), json!({"pods": "1"}));
    best_effort["spec"]["scopes"] = json!(["BestEffort"]);
    // A Burstable pod is outside the BestEffort quota, so it is admitted.
    let burstable = pod(json!({"cpu": "1"}), json!({}));
    assert_eq!(
        admit(&[best_effort.clone()], &Evaluator::Pods, None, &burstable),
        Ok(vec![])
    );
    assert!(
        admit(
            &[best_effort],
            &Evaluator::Pods,
            None,
            &pod(json!({}), json!({}))
        )
        .is_err()
    );
    let mut high = quota("high", json!({"pods": "0"}), json!({"pods": "0"}));
    high["spec"]["scopeSelector"] = json!({"matchExpressions":
        [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]});
    let mut p = pod(json!({}), json!({}));
    assert_eq!(
        admit(&[high.clone()], &Evaluator::Pods, None, &p),
        Ok(vec![])
    );
    p["spec"]["priorityClassName"] = json!("high");
    assert!(admit(&[high], &Evaluator::Pods, None, &p).is_err());
}

#[test]
fn updates_charge_only_what_grows() {
    let q = quota(
        "svc",
        json!({"services.loadbalancers": "1", "services.nodeports": "2", "services": "5"}),
        json!({"services.loadbalancers": "0", "services.nodeports": "0", "services": "1"}),
    );
    let cluster_ip = json!({"spec": {"type": "ClusterIP", "ports": [{"port": 80}]}});
    let lb = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}});
    assert_eq!(
        admit(
            std::slice::from_ref(&q),
            &Evaluator::Services,
            Some(&cluster_ip),
            &lb
        ),
        Ok(vec![(
            "svc".into(),
            json!({"services.loadbalancers": "1", "services.nodeports": "1", "services": "1"})
        )])
    );
    // Back to ClusterIP: nothing to charge (the quota controller releases).
    assert_eq!(
        admit(&[q], &Evaluator::Services, Some(&lb), &cluster_ip),
        Ok(vec![])
    );
    // A config map update is never charged.
    let cms = quota("cm", json!({"configmaps": "1"}), json!({"configmaps": "1"}));
    let ev = Evaluator::of("", "configmaps").unwrap();
    assert_eq!(
        admit(&[cms], &ev, Some(&json!({})), &json!({"data": {"a": "b"}})),
        Ok(vec![])
    );
}

#[test]
fn kinds_a_quota_does_not_name_are_free() {
    let q = quota("q", json!({"pods": "0"}), json!({"pods": "0"}));
    let ev = Evaluator::of("apps", "deployments").unwrap();
    assert_eq!(admit(&[q], &ev, None, &json!({})), Ok(vec![]));
    let counts = quota(
        "q",
        json!({"count/deployments.apps": "1"}),
        json!({"count/deployments.apps": "1"}),
    );
    assert_eq!(
        admit(&[counts], &ev, None, &json!({})),
        Err("exceeded quota: q, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1".into())
    );
}

/// A charge sets the new usage by name whether the quota's `used` names
/// exactly its hard names (read by position) or not (read by name): a
/// stale name is kept, a name only in `used` is not touched, and names
/// after an uncharged one land on the right entry.
#[test]
fn a_charge_lands_on_its_names_whatever_used_holds() {
    let hard = json!({"limits.ephemeral-storage": "10", "pods": "4", "requests.cpu": "2", "requests.memory": "8Gi"});
    let exact = json!({"limits.ephemeral-storage": "1", "pods": "1", "requests.cpu": "500m", "requests.memory": "1Gi"});
    let mut stale = exact.clone();
    stale["old.example.com/x"] = json!("3");
    let p = pod(
        json!({"cpu": "1", "memory": "1Gi"}),
        json!({"memory": "2Gi"}),
    );
    for used in [exact, stale.clone()] {
        let charges = admit(
            &[quota("q", hard.clone(), used.clone())],
            &Evaluator::Pods,
            None,
            &p,
        )
        .unwrap();
        let mut want = used;
        // No ephemeral storage: `limits.ephemeral-storage` is not charged.
        want["pods"] = json!("2");
        want["requests.cpu"] = json!("1500m");
        want["requests.memory"] = json!("2Gi");
        assert_eq!(charges, [("q".to_owned(), want)]);
    }
    let quotas: Vec<Quota> = [quota("q", hard.clone(), stale.clone())]
        .iter()
        .map(Quota::of)
        .collect();
    assert!(!quotas[0].same_names, "a stale name is read by name");
}

/// The quotas that apply are kept as bits up to 128 and listed past them,
/// and read back in order either way.
#[test]
fn applying_quotas_are_read_back_in_order() {
    let mut a = Applying::default();
    assert!(a.is_empty());
    for i in [0, 5, 127, 128, 300] {
        a.add(i);
    }
    assert_eq!(a.iter().collect::<Vec<_>>(), [0, 5, 127, 128, 300]);
    assert!(!a.is_empty());
}

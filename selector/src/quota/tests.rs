//! The quota evaluators over plain JSON objects.
use serde_json::json;

use super::*;
use crate::resources::{list_to_json, parse_list};

fn pod(requests: Value, limits: Value) -> Value {
    json!({"spec": {"containers": [{"name": "app", "resources": {"requests": requests, "limits": limits}}]}})
}

#[test]
fn pod_usage_counts_compute_resources_until_the_pod_ends() {
    let mut p = pod(
        json!({"cpu": "250m", "memory": "64Mi", "example.com/gpu": "1", "hugepages-2Mi": "4Mi"}),
        json!({"cpu": "1", "memory": "128Mi"}),
    );
    let u = list_to_json(&Evaluator::Pods.usage(&p).unwrap());
    assert_eq!(
        u,
        json!({
            "count/pods": "1", "pods": "1",
            "cpu": "250m", "requests.cpu": "250m", "limits.cpu": "1",
            "memory": "64Mi", "requests.memory": "64Mi", "limits.memory": "128Mi",
            "requests.example.com/gpu": "1",
            "hugepages-2Mi": "4Mi", "requests.hugepages-2Mi": "4Mi",
        })
    );
    for phase in ["Succeeded", "Failed"] {
        p["status"] = json!({"phase": phase});
        assert_eq!(
            list_to_json(&Evaluator::Pods.usage(&p).unwrap()),
            json!({"count/pods": "1"})
        );
    }
}

#[test]
fn services_claims_and_counted_kinds() {
    let svc = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}});
    assert_eq!(
        list_to_json(&Evaluator::Services.usage(&svc).unwrap()),
        json!({"count/services": "1", "services": "1", "services.loadbalancers": "1", "services.nodeports": "2"})
    );
    let pvc = json!({"spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1.5Gi"}}}});
    assert_eq!(
        list_to_json(&Evaluator::PersistentVolumeClaims.usage(&pvc).unwrap()),
        json!({
            "count/persistentvolumeclaims": "1", "persistentvolumeclaims": "1",
            "requests.storage": "1536Mi",
            "fast.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
            "fast.storageclass.storage.k8s.io/requests.storage": "1536Mi",
        })
    );
    let cm = Evaluator::of("", "configmaps").unwrap();
    assert_eq!(
        list_to_json(&cm.usage(&json!({})).unwrap()),
        json!({"configmaps": "1", "count/configmaps": "1"})
    );
    let widgets = Evaluator::of("example.com", "widgets").unwrap();
    assert!(widgets.tracks("count/widgets.example.com"));
    assert!(!widgets.tracks("widgets"));
    assert_eq!(Evaluator::of("", "events"), None);
}

#[test]
fn names_map_to_the_kinds_that_count_them() {
    let kind = |n: &str| Evaluator::tracking(n).map(|(g, r, _)| (g, r));
    let core = |r: &str| Some((String::new(), r.to_owned()));
    assert_eq!(kind("requests.cpu"), core("pods"));
    assert_eq!(kind("requests.nvidia.com/gpu"), core("pods"));
    assert_eq!(kind("services.nodeports"), core("services"));
    assert_eq!(kind("requests.storage"), core("persistentvolumeclaims"));
    assert_eq!(kind("secrets"), core("secrets"));
    assert_eq!(kind("count/pods"), core("pods"));
    assert_eq!(
        kind("count/deployments.apps"),
        Some(("apps".into(), "deployments".into()))
    );
    assert_eq!(
        kind("count/widgets.example.com"),
        Some(("example.com".into(), "widgets".into()))
    );
    assert_eq!(
        counted_resource("count/widgets.example.com"),
        Some(("example.com", "widgets"))
    );
    assert_eq!(kind("requests.foo"), None);
}

#[test]
fn scopes() {
    let be = pod(json!({}), json!({}));
    let mut burst = pod(json!({"cpu": "1"}), json!({}));
    burst["spec"]["activeDeadlineSeconds"] = json!(30);
    burst["spec"]["priorityClassName"] = json!("high");
    let req = |name: &str, op: &str, values: &[&str]| ScopeRequirement {
        scope_name: name.into(),
        operator: op.into(),
        values: values.iter().map(|v| (*v).to_owned()).collect(),
    };
    let ev = Evaluator::Pods;
    assert!(ev.matches_scope(&req("BestEffort", "Exists", &[]), &be));
    assert!(!ev.matches_scope(&req("BestEffort", "Exists", &[]), &burst));
    assert!(ev.matches_scope(&req("NotBestEffort", "Exists", &[]), &burst));
    assert!(ev.matches_scope(&req("Terminating", "Exists", &[]), &burst));
    assert!(ev.matches_scope(&req("NotTerminating", "Exists", &[]), &be));
    assert!(ev.matches_scope(&req("PriorityClass", "In", &["high"]), &burst));
    assert!(!ev.matches_scope(&req("PriorityClass", "In", &["high"]), &be));
    assert!(ev.matches_scope(&req("PriorityClass", "NotIn", &["high"]), &be));
    assert!(ev.matches_scope(&req("PriorityClass", "DoesNotExist", &[]), &be));
    assert!(ev.matches_scope(&req("PriorityClass", "Exists", &[]), &burst));
    assert!(!Evaluator::Services.matches_scope(&req("NotTerminating", "Exists", &[]), &be));
    let quota = json!({"spec": {"scopes": ["BestEffort"], "scopeSelector": {"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In", "values": ["low"]}]}}});
    let scopes = scope_requirements(&quota);
    assert_eq!(scopes.len(), 2);
    assert_eq!(scopes[1], req("PriorityClass", "In", &["low"]));
    assert!(quota_matches(&ev, ["pods"], &[], &be));
    assert!(!quota_matches(&ev, ["services"], &[], &be));
    assert!(!quota_matches(&ev, ["pods"], &scopes, &be));
}

#[test]
fn constraints_name_what_is_missing_per_container() {
    let p = json!({"spec": {"containers": [
        {"name": "a", "resources": {"requests": {"cpu": "1"}}},
        {"name": "b"},
    ]}});
    assert_eq!(
        Evaluator::Pods.constraints(&["requests.cpu", "limits.memory", "pods"], &p),
        Err("must specify limits.memory for: a,b; requests.cpu for: b".into())
    );
    assert_eq!(
        Evaluator::Pods.constraints(&["pods", "count/pods"], &p),
        Ok(())
    );
    assert_eq!(Evaluator::Services.constraints(&["cpu"], &p), Ok(()));
}

#[test]
fn updates_that_can_change_usage() {
    let a = json!({"spec": {}});
    let b = json!({"spec": {"activeDeadlineSeconds": 5}});
    assert!(Evaluator::Pods.handles_update(&a, &b));
    assert!(!Evaluator::Pods.handles_update(&a, &a));
    assert!(Evaluator::Services.handles_update(&a, &a));
    assert!(!Evaluator::of("", "secrets").unwrap().handles_update(&a, &a));
}

#[test]
fn calculates_usage_from_listed_objects() {
    let hard = parse_list(&json!({
        "pods": "10", "requests.cpu": "4", "configmaps": "5",
        "count/widgets.example.com": "3", "example.com/foo": "1",
    }))
    .unwrap();
    let pods = [
        pod(json!({"cpu": "500m"}), json!({})),
        pod(json!({"cpu": "1"}), json!({})),
        {
            let mut done = pod(json!({"cpu": "2"}), json!({}));
            done["status"]["phase"] = json!("Succeeded");
            done
        },
    ];
    let u = calculate_usage(&hard, &[], |group, resource, visit| {
        match (group, resource) {
            ("", "pods") => {
                for p in &pods {
                    visit(p);
                }
                true
            }
            ("", "configmaps") => {
                visit(&json!({}));
                true
            }
            _ => false,
        }
    })
    .unwrap();
    assert_eq!(
        list_to_json(&u.used),
        json!({"pods": "2", "requests.cpu": "1500m", "configmaps": "1"})
    );
    assert_eq!(u.untracked, ["example.com/foo"]);
    assert_eq!(u.unknown, ["count/widgets.example.com"]);
    // What could not be recomputed keeps its previous value; names the
    // quota no longer limits go.
    let previous =
        parse_list(&json!({"count/widgets.example.com": "2", "pods": "7", "secrets": "1"}))
            .unwrap();
    assert_eq!(
        list_to_json(&u.status_used(&previous, &hard)),
        json!({"pods": "2", "requests.cpu": "1500m", "configmaps": "1", "count/widgets.example.com": "2"})
    );
    // A scope that no pod matches counts nothing but still reports zeros.
    let none = calculate_usage(
        &parse_list(&json!({"pods": "1"})).unwrap(),
        &[ScopeRequirement {
            scope_name: "Terminating".into(),
            operator: "Exists".into(),
            values: vec![],
        }],
        |_, _, visit| {
            for p in &pods {
                visit(p);
            }
            true
        },
    )
    .unwrap();
    assert_eq!(list_to_json(&none.used), json!({"pods": "0"}));
    let unknown = calculate_usage(
        &parse_list(&json!({"secrets": "1"})).unwrap(),
        &[],
        |_, _, _| false,
    )
    .unwrap();
    assert_eq!(unknown.unknown, ["secrets"]);
    assert!(unknown.used.is_empty());
}

/// A pod's usage read name by name is its usage list, entry for entry, and
/// nothing else: for any name a quota could hold.
#[test]
fn pod_usage_read_by_name_is_the_list() {
    let mut finished = pod(json!({"cpu": "1"}), json!({"cpu": "2"}));
    finished["status"] = json!({"phase": "Succeeded"});
    let pods = [
        pod(
            json!({"cpu": "250m", "memory": "64Mi", "ephemeral-storage": "1Gi", "example.com/gpu": "1",
                   "hugepages-2Mi": "4Mi", "kubernetes.io/native": "1", "requests.odd/x": "1"}),
            json!({"cpu": "1", "memory": "128Mi", "ephemeral-storage": "2Gi", "example.com/gpu": "1"}),
        ),
        pod(json!({}), json!({})),
        json!({"spec": {"containers": [{"name": "a"}]}}),
        json!({"spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "500m", "hugepages-1Gi": "1Gi"}}},
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "4"}}}],
            "overhead": {"cpu": "10m", "memory": "1Mi"},
        }}),
        finished,
    ];
    let probes = [
        "count/pods",
        "pods",
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "hugepages-2Mi",
        "requests.hugepages-2Mi",
        "hugepages-1Gi",
        "requests.hugepages-1Gi",
        "limits.hugepages-2Mi",
        "example.com/gpu",
        "requests.example.com/gpu",
        "limits.example.com/gpu",
        "requests.kubernetes.io/native",
        "kubernetes.io/native",
        "requests.requests.odd/x",
        "requests.odd/x",
        "count/services",
        "requests.storage",
        "requests.",
        "",
    ];
    for p in &pods {
        let resources = PodResources::of(p).unwrap();
        let usage = PodUsage::of(p, &resources);
        let list = pod_usage(p, &resources);
        assert_eq!(list, usage.to_list());
        assert_eq!(list, Evaluator::Pods.usage(p).unwrap(), "{p}");
        for name in list.keys().map(String::as_str).chain(probes) {
            assert_eq!(usage.get(name), list.get(name).copied(), "{name} of {p}");
        }
        assert_eq!(
            usage.view().get("pods"),
            usage.clone().into_owned().get("pods")
        );
    }
}

/// Objects cut to the fields `Evaluator::reads` names cost and match
/// scopes exactly as the whole objects do: the API server's recount reads
/// stored objects that way. Every field an evaluator reads is set in one
/// of these, beside fields none reads.
#[test]
fn objects_cut_to_what_an_evaluator_reads_measure_as_whole_ones() {
    use crate::partial::{Fields, parse};
    let meta = json!({
        "name": "x", "namespace": "ns", "uid": "u", "labels": {"app": "web"},
        "annotations": {"volume.beta.kubernetes.io/storage-class": "fast", "note": "n"},
        "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
        "deletionTimestamp": "2026-01-01T00:00:00Z",
    });
    let container = |name: &str, requests: Value, limits: Value| {
        json!({"name": name, "image": "nginx", "env": [{"name": "A", "value": "1"}],
               "resources": {"requests": requests, "limits": limits}})
    };
    let term = json!({"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone", "namespaces": ["other"]});
    let mut objects: Vec<(Evaluator, Value)> = vec![];
    for phase in ["Pending", "Running", "Succeeded", "Failed"] {
        objects.push((
            Evaluator::Pods,
            json!({
                "metadata": meta,
                "spec": {
                    "containers": [
                        container("app", json!({"cpu": "250m", "memory": "64Mi", "example.com/gpu": "1"}), json!({"cpu": "1", "memory": "128Mi"})),
                        container("side", json!({}), json!({"ephemeral-storage": "1Gi"})),
                    ],
                    "initContainers": [
                        container("init", json!({"cpu": "2"}), json!({"cpu": "2"})),
                        {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"memory": "1Gi"}}},
                    ],
                    "overhead": {"cpu": "100m"},
                    "activeDeadlineSeconds": 60,
                    "priorityClassName": "high",
                    "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
                    "nodeName": "n1", "tolerations": [{"operator": "Exists"}],
                },
                "status": {"phase": phase, "podIP": "10.0.0.1", "conditions": [{"type": "Ready", "status": "True"}]},
            }),
        ));
    }
    objects.push((
        Evaluator::Pods,
        json!({"metadata": meta, "spec": {
            "containers": [container("app", json!({}), json!({}))],
            "resources": {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}},
        }}),
    ));
    objects.push((
        Evaluator::Pods,
        json!({"metadata": meta, "spec": {"containers": [{"name": "be", "image": "i"}]}}),
    ));
    for t in ["NodePort", "LoadBalancer", "ClusterIP"] {
        objects.push((
            Evaluator::Services,
            json!({"metadata": meta, "spec": {"type": t, "selector": {"app": "web"},
                "ports": [{"port": 80, "nodePort": 30080}, {"port": 443}]}}),
        ));
    }
    for spec in [
        json!({"storageClassName": "slow", "resources": {"requests": {"storage": "1.5Gi"}}, "accessModes": ["ReadWriteOnce"]}),
        json!({"resources": {"requests": {"storage": "10G"}}}),
    ] {
        objects.push((
            Evaluator::PersistentVolumeClaims,
            json!({"metadata": meta, "spec": spec}),
        ));
    }
    objects.push((
        Evaluator::of("apps", "deployments").unwrap(),
        json!({"metadata": meta, "spec": {"replicas": 3}}),
    ));
    let scope = |name: &str, operator: &str, values: &[&str]| ScopeRequirement {
        scope_name: name.into(),
        operator: operator.into(),
        values: values.iter().map(|v| (*v).to_owned()).collect(),
    };
    let mut scopes: Vec<_> = SCOPES.iter().map(|s| scope(s, "Exists", &[])).collect();
    scopes.push(scope("PriorityClass", "In", &["high"]));
    scopes.push(scope("PriorityClass", "NotIn", &["high"]));
    scopes.push(scope("PriorityClass", "DoesNotExist", &[]));
    for (ev, obj) in &objects {
        let cut = parse(obj.to_string().as_bytes(), &Fields::of(ev.reads())).unwrap();
        assert!(
            cut.to_string().len() < obj.to_string().len(),
            "{ev:?}: nothing cut"
        );
        assert_eq!(ev.usage(&cut), ev.usage(obj), "{ev:?} usage of {obj}");
        // What a recount adds up: the usage of each tracked name, a name
        // the object does not use staying at zero.
        let whole = ev.usage(obj).unwrap();
        let mut sum: ResourceList = whole
            .keys()
            .map(|k| (k.clone(), Quantity::ZERO))
            .chain([("requests.example.com/none".to_owned(), Quantity::ZERO)])
            .collect();
        ev.add_usage(&cut, &mut sum).unwrap();
        ev.add_usage(&cut, &mut sum).unwrap();
        assert_eq!(
            sum.remove("requests.example.com/none"),
            Some(Quantity::ZERO)
        );
        let twice: ResourceList = whole
            .iter()
            .map(|(k, q)| {
                (k.clone(), {
                    let mut q2 = *q;
                    q2.add(q);
                    q2
                })
            })
            .collect();
        assert_eq!(sum, twice, "{ev:?} added usage of {obj}");
        for s in &scopes {
            assert_eq!(
                ev.matches_scope(s, &cut),
                ev.matches_scope(s, obj),
                "{ev:?} scope {s:?} of {obj}"
            );
        }
    }
    // The objects above do set what is read: each scope matches one of them.
    for s in SCOPES {
        let s = scope(s, "Exists", &[]);
        assert!(
            objects.iter().any(|(ev, o)| ev.matches_scope(&s, o)),
            "no object in scope {s:?}"
        );
    }
}

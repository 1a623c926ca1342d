//! Table tests of `PodTopologySpread`, on small clusters filed by `index`.

use super::*;
use crate::testutil::{TestCluster, node_json, pod_json, pod_json_in, with_pod};

type Labels<'a> = &'a [(&'a str, &'a str)];

/// n1, n2 in zone a; n3, n4 in zone b; n5 without a zone. n1 and n3 have an SSD.
fn cluster(pods: &[(&str, &str)]) -> TestCluster {
    let mut c = TestCluster::new();
    for (name, zone, ssd) in [
        ("n1", Some("a"), true),
        ("n2", Some("a"), false),
        ("n3", Some("b"), true),
        ("n4", Some("b"), false),
        ("n5", None, false),
    ] {
        let mut labels = vec![("kubernetes.io/hostname", name)];
        if let Some(z) = zone {
            labels.push(("zone", z));
        }
        if ssd {
            labels.push(("disk", "ssd"));
        }
        c.add(&node_json(name, "4", "8Gi", "110", &labels, &[]));
    }
    for (i, (node, extra)) in pods.iter().enumerate() {
        let json = match *extra {
            "other-ns" => pod_json_in(
                "other",
                &format!("p{i}"),
                &[("app", "web")],
                &format!(r#"{{"nodeName":"{node}"}}"#),
            ),
            "db" => pod_json(
                &format!("p{i}"),
                &[("app", "db")],
                &format!(r#"{{"nodeName":"{node}"}}"#),
            ),
            "terminating" => {
                let mut v: serde_json::Value = serde_json::from_str(&pod_json(
                    &format!("p{i}"),
                    &[("app", "web")],
                    &format!(r#"{{"nodeName":"{node}"}}"#),
                ))
                .unwrap();
                v["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
                v.to_string()
            }
            _ => pod_json(
                &format!("p{i}"),
                &[("app", "web")],
                &format!(r#"{{"nodeName":"{node}"}}"#),
            ),
        };
        c.add(&json);
    }
    c
}

fn constraint(extra: &str, when: &str) -> String {
    format!(
        r#"{{"topologySpreadConstraints":[{{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"{when}",
             "labelSelector":{{"matchLabels":{{"app":"web"}}}}{extra}}}]}}"#
    )
}

/// The filter's verdict for n1..n5.
fn filter_all(c: &TestCluster, labels: &[(&str, &str)], spec: &str) -> Vec<Option<Reason>> {
    with_pod("new", labels, spec, |pod| {
        c.with_snapshot(pod, |snap| {
            let state = FilterState::new(pod, snap);
            snap.nodes.iter().map(|n| state.filter(pod, n)).collect()
        })
    })
}

const WEB: &[(&str, &str)] = &[("app", "web")];
const OK: Option<Reason> = None;
const SKEW: Option<Reason> = Some(Reason::Spread);
const MISSING: Option<Reason> = Some(Reason::SpreadMissingLabel);

#[test]
fn do_not_schedule_keeps_skew_within_max_skew() {
    let two_a_one_b = [("n1", ""), ("n1", ""), ("n3", "")];
    // (pods, pod labels, spec, verdicts for n1..n5)
    let table: Vec<(Labels<'_>, Labels<'_>, String, [Option<Reason>; 5])> = vec![
        // a=2, b=1: a would be 3 vs 1.
        (
            &two_a_one_b,
            WEB,
            constraint("", "DoNotSchedule"),
            [SKEW, SKEW, OK, OK, MISSING],
        ),
        // No pods: every zone is fine.
        (
            &[],
            WEB,
            constraint("", "DoNotSchedule"),
            [OK, OK, OK, OK, MISSING],
        ),
        // The pod does not match its own selector: it adds nothing.
        (
            &two_a_one_b,
            &[("app", "other")],
            constraint("", "DoNotSchedule"),
            [OK, OK, OK, OK, MISSING],
        ),
        // Fewer domains than minDomains: the minimum counts as 0.
        (
            &two_a_one_b,
            WEB,
            constraint(r#","minDomains":3"#, "DoNotSchedule"),
            [SKEW, SKEW, SKEW, SKEW, MISSING],
        ),
        // Terminating pods, pods of other namespaces and other apps do not count.
        // (Had those on n3 counted, zone b would not be the empty minimum.)
        (
            &[
                ("n1", ""),
                ("n3", "terminating"),
                ("n3", "other-ns"),
                ("n3", "db"),
            ],
            WEB,
            constraint("", "DoNotSchedule"),
            [SKEW, SKEW, OK, OK, MISSING],
        ),
        (
            &[("n1", ""), ("n2", "")],
            WEB,
            constraint("", "DoNotSchedule"),
            [SKEW, SKEW, OK, OK, MISSING],
        ),
        // ScheduleAnyway constraints do not filter.
        (
            &two_a_one_b,
            WEB,
            constraint("", "ScheduleAnyway"),
            [OK, OK, OK, OK, OK],
        ),
    ];
    for (pods, labels, spec, want) in &table {
        let c = cluster(pods);
        assert_eq!(
            filter_all(&c, labels, spec),
            want.to_vec(),
            "{pods:?} {spec}"
        );
    }
}

#[test]
fn node_affinity_policy_decides_which_nodes_count() {
    // Two web pods on n2 (zone a, no SSD), one on n3 (zone b, SSD).
    let pods = [("n2", ""), ("n2", ""), ("n3", "")];
    let with_ssd = |policy: &str| {
        format!(
            r#"{{"nodeSelector":{{"disk":"ssd"}},"topologySpreadConstraints":[{{"maxSkew":1,
                "topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule","nodeAffinityPolicy":"{policy}",
                "labelSelector":{{"matchLabels":{{"app":"web"}}}}}}]}}"#
        )
    };
    let c = cluster(&pods);
    // Honor: only n1 and n3 count, so zone a has 0 pods and zone b 1.
    assert_eq!(
        filter_all(&c, WEB, &with_ssd("Honor"))[..4],
        [OK, OK, SKEW, SKEW]
    );
    // Ignore: all nodes count: a=2, b=1.
    assert_eq!(
        filter_all(&c, WEB, &with_ssd("Ignore"))[..4],
        [SKEW, SKEW, OK, OK]
    );
}

#[test]
fn node_taints_policy_honor_leaves_out_tainted_nodes() {
    let mut c = cluster(&[("n3", "")]);
    // n6: zone c, tainted; with Honor it does not make zone c a domain.
    c.add(&node_json(
        "n6",
        "4",
        "8Gi",
        "110",
        &[("zone", "c"), ("kubernetes.io/hostname", "n6")],
        &[("dedicated", "x", "NoSchedule")],
    ));
    let spec = |policy: &str| {
        constraint(
            &format!(r#","nodeTaintsPolicy":"{policy}""#),
            "DoNotSchedule",
        )
    };
    // Ignore: domains a=0, b=1, c=0: b is over.
    assert_eq!(filter_all(&c, WEB, &spec("Ignore"))[2], SKEW);
    // Honor: still a=0 and b=1.
    assert_eq!(filter_all(&c, WEB, &spec("Honor"))[2], SKEW);
    // With only b and c as domains and c left out, b is the minimum.
    let mut only_b = TestCluster::new();
    only_b.add(&node_json("b1", "4", "8Gi", "110", &[("zone", "b")], &[]));
    only_b.add(&node_json(
        "c1",
        "4",
        "8Gi",
        "110",
        &[("zone", "c")],
        &[("dedicated", "x", "NoSchedule")],
    ));
    only_b.add(&pod_json("p", WEB, r#"{"nodeName":"b1"}"#));
    assert_eq!(filter_all(&only_b, WEB, &spec("Honor")), [OK, OK]);
    assert_eq!(filter_all(&only_b, WEB, &spec("Ignore")), [SKEW, OK]);
}

/// Normalized scores for the feasible nodes `feasible` (indices into n1..n5).
fn scores(c: &TestCluster, spec: &str, feasible: &[usize]) -> Option<Vec<i64>> {
    with_pod("new", WEB, spec, |pod| {
        c.with_snapshot(pod, |snap| {
            let state = ScoreState::new(pod, snap, feasible)?;
            let mut s: Vec<i64> = feasible
                .iter()
                .enumerate()
                .map(|(k, &i)| state.score(k, i, &snap.nodes[i]))
                .collect();
            state.normalize(&mut s);
            Some(s)
        })
    })
}

#[test]
fn schedule_anyway_scores_less_loaded_domains_higher() {
    let c = cluster(&[("n1", ""), ("n1", ""), ("n1", ""), ("n3", "")]);
    // Zones: a has 3, b has 1; weight ln(2+2): a scores 4, b 1 → 25 and 100.
    assert_eq!(
        scores(&c, &constraint("", "ScheduleAnyway"), &[0, 1, 2, 3]),
        Some(vec![25, 25, 100, 100])
    );
    // n5 has no zone: it scores 0 and does not count for the range.
    assert_eq!(
        scores(&c, &constraint("", "ScheduleAnyway"), &[0, 2, 4]),
        Some(vec![25, 100, 0])
    );
    // By hostname: n1 has 3, n2 0, n3 1; weight ln(3+2): 5, 0, 2 → 0, 100, 60.
    let hostname = r#"{"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"kubernetes.io/hostname",
        "whenUnsatisfiable":"ScheduleAnyway","labelSelector":{"matchLabels":{"app":"web"}}}]}"#;
    assert_eq!(scores(&c, hostname, &[0, 1, 2]), Some(vec![0, 100, 60]));
    // No soft constraints: the score is skipped.
    assert_eq!(scores(&c, &constraint("", "DoNotSchedule"), &[0, 1]), None);
}

/// A pod of `owner` (a controller reference of that kind and uid) with
/// `spec`; a bound one when `spec` names a node.
fn owned_pod(name: &str, owner: (&str, &str, &str), spec: &str) -> String {
    let (api_version, kind, uid) = owner;
    let mut v: serde_json::Value =
        serde_json::from_str(&pod_json(name, &[("app", "web")], spec)).unwrap();
    v["metadata"]["ownerReferences"] = serde_json::json!([{"apiVersion": api_version,
        "kind": kind, "name": "owner", "uid": uid, "controller": true}]);
    v.to_string()
}

const RS: (&str, &str, &str) = ("apps/v1", "ReplicaSet", "rs-1");
const REQUESTS: &str =
    r#"{"containers":[{"name":"c","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}"#;

/// The node a decision binds `pod` to.
fn placed(c: &mut TestCluster, pod: &str) -> String {
    match c.decide(pod).0 {
        crate::schedule::Decision::Bind(node) => node,
        other => panic!("not bound: {other:?}"),
    }
}

/// Three nodes in three zones; `big` has four times the room, so that
/// least-allocated scoring alone always picks it.
fn uneven() -> TestCluster {
    let mut c = TestCluster::new();
    for (name, zone, cpu, memory) in [
        ("big", "a", "16", "32Gi"),
        ("s1", "b", "4", "8Gi"),
        ("s2", "c", "4", "8Gi"),
    ] {
        c.add(&node_json(
            name,
            cpu,
            memory,
            "110",
            &[
                ("kubernetes.io/hostname", name),
                ("topology.kubernetes.io/zone", zone),
            ],
            &[],
        ));
    }
    c
}

#[test]
fn the_default_constraints_spread_a_controllers_pods() {
    // Without an owner (or with one the defaults do not count), the pods
    // all go to the roomiest node.
    for owner in [None, Some(("batch/v1", "Job", "job-1"))] {
        let mut c = uneven();
        for i in 0..3 {
            let name = format!("p{i}");
            let pending = match owner {
                Some(o) => owned_pod(&name, o, REQUESTS),
                None => pod_json(&name, &[("app", "web")], REQUESTS),
            };
            let node = placed(&mut c, &pending);
            assert_eq!(node, "big", "{owner:?}");
            let mut bound: serde_json::Value = serde_json::from_str(&pending).unwrap();
            bound["spec"]["nodeName"] = node.into();
            c.add(&bound.to_string());
        }
    }
    // Three pods of one ReplicaSet: one a node, as kube-scheduler's
    // system defaults spread them.
    let mut c = uneven();
    let mut nodes = Vec::new();
    for i in 0..3 {
        let pending = owned_pod(&format!("p{i}"), RS, REQUESTS);
        let node = placed(&mut c, &pending);
        let mut bound: serde_json::Value = serde_json::from_str(&pending).unwrap();
        bound["spec"]["nodeName"] = node.clone().into();
        c.add(&bound.to_string());
        nodes.push(node);
    }
    nodes.sort();
    assert_eq!(nodes, ["big", "s1", "s2"]);
}

#[test]
fn the_default_constraints_count_only_the_owners_live_pods() {
    let bound = |name: &str, owner: (&str, &str, &str), node: &str| {
        owned_pod(name, owner, &format!(r#"{{"nodeName":"{node}"}}"#))
    };
    // Two pods of another ReplicaSet on s1 and s2 do not push the next
    // pod of rs-1 off `big`; two of rs-1 on `big` do.
    let mut c = uneven();
    c.add(&bound("o1", ("apps/v1", "ReplicaSet", "rs-2"), "big"));
    c.add(&bound("o2", ("apps/v1", "ReplicaSet", "rs-2"), "big"));
    assert_eq!(placed(&mut c, &owned_pod("new", RS, REQUESTS)), "big");
    c.add(&bound("a1", RS, "big"));
    c.add(&bound("a2", RS, "big"));
    assert_ne!(placed(&mut c, &owned_pod("new", RS, REQUESTS)), "big");
    // Pods being deleted do not count.
    let mut c = uneven();
    for name in ["t1", "t2"] {
        let mut v: serde_json::Value = serde_json::from_str(&bound(name, RS, "big")).unwrap();
        v["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
        c.add(&v.to_string());
    }
    assert_eq!(placed(&mut c, &owned_pod("new", RS, REQUESTS)), "big");
    // StatefulSets and ReplicationControllers count too; a pod with
    // constraints of its own gets no defaults (here one that only a zone
    // `big` is not in would break: it is in zone a, alone).
    for owner in [
        ("apps/v1", "StatefulSet", "ss-1"),
        ("v1", "ReplicationController", "rc-1"),
    ] {
        let mut c = uneven();
        c.add(&bound("a1", owner, "big"));
        c.add(&bound("a2", owner, "big"));
        assert_ne!(placed(&mut c, &owned_pod("new", owner, REQUESTS)), "big");
    }
    let own = r#"{"containers":[{"name":"c","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}],
        "topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone",
        "whenUnsatisfiable":"ScheduleAnyway","labelSelector":{"matchLabels":{"app":"db"}}}]}"#;
    let mut c = uneven();
    c.add(&bound("a1", RS, "big"));
    c.add(&bound("a2", RS, "big"));
    assert_eq!(placed(&mut c, &owned_pod("new", RS, own)), "big");
}

#[test]
fn the_default_constraints_spread_over_the_best_nodes_of_a_large_cluster() {
    // 250 nodes (a decision looks for 120 feasible ones, more than the 100
    // the defaults are scored on), each holding one pod of the same size:
    // of rs-1 on 200 of them, of rs-2 on the other 50. Room alone ranks
    // them all the same; the spread sends rs-1's next pod to an rs-2 node.
    let mut c = TestCluster::new();
    let rs2 = ("apps/v1", "ReplicaSet", "rs-2");
    for i in 0..250 {
        let name = format!("n{i:03}");
        c.add(&node_json(
            &name,
            "4",
            "8Gi",
            "110",
            &[
                ("kubernetes.io/hostname", &name),
                ("topology.kubernetes.io/zone", &format!("z{}", i % 3)),
            ],
            &[],
        ));
        let owner = if i % 5 == 0 { rs2 } else { RS };
        let spec = format!(
            r#"{{"nodeName":"{name}","containers":[{{"name":"c","resources":{{"requests":{{"cpu":"1","memory":"1Gi"}}}}}}]}}"#
        );
        c.add(&owned_pod(&format!("p{i}"), owner, &spec));
    }
    for new in ["a", "b", "c", "d"] {
        let node = placed(&mut c, &owned_pod(new, RS, REQUESTS));
        let i: usize = node[1..].parse().unwrap();
        assert_eq!(i % 5, 0, "{new} went to {node}, which holds a pod of rs-1");
    }
}

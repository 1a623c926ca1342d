//! Tests of whole decisions: filters in order, the failure message,
//! pre-filtering, scoring, the search window and what a decision reads.

use super::*;
use crate::testutil::{TestCluster, node_json, pod_json};

fn bind(node: &str) -> Decision {
    Decision::Bind(node.to_owned())
}

fn unschedulable(msg: &str) -> Decision {
    Decision::Unschedulable(msg.to_owned())
}

fn cpu(c: &str) -> String {
    format!(r#"{{"containers":[{{"resources":{{"requests":{{"cpu":"{c}"}}}}}}]}}"#)
}

#[test]
fn feasible_nodes_to_find_is_adaptive() {
    let table = [
        (0, 0),
        (50, 50),
        (99, 99),
        (100, 100),
        (200, 100),
        (1000, 420),
        (5000, 500),
        (6250, 312),
        (20000, 1000),
    ];
    for (nodes, want) in table {
        assert_eq!(feasible_nodes_to_find(nodes), want, "{nodes} nodes");
    }
}

#[test]
fn the_failure_message_counts_reasons_per_node() {
    let mut c = TestCluster::new();
    c.add(&node_json(
        "gpu-1",
        "4",
        "8Gi",
        "110",
        &[("accel", "gpu")],
        &[("dedicated", "gpu", "NoSchedule")],
    ));
    c.add(&node_json("n2", "4", "8Gi", "110", &[], &[]));
    c.add(&node_json("n3", "4", "8Gi", "110", &[], &[]));
    let (d, _) = c.decide(&pod_json("p", &[], r#"{"nodeSelector":{"accel":"gpu"}}"#));
    assert_eq!(
        d,
        unschedulable(
            "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, \
             2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.."
        )
    );
    // Tolerating the taint, it goes to the GPU node.
    let tolerant = r#"{"nodeSelector":{"accel":"gpu"},"tolerations":[{"key":"dedicated","operator":"Exists"}]}"#;
    assert_eq!(c.decide(&pod_json("p", &[], tolerant)).0, bind("gpu-1"));
}

#[test]
fn filters_run_in_the_default_profiles_order() {
    let mut c = TestCluster::new();
    // Cordoned and tainted: reported as unschedulable (the first filter).
    let mut cordoned: serde_json::Value = serde_json::from_str(&node_json(
        "n1",
        "1",
        "1Gi",
        "110",
        &[],
        &[("t", "", "NoSchedule")],
    ))
    .unwrap();
    cordoned["spec"]["unschedulable"] = true.into();
    c.add(&cordoned.to_string());
    // Tainted and too small: the taint.
    c.add(&node_json(
        "n2",
        "1",
        "1Gi",
        "110",
        &[],
        &[("t", "", "NoSchedule")],
    ));
    // Too small for cpu and memory: both.
    c.add(&node_json("n3", "1", "1Gi", "110", &[], &[]));
    let spec = r#"{"containers":[{"resources":{"requests":{"cpu":"2","memory":"2Gi"}}}]}"#;
    assert_eq!(
        c.decide(&pod_json("p", &[], spec)).0,
        unschedulable(
            "0/3 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, \
             1 node(s) had untolerated taint {t: }, 1 node(s) were unschedulable. preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.."
        )
    );
}

#[test]
fn resources_bound_to_a_node_count_against_it() {
    let mut c = TestCluster::new();
    c.add(&node_json("n1", "2", "8Gi", "110", &[], &[]));
    c.add(&node_json("n2", "2", "8Gi", "110", &[], &[]));
    c.add(&pod_json(
        "a",
        &[],
        &format!(r#"{{"nodeName":"n1",{}"#, &cpu("1500m")[1..]),
    ));
    // 1 cpu fits only on n2.
    assert_eq!(c.decide(&pod_json("p", &[], &cpu("1"))).0, bind("n2"));
    c.add(&pod_json(
        "b",
        &[],
        &format!(r#"{{"nodeName":"n2",{}"#, &cpu("1500m")[1..]),
    ));
    assert_eq!(
        c.decide(&pod_json("p", &[], &cpu("1"))).0,
        unschedulable(
            "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.."
        )
    );
    // Finished pods hold nothing.
    let mut done: serde_json::Value =
        serde_json::from_str(&pod_json("c", &[], r#"{"nodeName":"n1"}"#)).unwrap();
    done["status"]["phase"] = "Succeeded".into();
    let mut c2 = TestCluster::new();
    c2.add(&node_json("n1", "2", "8Gi", "1", &[], &[]));
    c2.add(&done.to_string());
    assert_eq!(c2.decide(&pod_json("p", &[], "{}")).0, bind("n1"));
}

#[test]
fn pinned_node_names_narrow_the_search() {
    let mut c = TestCluster::new();
    for n in ["n1", "n2", "n3"] {
        c.add(&node_json(n, "4", "8Gi", "110", &[], &[]));
    }
    let pinned = |names: &str| {
        format!(
            r#"{{"affinity":{{"nodeAffinity":{{"requiredDuringSchedulingIgnoredDuringExecution":{{"nodeSelectorTerms":[
                {{"matchFields":[{{"key":"metadata.name","operator":"In","values":[{names}]}}]}}]}}}}}}}}"#
        )
    };
    let (d, stats) = c.decide(&pod_json("p", &[], &pinned(r#""n2""#)));
    assert_eq!(d, bind("n2"));
    assert_eq!(stats.filtered, 1);
    assert_eq!(
        c.decide(&pod_json("p", &[], &pinned(r#""gone""#))).0,
        unschedulable(
            "0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [NodeAffinity]. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.."
        )
    );
    let conflict = r#"{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
        {"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]},
                        {"key":"metadata.name","operator":"In","values":["n2"]}]}]}}}}"#;
    assert_eq!(
        c.decide(&pod_json("p", &[], conflict)).0,
        unschedulable(
            "0/3 nodes are available: pod affinity terms conflict. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.."
        )
    );
}

#[test]
fn no_nodes_at_all() {
    assert_eq!(
        TestCluster::new().decide(&pod_json("p", &[], "{}")).0,
        Decision::NoNodes
    );
}

#[test]
fn scores_pick_the_best_node() {
    // (extra node labels/taints of n1 and n2, pod spec, expected node)
    let big = |name: &str, labels: &[(&str, &str)], taints: &[(&str, &str, &str)]| {
        node_json(name, "4", "8Gi", "110", labels, taints)
    };
    // Least allocated: n1 already has 2 cpu requested.
    let mut c = TestCluster::new();
    c.add(&big("n1", &[], &[]));
    c.add(&big("n2", &[], &[]));
    c.add(&pod_json(
        "a",
        &[],
        &format!(r#"{{"nodeName":"n1",{}"#, &cpu("2")[1..]),
    ));
    assert_eq!(c.decide(&pod_json("p", &[], &cpu("100m"))).0, bind("n2"));

    // A PreferNoSchedule taint weighs 3 × 100 against the busier node's loss.
    let mut c = TestCluster::new();
    c.add(&big("n1", &[], &[]));
    c.add(&big("n2", &[], &[("spot", "", "PreferNoSchedule")]));
    c.add(&pod_json(
        "a",
        &[],
        &format!(r#"{{"nodeName":"n1",{}"#, &cpu("2")[1..]),
    ));
    assert_eq!(c.decide(&pod_json("p", &[], &cpu("100m"))).0, bind("n1"));

    // Preferred node affinity.
    let mut c = TestCluster::new();
    c.add(&big("n1", &[], &[]));
    c.add(&big("n2", &[("disk", "ssd")], &[]));
    let prefers_ssd = r#"{"affinity":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[
        {"weight":1,"preference":{"matchExpressions":[{"key":"disk","operator":"In","values":["ssd"]}]}}]}}}"#;
    for i in 0..10 {
        assert_eq!(
            c.decide(&pod_json(&format!("p{i}"), &[], prefers_ssd)).0,
            bind("n2")
        );
    }
}

#[test]
fn equal_nodes_are_chosen_deterministically_but_spread() {
    let mut c = TestCluster::new();
    for i in 0..10 {
        c.add(&node_json(&format!("n{i}"), "4", "8Gi", "110", &[], &[]));
    }
    let mut chosen = std::collections::BTreeSet::new();
    for i in 0..50 {
        let pod = pod_json(&format!("web-{i}"), &[], "{}");
        let first = c.decide(&pod).0;
        assert_eq!(c.decide(&pod).0, first, "the same pod, the same node");
        chosen.insert(format!("{first:?}"));
    }
    assert!(
        chosen.len() >= 8,
        "50 pods over 10 equal nodes chose only {chosen:?}"
    );
}

/// A cluster of `nodes` nodes with `per_node` plain pods bound to each.
fn big_cluster(nodes: usize, per_node: usize) -> TestCluster {
    let mut c = TestCluster::new();
    for i in 0..nodes {
        let name = format!("node-{i}");
        c.add(&node_json(
            &name,
            "64",
            "256Gi",
            "250",
            &[
                ("kubernetes.io/hostname", &name),
                ("zone", ["a", "b", "c"][i % 3]),
            ],
            &[],
        ));
        for j in 0..per_node {
            c.add(&pod_json(
                &format!("p-{i}-{j}"),
                &[("app", "other")],
                &format!(r#"{{"nodeName":"{name}",{}"#, &cpu("100m")[1..]),
            ));
        }
    }
    c
}

#[test]
fn a_decision_reads_a_window_of_nodes_and_no_pods() {
    let mut c = big_cluster(1000, 0);
    let (d, stats) = c.decide(&pod_json("p", &[("app", "web")], &cpu("100m")));
    assert!(matches!(d, Decision::Bind(_)));
    // A window of shards holding at least 420 × 1.25 nodes, not all 1000.
    assert!(
        (525..750).contains(&stats.nodes),
        "{} nodes read",
        stats.nodes
    );
    assert_eq!(stats.filtered, 420);
    assert_eq!(stats.usage_reads, 420);
    assert_eq!(stats.feasible, 420);
    assert_eq!(stats.pods, 0);
    // Bound pods without affinity are never read for a plain pod.
    let mut c = big_cluster(200, 3);
    let (_, stats) = c.decide(&pod_json("p", &[("app", "web")], &cpu("100m")));
    assert_eq!((stats.pods, stats.lookups), (0, 1));
}

#[test]
fn anti_affinity_reads_only_the_pods_it_selects() {
    let mut c = big_cluster(20, 2);
    for i in 0..5 {
        c.add(&pod_json(
            &format!("web-{i}"),
            &[("app", "web")],
            &format!(r#"{{"nodeName":"node-{i}"}}"#),
        ));
    }
    let anti = r#"{"affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
        {"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"kubernetes.io/hostname"}]}}}"#;
    let (d, stats) = c.decide(&pod_json("web-new", &[("app", "web")], anti));
    let Decision::Bind(node) = d else {
        panic!("{d:?}")
    };
    let n: usize = node.trim_start_matches("node-").parse().unwrap();
    assert!(n >= 5, "placed next to a web pod on {node}");
    // The five web pods, not the forty others.
    assert_eq!(stats.pods, 5);
}

#[test]
fn a_window_short_of_feasible_nodes_reads_the_rest() {
    // 200 nodes: a window holds about 125; only 20 nodes are untainted.
    let mut c = TestCluster::new();
    for i in 0..200 {
        let taints: &[(&str, &str, &str)] = if i % 10 == 0 {
            &[]
        } else {
            &[("dedicated", "x", "NoSchedule")]
        };
        c.add(&node_json(
            &format!("n{i:03}"),
            "4",
            "8Gi",
            "110",
            &[],
            taints,
        ));
    }
    let (d, stats) = c.decide(&pod_json("p", &[], &cpu("100m")));
    assert!(
        matches!(d, Decision::Bind(ref n) if n.ends_with('0')),
        "{d:?}"
    );
    assert_eq!(
        (stats.nodes, stats.filtered, stats.feasible),
        (200, 200, 20)
    );
    // Nothing fits: every node is read, counted and explained.
    let mut all_tainted = TestCluster::new();
    for i in 0..150 {
        all_tainted.add(&node_json(
            &format!("n{i:03}"),
            "4",
            "8Gi",
            "110",
            &[],
            &[("dedicated", "x", "NoSchedule")],
        ));
    }
    assert_eq!(
        all_tainted.decide(&pod_json("p", &[], "{}")).0,
        unschedulable(
            "0/150 nodes are available: 150 node(s) had untolerated taint {dedicated: x}. preemption: 0/150 nodes are available: 150 Preemption is not helpful for scheduling.."
        )
    );
}

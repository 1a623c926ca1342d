//! A node's pods: marked not ready, evicted by `NoExecute` taints, and
//! force-deleted on an out-of-service node; a healthy node's left unread.

use std::time::Duration;

use windlass_sdk::log::Level;

use super::*;

/// A node whose `Ready` is `status` (posted at `t(0)`) and whose taints
/// are already what that calls for, plus `extra` taints.
fn settled(status: &str, extra: Value) -> Object {
    let key = match status {
        "False" => "node.kubernetes.io/not-ready",
        _ => "node.kubernetes.io/unreachable",
    };
    node(vec![cond("Ready", status, 0)], |n| {
        let mut taints = vec![
            json!({"key": key, "effect": "NoSchedule"}),
            json!({"key": key, "effect": "NoExecute", "timeAdded": ts(-20)}),
        ];
        taints.extend(extra.as_array().cloned().unwrap_or_default());
        n["spec"]["taints"] = json!(taints);
    })
}

fn tolerating(name: &str, key: &str, seconds: Option<i64>) -> Object {
    pod(name, |p| {
        let mut t = json!({"key": key, "operator": "Exists", "effect": "NoExecute"});
        if let Some(s) = seconds {
            t["tolerationSeconds"] = json!(s);
        }
        p["spec"]["tolerations"] = json!([t]);
    })
}

#[test]
fn ready_pods_of_a_node_that_is_not_ready_are_marked_not_ready() {
    let nr = "node.kubernetes.io/not-ready";
    let mut h = harness([
        settled("False", json!([])),
        tolerating("web-1", nr, None),
        pod("done", |p| {
            p["status"]["phase"] = json!("Succeeded");
            p["spec"]["tolerations"] = json!([{"operator": "Exists"}]);
        }),
        pod("starting", |p| {
            p["status"]["conditions"][1]["status"] = json!("False");
            p["spec"]["tolerations"] = json!([{"operator": "Exists"}]);
        }),
    ]);
    let out = step(&mut h, 1);
    let p = patches(&out, &pod_key("web-1"));
    assert_eq!(p.len(), 1);
    let (sub, patch) = p[0];
    assert_eq!(sub, Some("status"));
    assert_eq!(patch["metadata"]["resourceVersion"], "7");
    let conditions = &patch["status"]["conditions"];
    assert_eq!(
        summary(conditions),
        ["PodScheduled=True()", "Ready=False()"]
    );
    assert_eq!(conditions[1]["lastTransitionTime"], json!(ts(1)));
    assert!(patches(&out, &pod_key("done")).is_empty());
    assert!(patches(&out, &pod_key("starting")).is_empty());
    assert_eq!(
        events(&out),
        ["Warning NodeNotReady: Node is not ready (web-1)"]
    );
    assert!(pod_deletes(&out).is_empty());
    // Done once.
    assert!(step(&mut h, 2).writes.is_empty());
}

#[test]
fn noexecute_taints_evict_at_once_or_when_toleration_seconds_run_out() {
    let ur = "node.kubernetes.io/unreachable";
    let all_unknown: Vec<Value> = ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"]
        .iter()
        .map(|t| cond(t, "Unknown", -100))
        .collect();
    let n = node(all_unknown, |n| {
        n["spec"]["taints"] = json!([
            {"key": ur, "effect": "NoSchedule"},
            {"key": ur, "effect": "NoExecute", "timeAdded": ts(-20)},
        ]);
    });
    let mut h = harness([
        n,
        pod("plain", |_| {}),
        tolerating("minute", ur, Some(60)),
        tolerating("forever", ur, None),
    ]);
    let out = step(&mut h, 0);
    // `plain` does not tolerate the taint: marked not ready and evicted in
    // one status patch, then deleted with its own grace period.
    let p = patches(&out, &pod_key("plain"));
    assert_eq!(p.len(), 1);
    let conditions = &p[0].1["status"]["conditions"];
    assert_eq!(
        summary(conditions),
        [
            "PodScheduled=True()",
            "Ready=False()",
            "DisruptionTarget=True(DeletionByTaintManager)"
        ]
    );
    assert_eq!(
        conditions[2]["message"],
        "Taint manager: deleting due to NoExecute taint"
    );
    assert_eq!(
        pod_deletes(&out),
        [("plain", &DeleteOptions::new().uid("uid-plain"))]
    );
    assert!(events(&out).contains(
        &"Normal TaintManagerEviction: Marking for deletion Pod default/plain (plain)".to_owned()
    ));
    // `minute` goes 60 s after the taint's timeAdded.
    assert_eq!(out.requeue_after, Some(Duration::from_secs(40)));
    let out = step(&mut h, 39);
    assert!(pod_deletes(&out).is_empty());
    assert_eq!(out.requeue_after, Some(Duration::from_secs(1)));
    let out = step(&mut h, 40);
    assert_eq!(
        pod_deletes(&out),
        [("minute", &DeleteOptions::new().uid("uid-minute"))]
    );
    // `forever` stays; so does `plain`, now terminating, evicted only once.
    let out = step(&mut h, 1000);
    assert!(pod_deletes(&out).is_empty(), "{out:?}");
    assert!(h.get(&pod_key("forever")).is_some());
}

#[test]
fn a_taint_without_time_added_gets_one_to_count_from() {
    let extra = json!([{"key": "maintenance", "effect": "NoExecute"}]);
    let mut h = harness([
        settled("Unknown", extra),
        pod("web-1", |p| {
            p["spec"]["tolerations"] = json!([
                {"key": "maintenance", "operator": "Exists", "tolerationSeconds": 30},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists"},
            ]);
        }),
    ]);
    let out = step(&mut h, 0);
    let (_, patch) = patches(&out, &node_key())[0];
    assert_eq!(patch["spec"]["taints"][2]["timeAdded"], json!(ts(0)));
    // The unreachable taint keeps its own.
    assert_eq!(patch["spec"]["taints"][1]["timeAdded"], json!(ts(-20)));
    assert_eq!(
        out.requeue_after,
        Some(Duration::from_secs(5)),
        "the heartbeat's grace first"
    );
    assert!(pod_deletes(&step(&mut h, 29)).is_empty());
    assert_eq!(pod_deletes(&step(&mut h, 30)).len(), 1);
}

#[test]
fn a_simulated_node_that_is_ready_evicts_its_own_pods() {
    let taint = json!([{"key": "maintenance", "effect": "NoExecute", "timeAdded": ts(-1)}]);
    for (simulated, evicted) in [(true, 0), (false, 1)] {
        let n = healthy(|n| {
            if simulated {
                n["metadata"]["labels"] = json!({"windlass.dev/simulated": "true"});
            }
            n["spec"]["taints"] = taint.clone();
        });
        let mut h = harness([n, pod("web-1", |_| {})]);
        let out = step(&mut h, 1);
        assert_eq!(pod_deletes(&out).len(), evicted, "simulated: {simulated}");
    }
    // Not ready, a simulated node's pods are this controller's to evict.
    let n = settled("Unknown", json!([]));
    let mut v = n.value().clone();
    v["metadata"]["labels"] = json!({"windlass.dev/simulated": "true"});
    let mut h = harness([Object::from_value(v).unwrap(), pod("web-1", |_| {})]);
    assert_eq!(pod_deletes(&step(&mut h, 1)).len(), 1);
}

#[test]
fn terminating_pods_of_an_out_of_service_node_are_force_deleted() {
    let oos = json!([{"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}]);
    let terminating = |name: &str, grace: i64| {
        pod(name, |p| {
            p["metadata"]["deletionTimestamp"] = json!(ts(-5));
            p["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
        })
    };
    let mut h = harness([
        settled("Unknown", oos.clone()),
        terminating("stuck", 30),
        terminating("going", 0),
        pod("finished", |p| {
            p["metadata"]["deletionTimestamp"] = json!(ts(-5));
            p["status"]["phase"] = json!("Failed");
        }),
    ]);
    let out = step(&mut h, 1);
    let (_, patch) = patches(&out, &pod_key("stuck"))[0];
    // Upstream's gcTerminating marks the pod Failed with no condition.
    assert_eq!(patch["status"], json!({"phase": "Failed"}));
    assert_eq!(patch["metadata"]["resourceVersion"], "7");
    let zero = |uid: &str| DeleteOptions::new().grace_period_seconds(0).uid(uid);
    assert_eq!(
        pod_deletes(&out),
        [
            ("finished", &zero("uid-finished")),
            ("stuck", &zero("uid-stuck"))
        ]
    );
    assert!(patches(&out, &pod_key("finished")).is_empty());

    // A node that is ready is not out of service, whatever its taints.
    let n = healthy(|n| n["spec"]["taints"] = oos.clone());
    let mut h = harness([n, terminating("stuck", 30)]);
    assert!(pod_deletes(&step(&mut h, 1)).is_empty());
}

#[test]
fn a_healthy_node_reads_no_pod_and_writes_nothing() {
    // A pod that cannot be read as one: reading it would log a warning.
    let broken = || pod("broken", |p| p["spec"]["tolerations"] = json!("oops"));
    let mut h = harness([healthy(|_| {}), broken(), pod("web-1", |_| {})]);
    let out = step(&mut h, 1);
    assert!(out.writes.is_empty() && out.events.is_empty(), "{out:?}");
    assert_eq!(out.requeue_after, Some(Duration::from_secs(4)));
    assert!(h.logs().is_empty(), "{:?}", h.logs());

    // The same pods on a node that is not ready are read.
    let mut h = harness([settled("False", json!([])), broken()]);
    step(&mut h, 1);
    assert!(
        h.logs()
            .iter()
            .any(|(l, m)| *l == Level::Warn && m.contains("skipped")),
        "{:?}",
        h.logs()
    );
}

//! Health: conditions turn `Unknown` when the kubelet is not heard from.

use std::time::Duration;

use super::*;

#[test]
fn a_node_that_never_posts_is_unknown_after_the_startup_grace() {
    let mut h = harness([node(vec![], |n| {
        n["metadata"]["creationTimestamp"] = json!(ts(0));
    })]);
    let out = step(&mut h, 4);
    assert!(out.writes.is_empty());
    assert_eq!(out.requeue_after, Some(Duration::from_secs(6)));

    let out = step(&mut h, 10);
    let p = patches(&out, &node_key());
    assert_eq!(p.len(), 1, "the status patch goes alone");
    let (sub, patch) = p[0];
    assert_eq!(sub, Some("status"));
    assert_eq!(patch["metadata"]["resourceVersion"], "1");
    let conditions = &patch["status"]["conditions"];
    assert_eq!(
        summary(conditions),
        [
            "Ready=Unknown(NodeStatusNeverUpdated)",
            "MemoryPressure=Unknown(NodeStatusNeverUpdated)",
            "DiskPressure=Unknown(NodeStatusNeverUpdated)",
            "PIDPressure=Unknown(NodeStatusNeverUpdated)",
        ]
    );
    for c in conditions.as_array().unwrap() {
        assert_eq!(c["message"], "Kubelet never posted node status.");
        assert_eq!(c["lastHeartbeatTime"], json!(ts(0)));
        assert_eq!(c["lastTransitionTime"], json!(ts(10)));
    }
    // Never posted, so never lost: no NodeNotReady.
    assert!(out.events.is_empty());

    // The next reconcile taints the node unreachable.
    let out = step(&mut h, 11);
    assert_eq!(
        taint_list(&h),
        [
            "node.kubernetes.io/unreachable:NoSchedule",
            "node.kubernetes.io/unreachable:NoExecute"
        ]
    );
    let (_, patch) = patches(&out, &node_key())[0];
    assert_eq!(patch["spec"]["taints"][1]["timeAdded"], json!(ts(11)));
    assert!(patch["spec"]["taints"][0].get("timeAdded").is_none());
    // Then nothing changes.
    assert!(step(&mut h, 12).is_empty());
}

#[test]
fn the_later_of_the_ready_heartbeat_and_the_lease_counts() {
    // (Ready's heartbeat, the Lease's renewal, now): stale, or the wait.
    for (heartbeat, renewed, now, want) in [
        (-100, Some(-2), 0, None),
        (-100, Some(-2), 3, Some(Duration::ZERO)),
        (-100, Some(-10), 0, Some(Duration::ZERO)),
        (-1, None, 0, None),
        (-1, Some(-50), 0, None),
        (-6, None, 0, Some(Duration::ZERO)),
    ] {
        let mut objects = vec![node(
            vec![
                cond("Ready", "True", heartbeat),
                cond("MemoryPressure", "False", heartbeat),
            ],
            |_| {},
        )];
        objects.extend(renewed.map(lease));
        let mut h = harness(objects);
        let out = step(&mut h, now);
        let latest = heartbeat.max(renewed.unwrap_or(i64::MIN));
        let case = format!("heartbeat {heartbeat}, lease {renewed:?}, now {now}");
        if want.is_some() {
            let (_, patch) = patches(&out, &node_key())[0];
            assert_eq!(
                summary(&patch["status"]["conditions"]),
                [
                    "Ready=Unknown(NodeStatusUnknown)",
                    "MemoryPressure=Unknown(NodeStatusUnknown)",
                    "DiskPressure=Unknown(NodeStatusNeverUpdated)",
                    "PIDPressure=Unknown(NodeStatusNeverUpdated)",
                ],
                "{case}"
            );
            let ready = &patch["status"]["conditions"][0];
            assert_eq!(ready["message"], "Kubelet stopped posting node status.");
            assert_eq!(ready["lastHeartbeatTime"], json!(ts(heartbeat)), "{case}");
            assert_eq!(ready["lastTransitionTime"], json!(ts(now)), "{case}");
            assert_eq!(
                events(&out),
                ["Normal NodeNotReady: Node node-1 status is now: NodeNotReady (node)"],
                "{case}"
            );
        } else {
            assert!(out.writes.is_empty(), "{case}");
            let wait = Duration::from_secs((latest + 5 - now) as u64);
            assert_eq!(out.requeue_after, Some(wait), "{case}");
        }
    }
}

#[test]
fn unknown_is_left_for_the_kubelet_to_turn_back() {
    let conditions = ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"]
        .iter()
        .map(|t| cond(t, "Unknown", -100))
        .collect();
    let unreachable = json!([
        {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": ts(-90)},
    ]);
    // A fresh Lease does not make the node ready again; nothing is written
    // and nothing falls due.
    let mut h = harness([
        node(conditions, |n| n["spec"]["taints"] = unreachable),
        lease(0),
    ]);
    let out = step(&mut h, 1);
    assert!(out.is_empty(), "{out:?}");
}

#[test]
fn a_node_being_deleted_is_left_alone() {
    let mut h = harness([node(vec![cond("Ready", "True", -100)], |n| {
        n["metadata"]["deletionTimestamp"] = json!(ts(-1));
    })]);
    assert!(step(&mut h, 0).is_empty());
}

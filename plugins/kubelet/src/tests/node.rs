//! The node's own reports: its status (Ready, capacity, addresses,
//! versions), its labels and its heartbeat Lease, and how often each is
//! written.

use std::time::Duration;

use serde_json::json;

use super::*;

fn node_status_patch(out: &Outcome) -> Option<&Value> {
    out.writes.iter().find_map(|w| match w {
        Write::MergePatch {
            target,
            subresource: Some(s),
            patch,
        } if s == "status" && target.is("v1", "Node") => Some(&patch["status"]),
        _ => None,
    })
}

fn lease_applied(out: &Outcome) -> Option<&Object> {
    out.applies()
        .find(|o| o.is("coordination.k8s.io/v1", "Lease"))
}

#[test]
fn a_node_reports_ready_as_a_kubelet_does() {
    let mut h = harness(node(|_| {}), []);
    let out = step(&mut h, 0);
    let s = node_status_patch(&out).expect("a status write");
    let conditions: Vec<(String, String, String, String)> = s["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert_eq!(c["lastHeartbeatTime"], json!(ts(0)));
            assert_eq!(c["lastTransitionTime"], json!(ts(0)));
            let f = |k: &str| c[k].as_str().unwrap().to_owned();
            (f("type"), f("status"), f("reason"), f("message"))
        })
        .collect();
    let want = [
        (
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        (
            "DiskPressure",
            "False",
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure",
        ),
        (
            "PIDPressure",
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
        (
            "Ready",
            "True",
            "KubeletReady",
            "kubelet is posting ready status",
        ),
    ];
    let want: Vec<(String, String, String, String)> = want
        .iter()
        .map(|(a, b, c, d)| ((*a).into(), (*b).into(), (*c).into(), (*d).into()))
        .collect();
    assert_eq!(conditions, want);
    assert_eq!(
        s["addresses"],
        json!([{"type": "InternalIP", "address": "172.16.0.3"}, {"type": "Hostname", "address": "node-1"}])
    );
    assert_eq!(
        s["daemonEndpoints"],
        json!({"kubeletEndpoint": {"Port": 10250}})
    );
    let info = &s["nodeInfo"];
    assert_eq!(info["kubeletVersion"], "v1.31.0-windlass");
    assert_eq!(info["operatingSystem"], "linux");
    assert_eq!(info["architecture"], "amd64");
    assert_eq!(info["systemUUID"].as_str().unwrap().len(), 36);
    let defaults =
        json!({"cpu": "4", "ephemeral-storage": "100Gi", "memory": "16Gi", "pods": "110"});
    assert_eq!(s["capacity"], defaults);
    assert_eq!(s["allocatable"], defaults);
}

#[test]
fn capacity_comes_from_the_annotation_or_the_status() {
    // (annotation, status capacity, status allocatable, capacity, allocatable)
    let annotated = json!({"cpu": "8", "ephemeral-storage": "100Gi", "memory": "32Gi", "nvidia.com/gpu": "2", "pods": "110"});
    for (annotation, cap, alloc, want_cap, want_alloc) in [
        (
            Some("cpu=8,memory=32Gi,nvidia.com/gpu=2"),
            json!({"cpu": "2"}),
            json!(null),
            annotated.clone(),
            annotated.clone(),
        ),
        (
            None,
            json!({"cpu": "16", "memory": "64Gi", "pods": "250", "ephemeral-storage": "1Ti"}),
            json!({"cpu": "15500m", "memory": "63Gi", "pods": "250", "ephemeral-storage": "1Ti"}),
            json!({"cpu": "16", "memory": "64Gi", "pods": "250", "ephemeral-storage": "1Ti"}),
            json!({"cpu": "15500m", "memory": "63Gi", "pods": "250", "ephemeral-storage": "1Ti"}),
        ),
        (
            None,
            json!({"cpu": "2"}),
            json!(null),
            json!({"cpu": "2", "ephemeral-storage": "100Gi", "memory": "16Gi", "pods": "110"}),
            json!({"cpu": "2", "ephemeral-storage": "100Gi", "memory": "16Gi", "pods": "110"}),
        ),
    ] {
        let n = node(|n| {
            if let Some(a) = annotation {
                n["metadata"]["annotations"] = json!({"windlass.dev/capacity": a});
            }
            n["status"] = json!({"capacity": cap, "allocatable": alloc});
        });
        let mut h = harness(n, []);
        let out = step(&mut h, 0);
        let s = node_status_patch(&out).unwrap();
        assert_eq!(s["capacity"], want_cap, "{annotation:?}");
        assert_eq!(s["allocatable"], want_alloc, "{annotation:?}");
    }
    // Respelled by the API server, a quantity is still the same amount.
    let n = node(|n| {
        n["metadata"]["annotations"] = json!({"windlass.dev/capacity": "cpu=8000m,memory=1Gi"});
    });
    let mut h = harness(n, []);
    step(&mut h, 0);
    let mut stored = h.get(&node_key()).unwrap();
    stored.set("status.capacity.cpu", "8");
    stored.set("status.allocatable.memory", "1024Mi");
    h.insert(stored);
    assert!(node_status_patch(&step(&mut h, 1)).is_none());
}

#[test]
fn status_and_lease_are_written_only_when_due() {
    let mut h = harness(node(|_| {}), []);
    let out = step(&mut h, 0);
    assert!(node_status_patch(&out).is_some());
    let lease = lease_applied(&out).expect("a lease");
    assert_eq!(lease.namespace(), Some("kube-node-lease"));
    assert_eq!(lease.name(), "node-1");
    assert_eq!(lease.get_str("spec.holderIdentity"), Some("node-1"));
    assert_eq!(lease.get_i64("spec.leaseDurationSeconds"), Some(40));
    assert_eq!(
        lease.get_str("spec.renewTime"),
        Some("2026-03-01T10:00:00.000000Z")
    );
    assert_eq!(
        lease.get_str("metadata.ownerReferences.0.uid"),
        Some("node-uid-1")
    );
    assert_eq!(out.requeue_after, Some(Duration::from_secs(10)));

    // (time, status written, lease written, requeue after)
    for (at, status, lease, next) in [
        (0, false, false, 10),
        (5, false, false, 5),
        (10, false, true, 10),
        (15, false, false, 5),
        (295, false, true, 5),
        (300, true, false, 5),
        (301, false, false, 4),
    ] {
        let out = step(&mut h, at);
        assert_eq!(node_status_patch(&out).is_some(), status, "at {at}");
        assert_eq!(lease_applied(&out).is_some(), lease, "at {at}");
        assert_eq!(
            out.requeue_after,
            Some(Duration::from_secs(next)),
            "at {at}"
        );
    }
    // A change is reported at once, keeping the heartbeat's cadence.
    let mut n = h.get(&node_key()).unwrap();
    n.set(
        "metadata.annotations",
        json!({"windlass.dev/capacity": "cpu=2"}),
    );
    h.insert(n);
    let out = step(&mut h, 302);
    assert_eq!(node_status_patch(&out).unwrap()["capacity"]["cpu"], "2");
    // Conditions that did not change keep their transition time.
    let s = h.get(&node_key()).unwrap();
    assert_eq!(
        s.get_str("status.conditions.3.lastTransitionTime"),
        Some(ts(0).as_str())
    );
    assert_eq!(
        s.get_str("status.conditions.3.lastHeartbeatTime"),
        Some(ts(302).as_str())
    );
}

#[test]
fn others_conditions_and_addresses_are_kept() {
    let n = node(|n| {
        n["status"] = json!({
            "conditions": [{"type": "NetworkUnavailable", "status": "False", "reason": "RouteCreated"}],
            "addresses": [{"type": "InternalIP", "address": "192.168.5.5"}],
        });
    });
    let mut h = harness(n, [pod("web-1", |_| {})]);
    let out = step(&mut h, 0);
    let s = node_status_patch(&out).unwrap();
    assert_eq!(s["conditions"][0]["type"], "NetworkUnavailable");
    assert_eq!(s["conditions"].as_array().unwrap().len(), 5);
    assert_eq!(
        s["addresses"],
        json!([{"type": "InternalIP", "address": "192.168.5.5"}])
    );
    // Pods report the node's own address.
    assert_eq!(status(&h, "web-1")["hostIP"], "192.168.5.5");
}

#[test]
fn missing_well_known_labels_are_added() {
    let n = node(|n| {
        n["metadata"]["labels"] =
            json!({"windlass.dev/simulated": "true", "kubernetes.io/arch": "arm64"});
    });
    let mut h = harness(n, []);
    let out = step(&mut h, 0);
    let patch = out
        .writes
        .iter()
        .find_map(|w| match w {
            Write::MergePatch {
                target,
                subresource: None,
                patch,
            } if target.is("v1", "Node") => Some(patch),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        patch["metadata"]["labels"],
        json!({
            "kubernetes.io/hostname": "node-1",
            "kubernetes.io/os": "linux",
            "beta.kubernetes.io/os": "linux",
            "beta.kubernetes.io/arch": "arm64",
        })
    );
    assert_eq!(
        node_status_patch(&out).unwrap()["nodeInfo"]["architecture"],
        "arm64"
    );
    // Once there, never again.
    let out = step(&mut h, 1);
    assert!(!out.writes.iter().any(|w| matches!(
        w,
        Write::MergePatch {
            subresource: None,
            ..
        }
    )));
}

#[test]
fn a_gone_or_deleted_node_gets_nothing() {
    let h = H::new().with_now(t(0));
    assert!(h.reconcile_key(&node_key()).unwrap().is_empty());
    let mut h = harness(
        node(|n| n["metadata"]["deletionTimestamp"] = json!(ts(0))),
        [pod("web-1", |_| {})],
    );
    assert!(step(&mut h, 0).is_empty());
}

#[test]
fn settings_turn_start_events_off_and_unknown_ones_are_refused() {
    let mut h = H::with_settings(json!({"containerStartEvents": false}))
        .unwrap()
        .with_now(t(0))
        .with_object(node(|_| {}))
        .with_object(pod("web-1", |_| {}));
    let out = step(&mut h, 0);
    assert_eq!(pod_patches(&out).len(), 1);
    // The node's own events only.
    let reasons: Vec<&str> = out.events.iter().map(|e| e.reason.as_str()).collect();
    assert_eq!(
        reasons,
        [
            "Starting",
            "NodeHasSufficientMemory",
            "NodeHasNoDiskPressure",
            "NodeHasSufficientPID",
            "NodeAllocatableEnforced",
            "NodeReady"
        ]
    );
    let err = H::with_settings(json!({"startEvents": false}))
        .err()
        .unwrap();
    assert!(err.message.contains("unknown field"), "{err}");
}

/// Every node gets a pod CIDR and an InternalIP no other node has —
/// `node-a1`, `node-b1` and `node-c1` all end in 1, where their search for
/// a free block starts — and a node that
/// finds its CIDR shared with a node whose name sorts first moves.
#[test]
fn every_node_gets_a_pod_cidr_of_its_own() {
    let named = |name: &'static str| {
        node(move |v| {
            v["metadata"]["name"] = json!(name);
            v["metadata"]["uid"] = json!(format!("uid-{name}"));
            v.as_object_mut().unwrap().remove("spec");
        })
    };
    let mut h = H::new().with_now(t(0));
    for name in ["node-a1", "node-b1", "node-c1"] {
        h.insert(named(name));
    }
    let cidr_of = |h: &H, name: &str| {
        h.get(&ObjectRef::cluster("v1", "Node", name))
            .and_then(|n| n.get_str("spec.podCIDR").map(str::to_owned))
    };
    let ip_of = |h: &H, name: &str| {
        h.get(&ObjectRef::cluster("v1", "Node", name))
            .and_then(|n| n.get_str("status.addresses.0.address").map(str::to_owned))
            .expect("an address")
    };
    // The first pass claims blocks and reports nothing yet; the second,
    // with the blocks their own, reports.
    for name in ["node-a1", "node-b1", "node-c1"] {
        let key = ObjectRef::cluster("v1", "Node", name);
        let out = h.reconcile_key(&key).unwrap();
        assert_eq!(out.writes.len(), 1, "only the claim: {out:?}");
        h.apply_outcome(&key, &out).unwrap();
    }
    for name in ["node-a1", "node-b1", "node-c1"] {
        let key = ObjectRef::cluster("v1", "Node", name);
        let out = h.reconcile_key(&key).unwrap();
        h.apply_outcome(&key, &out).unwrap();
    }
    let cidrs: std::collections::BTreeSet<String> = ["node-a1", "node-b1", "node-c1"]
        .iter()
        .map(|n| cidr_of(&h, n).expect("a pod CIDR"))
        .collect();
    assert_eq!(cidrs.len(), 3, "{cidrs:?}");
    // And an address of its own, derived from the block.
    let ips: std::collections::BTreeSet<String> = ["node-a1", "node-b1", "node-c1"]
        .iter()
        .map(|n| ip_of(&h, n))
        .collect();
    assert_eq!(ips.len(), 3, "{ips:?}");
    // A second look changes nothing.
    let again = h
        .reconcile_key(&ObjectRef::cluster("v1", "Node", "node-b1"))
        .unwrap();
    assert!(
        !again.writes.iter().any(|w| matches!(w, Write::MergePatch { patch, .. } if patch["spec"].get("podCIDR").is_some())),
        "{again:?}"
    );

    // Two nodes that claimed the same block at once: the later name moves.
    // It had already reported the address of that block, as happens when
    // its index did not show the other claim yet.
    let shared = cidr_of(&h, "node-a1").unwrap();
    let a1_ip = ip_of(&h, "node-a1");
    let mut b1 = h.get(&ObjectRef::cluster("v1", "Node", "node-b1")).unwrap();
    b1.set("spec.podCIDR", shared.clone());
    b1.set("status.addresses.0.address", a1_ip.clone());
    h.insert(b1);
    let key = ObjectRef::cluster("v1", "Node", "node-b1");
    let out = h.reconcile_key(&key).unwrap();
    h.apply_outcome(&key, &out).unwrap();
    let moved = cidr_of(&h, "node-b1").unwrap();
    assert_ne!(moved, shared);
    assert_ne!(Some(moved), cidr_of(&h, "node-c1"));
    // Its address moves with the block, away from the one of the block
    // it shared.
    let out = h.reconcile_key(&key).unwrap();
    h.apply_outcome(&key, &out).unwrap();
    assert_ne!(
        ip_of(&h, "node-b1"),
        a1_ip,
        "the address of the block it left"
    );
    let ips: std::collections::BTreeSet<String> = ["node-a1", "node-b1", "node-c1"]
        .iter()
        .map(|n| ip_of(&h, n))
        .collect();
    assert_eq!(ips.len(), 3, "{ips:?}");
    let a1 = h
        .reconcile_key(&ObjectRef::cluster("v1", "Node", "node-a1"))
        .unwrap();
    assert!(
        !a1.writes.iter().any(|w| matches!(w, Write::MergePatch { patch, .. } if patch["spec"].get("podCIDR").is_some())),
        "the first name keeps its block"
    );
}

#[test]
fn the_first_report_records_starting_and_node_ready() {
    let reasons = |out: &Outcome| -> Vec<String> {
        out.events
            .iter()
            .map(|e| format!("{}: {}", e.reason, e.message))
            .collect()
    };
    let mut h = harness(node(|_| {}), []);
    assert_eq!(
        reasons(&step(&mut h, 0)),
        [
            "Starting: Starting kubelet.",
            "NodeHasSufficientMemory: Node node-1 status is now: NodeHasSufficientMemory",
            "NodeHasNoDiskPressure: Node node-1 status is now: NodeHasNoDiskPressure",
            "NodeHasSufficientPID: Node node-1 status is now: NodeHasSufficientPID",
            "NodeAllocatableEnforced: Updated Node Allocatable limit across pods",
            "NodeReady: Node node-1 status is now: NodeReady"
        ]
    );
    // Later reports of a ready node record nothing.
    for at in [10, 300, 600] {
        assert!(reasons(&step(&mut h, at)).is_empty(), "at {at}");
    }
    // A node last reported not ready is ready again.
    let mut n = h.get(&node_key()).unwrap();
    let mut conditions = n
        .get_as::<Vec<Value>>("status.conditions")
        .unwrap()
        .unwrap();
    for c in &mut conditions {
        if c["type"] == "Ready" {
            c["status"] = json!("Unknown");
        }
    }
    n.set("status.conditions", json!(conditions));
    h.insert(n);
    assert_eq!(
        reasons(&step(&mut h, 610)),
        ["NodeReady: Node node-1 status is now: NodeReady"]
    );
}

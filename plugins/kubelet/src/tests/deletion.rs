//! Graceful deletion: Terminating for the grace period (a `preStop`
//! hook's time counted within it), then a zero-grace delete.

use std::time::Duration;

use serde_json::json;

use super::*;

/// Marks the stored pod deleted as the API server does at `t(at)`.
fn delete(h: &mut H, name: &str, at: i64, grace: i64) {
    let mut p = h.get(&pod_key(name)).unwrap();
    p.set("metadata.deletionTimestamp", ts(at + grace));
    p.set("metadata.deletionGracePeriodSeconds", grace);
    h.insert(p);
}

#[test]
fn a_deleted_pod_terminates_for_its_grace_period_then_is_removed() {
    let mut h = harness(node(|_| {}), [pod("web-1", |_| {})]);
    step(&mut h, 0);
    delete(&mut h, "web-1", 5, 30);
    let out = step(&mut h, 6);
    assert!(pod_deletes(&out).is_empty());
    assert_eq!(events(&out), ["Killing: Stopping container app"]);
    let s = status(&h, "web-1");
    assert_eq!(s["phase"], "Running");
    assert!(conditions(&s).contains(&"Ready=False(ContainersNotReady)".to_owned()));
    let c = &s["containerStatuses"][0];
    assert_eq!(c["ready"], false);
    assert!(c["state"].get("running").is_some());
    // Still terminating, nothing more to say until the grace period ends.
    for at in [10, 20, 34] {
        let out = step(&mut h, at);
        assert!(
            pod_patches(&out).is_empty() && pod_deletes(&out).is_empty(),
            "at {at}"
        );
        assert!(out.events.is_empty());
    }
    // At 35 the containers are killed and the pod removed for good.
    let out = step(&mut h, 35);
    let deletes = pod_deletes(&out);
    assert_eq!(deletes.len(), 1);
    assert_eq!(deletes[0].0, "web-1");
    assert_eq!(
        deletes[0].1,
        &DeleteOptions::new()
            .grace_period_seconds(0)
            .uid("uid-web-1")
    );
    assert!(pod_patches(&out).is_empty());
    assert!(h.get(&pod_key("web-1")).is_none());
}

#[test]
fn the_pre_stop_hook_counts_within_the_grace_period() {
    // (grace, preStop hook, seconds until removal)
    for (grace, hook, removed_after) in [
        (30, json!(null), 30),
        (30, json!({"sleep": {"seconds": 10}}), 30),
        (
            30,
            json!({"exec": {"command": ["sh", "-c", "sleep 20"]}}),
            30,
        ),
        // A hook that outlasts the grace period leaves 2 s for SIGTERM.
        (30, json!({"sleep": {"seconds": 45}}), 32),
        (1, json!(null), 2),
    ] {
        let p = pod("web-1", |p| {
            if !hook.is_null() {
                p["spec"]["containers"][0]["lifecycle"] = json!({ "preStop": hook });
            }
        });
        let mut h = harness(node(|_| {}), [p]);
        step(&mut h, 0);
        delete(&mut h, "web-1", 100, grace);
        let out = step(&mut h, 100);
        assert!(pod_deletes(&out).is_empty(), "{grace} {hook}");
        assert!(
            pod_deletes(&step(&mut h, 99 + removed_after)).is_empty(),
            "{grace} {hook}"
        );
        let out = step(&mut h, 100 + removed_after);
        assert_eq!(pod_deletes(&out).len(), 1, "{grace} {hook}");
    }
}

#[test]
fn a_terminating_pod_asks_to_be_called_when_its_grace_period_ends() {
    let mut h = harness(node(|_| {}), [pod("web-1", |_| {})]);
    step(&mut h, 0);
    step(&mut h, 3);
    delete(&mut h, "web-1", 4, 5);
    // Lease renewed at 0 is due at 10; the pod goes at 9.
    let out = step(&mut h, 4);
    assert_eq!(out.requeue_after, Some(Duration::from_secs(5)));
}

#[test]
fn ended_and_never_started_pods_are_removed_at_once() {
    let done = pod("done", |p| {
        p["metadata"]["deletionTimestamp"] = json!(ts(30));
        p["metadata"]["deletionGracePeriodSeconds"] = json!(30);
        p["status"]["phase"] = json!("Succeeded");
    });
    let fresh = pod("fresh", |p| {
        p["metadata"]["deletionTimestamp"] = json!(ts(30));
        p["metadata"]["deletionGracePeriodSeconds"] = json!(30);
    });
    let mut h = harness(node(|_| {}), [done, fresh]);
    let out = step(&mut h, 0);
    let mut deleted: Vec<&str> = pod_deletes(&out).iter().map(|d| d.0).collect();
    deleted.sort_unstable();
    assert_eq!(deleted, ["done", "fresh"]);
    assert!(pod_patches(&out).is_empty());
}

#[test]
fn a_pod_held_by_finalizers_gets_its_final_status_first() {
    let p = pod("job-1", |p| {
        p["metadata"]["finalizers"] = json!(["batch.kubernetes.io/job-tracking"]);
    });
    let mut h = harness(node(|_| {}), [p]);
    step(&mut h, 0);
    delete(&mut h, "job-1", 10, 30);
    step(&mut h, 10);
    let out = step(&mut h, 40);
    assert_eq!(pod_patches(&out).len(), 1);
    assert_eq!(pod_deletes(&out).len(), 1);
    // Status first, then the delete.
    assert!(matches!(out.writes.last(), Some(Write::Delete { .. })));
    let (_, patch) = pod_patches(&out)[0];
    let s = &patch["status"];
    assert_eq!(s["phase"], "Failed");
    let done = &s["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(done["exitCode"], 137);
    assert_eq!(done["finishedAt"], json!(ts(40)));
    // The API server keeps it (finalizer) with a zero grace period: the
    // kubelet has nothing more to do.
    let mut p = pod("job-1", |_| {});
    p.set(
        "metadata",
        json!({
            "name": "job-1", "namespace": "default", "uid": "uid-job-1",
            "deletionTimestamp": ts(40), "deletionGracePeriodSeconds": 0,
            "finalizers": ["batch.kubernetes.io/job-tracking"],
        }),
    );
    p.set("status", s.clone());
    h.insert(p);
    let out = step(&mut h, 41);
    assert!(pod_patches(&out).is_empty() && pod_deletes(&out).is_empty());
}

#[test]
fn a_container_that_exits_during_the_grace_period_ends_it_early() {
    let p = pod("web-1", |p| {
        p["metadata"]["annotations"] = json!({"windlass.dev/exit-after": "20s"});
    });
    let mut h = harness(node(|_| {}), [p]);
    step(&mut h, 0);
    delete(&mut h, "web-1", 10, 30);
    let out = step(&mut h, 10);
    assert_eq!(out.requeue_after, Some(Duration::from_secs(10)));
    // It exits at 20 and, the pod being deleted, is not restarted.
    let out = step(&mut h, 20);
    assert_eq!(pod_deletes(&out).len(), 1);
}

//! PodGC: pods bound to a node that no longer exists.

use std::time::Duration;

use super::*;

#[test]
fn orphans_are_collected_after_the_quarantine() {
    let mut h = harness([
        // Bound 2 s ago: 2 s of quarantine left.
        pod("recent", |p| {
            p["status"]["conditions"][0]["lastTransitionTime"] = json!(ts(-2));
        }),
        // No PodScheduled condition: counted from its creation.
        pod("old", |p| {
            p["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
        }),
        pod("done", |p| p["status"]["phase"] = json!("Succeeded")),
        pod("going", |p| {
            p["metadata"]["deletionTimestamp"] = json!(ts(-1));
            p["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        }),
    ]);
    let out = step(&mut h, 0);
    let (sub, patch) = patches(&out, &pod_key("old"))[0];
    assert_eq!(sub, Some("status"));
    assert_eq!(patch["metadata"]["resourceVersion"], "7");
    assert_eq!(patch["status"]["phase"], "Failed");
    let conditions = &patch["status"]["conditions"];
    assert_eq!(
        summary(conditions),
        ["Ready=True()", "DisruptionTarget=True(DeletionByPodGC)"]
    );
    assert_eq!(conditions[1]["message"], "PodGC: node no longer exists");
    assert_eq!(conditions[1]["lastTransitionTime"], json!(ts(0)));
    // An ended pod is only deleted.
    assert!(patches(&out, &pod_key("done")).is_empty());
    let zero = |uid: &str| DeleteOptions::new().grace_period_seconds(0).uid(uid);
    assert_eq!(
        pod_deletes(&out),
        [("done", &zero("uid-done")), ("old", &zero("uid-old"))]
    );
    assert_eq!(out.requeue_after, Some(Duration::from_secs(2)));

    let out = step(&mut h, 1);
    assert!(pod_deletes(&out).is_empty());
    assert_eq!(out.requeue_after, Some(Duration::from_secs(1)));
    let out = step(&mut h, 2);
    assert_eq!(pod_deletes(&out), [("recent", &zero("uid-recent"))]);
}

#[test]
fn pods_of_a_node_that_exists_are_not_orphans() {
    let mut h = harness([healthy(|_| {}), pod("web-1", |_| {})]);
    assert!(pod_deletes(&step(&mut h, 1000)).is_empty());
}

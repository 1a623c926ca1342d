//! The manifest, `map`, `index` and the settings.

use super::*;

#[test]
fn pods_and_leases_wake_their_node() {
    let h = harness([]);
    assert_eq!(h.map(&pod("web-1", |_| {})).unwrap(), [node_key()]);
    // A pod of a node that is gone wakes it too: that is how its orphans
    // are found.
    let orphan = pod("web-2", |p| p["spec"]["nodeName"] = json!("gone"));
    assert_eq!(
        h.map(&orphan).unwrap(),
        [ObjectRef::cluster("v1", "Node", "gone")]
    );
    assert_eq!(h.map(&lease(0)).unwrap(), [node_key()]);
}

#[test]
fn index_entries_change_only_with_what_the_reconcile_acts_on() {
    let h = harness([]);
    let entry = |o: &Object| h.index(o).unwrap();
    let ready = entry(&pod("web-1", |_| {}));
    assert_eq!(ready.keys, ["node-1"]);
    assert_eq!(ready.summary, b"R");
    // A status update that changes nothing that matters: the same entry.
    let later = pod("web-1", |p| p["status"]["podIP"] = json!("10.0.0.9"));
    assert_eq!(entry(&later), ready);
    let deleting = pod("web-1", |p| {
        p["metadata"]["deletionTimestamp"] = json!(ts(0))
    });
    assert_eq!(entry(&deleting).summary, b"RD");
    let done = pod("web-1", |p| {
        p["status"]["phase"] = json!("Succeeded");
        p["status"]["conditions"][1]["status"] = json!("False");
    });
    assert_eq!(entry(&done).summary, b"E");
    // A Lease is filed under its name, whatever its renewal.
    assert_eq!(entry(&lease(0)), entry(&lease(10)));
}

#[test]
fn bad_settings_are_refused() {
    for settings in [
        json!({"nodeMonitorGracePeriod": "50"}),
        json!({"nodeStartupGracePeriod": "0s"}),
        json!({"orphanedPodQuarantine": "-1s"}),
        json!({"podEvictionTimeout": "5m"}),
    ] {
        assert!(H::with_settings(settings.clone()).is_err(), "{settings}");
    }
    assert!(H::with_settings(json!({"nodeMonitorGracePeriod": "1m30s"})).is_ok());
    assert!(H::with_settings(json!({"orphanedPodQuarantine": "0s"})).is_ok());
}

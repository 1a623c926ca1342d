//! `podReplacementPolicy`: whether a terminating pod is replaced at once
//! or only once it has failed.

use serde_json::json;

use super::policy::{fail_with, running};
use super::*;

/// Marks pod `name` as being deleted, still running.
fn terminate(h: &mut H, name: &str) {
    let r = ObjectRef::new("v1", "Pod", "default", name);
    let mut p = h.get(&r).unwrap();
    p.value_mut()["metadata"]["deletionTimestamp"] = json!(t(1).to_rfc3339());
    p.value_mut()["status"] = json!({"phase": "Running"});
    h.insert(p);
}

#[test]
fn a_terminating_pod_is_replaced_as_the_policy_says() {
    let fails_job = json!({"rules": [{"action": "FailJob",
        "onExitCodes": {"operator": "In", "values": [42]}}]});
    // (spec, replaced while terminating)
    let cases = [
        (json!({"podReplacementPolicy": "TerminatingOrFailed"}), true),
        (json!({"podReplacementPolicy": "Failed"}), false),
        // A pod failure policy means Failed, set or not.
        (
            json!({"podReplacementPolicy": null, "podFailurePolicy": fails_job}),
            false,
        ),
    ];
    for (spec, replaced_at_once) in cases {
        let mut h = harness(spec.clone());
        step(&mut h, 0);
        let first = running(&h);
        terminate(&mut h, &first);
        step(&mut h, 2);
        assert_eq!(status(&h)["terminating"], 1, "{spec}");
        assert_eq!(names(&h).len() == 2, replaced_at_once, "{spec}");
        if !replaced_at_once {
            // Once it has failed, it is replaced (after the back-off).
            fail_with(&mut h, &first, 3, &[("pi", 1)], &[]);
            step(&mut h, 13);
            assert_eq!(names(&h).len(), 2, "{spec}");
            assert_eq!(status(&h)["terminating"], 0, "{spec}");
        }
    }
}

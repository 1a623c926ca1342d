//! How a Job ends, as upstream since its terminal conditions are delayed:
//! `FailureTarget` or `SuccessCriteriaMet` first, with the running pods'
//! deletion, then `Failed` or `Complete` once none of its pods is
//! terminating; and the back-off, which a success resets.

use serde_json::json;

use super::policy::fail_with;
use super::*;

/// Binds pod `name` to a node and runs it, so deleting it leaves it
/// terminating (as the API server does with a bound pod) instead of gone.
pub(super) fn bind(h: &mut H, name: &str) {
    let r = ObjectRef::new("v1", "Pod", "default", name);
    let mut p = h.get(&r).unwrap();
    p.value_mut()["spec"]["nodeName"] = json!("node-1");
    p.value_mut()["status"] = json!({
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}]
    });
    h.insert(p);
}

/// Pod `name`, terminating, is gone at last.
fn gone(h: &mut H, name: &str) {
    h.remove(&ObjectRef::new("v1", "Pod", "default", name));
}

fn counts(h: &H) -> (Value, Value, Value, Value) {
    let s = status(h);
    (
        s["active"].clone(),
        s["ready"].clone(),
        s["terminating"].clone(),
        s["failed"].clone(),
    )
}

#[test]
fn a_failing_job_is_failed_only_once_its_pods_are_gone() {
    // Each way a Job fails: (spec, how the first pod ends, reason, message).
    let fail_job = json!({"rules": [{"action": "FailJob",
        "onExitCodes": {"operator": "In", "values": [42]}}]});
    let cases = [
        (
            json!({"parallelism": 2, "completions": 2, "backoffLimit": 0}),
            1,
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
        ),
        (
            json!({"parallelism": 2, "completions": 2, "podFailurePolicy": fail_job,
                   "podReplacementPolicy": "Failed"}),
            42,
            "PodFailurePolicy",
            "matching FailJob rule at index 0",
        ),
    ];
    for (spec, code, reason, message) in cases {
        let mut h = harness(spec.clone());
        step(&mut h, 0);
        let all = names(&h);
        for n in &all {
            bind(&mut h, n);
        }
        fail_with(&mut h, &all[0], 5, &[("pi", code)], &[]);
        let out = step(&mut h, 5);

        // The target, the other pod deleted and counted failed, no end yet.
        assert_eq!(
            condition(&h, "FailureTarget"),
            Some(("True".into(), reason.into())),
            "{spec}"
        );
        let target = &status(&h)["conditions"][0];
        assert!(target["message"].as_str().unwrap().ends_with(message));
        assert!(condition(&h, "Failed").is_none(), "{spec}");
        assert_eq!(out.deletes().count(), 1, "{spec}");
        assert_eq!(counts(&h), (Value::Null, json!(0), json!(1), json!(2)));
        assert!(
            !events(&out).iter().any(|e| e.starts_with(reason)),
            "{spec}"
        );

        // Still terminating: nothing changes, nothing is written.
        assert!(step(&mut h, 10).writes.is_empty(), "{spec}");
        assert!(condition(&h, "Failed").is_none(), "{spec}");

        // Gone: Failed, with the target's reason and message, and its event.
        gone(&mut h, &all[1]);
        let out = step(&mut h, 20);
        let s = status(&h);
        let failed = s["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Failed")
            .unwrap();
        assert_eq!(failed["reason"], target["reason"], "{spec}");
        assert_eq!(failed["message"], target["message"], "{spec}");
        assert_eq!(failed["lastTransitionTime"], json!(t(20).to_rfc3339()));
        assert_eq!(counts(&h), (Value::Null, json!(0), json!(0), json!(2)));
        assert!(s.get("completionTime").is_none(), "{spec}");
        assert!(
            events(&out).contains(&format!(
                "{reason}: {}",
                failed["message"].as_str().unwrap()
            )),
            "{spec}"
        );
        assert!(step(&mut h, 400).writes.is_empty(), "{spec}");
    }
}

#[test]
fn a_failure_target_stands_whatever_happens_after_it() {
    let mut h = harness(json!({"parallelism": 2, "completions": 2,
                               "activeDeadlineSeconds": 30}));
    step(&mut h, 0);
    let all = names(&h);
    for n in &all {
        bind(&mut h, n);
    }
    step(&mut h, 30);
    assert_eq!(
        condition(&h, "FailureTarget"),
        Some(("True".into(), "DeadlineExceeded".into()))
    );
    // A terminating pod that ends well changes nothing: the Job has failed.
    end(&mut h, &all[0], "Succeeded", 31);
    gone(&mut h, &all[1]);
    step(&mut h, 32);
    assert_eq!(
        condition(&h, "Failed"),
        Some(("True".into(), "DeadlineExceeded".into()))
    );
    assert!(condition(&h, "Complete").is_none());
}

#[test]
fn a_job_whose_last_pods_succeed_completes_at_once() {
    let mut h = harness(json!({"parallelism": 2, "completions": 2}));
    step(&mut h, 0);
    for n in names(&h) {
        end(&mut h, &n, "Succeeded", 5);
    }
    let out = step(&mut h, 5);
    for type_ in ["SuccessCriteriaMet", "Complete"] {
        assert_eq!(
            condition(&h, type_),
            Some(("True".into(), "CompletionsReached".into()))
        );
    }
    assert_eq!(status(&h)["completionTime"], json!(t(5).to_rfc3339()));
    assert!(events(&out).contains(&"Completed: Job completed".to_owned()));
}

#[test]
fn a_terminating_pod_holds_back_complete() {
    // A pod deleted by hand, replaced at once, still terminating when the
    // others have done the work.
    let mut h = harness(json!({"parallelism": 1, "completions": 1}));
    step(&mut h, 0);
    let first = names(&h)[0].clone();
    bind(&mut h, &first);
    h.apply_outcome(
        &job_ref(),
        &Outcome::new().delete(ObjectRef::new("v1", "Pod", "default", &first)),
    )
    .unwrap();
    step(&mut h, 1);
    let second = names(&h).into_iter().find(|n| *n != first).unwrap();
    end(&mut h, &second, "Succeeded", 5);
    let out = step(&mut h, 5);
    assert_eq!(condition(&h, "SuccessCriteriaMet").unwrap().0, "True");
    assert!(condition(&h, "Complete").is_none());
    assert!(status(&h).get("completionTime").is_none());
    assert!(!events(&out).contains(&"Completed: Job completed".to_owned()));
    assert_eq!(status(&h)["terminating"], 1);

    gone(&mut h, &first);
    let out = step(&mut h, 8);
    assert_eq!(
        condition(&h, "Complete"),
        Some(("True".into(), "CompletionsReached".into()))
    );
    assert_eq!(status(&h)["completionTime"], json!(t(8).to_rfc3339()));
    assert!(events(&out).contains(&"Completed: Job completed".to_owned()));
}

#[test]
fn a_success_resets_the_back_off() {
    // How the four pods ended, and the wait left at 25 s: upstream counts
    // the failures since the last success, 10 s doubling from the last.
    let cases = [
        // One failure since the success: 10 s from 20.
        (
            [
                ("Failed", 5),
                ("Failed", 6),
                ("Succeeded", 7),
                ("Failed", 20),
            ],
            Some(Duration::from_secs(5)),
        ),
        // Four failures and no success: 80 s from 20.
        (
            [("Failed", 5), ("Failed", 6), ("Failed", 7), ("Failed", 20)],
            Some(Duration::from_secs(75)),
        ),
        // None since the success: replacements at once.
        (
            [
                ("Failed", 5),
                ("Failed", 6),
                ("Failed", 7),
                ("Succeeded", 20),
            ],
            None,
        ),
    ];
    for (ended, wait) in cases {
        let mut h = harness(json!({"parallelism": 4, "completions": 10,
                                   "backoffLimit": 10}));
        step(&mut h, 0);
        for (name, (phase, secs)) in names(&h).iter().zip(ended) {
            end(&mut h, name, phase, secs);
        }
        let out = step(&mut h, 25);
        assert_eq!(out.requeue_after, wait, "{ended:?}");
        assert_eq!(out.applies().count() > 0, wait.is_none(), "{ended:?}");
    }
}

//! `backoffLimitPerIndex` and `maxFailedIndexes`: failure counts carried by
//! replacement pods, indexes failed for good, each index's back-off, and
//! how the Job ends.

use serde_json::json;

use super::policy::fail_with;
use super::*;

const FAILURES: &str = "batch.kubernetes.io/job-index-failure-count";
const IGNORED: &str = "batch.kubernetes.io/job-index-ignored-failure-count";

/// An Indexed Job as the server defaults one with limits per index (no
/// `backoffLimit` of its own: the server makes it `MaxInt32`).
fn indexed(extra: Value) -> H {
    let mut spec = json!({"completionMode": "Indexed", "backoffLimit": null});
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    harness(spec)
}

/// The running pod of index `i`.
fn of_index(h: &H, i: u32) -> Object {
    pods(h)
        .into_iter()
        .find(|p| {
            p.annotation("batch.kubernetes.io/job-completion-index") == Some(&i.to_string())
                && p.get_str("status.phase").is_none()
        })
        .unwrap_or_else(|| panic!("no running pod of index {i}"))
}

#[test]
fn an_index_past_its_limit_fails_and_the_others_run_on() {
    let mut h = indexed(json!({"completions": 3, "parallelism": 3, "backoffLimitPerIndex": 1}));
    step(&mut h, 0);
    assert_eq!(of_index(&h, 0).annotation(FAILURES), Some("0"));
    assert_eq!(status(&h)["failedIndexes"], "");

    // Index 0 fails once: it is retried after its own back-off, the pod
    // carrying the failure.
    let zero = of_index(&h, 0).name().to_owned();
    fail_with(&mut h, &zero, 5, &[("pi", 1)], &[]);
    let out = step(&mut h, 5);
    assert_eq!(out.requeue_after, Some(Duration::from_secs(10)));
    step(&mut h, 15);
    let retry = of_index(&h, 0);
    assert_eq!(retry.annotation(FAILURES), Some("1"));
    assert_eq!(retry.annotation(IGNORED), None);

    // It fails again: past its limit, failed for good and not retried.
    let retry = retry.name().to_owned();
    fail_with(&mut h, &retry, 20, &[("pi", 1)], &[]);
    step(&mut h, 20);
    step(&mut h, 400);
    let s = status(&h);
    assert_eq!(s["failedIndexes"], "0");
    assert_eq!(s["failed"], 2);
    assert!(pods(&h).iter().all(|p| p.name() == zero
        || p.name() == retry
        || p.annotation("batch.kubernetes.io/job-completion-index") != Some("0")));
    assert!(condition(&h, "Failed").is_none());

    // Once the others are done, the Job has failed indexes.
    for i in [1, 2] {
        let n = of_index(&h, i).name().to_owned();
        end(&mut h, &n, "Succeeded", 500);
    }
    let out = step(&mut h, 500);
    assert_eq!(
        condition(&h, "Failed"),
        Some(("True".into(), "FailedIndexes".into()))
    );
    assert!(events(&out).contains(&"FailedIndexes: Job has failed indexes".to_owned()));
    assert_eq!(status(&h)["completedIndexes"], "1,2");
}

#[test]
fn more_failed_indexes_than_allowed_fail_the_job_at_once() {
    let mut h = indexed(json!({"completions": 4, "parallelism": 4,
                               "backoffLimitPerIndex": 0, "maxFailedIndexes": 1}));
    step(&mut h, 0);
    let zero = of_index(&h, 0).name().to_owned();
    fail_with(&mut h, &zero, 5, &[("pi", 1)], &[]);
    step(&mut h, 5);
    // One failed index is allowed.
    assert!(condition(&h, "Failed").is_none());
    assert_eq!(status(&h)["failedIndexes"], "0");
    let one = of_index(&h, 1).name().to_owned();
    fail_with(&mut h, &one, 6, &[("pi", 1)], &[]);
    once(&mut h, 6);
    assert_eq!(
        condition(&h, "FailureTarget"),
        Some(("True".into(), "MaxFailedIndexesExceeded".into()))
    );
    let out = step(&mut h, 7);
    assert_eq!(
        condition(&h, "Failed"),
        Some(("True".into(), "MaxFailedIndexesExceeded".into()))
    );
    assert!(events(&out).contains(
        &"MaxFailedIndexesExceeded: Job has exceeded the specified maximal number of failed indexes"
            .to_owned()
    ));
    assert_eq!(status(&h)["failedIndexes"], "0,1");
    // Indexes 2 and 3, still running, are deleted.
    assert_eq!(pods(&h).len(), 2);
}

#[test]
fn a_fail_index_rule_fails_the_index_at_once() {
    let policy = json!({"rules": [
        {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [42]}}]});
    let mut h = indexed(
        json!({"completions": 2, "parallelism": 2, "backoffLimitPerIndex": 5,
                               "podFailurePolicy": policy}),
    );
    step(&mut h, 0);
    let zero = of_index(&h, 0).name().to_owned();
    fail_with(&mut h, &zero, 5, &[("pi", 42)], &[]);
    step(&mut h, 5);
    step(&mut h, 400);
    assert_eq!(status(&h)["failedIndexes"], "0");
    assert_eq!(pods(&h).len(), 2, "index 0 is not retried");
    let one = of_index(&h, 1).name().to_owned();
    end(&mut h, &one, "Succeeded", 410);
    step(&mut h, 410);
    assert_eq!(
        condition(&h, "Failed"),
        Some(("True".into(), "FailedIndexes".into()))
    );
}

#[test]
fn an_ignored_failure_is_counted_apart_and_still_backs_off() {
    let policy = json!({"rules": [{"action": "Ignore",
        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]});
    let mut h = indexed(json!({"completions": 1, "backoffLimitPerIndex": 0,
                               "podFailurePolicy": policy}));
    step(&mut h, 0);
    let first = of_index(&h, 0).name().to_owned();
    fail_with(
        &mut h,
        &first,
        5,
        &[("pi", 137)],
        &[("DisruptionTarget", "True")],
    );
    step(&mut h, 5);
    assert_eq!(status(&h)["failedIndexes"], "");
    assert!(status(&h).get("failed").is_none());
    step(&mut h, 15);
    let second = of_index(&h, 0);
    assert_eq!(second.annotation(FAILURES), Some("0"));
    assert_eq!(second.annotation(IGNORED), Some("1"));

    // Its own back-off counts the ignored failure: 20 s after the second.
    let second = second.name().to_owned();
    fail_with(
        &mut h,
        &second,
        20,
        &[("pi", 137)],
        &[("DisruptionTarget", "True")],
    );
    let out = step(&mut h, 25);
    assert_eq!(out.requeue_after, Some(Duration::from_secs(15)));
    step(&mut h, 40);
    let third = of_index(&h, 0);
    assert_eq!(third.annotation(IGNORED), Some("2"));
    // A counted failure now is past the limit of 0.
    let third = third.name().to_owned();
    fail_with(&mut h, &third, 45, &[("pi", 1)], &[]);
    step(&mut h, 45);
    assert_eq!(
        condition(&h, "Failed"),
        Some(("True".into(), "FailedIndexes".into()))
    );
    assert_eq!(status(&h)["failed"], 1);
}

#[test]
fn indexes_back_off_on_their_own() {
    let mut h = indexed(json!({"completions": 2, "parallelism": 2, "backoffLimitPerIndex": 3}));
    step(&mut h, 0);
    let zero = of_index(&h, 0).name().to_owned();
    fail_with(&mut h, &zero, 5, &[("pi", 1)], &[]);
    step(&mut h, 15);
    let zero = of_index(&h, 0).name().to_owned();
    // Index 0's second failure waits 20 s; index 1's first only 10 s.
    fail_with(&mut h, &zero, 30, &[("pi", 1)], &[]);
    let one = of_index(&h, 1).name().to_owned();
    fail_with(&mut h, &one, 30, &[("pi", 1)], &[]);
    step(&mut h, 40);
    assert_eq!(of_index(&h, 1).annotation(FAILURES), Some("1"));
    assert!(
        pods(&h)
            .iter()
            .filter(|p| p.get_str("status.phase").is_none())
            .count()
            == 1
    );
    step(&mut h, 50);
    assert_eq!(of_index(&h, 0).annotation(FAILURES), Some("2"));
}

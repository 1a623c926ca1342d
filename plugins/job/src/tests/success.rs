//! `successPolicy`: which rule the succeeded indexes meet, and a Job that
//! meets one ending with `SuccessCriteriaMet`, its lingering pods deleted,
//! then `Complete`.

use serde_json::json;

use super::ending::bind;
use super::*;
use crate::success::SuccessPolicy;

fn indexed(completions: u32, parallelism: u32, rules: Value) -> Value {
    json!({"completionMode": "Indexed", "completions": completions,
           "parallelism": parallelism, "successPolicy": {"rules": rules}})
}

#[test]
fn rules_are_met_in_order_as_upstream_reads_them() {
    // (rules, succeeded indexes of 5, the message)
    let cases: Vec<(Value, &[u32], Option<&str>)> = vec![
        (
            json!([{"succeededIndexes": "0,2-3"}]),
            &[0, 2, 3],
            Some("Matched rules at index 0"),
        ),
        (json!([{"succeededIndexes": "0,2-3"}]), &[0, 2, 4], None),
        (json!([{"succeededCount": 2}]), &[4], None),
        (
            json!([{"succeededCount": 2}]),
            &[1, 4],
            Some("Matched rules at index 0"),
        ),
        // The count is taken within the indexes.
        (
            json!([{"succeededIndexes": "1-4", "succeededCount": 3}]),
            &[0, 1, 3],
            None,
        ),
        (
            json!([{"succeededIndexes": "1-4", "succeededCount": 3}]),
            &[1, 3, 4],
            Some("Matched rules at index 0"),
        ),
        // The first rule met says it.
        (
            json!([{"succeededIndexes": "0"}, {"succeededCount": 1}, {"succeededCount": 1}]),
            &[2],
            Some("Matched rules at index 1"),
        ),
        // Indexes past the completions do not count; all past, never met.
        (
            json!([{"succeededIndexes": "3-9"}]),
            &[3, 4],
            Some("Matched rules at index 0"),
        ),
        (json!([{"succeededIndexes": "7-9"}]), &[0, 1, 2, 3, 4], None),
        // Nothing before an index has succeeded.
        (json!([{"succeededCount": 0}]), &[], None),
    ];
    for (rules, done, want) in cases {
        let job = job(indexed(5, 1, rules.clone()));
        let policy = SuccessPolicy::of(&job, 5).unwrap().unwrap();
        let done: BTreeSet<u32> = done.iter().copied().collect();
        assert_eq!(policy.matched(&done).as_deref(), want, "{rules} {done:?}");
    }
}

#[test]
fn a_met_policy_ends_the_job_once_its_lingering_pods_are_gone() {
    let mut h = harness(indexed(4, 4, json!([{"succeededIndexes": "0"}])));
    step(&mut h, 0);
    let all = names(&h);
    for n in &all {
        bind(&mut h, n);
    }
    let zero = pods(&h)
        .into_iter()
        .find(|p| p.annotation("batch.kubernetes.io/job-completion-index") == Some("0"))
        .unwrap();
    end(&mut h, zero.name(), "Succeeded", 5);
    let out = step(&mut h, 5);
    assert_eq!(
        condition(&h, "SuccessCriteriaMet"),
        Some(("True".into(), "SuccessPolicy".into()))
    );
    assert_eq!(
        status(&h)["conditions"][0]["message"],
        "Matched rules at index 0"
    );
    // The three others are deleted, not counted as failed; no end yet.
    assert_eq!(out.deletes().count(), 3);
    assert!(condition(&h, "Complete").is_none());
    let s = status(&h);
    assert_eq!(
        (s.get("active"), s["terminating"].clone(), s.get("failed")),
        (None, json!(3), None)
    );
    assert_eq!(
        (s["succeeded"].clone(), s["completedIndexes"].clone()),
        (json!(1), json!("0"))
    );
    assert!(!events(&out).contains(&"Completed: Job completed".to_owned()));

    for n in all.iter().filter(|n| n.as_str() != zero.name()) {
        h.remove(&ObjectRef::new("v1", "Pod", "default", n));
    }
    let out = step(&mut h, 9);
    assert_eq!(
        condition(&h, "Complete"),
        Some(("True".into(), "SuccessPolicy".into()))
    );
    let s = status(&h);
    let complete = s["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Complete")
        .unwrap();
    assert_eq!(complete["message"], "Matched rules at index 0");
    assert_eq!(s["completionTime"], json!(t(9).to_rfc3339()));
    assert_eq!(s["terminating"], 0);
    assert!(events(&out).contains(&"Completed: Job completed".to_owned()));
    assert!(step(&mut h, 100).writes.is_empty());
}

#[test]
fn a_failure_comes_before_the_policy() {
    // Index 1 fails past the limit as index 0 succeeds: upstream looks at
    // the failure first.
    let mut spec = indexed(2, 2, json!([{"succeededCount": 1}]));
    spec["backoffLimit"] = json!(0);
    let mut h = harness(spec);
    step(&mut h, 0);
    let p = pods(&h);
    let by = |i: &str| {
        p.iter()
            .find(|p| p.annotation("batch.kubernetes.io/job-completion-index") == Some(i))
            .unwrap()
            .name()
            .to_owned()
    };
    end(&mut h, &by("0"), "Succeeded", 5);
    end(&mut h, &by("1"), "Failed", 5);
    step(&mut h, 5);
    assert_eq!(
        condition(&h, "Failed"),
        Some(("True".into(), "BackoffLimitExceeded".into()))
    );
    assert!(condition(&h, "SuccessCriteriaMet").is_none());
}

//! `podFailurePolicy`: each action end to end through reconciles, and the
//! matching rules (operators, containers, conditions, order) on their own.

use serde_json::{Value, json};
use windlass_sdk::Object;

use super::*;
use crate::policy::{Action, Failure, Policy};

/// Fails pod `name` at `secs` with its containers' `(name, exit code)` and
/// the pod conditions `(type, status)`, as the kubelet reports them.
pub(super) fn fail_with(
    h: &mut H,
    name: &str,
    secs: i64,
    exits: &[(&str, i64)],
    conditions: &[(&str, &str)],
) {
    let r = ObjectRef::new("v1", "Pod", "default", name);
    let mut p = h.get(&r).unwrap();
    let statuses: Vec<Value> = exits
        .iter()
        .map(|(c, code)| {
            json!({"name": c, "restartCount": 0, "state": {"terminated": {
                "exitCode": code, "finishedAt": t(secs).to_rfc3339()}}})
        })
        .collect();
    let conditions: Vec<Value> = conditions
        .iter()
        .map(|(t, s)| json!({"type": t, "status": s}))
        .collect();
    p.value_mut()["status"] = json!({
        "phase": "Failed",
        "conditions": conditions,
        "containerStatuses": statuses,
    });
    h.insert(p);
}

/// Containers' `(name, exit code)`, and pod conditions `(type, status)`.
type Exits = &'static [(&'static str, i64)];
type Conditions = &'static [(&'static str, &'static str)];

fn rules(rules: Value) -> Value {
    json!({"rules": rules})
}

/// A running pod's name (the first by name).
pub(super) fn running(h: &H) -> String {
    pods(h)
        .into_iter()
        .find(|p| p.get_str("status.phase").is_none())
        .expect("a running pod")
        .name()
        .to_owned()
}

fn message(h: &H, type_: &str) -> String {
    status(h)["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| c["message"].as_str().unwrap().to_owned())
        .unwrap()
}

#[test]
fn a_fail_job_rule_fails_the_job_at_once_in_upstreams_words() {
    // (rules, the failed pod's exits and conditions, the message's tail)
    let cases: [(Value, Exits, Conditions, &str); 2] = [
        (
            json!([
                {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1]}},
                {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}
            ]),
            &[("main", 42)],
            &[],
            "failed with exit code 42 matching FailJob rule at index 1",
        ),
        (
            json!([{"action": "FailJob",
                    "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]),
            &[("main", 137)],
            &[("DisruptionTarget", "True")],
            "has condition DisruptionTarget matching FailJob rule at index 0",
        ),
    ];
    for (rules_, exits, conditions, tail) in cases {
        let mut h = harness(json!({"parallelism": 2, "completions": 2,
                                   "backoffLimit": 6, "podFailurePolicy": rules(rules_)}));
        step(&mut h, 0);
        let all = names(&h);
        fail_with(&mut h, &all[0], 5, exits, conditions);
        once(&mut h, 5);
        let want = if tail.starts_with("failed") {
            format!("Container main for pod default/{} {tail}", all[0])
        } else {
            format!("Pod default/{} {tail}", all[0])
        };
        assert_eq!(
            condition(&h, "FailureTarget"),
            Some(("True".into(), "PodFailurePolicy".into()))
        );
        assert_eq!(message(&h, "FailureTarget"), want);
        // The other pod, still running, is deleted, and counts as failed
        // as upstream counts the pods it stops (both recorded, not yet
        // counted); `Failed` waits for them to be counted.
        assert_eq!(names(&h), [all[0].clone()]);
        let s = status(&h);
        assert_eq!(
            s["uncountedTerminatedPods"]["failed"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        assert!(condition(&h, "Failed").is_none());
        let out = step(&mut h, 6);
        assert_eq!(
            condition(&h, "Failed"),
            Some(("True".into(), "PodFailurePolicy".into()))
        );
        assert_eq!(message(&h, "Failed"), want);
        assert!(events(&out).contains(&format!("PodFailurePolicy: {want}")));
        assert_eq!(status(&h)["failed"], 2);
    }
}

#[test]
fn an_ignored_failure_neither_counts_nor_stops_a_replacement() {
    let policy = rules(json!([{"action": "Ignore",
        "onPodConditions": [{"type": "DisruptionTarget"}]}]));
    let mut h = harness(json!({"backoffLimit": 0, "podFailurePolicy": policy}));
    step(&mut h, 0);
    let first = running(&h);
    fail_with(
        &mut h,
        &first,
        5,
        &[("pi", 137)],
        &[("DisruptionTarget", "True")],
    );
    // Not counted, not the end of a Job with no failures to spare; the
    // replacement still waits out the back-off.
    let out = step(&mut h, 5);
    assert!(condition(&h, "Failed").is_none());
    assert!(status(&h).get("failed").is_none(), "{}", status(&h));
    assert_eq!(out.requeue_after, Some(Duration::from_secs(10)));
    step(&mut h, 15);
    let second = running(&h);
    assert_ne!(second, first);
    // A failure no rule matches counts, and is past backoffLimit 0.
    fail_with(&mut h, &second, 20, &[("pi", 1)], &[]);
    step(&mut h, 20);
    assert_eq!(
        condition(&h, "Failed"),
        Some(("True".into(), "BackoffLimitExceeded".into()))
    );
    assert_eq!(status(&h)["failed"], 1);
}

#[test]
fn a_count_rule_counts_as_without_a_policy() {
    let policy = rules(json!([{"action": "Count",
        "onExitCodes": {"operator": "In", "values": [3]}}]));
    let mut h = harness(json!({"backoffLimit": 0, "podFailurePolicy": policy}));
    step(&mut h, 0);
    let first = running(&h);
    fail_with(&mut h, &first, 5, &[("pi", 3)], &[]);
    step(&mut h, 5);
    assert_eq!(
        condition(&h, "Failed"),
        Some(("True".into(), "BackoffLimitExceeded".into()))
    );
}

/// The action `rules` give a failed pod with `exits` and `conditions`.
fn judge(rules_: Value, exits: &[(&str, i64)], conditions: &[(&str, &str)]) -> Option<Action> {
    let job = Object::from_value(json!({"spec": {"podFailurePolicy": rules(rules_)}})).unwrap();
    let policy = Policy::of(&job).unwrap().unwrap();
    let pod = Failure {
        exits: exits.iter().map(|(c, e)| (c.to_string(), *e)).collect(),
        conditions: conditions
            .iter()
            .map(|(t, s)| (t.to_string(), s.to_string()))
            .collect(),
    };
    policy.judge("default", "p", &pod).map(|v| v.action)
}

#[test]
fn rules_match_as_upstreams() {
    let in_42 =
        |action: &str| json!({"action": action, "onExitCodes": {"operator": "In", "values": [42]}});
    let cases: [(&str, Value, Exits, Conditions, Option<Action>); 11] = [
        (
            "In matches a listed code",
            json!([in_42("FailJob")]),
            &[("a", 42)],
            &[],
            Some(Action::FailJob),
        ),
        (
            "In skips others",
            json!([in_42("FailJob")]),
            &[("a", 1)],
            &[],
            None,
        ),
        (
            "NotIn matches an unlisted code",
            json!([{"action": "Ignore", "onExitCodes": {"operator": "NotIn", "values": [1]}}]),
            &[("a", 2)],
            &[],
            Some(Action::Ignore),
        ),
        (
            "NotIn never matches exit code 0",
            json!([{"action": "Ignore", "onExitCodes": {"operator": "NotIn", "values": [1]}}]),
            &[("a", 0), ("b", 1)],
            &[],
            None,
        ),
        (
            "the first matching rule wins",
            json!([in_42("Count"), in_42("FailJob")]),
            &[("a", 42)],
            &[],
            Some(Action::Count),
        ),
        (
            "a later rule matches when the first does not",
            json!([{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [7]}}, in_42("FailJob")]),
            &[("a", 42)],
            &[],
            Some(Action::FailJob),
        ),
        (
            "containerName restricts the match",
            json!([{"action": "FailJob", "onExitCodes": {"containerName": "b", "operator": "In", "values": [42]}}]),
            &[("a", 42)],
            &[],
            None,
        ),
        (
            "containerName matches its container",
            json!([{"action": "FailJob", "onExitCodes": {"containerName": "b", "operator": "In", "values": [42]}}]),
            &[("a", 1), ("b", 42)],
            &[],
            Some(Action::FailJob),
        ),
        (
            "a condition's status defaults to True",
            json!([{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]),
            &[],
            &[("DisruptionTarget", "True")],
            Some(Action::Ignore),
        ),
        (
            "a condition of another status does not match",
            json!([{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]),
            &[],
            &[("DisruptionTarget", "False")],
            None,
        ),
        (
            "FailIndex is an action of its own",
            json!([in_42("FailIndex")]),
            &[("a", 42)],
            &[],
            Some(Action::FailIndex),
        ),
    ];
    for (what, rules_, exits, conditions, want) in cases {
        assert_eq!(judge(rules_, exits, conditions), want, "{what}");
    }
}

#[test]
fn an_init_containers_exit_code_matches_too() {
    let mut h = harness(json!({"podFailurePolicy": rules(json!([
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [5, 6]}}]))}));
    step(&mut h, 0);
    let name = running(&h);
    let r = ObjectRef::new("v1", "Pod", "default", &name);
    let mut p = h.get(&r).unwrap();
    let term = |c: &str, code: i64| json!({"name": c, "state": {"terminated": {"exitCode": code}}});
    p.value_mut()["status"] = json!({"phase": "Failed",
        "initContainerStatuses": [term("setup", 5)],
        "containerStatuses": [term("pi", 1)]});
    h.insert(p);
    step(&mut h, 5);
    assert_eq!(
        message(&h, "Failed"),
        format!(
            "Container setup for pod default/{name} failed with exit code 5 matching FailJob rule at index 0"
        )
    );
}

//! Native tests of the Job controller, through `windlass_sdk::testing`:
//! the harness plays the host's writer, and the tests play the pods' lives.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};
use windlass_sdk::testing::Harness;
use windlass_sdk::{Object, ObjectRef, Outcome, Propagation, Time, Write};

use super::JobController;
use super::job::{format_indexes, parse_indexes};

mod ending;
mod managed_by;
mod per_index;
mod policy;
mod replacement;
mod success;
mod tracking;

type H = Harness<JobController>;

fn t(secs: i64) -> Time {
    let base = Time::parse("2026-03-01T10:00:00Z").unwrap();
    Time::from_millis(base.millis() + secs * 1000)
}

fn job_ref() -> ObjectRef {
    ObjectRef::new("batch/v1", "Job", "default", "pi")
}

/// A Job `pi` as the API server stores it (generated selector and labels),
/// with `spec` merged over the defaults.
fn job(spec: Value) -> Object {
    let mut j = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "pi", "namespace": "default", "uid": "job-uid",
                     "resourceVersion": "1"},
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": 6,
            "completionMode": "NonIndexed",
            "suspend": false,
            "podReplacementPolicy": "TerminatingOrFailed",
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "job-uid"}},
            "template": {
                "metadata": {"labels": {
                    "batch.kubernetes.io/controller-uid": "job-uid",
                    "batch.kubernetes.io/job-name": "pi",
                    "controller-uid": "job-uid",
                    "job-name": "pi"
                }},
                "spec": {"restartPolicy": "Never",
                         "containers": [{"name": "pi", "image": "perl"}]}
            }
        }
    });
    for (k, v) in spec.as_object().unwrap() {
        j["spec"][k] = v.clone();
    }
    Object::from_value(j).unwrap()
}

fn harness(spec: Value) -> H {
    H::new().with_now(t(0)).with_object(job(spec))
}

/// Reconciles the Job at `secs` and applies the outcome.
fn once(h: &mut H, secs: i64) -> Outcome {
    h.set_now(t(secs));
    let out = h.reconcile_key(&job_ref()).unwrap();
    h.apply_outcome(&job_ref(), &out).unwrap();
    out
}

/// Reconciles the Job at `secs` and applies the outcome; when that took
/// the tracking finalizer off pods, reconciles again to count them, as the
/// pods' changes requeue the Job on a host. Both outcomes' writes and
/// events, and the last one's requeue.
fn step(h: &mut H, secs: i64) -> Outcome {
    let mut out = once(h, secs);
    if out.merge_patches().next().is_some() {
        let more = once(h, secs);
        out.writes.extend(more.writes);
        out.events.extend(more.events);
        out.requeue_after = more.requeue_after;
    }
    out
}

fn pods(h: &H) -> Vec<Object> {
    let mut p = h.list("v1", "Pod");
    p.sort_by(|a, b| a.name().cmp(b.name()));
    p
}

fn status(h: &H) -> Value {
    h.get(&job_ref())
        .unwrap()
        .get("status")
        .cloned()
        .unwrap_or(Value::Null)
}

fn condition(h: &H, type_: &str) -> Option<(String, String)> {
    let s = status(h);
    s["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| {
            (
                c["status"].as_str().unwrap().to_owned(),
                c["reason"].as_str().unwrap().to_owned(),
            )
        })
}

fn events(out: &Outcome) -> Vec<String> {
    out.events.iter().map(ToString::to_string).collect()
}

/// Ends pod `name` at `secs` with `phase`, as the kubelet reports it.
fn end(h: &mut H, name: &str, phase: &str, secs: i64) {
    let r = ObjectRef::new("v1", "Pod", "default", name);
    let mut p = h.get(&r).unwrap();
    let code = if phase == "Succeeded" { 0 } else { 1 };
    p.value_mut()["status"] = json!({
        "phase": phase,
        "containerStatuses": [{"name": "pi", "restartCount": 0, "state": {"terminated": {
            "exitCode": code, "finishedAt": t(secs).to_rfc3339()}}}]
    });
    h.insert(p);
}

fn run_ready(h: &mut H, name: &str) {
    let r = ObjectRef::new("v1", "Pod", "default", name);
    let mut p = h.get(&r).unwrap();
    p.value_mut()["status"] = json!({
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}]
    });
    h.insert(p);
}

fn names(h: &H) -> Vec<String> {
    pods(h).iter().map(|p| p.name().to_owned()).collect()
}

#[test]
fn runs_pods_until_enough_have_succeeded() {
    let mut h = harness(json!({"completions": 3, "parallelism": 2}));
    let out = step(&mut h, 0);
    let created = names(&h);
    assert_eq!(created.len(), 2);
    for (p, name) in pods(&h).iter().zip(&created) {
        assert!(
            name.starts_with("pi-") && name.len() == "pi-".len() + 5,
            "{name}"
        );
        assert_eq!(p.label("job-name"), Some("pi"));
        assert_eq!(
            p.label("batch.kubernetes.io/controller-uid"),
            Some("job-uid")
        );
        assert_eq!(p.controller_ref().unwrap().kind, "Job");
        assert_eq!(p.get_str("spec.restartPolicy"), Some("Never"));
    }
    assert!(events(&out).contains(&format!("SuccessfulCreate: Created pod: {}", created[0])));
    let s = status(&h);
    assert_eq!(
        (s["active"].clone(), s["ready"].clone()),
        (json!(2), json!(0))
    );
    assert_eq!(s["startTime"], json!(t(0).to_rfc3339()));

    // Nothing new while the two run; the same snapshot gives no write.
    run_ready(&mut h, &created[0]);
    step(&mut h, 1);
    assert_eq!(status(&h)["ready"], 1);
    assert!(step(&mut h, 2).writes.is_empty());

    // One succeeds: a third starts, no more.
    end(&mut h, &created[0], "Succeeded", 3);
    step(&mut h, 3);
    assert_eq!(names(&h).len(), 3);
    assert_eq!(status(&h)["succeeded"], 1);
    assert_eq!(status(&h)["active"], 2);

    for n in names(&h) {
        if n != created[0] {
            end(&mut h, &n, "Succeeded", 10);
        }
    }
    let out = step(&mut h, 10);
    assert_eq!(condition(&h, "Complete").unwrap().0, "True");
    let s = status(&h);
    assert_eq!(s["succeeded"], 3);
    assert_eq!(s["completionTime"], json!(t(10).to_rfc3339()));
    assert!(s.get("active").is_none(), "{s}");
    assert!(events(&out).contains(&"Completed: Job completed".to_owned()));
    // Finished: no more writes, the pods stay.
    assert!(step(&mut h, 100).writes.is_empty());
    assert_eq!(names(&h).len(), 3);
}

#[test]
fn a_reconcile_before_the_cache_has_its_pods_makes_the_same_ones() {
    let h = harness(json!({"parallelism": 3, "completions": 5}));
    let first = h.reconcile_key(&job_ref()).unwrap();
    let again = h.reconcile_key(&job_ref()).unwrap();
    let created =
        |o: &Outcome| -> BTreeSet<String> { o.applies().map(|p| p.name().to_owned()).collect() };
    assert_eq!(created(&first).len(), 3);
    assert_eq!(created(&first), created(&again));
}

#[test]
fn failed_pods_are_replaced_after_a_back_off_until_the_limit() {
    let mut h = harness(json!({"backoffLimit": 1}));
    step(&mut h, 0);
    let first = names(&h)[0].clone();
    end(&mut h, &first, "Failed", 5);
    // 10 s after the failure, not before.
    let out = step(&mut h, 6);
    assert_eq!(names(&h).len(), 1);
    assert_eq!(out.requeue_after, Some(Duration::from_secs(9)));
    assert_eq!(status(&h)["failed"], 1);
    step(&mut h, 15);
    let all = names(&h);
    assert_eq!(all.len(), 2);
    let second = all.into_iter().find(|n| *n != first).unwrap();

    // The second failure is past backoffLimit 1: the Job fails.
    end(&mut h, &second, "Failed", 20);
    let out = step(&mut h, 20);
    assert_eq!(
        condition(&h, "Failed"),
        Some(("True".into(), "BackoffLimitExceeded".into()))
    );
    assert!(
        events(&out).contains(
            &"BackoffLimitExceeded: Job has reached the specified backoff limit".to_owned()
        )
    );
    assert_eq!(status(&h)["failed"], 2);
    assert!(status(&h).get("completionTime").is_none());
    assert!(step(&mut h, 400).writes.is_empty());
}

#[test]
fn restarts_count_against_the_limit_with_on_failure() {
    let mut spec = json!({"backoffLimit": 2});
    spec["template"] = job(json!({})).value()["spec"]["template"].clone();
    spec["template"]["spec"]["restartPolicy"] = json!("OnFailure");
    let mut h = harness(spec);
    step(&mut h, 0);
    let name = names(&h)[0].clone();
    let r = ObjectRef::new("v1", "Pod", "default", &name);
    let mut p = h.get(&r).unwrap();
    p.value_mut()["status"] = json!({"phase": "Running",
        "containerStatuses": [{"name": "pi", "restartCount": 2, "state": {"running": {}}}]});
    h.insert(p);
    step(&mut h, 30);
    assert_eq!(
        condition(&h, "FailureTarget"),
        Some(("True".into(), "BackoffLimitExceeded".into()))
    );
    // The running pod is deleted; once it is gone, the Job has failed.
    assert!(names(&h).is_empty());
    step(&mut h, 31);
    assert_eq!(
        condition(&h, "Failed"),
        Some(("True".into(), "BackoffLimitExceeded".into()))
    );
}

#[test]
fn the_active_deadline_fails_the_job_and_stops_its_pods() {
    let mut h = harness(json!({"activeDeadlineSeconds": 30}));
    let out = step(&mut h, 0);
    assert_eq!(out.requeue_after, Some(Duration::from_secs(30)));
    assert_eq!(names(&h).len(), 1);
    let out = once(&mut h, 30);
    assert_eq!(
        condition(&h, "FailureTarget"),
        Some(("True".into(), "DeadlineExceeded".into()))
    );
    assert!(
        events(&out)
            .iter()
            .any(|e| e.starts_with("SuccessfulDelete: Deleted pod: pi-"))
    );
    assert!(names(&h).is_empty());
    let out = step(&mut h, 31);
    assert_eq!(
        condition(&h, "Failed"),
        Some(("True".into(), "DeadlineExceeded".into()))
    );
    assert!(
        events(&out).contains(
            &"DeadlineExceeded: Job was active longer than specified deadline".to_owned()
        )
    );
}

#[test]
fn an_indexed_job_runs_each_index_once() {
    let mut h = harness(json!({"completionMode": "Indexed", "completions": 4, "parallelism": 2}));
    step(&mut h, 0);
    let p = pods(&h);
    assert_eq!(p.len(), 2);
    let mut indexes: Vec<&str> = p
        .iter()
        .map(|p| {
            p.annotation("batch.kubernetes.io/job-completion-index")
                .unwrap()
        })
        .collect();
    indexes.sort();
    assert_eq!(indexes, ["0", "1"]);
    for p in &p {
        let i = p
            .annotation("batch.kubernetes.io/job-completion-index")
            .unwrap();
        assert!(p.name().starts_with(&format!("pi-{i}-")), "{}", p.name());
        assert_eq!(p.label("batch.kubernetes.io/job-completion-index"), Some(i));
        assert_eq!(p.get_str("spec.hostname"), Some(format!("pi-{i}").as_str()));
        assert_eq!(
            p.get_str("spec.containers.0.env.0.name"),
            Some("JOB_COMPLETION_INDEX")
        );
    }
    // Index 1 succeeds, index 0 fails: after the back-off, 0 and 2 start.
    let by_index = |h: &H, i: &str| {
        pods(h)
            .into_iter()
            .find(|p| {
                p.annotation("batch.kubernetes.io/job-completion-index") == Some(i)
                    && p.get_str("status.phase").is_none()
            })
            .unwrap()
            .name()
            .to_owned()
    };
    let one = by_index(&h, "1");
    let zero = by_index(&h, "0");
    end(&mut h, &one, "Succeeded", 4);
    end(&mut h, &zero, "Failed", 5);
    step(&mut h, 5);
    assert_eq!(status(&h)["completedIndexes"], "1");
    assert_eq!(pods(&h).len(), 2);
    step(&mut h, 15);
    by_index(&h, "0");
    by_index(&h, "2");
    for i in ["0", "2"] {
        let n = by_index(&h, i);
        end(&mut h, &n, "Succeeded", 20);
    }
    step(&mut h, 20);
    let three = by_index(&h, "3");
    end(&mut h, &three, "Succeeded", 25);
    step(&mut h, 25);
    let s = status(&h);
    assert_eq!(s["completedIndexes"], "0-3");
    assert_eq!(s["succeeded"], 4);
    assert_eq!(condition(&h, "Complete").unwrap().0, "True");
}

#[test]
fn a_work_queue_ends_when_one_succeeded_and_none_runs() {
    let mut spec = job(json!({"parallelism": 2}));
    spec.value_mut()["spec"]
        .as_object_mut()
        .unwrap()
        .remove("completions");
    let mut h = H::new().with_now(t(0)).with_object(spec);
    step(&mut h, 0);
    let all = names(&h);
    assert_eq!(all.len(), 2);
    end(&mut h, &all[0], "Succeeded", 5);
    step(&mut h, 5);
    // No replacement once one has succeeded, and not done while one runs.
    assert_eq!(names(&h).len(), 2);
    assert!(condition(&h, "Complete").is_none());
    end(&mut h, &all[1], "Succeeded", 8);
    step(&mut h, 8);
    assert_eq!(condition(&h, "Complete").unwrap().0, "True");
}

#[test]
fn suspending_stops_the_pods_and_resuming_restarts_the_clock() {
    let mut h = harness(json!({"parallelism": 2, "completions": 2}));
    step(&mut h, 0);
    let mut j = h.get(&job_ref()).unwrap();
    j.value_mut()["spec"]["suspend"] = json!(true);
    h.insert(j);
    let out = step(&mut h, 10);
    assert!(names(&h).is_empty());
    assert_eq!(
        condition(&h, "Suspended"),
        Some(("True".into(), "JobSuspended".into()))
    );
    assert!(status(&h).get("startTime").is_none());
    assert!(events(&out).contains(&"Suspended: Job suspended".to_owned()));

    let mut j = h.get(&job_ref()).unwrap();
    j.value_mut()["spec"]["suspend"] = json!(false);
    h.insert(j);
    let out = step(&mut h, 20);
    assert_eq!(names(&h).len(), 2);
    assert_eq!(
        condition(&h, "Suspended"),
        Some(("False".into(), "JobResumed".into()))
    );
    assert_eq!(status(&h)["startTime"], json!(t(20).to_rfc3339()));
    assert!(events(&out).contains(&"Resumed: Job resumed".to_owned()));
}

#[test]
fn lowering_parallelism_deletes_the_newest_unready_pods() {
    let mut h = harness(json!({"parallelism": 3, "completions": 10}));
    step(&mut h, 0);
    let all = names(&h);
    run_ready(&mut h, &all[0]);
    run_ready(&mut h, &all[1]);
    let mut j = h.get(&job_ref()).unwrap();
    j.value_mut()["spec"]["parallelism"] = json!(2);
    h.insert(j);
    let out = step(&mut h, 5);
    let deleted: Vec<&str> = out.deletes().map(|r| r.name.as_str()).collect();
    assert_eq!(deleted, [all[2].as_str()]);
}

#[test]
fn a_finished_job_with_a_ttl_is_deleted_when_it_runs_out() {
    let mut h = harness(json!({"ttlSecondsAfterFinished": 60}));
    step(&mut h, 0);
    let name = names(&h)[0].clone();
    end(&mut h, &name, "Succeeded", 5);
    step(&mut h, 5);
    let out = h.reconcile_key(&job_ref()).unwrap();
    assert_eq!(out.requeue_after, Some(Duration::from_secs(60)));
    h.set_now(t(65));
    let out = h.reconcile_key(&job_ref()).unwrap();
    let Some(Write::Delete { target, options }) = out.writes.first() else {
        panic!("no delete: {:?}", out.writes);
    };
    assert_eq!(target, &job_ref());
    assert_eq!(options.propagation, Some(Propagation::Foreground));
    assert_eq!(options.uid.as_deref(), Some("job-uid"));
}

#[test]
fn a_refused_create_is_recorded() {
    let mut h = harness(json!({}));
    h.set_last_failure(Some(windlass_sdk::WriteFailure {
        write: 0,
        code: 403,
        reason: "Forbidden".into(),
        message: "pods \"pi-x\" is forbidden: exceeded quota: q".into(),
    }));
    let out = h.reconcile_key(&job_ref()).unwrap();
    assert!(events(&out).contains(
        &"FailedCreate: Error creating: pods \"pi-x\" is forbidden: exceeded quota: q".to_owned()
    ));
}

#[test]
fn completed_indexes_read_and_print_as_upstream() {
    let set: BTreeSet<u32> = [0, 1, 2, 5, 7, 8].into();
    assert_eq!(format_indexes(&set), "0-2,5,7,8");
    assert_eq!(parse_indexes("0-2,5,7,8"), set);
    assert_eq!(parse_indexes("0-2,5,7-8"), set);
    assert_eq!(parse_indexes("x,3,9-4"), [3].into());
    assert_eq!(format_indexes(&BTreeSet::new()), "");
}

#[test]
fn a_bad_spec_is_a_permanent_error() {
    let mut h = harness(json!({"completionMode": "Indexed", "completions": null}));
    let err = h.reconcile_key(&job_ref()).unwrap_err();
    assert!(err.to_string().contains("completions"), "{err}");
    h.insert(job(json!({"parallelism": -1})));
    assert!(h.reconcile_key(&job_ref()).is_err());
}

//! Pod tracking with the `batch.kubernetes.io/job-tracking` finalizer: pods
//! are made with it; a pod that ended is recorded in
//! `uncountedTerminatedPods`, released, then counted, one write after the
//! other, so that deletions and crashes in between neither lose nor double
//! a count; and the pods of a Job that is deleted, gone or that let them go
//! are released.

use serde_json::json;

use super::ending::bind;
use super::*;

const FINALIZER: &str = "batch.kubernetes.io/job-tracking";

fn pod_ref(name: &str) -> ObjectRef {
    ObjectRef::new("v1", "Pod", "default", name)
}

fn pod(h: &H, name: &str) -> Object {
    h.get(&pod_ref(name)).unwrap()
}

fn tracked(h: &H, name: &str) -> bool {
    pod(h, name).finalizers().any(|f| f == FINALIZER)
}

/// The pods an outcome takes the finalizer off.
fn released(out: &Outcome) -> Vec<String> {
    out.merge_patches()
        .filter(|(r, sub, p)| {
            r.kind == "Pod" && sub.is_none() && p["metadata"].get("finalizers").is_some()
        })
        .map(|(r, _, _)| r.name.clone())
        .collect()
}

/// The position of the first write for which `pick` holds.
fn position(out: &Outcome, pick: impl Fn(&Write) -> bool) -> Option<usize> {
    out.writes.iter().position(pick)
}

fn uncounted(h: &H, list: &str) -> Vec<String> {
    status(h)["uncountedTerminatedPods"][list]
        .as_array()
        .map(|a| a.iter().map(|u| u.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

/// Marks pod `name` deleted with the finalizer holding it, as the API
/// server keeps it (the harness would drop an unbound pod at once).
fn mark_deleted(h: &mut H, name: &str) {
    let mut p = pod(h, name);
    p.set("metadata.deletionTimestamp", t(0).to_rfc3339());
    h.insert(p);
}

#[test]
fn new_pods_carry_the_tracking_finalizer() {
    let mut h = harness(json!({"parallelism": 2, "completions": 2}));
    step(&mut h, 0);
    assert_eq!(pods(&h).len(), 2);
    for p in pods(&h) {
        assert_eq!(p.finalizers().collect::<Vec<_>>(), [FINALIZER], "{p:?}");
    }
    // Nothing ended: nothing recorded, released or counted.
    let s = status(&h);
    assert_eq!(s["uncountedTerminatedPods"], json!({}));
    assert!(
        s.get("succeeded").is_none() && s.get("failed").is_none(),
        "{s}"
    );
    assert!(step(&mut h, 1).writes.is_empty());
}

#[test]
fn a_finished_pod_is_recorded_then_released_then_counted() {
    let mut h = harness(json!({"parallelism": 2, "completions": 2}));
    step(&mut h, 0);
    let all = names(&h);
    let uid = pod(&h, &all[0]).uid().unwrap().to_owned();
    end(&mut h, &all[0], "Succeeded", 5);
    // The version the kubelet's status write left it at.
    let mut p = pod(&h, &all[0]);
    p.set("metadata.resourceVersion", "77");
    h.insert(p);

    // First the uid in the status, then (after it) the finalizer off, with
    // the pod's resourceVersion as a precondition; not counted yet.
    let out = once(&mut h, 5);
    let recorded = position(&out, |w| matches!(w, Write::UpdateStatus(_))).unwrap();
    let release = position(&out, |w| matches!(w, Write::MergePatch { .. })).unwrap();
    assert!(recorded < release, "{:?}", out.writes);
    assert_eq!(released(&out), [all[0].clone()]);
    let (_, _, patch) = out.merge_patches().next().unwrap();
    assert_eq!(
        patch,
        &json!({"metadata": {"finalizers": null, "resourceVersion": "77"}})
    );
    assert_eq!(uncounted(&h, "succeeded"), vec![uid.clone()]);
    assert!(status(&h).get("succeeded").is_none());
    assert!(!tracked(&h, &all[0]));
    assert!(tracked(&h, &all[1]));

    // Then counted, and nothing in flight.
    let out = once(&mut h, 6);
    assert!(released(&out).is_empty());
    let s = status(&h);
    assert_eq!(s["succeeded"], 1);
    assert_eq!(s["uncountedTerminatedPods"], json!({}));
    assert!(condition(&h, "Complete").is_none());
    assert!(step(&mut h, 7).writes.is_empty());

    // The second: the Job completes only once it is counted.
    end(&mut h, &all[1], "Succeeded", 10);
    once(&mut h, 10);
    assert_eq!(
        condition(&h, "SuccessCriteriaMet").map(|c| c.0),
        Some("True".into())
    );
    assert!(condition(&h, "Complete").is_none());
    let out = once(&mut h, 11);
    assert_eq!(condition(&h, "Complete").unwrap().0, "True");
    assert!(events(&out).contains(&"Completed: Job completed".to_owned()));
    let s = status(&h);
    assert_eq!(s["succeeded"], 2);
    assert_eq!(s["uncountedTerminatedPods"], json!({}));
    assert!(pods(&h).iter().all(|p| p.finalizers().next().is_none()));
}

#[test]
fn the_release_keeps_other_finalizers() {
    let mut h = harness(json!({}));
    step(&mut h, 0);
    let name = names(&h)[0].clone();
    let mut p = pod(&h, &name);
    p.set(
        "metadata.finalizers",
        json!(["example.com/keep", FINALIZER, "example.com/also"]),
    );
    h.insert(p);
    end(&mut h, &name, "Failed", 5);
    let out = once(&mut h, 5);
    let (_, _, patch) = out.merge_patches().next().unwrap();
    assert_eq!(
        patch["metadata"]["finalizers"],
        json!(["example.com/keep", "example.com/also"])
    );
    assert!(patch["metadata"]["resourceVersion"].is_string());
}

#[test]
fn a_finished_pod_deleted_before_it_was_counted_is_counted_once() {
    // Deleted after it ended, before the controller saw it: the finalizer
    // holds it until it is recorded and released.
    let mut h = harness(json!({"parallelism": 2, "completions": 3}));
    step(&mut h, 0);
    let all = names(&h);
    end(&mut h, &all[0], "Succeeded", 5);
    mark_deleted(&mut h, &all[0]);
    let out = once(&mut h, 5);
    assert_eq!(released(&out), [all[0].clone()]);
    assert_eq!(uncounted(&h, "succeeded").len(), 1);
    // The server lets it go once the finalizer is off.
    h.remove(&pod_ref(&all[0]));
    once(&mut h, 6);
    assert_eq!(status(&h)["succeeded"], 1);
    assert_eq!(status(&h)["uncountedTerminatedPods"], json!({}));

    // Deleted after it was recorded, before its release: counted all the
    // same, once.
    end(&mut h, &all[1], "Succeeded", 10);
    let out = h.reconcile_key(&job_ref()).unwrap();
    let recorded: Vec<Write> = out
        .writes
        .iter()
        .filter(|w| matches!(w, Write::UpdateStatus(_)))
        .cloned()
        .collect();
    // The status write lands; the pod is gone before the release.
    h.apply_outcome(&job_ref(), &Outcome::new().write(recorded[0].clone()))
        .unwrap();
    h.remove(&pod_ref(&all[1]));
    step(&mut h, 11);
    step(&mut h, 12);
    let s = status(&h);
    assert_eq!(s["succeeded"], 2, "{s}");
    assert_eq!(s["uncountedTerminatedPods"], json!({}));
    assert!(s.get("failed").is_none(), "{s}");
}

#[test]
fn a_pod_deleted_while_running_counts_as_failed() {
    let mut h = harness(json!({"completions": 1}));
    step(&mut h, 0);
    let name = names(&h)[0].clone();
    bind(&mut h, &name);
    // A user deletes it: terminating, its phase still Running.
    mark_deleted(&mut h, &name);
    let out = once(&mut h, 5);
    assert_eq!(released(&out), vec![name.clone()]);
    assert_eq!(uncounted(&h, "failed"), [pod(&h, &name).uid().unwrap()]);
    // Terminating, it is replaced (`TerminatingOrFailed`).
    assert_eq!(out.applies().count(), 1);
    once(&mut h, 6);
    let s = status(&h);
    assert_eq!(s["failed"], 1, "{s}");
    assert_eq!(s["terminating"], 1, "{s}");
    assert_eq!(s["uncountedTerminatedPods"], json!({}));
    // It ends as the kubelet reports it: still once.
    end(&mut h, &name, "Failed", 7);
    step(&mut h, 7);
    assert_eq!(status(&h)["failed"], 1);
}

#[test]
fn an_indexed_jobs_successes_are_recorded_by_index() {
    let mut h = harness(json!({"completionMode": "Indexed", "completions": 3, "parallelism": 3}));
    step(&mut h, 0);
    let index = |h: &H, name: &str| {
        pod(h, name)
            .annotation("batch.kubernetes.io/job-completion-index")
            .unwrap()
            .to_owned()
    };
    let all = names(&h);
    let zero = all.iter().find(|n| index(&h, n) == "0").unwrap().clone();
    let two = all.iter().find(|n| index(&h, n) == "2").unwrap().clone();
    end(&mut h, &zero, "Succeeded", 5);
    end(&mut h, &two, "Succeeded", 5);
    // The indexes are the record: in `completedIndexes` before the
    // finalizers go, no uid in flight.
    let out = once(&mut h, 5);
    let recorded = position(&out, |w| matches!(w, Write::UpdateStatus(_))).unwrap();
    let release = position(&out, |w| matches!(w, Write::MergePatch { .. })).unwrap();
    assert!(recorded < release);
    let mut rel = released(&out);
    rel.sort();
    let mut want = vec![zero.clone(), two.clone()];
    want.sort();
    assert_eq!(rel, want);
    let s = status(&h);
    assert_eq!(s["completedIndexes"], "0,2");
    assert_eq!(s["succeeded"], 2);
    assert_eq!(s["uncountedTerminatedPods"], json!({}));
    // Replayed (or after the release): the same indexes, counted once.
    step(&mut h, 6);
    let s = status(&h);
    assert_eq!(s["completedIndexes"], "0,2");
    assert_eq!(s["succeeded"], 2);
}

#[test]
fn a_crash_between_the_steps_does_not_count_twice() {
    let mut h = harness(json!({"parallelism": 3, "completions": 5}));
    step(&mut h, 0);
    let all = names(&h);
    end(&mut h, &all[0], "Succeeded", 5);
    end(&mut h, &all[1], "Failed", 5);

    // The same state twice (a reconcile whose writes were lost): the same
    // outcome.
    h.set_now(t(5));
    let first = h.reconcile_key(&job_ref()).unwrap();
    let again = h.reconcile_key(&job_ref()).unwrap();
    assert_eq!(first, again);

    // A crash after the status write, before any release: the next
    // reconcile records nothing new, and releases.
    let status_write = first
        .writes
        .iter()
        .find(|w| matches!(w, Write::UpdateStatus(_)))
        .unwrap()
        .clone();
    h.apply_outcome(&job_ref(), &Outcome::new().write(status_write))
        .unwrap();
    let recorded = (uncounted(&h, "succeeded"), uncounted(&h, "failed"));
    assert_eq!((recorded.0.len(), recorded.1.len()), (1, 1));
    h.set_now(t(6));
    let out = h.reconcile_key(&job_ref()).unwrap();
    assert_eq!(released(&out).len(), 2);

    // A crash after one release: the released one is counted, the other
    // released, and nothing is counted twice.
    let one = out
        .writes
        .iter()
        .find(|w| matches!(w, Write::MergePatch { .. }))
        .unwrap()
        .clone();
    h.apply_outcome(&job_ref(), &Outcome::new().write(one))
        .unwrap();
    step(&mut h, 7);
    step(&mut h, 8);
    step(&mut h, 30);
    let s = status(&h);
    assert_eq!(
        (s["succeeded"].clone(), s["failed"].clone()),
        (json!(1), json!(1)),
        "{s}"
    );
    assert_eq!(s["uncountedTerminatedPods"], json!({}));
    assert!(!tracked(&h, &all[0]) && !tracked(&h, &all[1]));
}

#[test]
fn at_most_max_uncounted_pods_are_recorded_at_once() {
    let mut h = harness(json!({"parallelism": 600, "completions": 600}));
    step(&mut h, 0);
    let all = names(&h);
    assert_eq!(all.len(), 600);
    for n in &all {
        end(&mut h, n, "Succeeded", 5);
    }
    let out = once(&mut h, 5);
    assert_eq!(released(&out).len(), 500);
    assert_eq!(uncounted(&h, "succeeded").len(), 500);
    once(&mut h, 6);
    once(&mut h, 7);
    once(&mut h, 8);
    let s = status(&h);
    assert_eq!(s["succeeded"], 600);
    assert_eq!(s["uncountedTerminatedPods"], json!({}));
    assert_eq!(condition(&h, "Complete").unwrap().0, "True");
}

#[test]
fn a_failed_pod_is_held_until_its_index_is_replaced() {
    let mut h = harness(json!({"completionMode": "Indexed", "completions": 1,
                               "backoffLimit": null, "backoffLimitPerIndex": 2}));
    step(&mut h, 0);
    let first = names(&h)[0].clone();
    end(&mut h, &first, "Failed", 5);
    // In its back-off: no replacement yet, so it keeps its finalizer (its
    // failure count goes to the replacement), though it counts.
    let out = once(&mut h, 6);
    assert!(released(&out).is_empty());
    assert!(tracked(&h, &first));
    assert_eq!(status(&h)["uncountedTerminatedPods"], json!({}));
    once(&mut h, 15);
    let replacement = names(&h).into_iter().find(|n| *n != first).unwrap();
    assert_eq!(
        pod(&h, &replacement).annotation("batch.kubernetes.io/job-index-failure-count"),
        Some("1")
    );
    // The replacement exists: the failed one is recorded and let go.
    let out = step(&mut h, 16);
    assert_eq!(released(&out), vec![first.clone()]);
    assert_eq!(status(&h)["failed"], 1);
}

#[test]
fn a_job_being_deleted_releases_all_its_pods() {
    let mut h = harness(json!({"parallelism": 2, "completions": 2}));
    step(&mut h, 0);
    let all = names(&h);
    bind(&mut h, &all[0]);
    // Foreground deletion: the Job stays until its pods are gone, and they
    // go only once released, running or not.
    let mut j = h.get(&job_ref()).unwrap();
    j.set("metadata.deletionTimestamp", t(10).to_rfc3339());
    j.set("metadata.finalizers", json!(["foregroundDeletion"]));
    h.insert(j);
    let out = once(&mut h, 10);
    let mut rel = released(&out);
    rel.sort();
    assert_eq!(rel, all);
    assert!(out.applies().next().is_none() && out.status_updates().next().is_none());
    assert!(pods(&h).iter().all(|p| p.finalizers().next().is_none()));
    assert!(once(&mut h, 11).writes.is_empty());
}

#[test]
fn a_gone_jobs_pods_are_released() {
    let mut h = harness(json!({"parallelism": 2, "completions": 2}));
    step(&mut h, 0);
    let all = names(&h);
    // Background deletion: the Job is gone, its pods are still there (the
    // garbage collector deletes them next; the finalizer would hold them).
    h.remove(&job_ref());
    // The Job's key releases the pods labelled with its name.
    let out = once(&mut h, 10);
    let mut rel = released(&out);
    rel.sort();
    assert_eq!(rel, all);
    assert!(pods(&h).iter().all(|p| p.finalizers().next().is_none()));
    assert!(once(&mut h, 11).writes.is_empty());
}

#[test]
fn an_orphan_is_mapped_to_its_own_key_and_released() {
    let mut h = harness(json!({"parallelism": 2, "completions": 2}));
    step(&mut h, 0);
    let all = names(&h);
    // A pod of the live Job is its Job's (the owned pods requeue it).
    assert!(h.map(&pod(&h, &all[0])).unwrap().is_empty());

    // Orphaned (`--cascade=orphan` took its owner reference): mapped to the
    // Job key of its own name, whose reconcile releases it.
    let mut p = pod(&h, &all[0]);
    p.remove("metadata.ownerReferences");
    h.insert(p.clone());
    let key = ObjectRef::new("batch/v1", "Job", "default", &all[0]);
    assert_eq!(h.map(&p).unwrap(), vec![key.clone()]);
    let out = h.reconcile_key(&key).unwrap();
    assert_eq!(released(&out), [all[0].clone()]);
    h.apply_outcome(&key, &out).unwrap();
    assert!(!tracked(&h, &all[0]));
    assert!(h.map(&pod(&h, &all[0])).unwrap().is_empty());

    // A pod whose Job is gone (unlabelled, as with a manual selector):
    // the same, through its own key.
    h.remove(&job_ref());
    let mut p = pod(&h, &all[1]);
    p.remove("metadata.labels");
    h.insert(p.clone());
    let key = ObjectRef::new("batch/v1", "Job", "default", &all[1]);
    assert_eq!(h.map(&p).unwrap(), vec![key.clone()]);
    let out = h.reconcile_key(&key).unwrap();
    assert_eq!(released(&out), [all[1].clone()]);

    // A pod some other controller owns is not the Job controller's.
    let mut p = pod(&h, &all[1]);
    p.set(
        "metadata.ownerReferences",
        json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                "uid": "rs-uid", "controller": true}]),
    );
    assert!(h.map(&p).unwrap().is_empty());
}

//! `managedBy`: a Job another controller runs is left alone, but for its
//! TTL once finished.

use serde_json::json;

use super::*;

#[test]
fn only_jobs_of_the_job_controller_are_run() {
    // (managedBy, whether pods are made)
    let cases = [
        (Value::Null, true),
        (json!("kubernetes.io/job-controller"), true),
        (json!("example.com/queue"), false),
        (json!("kubernetes.io/other"), false),
    ];
    for (managed_by, runs) in cases {
        let mut h = harness(json!({"managedBy": managed_by}));
        let out = step(&mut h, 0);
        assert_eq!(names(&h).len() == 1, runs, "{managed_by}");
        assert_eq!(out.writes.is_empty(), !runs, "{managed_by}");
        assert_eq!(out.events.is_empty(), !runs, "{managed_by}");
    }
}

#[test]
fn a_job_run_elsewhere_is_not_read_but_its_ttl_runs_out() {
    // A spec this controller could not run is not its concern.
    let mut h = harness(json!({"managedBy": "example.com/queue",
                               "completionMode": "Indexed", "completions": null}));
    assert!(step(&mut h, 0).writes.is_empty());

    // Finished by the other controller, with a TTL: deleted when it runs
    // out, as upstream's TTL-after-finished controller does.
    let mut h = harness(json!({"managedBy": "example.com/queue",
                               "ttlSecondsAfterFinished": 60}));
    let mut j = h.get(&job_ref()).unwrap();
    j.value_mut()["status"] = json!({
        "completionTime": t(5).to_rfc3339(),
        "conditions": [{"type": "Complete", "status": "True"}]
    });
    h.insert(j);
    let out = step(&mut h, 10);
    assert!(out.writes.is_empty());
    assert_eq!(out.requeue_after, Some(Duration::from_secs(55)));
    h.set_now(t(65));
    let out = h.reconcile_key(&job_ref()).unwrap();
    let deleted: Vec<&ObjectRef> = out.deletes().collect();
    assert_eq!(deleted, [&job_ref()]);
}
